/**
 * A local S3-compatible server speaking the real protocol (s3rver, a maintained npm
 * package): path-style requests, AWS signatures (an unknown access key id is refused with
 * InvalidAccessKeyId), ETags, on loopback only, its objects in a temporary folder. The one
 * account it knows is S3RVER / S3RVER.
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { S3Client } from '@aws-sdk/client-s3';
import { tempDir } from './backends';

interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}
type S3rverClass = new (options: {
  port: number;
  address: string;
  silent: boolean;
  directory: string;
  resetOnClose?: boolean;
  configureBuckets?: Array<{ name: string }>;
}) => S3rverInstance;

export const S3_ACCESS_KEY_ID = 'S3RVER';
export const S3_SECRET_ACCESS_KEY = 'S3RVER';

export interface S3Server {
  /** e.g. http://127.0.0.1:41234 */
  endpoint: string;
  port: number;
  /** An AWS SDK client for it (path-style, the server's own credentials), to read back what was uploaded. */
  client: S3Client;
  stop(): Promise<void>;
}

export async function startS3Server(buckets: string[]): Promise<S3Server> {
  const S3rver = require('s3rver') as S3rverClass;
  const directory = tempDir('s3rver-');
  const server = new S3rver({ port: 0, address: '127.0.0.1', silent: true, directory, configureBuckets: buckets.map((name) => ({ name })) });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: S3_ACCESS_KEY_ID, secretAccessKey: S3_SECRET_ACCESS_KEY },
  });
  let stopped = false;
  return {
    endpoint,
    port,
    client,
    /** Idempotent. */
    async stop() {
      if (stopped) return;
      stopped = true;
      client.destroy();
      await server.close();
      fs.rmSync(directory, { recursive: true, force: true });
    },
  };
}
