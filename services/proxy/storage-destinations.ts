/**
 * Accounts' storage destinations (store_to), as pure rules: what POST /storage_destinations
 * accepts (a name, s3 with an endpoint, region, bucket and access key, or gcs with a bucket
 * and a service account key), the record it shows (never the secret), and which error a
 * failed write is. The secret is sealed by the caller (SecretBox) and opened only to connect.
 */
import type { StorageDestinationInput, StorageDestinationRecord } from '../shared/contracts';
import { serviceError } from '../shared/errors';

export interface DestinationRow {
  id: number;
  account_id: string;
  name: string;
  type: string;
  endpoint: string | null;
  region: string | null;
  bucket: string;
  access_key_id: string | null;
  /** s3: the secret access key; gcs: the service account key (JSON), sealed. */
  secret_encrypted: string;
  verified: boolean | number;
  last_test_ms: number | null;
  last_error: string | null;
}

/**
 * What a destination points to, for a capture's ttl key (CaptureTargets): its id (a destination
 * is never changed, only deleted and created again) and its bucket's address.
 */
export function destinationIdentity(row: Pick<DestinationRow, 'id' | 'type' | 'endpoint' | 'region' | 'bucket'>): string {
  return JSON.stringify([row.id, row.type, row.endpoint, row.region, row.bucket]);
}

/** What is stored, the secret still in the clear (the caller seals it). */
export interface DestinationFields {
  name: string;
  type: 's3' | 'gcs';
  endpoint: string | null;
  region: string | null;
  bucket: string;
  access_key_id: string | null;
  secret: string;
}

/** A destination's name: what store_to names (letters, digits, '-', '_', '.'; starting with a letter or digit). */
export const DESTINATION_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** S3 and GCS bucket names (3 to 63 lower-case letters, digits, '.', '-', '_'). */
const BUCKET = /^[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]$/;
const REGION = /^[a-z0-9-]{1,64}$/;
export const DEFAULT_REGION = 'us-east-1';

const bad = (note: string) => serviceError('invalid_storage_destination', note);

/** Validates POST /storage_destinations; invalid_storage_destination names what is wrong. */
export function destinationFields(p: StorageDestinationInput): DestinationFields {
  const name = (p.name ?? '').trim();
  if (!DESTINATION_NAME.test(name) || /^\d+$/.test(name)) {
    throw bad(`name: "${name}" is not usable; use 1 to 64 letters, digits, '.', '-' or '_', starting with a letter or digit (not only digits: those are ids).`);
  }
  const bucket = (p.bucket ?? '').trim();
  if (!BUCKET.test(bucket)) throw bad(`bucket: "${bucket}" is not a bucket name (3 to 63 lower-case letters, digits, '.', '-' or '_').`);
  if (p.type === 'gcs') {
    for (const field of ['endpoint', 'region', 'access_key_id', 'secret_access_key'] as const) {
      if (p[field] !== undefined) throw bad(`${field}: s3 only; a gcs destination takes bucket and credentials (the service account key, JSON).`);
    }
    const credentials = (p.credentials ?? '').trim();
    if (!credentials) throw bad('credentials: required for gcs: the JSON key of a service account that may write to the bucket.');
    clientEmailOf(credentials);
    return { name, type: 'gcs', endpoint: null, region: null, bucket, access_key_id: null, secret: credentials };
  }
  if (p.type !== 's3') throw bad(`type: "${String(p.type)}" is not supported; use s3 (any S3-compatible endpoint) or gcs.`);
  if (p.credentials !== undefined) throw bad('credentials: gcs only; an s3 destination takes access_key_id and secret_access_key.');
  const endpoint = p.endpoint === undefined || p.endpoint === '' ? null : endpointOf(p.endpoint);
  const region = (p.region ?? DEFAULT_REGION).trim();
  if (!REGION.test(region)) throw bad(`region: "${region}" is not a region name (such as us-east-1, auto, eu-central-1).`);
  const accessKeyId = (p.access_key_id ?? '').trim();
  if (!accessKeyId) throw bad('access_key_id: required for s3.');
  if (!p.secret_access_key) throw bad('secret_access_key: required for s3 (stored sealed, never returned).');
  return { name, type: 's3', endpoint, region, bucket, access_key_id: accessKeyId, secret: p.secret_access_key };
}

