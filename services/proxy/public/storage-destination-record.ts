/**
 * An account's storage destination (its own S3-compatible or GCS bucket), never with its
 * secret: the schema the proxy service publishes with its type, the answer of a test, and
 * `stored_to`, where one capture was uploaded (the screenshot record and its webhook body
 * carry it).
 */
import { type Static, Type } from '@sinclair/typebox';

export const STORAGE_TYPES = ['s3', 'gcs'] as const;

export const STORAGE_DESTINATION_SCHEMA = Type.Object({
  id: Type.Integer(),
  name: Type.String({ description: 'What store_to names.' }),
  type: Type.Union([Type.Literal('s3'), Type.Literal('gcs')]),
  endpoint: Type.Union([Type.String(), Type.Null()], { description: 's3: the S3-compatible endpoint; null for AWS itself and for gcs.' }),
  region: Type.Union([Type.String(), Type.Null()], { description: 's3 only.' }),
  bucket: Type.String(),
  access_key_id: Type.Union([Type.String(), Type.Null()], { description: 's3: the access key id (not a secret); null for gcs.' }),
  client_email: Type.Union([Type.String(), Type.Null()], { description: "gcs: the service account's e-mail; null for s3." }),
  has_secret: Type.Boolean({ description: 'The secret (secret_access_key, or the service account key) is stored sealed and never returned.' }),
  verified: Type.Boolean({ description: 'Its last test wrote and deleted an object.' }),
  last_test_ms: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()], { description: 'The error code of its last failed test.' }),
});

/** This record in the kernel's table of records (shared/contracts.ts, PublishedRecords). */
declare global {
  interface PublishedRecords {
    storageDestination: Static<typeof STORAGE_DESTINATION_SCHEMA>;
    storedTo: Static<typeof STORED_TO_SCHEMA>;
  }
}

/** A test's outcome: the object written and deleted, and the time taken. */
export const STORAGE_TEST_RESULT_SCHEMA = Type.Object({ key: Type.String({ description: 'The test object written, then deleted.' }), ms: Type.Integer() });

/** Where a capture was uploaded (store_to): the screenshot record's and the capture webhook's `stored_to`. */
export const STORED_TO_SCHEMA = Type.Object(
  {
    destination: Type.String({ description: 'The destination name (store_to).' }),
    bucket: Type.String(),
    key: Type.String({ description: 'The object key, store_key expanded.' }),
    location: Type.String({ description: "The object's URL (path-style for S3; https://storage.googleapis.com/... for GCS)." }),
    etag: Type.String({ description: 'The ETag the bucket answered for the upload (quotes removed).' }),
  },
  { description: 'Where the capture was uploaded (store_to); absent when none was asked for. Beyond the spec.' },
);
