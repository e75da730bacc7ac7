/**
 * Writing to an account's own bucket: an S3-compatible endpoint through the official AWS SDK
 * (path-style keys, the endpoint and region given, connected only to the address the egress
 * policy admitted: pinned lookup, so a name cannot be re-resolved to an internal address
 * between the check and the connection), or Google Cloud Storage through its official
 * client (storage.googleapis.com, or the operator's GCS_API_ENDPOINT). One client per use;
 * the credentials live only inside it and are never logged or put in an error.
 */
import http from 'node:http';
import https from 'node:https';
import { DeleteObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { Storage } from '@google-cloud/storage';
import { pinnedLookup } from '../shared/egress';

export interface BucketClient {
  /** Writes an object; answers its ETag (quotes removed). */
  put(key: string, data: Buffer, contentType: string): Promise<{ etag: string }>;
  delete(key: string): Promise<void>;
  /** The object's URL. */
  location(key: string): string;
  close(): void;
}

/** A key in a URL path: each segment encoded, the slashes kept. */
export function keyPath(key: string): string {
  return key.split('/').map(encodeURIComponent).join('/');
}

const unquote = (etag: string | undefined): string => (etag ?? '').replace(/^W\//, '').replace(/^"|"$/g, '');

export interface S3Target {
  endpoint: string;
  region: string;
  bucket: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** The address the egress policy admitted for the endpoint's host. */
  admitted: { address: string; family: 4 | 6 };
  timeoutMs: number;
}

export function s3Bucket(t: S3Target): BucketClient {
  const lookup = pinnedLookup(t.admitted);
  const httpAgent = new http.Agent({ keepAlive: false, lookup });
  const httpsAgent = new https.Agent({ keepAlive: false, lookup });
  const client = new S3Client({
    endpoint: t.endpoint,
    region: t.region,
    forcePathStyle: true,
    credentials: { accessKeyId: t.accessKeyId, secretAccessKey: t.secretAccessKey },
    // One attempt: a refused key or a missing bucket is answered at once, and an upload that failed is the capture's failure.
    maxAttempts: 1,
    // throwOnRequestTimeout: past requestTimeout the SDK only logs a warning otherwise, and a silent endpoint held the call for good.
    requestHandler: { httpAgent, httpsAgent, connectionTimeout: Math.min(t.timeoutMs, 5_000), requestTimeout: t.timeoutMs, throwOnRequestTimeout: true },
  });
  return {
    async put(key, data, contentType) {
      const out = await client.send(new PutObjectCommand({ Bucket: t.bucket, Key: key, Body: data, ContentType: contentType, ContentLength: data.length }));
      return { etag: unquote(out.ETag) };
    },
    async delete(key) {
      await client.send(new DeleteObjectCommand({ Bucket: t.bucket, Key: key }));
    },
    location: (key) => `${t.endpoint}/${t.bucket}/${keyPath(key)}`,
    close() {
      client.destroy();
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}

export interface GcsTarget {
  bucket: string;
  /** The service account key (JSON). */
  credentials: string;
  /** The operator's GCS_API_ENDPOINT (an emulator; requests to it are not authenticated), else real GCS. */
  apiEndpoint: string | null;
  timeoutMs: number;
}

/** An endpoint URL without the user and password it may hold (the SDK sends them; a location must not show them). */
function withoutUserinfo(endpoint: string): string {
  const u = new URL(endpoint);
  u.username = '';
  u.password = '';
  return u.href.replace(/\/+$/, '');
}

export function gcsBucket(t: GcsTarget): BucketClient {
  const key = JSON.parse(t.credentials) as { client_email: string; private_key: string; project_id?: string };
  const storage = new Storage({
    credentials: { client_email: key.client_email, private_key: key.private_key },
    ...(key.project_id ? { projectId: key.project_id } : {}),
    ...(t.apiEndpoint ? { apiEndpoint: t.apiEndpoint, useAuthWithCustomEndpoint: false } : {}),
    timeout: t.timeoutMs,
    retryOptions: { maxRetries: 0 },
  });
  const bucket = storage.bucket(t.bucket);
  // Where an object is, as records and webhooks show it: the endpoint without any user and password in it.
  const base = t.apiEndpoint ? withoutUserinfo(t.apiEndpoint) : 'https://storage.googleapis.com';
  return {
    async put(name, data, contentType) {
      const file = bucket.file(name);
      await file.save(data, { resumable: false, contentType, metadata: { contentType } });
      return { etag: unquote(file.metadata.etag) };
    },
    async delete(name) {
      await bucket.file(name).delete({ ignoreNotFound: true });
    },
    location: (name) => `${base}/${t.bucket}/${keyPath(name)}`,
    close() {},
  };
}