/** An S3-compatible endpoint: an http(s) URL with a host and nothing after it but a path-less root. */
function endpointOf(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad(
      `endpoint: "${raw}" is not a URL; give the S3-compatible endpoint such as https://s3.eu-central-1.amazonaws.com or https://<account>.r2.cloudflarestorage.com.`,
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw bad(`endpoint: ${raw} must be http:// or https://.`);
  if (url.username || url.password) throw bad('endpoint: must not carry credentials; give access_key_id and secret_access_key.');
  if ((url.pathname !== '/' && url.pathname !== '') || url.search || url.hash) {
    throw bad(`endpoint: ${raw} must be the endpoint's root, without a path (the bucket is given as bucket; keys are path-style).`);
  }
  return `${url.protocol}//${url.host}`;
}

/** The endpoint an s3 destination connects to: its own, or AWS's for its region. */
export function s3EndpointOf(row: Pick<DestinationRow, 'endpoint' | 'region'>): string {
  return row.endpoint ?? `https://s3.${row.region ?? DEFAULT_REGION}.amazonaws.com`;
}

/** The service account's e-mail in a gcs key; invalid_storage_destination when it is not one. */
export function clientEmailOf(credentials: string): string {
  let key: { client_email?: unknown; private_key?: unknown };
  try {
    key = JSON.parse(credentials) as typeof key;
  } catch {
    throw bad('credentials: not JSON; give the JSON key of a service account (with client_email and private_key).');
  }
  if (typeof key?.client_email !== 'string' || typeof key.private_key !== 'string') {
    throw bad('credentials: a service account key has client_email and private_key; this one lacks them.');
  }
  return key.client_email;
}

/** The record the endpoints answer: never the secret. `clientEmail`: the gcs key's e-mail (opened by the caller). */
export function destinationRecord(row: DestinationRow, clientEmail: string | null): StorageDestinationRecord {
  return {
    id: Number(row.id),
    name: row.name,
    type: row.type === 'gcs' ? 'gcs' : 's3',
    endpoint: row.endpoint,
    region: row.region,
    bucket: row.bucket,
    access_key_id: row.access_key_id,
    client_email: clientEmail,
    has_secret: Boolean(row.secret_encrypted),
    verified: Boolean(row.verified),
    last_test_ms: row.last_test_ms === null ? null : Number(row.last_test_ms),
    last_error: row.last_error,
  };
}

export type StorageFailure = 'storage_auth_failed' | 'storage_bucket_not_found' | 'storage_unreachable';

const S3_AUTH_ERRORS = new Set(['InvalidAccessKeyId', 'SignatureDoesNotMatch', 'AccessDenied', 'InvalidToken', 'ExpiredToken', 'AuthorizationHeaderMalformed']);

/**
 * What a failed S3 or GCS call is: refused credentials (401, 403, the S3 auth error names), no
 * such bucket (404, NoSuchBucket), else the endpoint could not be reached or answered wrongly.
 * `detail` says what was seen, for the note (never a credential: error names, statuses and
 * network codes only).
 */
export function storageFailureOf(err: unknown): { code: StorageFailure; detail: string } {
  const e = err as { name?: string; code?: unknown; $metadata?: { httpStatusCode?: number } } | null;
  const status = e?.$metadata?.httpStatusCode ?? (typeof e?.code === 'number' ? e.code : undefined);
  const name = e?.name && e.name !== 'Error' ? e.name : typeof e?.code === 'string' ? e.code : 'error';
  if ((e?.name && S3_AUTH_ERRORS.has(e.name)) || status === 401 || status === 403)
    return { code: 'storage_auth_failed', detail: `${status ?? ''} ${name}`.trim() };
  if (e?.name === 'NoSuchBucket' || status === 404) return { code: 'storage_bucket_not_found', detail: `${status ?? ''} ${name}`.trim() };
  return { code: 'storage_unreachable', detail: status ? `it answered ${status} ${name}` : `${name}` };
}

export function failureNote(code: StorageFailure, what: string, detail: string): string {
  switch (code) {
    case 'storage_auth_failed':
      return `${what}: the bucket refused the credentials (${detail}); check access_key_id and secret_access_key (or the service account key) and that they may write to the bucket.`;
    case 'storage_bucket_not_found':
      return `${what}: the bucket does not exist at this endpoint (${detail}); check bucket, endpoint and region.`;
    default:
      return `${what}: the endpoint could not be reached or did not accept the object (${detail}); check endpoint (and that it is reachable from this server).`;
  }
}
