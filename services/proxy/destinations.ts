/**
 * What the proxy service's storage destination actions do: an account's own buckets, stored
 * with their secret sealed and only once a test wrote and deleted an object there, and the
 * upload of a capture's file to one (read from storage, so the bytes never cross the
 * transporter and the credentials never leave this service). The rules live in
 * storage-destinations.ts, the table in destination-repository.ts, the clients in
 * bucket-clients.ts. An S3 endpoint is a network address a user chose: its host passes the
 * egress policy before every connection, and the connection goes to the address checked.
 */
import type { ParamsOf, ResultOf, StorageDestinationRecord } from '../shared/contracts';
import type { EgressPolicy } from '../shared/egress';
import { serviceError } from '../shared/errors';
import { randomId, type SecretBox } from '../shared/secrets';
import type { FileStore } from '../shared/storage';
import { type BucketClient, gcsBucket, s3Bucket } from './bucket-clients';
import type { DestinationRepository } from './destination-repository';
import {
  clientEmailOf,
  DEFAULT_REGION,
  type DestinationFields,
  type DestinationRow,
  destinationFields,
  destinationIdentity,
  destinationRecord,
  failureNote,
  s3EndpointOf,
  storageFailureOf,
} from './storage-destinations';

export interface DestinationsDeps {
  repository: DestinationRepository;
  secrets: SecretBox;
  policy: EgressPolicy;
  /** Where captures' files are (the upload reads them there). */
  files: Pick<FileStore, 'get'>;
  /** GCS_API_ENDPOINT, for gcs destinations (an emulator), else null. */
  gcsApiEndpoint: string | null;
  /** A test's and an upload's bound. */
  timeoutMs: number;
}

export class StorageDestinations {
  constructor(private readonly deps: DestinationsDeps) {}

  async create(params: ParamsOf<'proxy.createDestination'>): Promise<ResultOf<'proxy.createDestination'>> {
    const { accountId, input } = params;
    const f = destinationFields(input);
    if (await this.deps.repository.find(accountId, f.name)) {
      throw serviceError('invalid_storage_destination', `name: this account already has a destination "${f.name}"; delete it first, or choose another name.`);
    }
    // Tested before it is stored: a destination that cannot take an object is refused, nothing kept.
    const result = await this.writeTest(f, `storage destination "${f.name}"`);
    const sealed = this.deps.secrets.seal(f.secret);
    const { secret: _, ...fields } = f;
    let id: number;
    try {
      id = await this.deps.repository.insert(accountId, { ...fields, secret_encrypted: sealed, last_test_ms: result.ms });
    } catch (err) {
      // Two creations of one name at once: the unique index keeps one.
      if (await this.deps.repository.find(accountId, f.name)) {
        throw serviceError('invalid_storage_destination', `name: this account already has a destination "${f.name}"; delete it first, or choose another name.`);
      }
      throw err;
    }
    return { destination: await this.record(await this.stored(accountId, String(id))), result };
  }

  async list(accountId: string): Promise<StorageDestinationRecord[]> {
    const rows = await this.deps.repository.list(accountId);
    return Promise.all(rows.map((r) => this.record(r)));
  }

  async get(accountId: string, nameOrId: string): Promise<StorageDestinationRecord> {
    return this.record(await this.stored(accountId, nameOrId));
  }

  async test(params: ParamsOf<'proxy.testDestination'>): Promise<ResultOf<'proxy.testDestination'>> {
    const row = await this.stored(params.accountId, params.nameOrId);
    try {
      const result = await this.writeTest(this.fieldsOf(row), `storage destination "${row.name}"`);
      await this.deps.repository.recordTest(row.account_id, row.id, { verified: true, last_test_ms: result.ms, last_error: null });
      return { destination: await this.record(await this.stored(params.accountId, params.nameOrId)), result };
    } catch (err) {
      const code = (err as { type?: string }).type ?? 'storage_unreachable';
      await this.deps.repository.recordTest(row.account_id, row.id, { verified: false, last_test_ms: null, last_error: code });
      throw err;
    }
  }

  /** 404 when it is not there, or no longer (another request removed it first). */
  async remove(accountId: string, nameOrId: string): Promise<ResultOf<'proxy.removeDestination'>> {
    const row = await this.stored(accountId, nameOrId);
    if (!(await this.deps.repository.remove(accountId, row.id))) throw serviceError('not_found', `No storage destination "${nameOrId}" in this account.`);
    return { removed: true, name: row.name };
  }

  /** store_to before any credit: 400 storage_destination_not_found when the account has no such destination; else what it points to. */
  async check(accountId: string, name: string): Promise<ResultOf<'proxy.checkDestination'>> {
    return { ok: true as const, identity: destinationIdentity(await this.forCapture(accountId, name)) };
  }

  /** Uploads a stored capture file; 502 storage_upload_failed (the note says why) when it cannot. */
  async storeFile(params: ParamsOf<'proxy.storeFile'>): Promise<ResultOf<'proxy.storeFile'>> {
    const row = await this.forCapture(params.accountId, params.destination);
    const file = await this.deps.files.get(params.file.name);
    if (!file) throw serviceError('storage_upload_failed', `store_to: the capture's file ${params.file.name} is no longer in storage; nothing was uploaded.`);
    const f = this.fieldsOf(row);
    let bucket: BucketClient;
    try {
      bucket = await this.client(f);
    } catch (err) {
      throw serviceError('storage_upload_failed', `store_to ${row.name}: ${(err as Error).message}`);
    }
    try {
      const { etag } = await bucket.put(params.key, file.data, params.file.contentType);
      return { destination: row.name, bucket: row.bucket, key: params.key, location: bucket.location(params.key), etag };
    } catch (err) {
      const { code, detail } = storageFailureOf(err);
      throw serviceError('storage_upload_failed', `${failureNote(code, `store_to ${row.name}`, detail)} The capture was not recorded and is not charged.`);
    } finally {
      bucket.close();
    }
  }

  private async forCapture(accountId: string, name: string): Promise<DestinationRow> {
    const row = /^\d+$/.test(name) ? null : await this.deps.repository.find(accountId, name);
    if (row) return row;
    throw serviceError(
      'storage_destination_not_found',
      `store_to: this account has no storage destination "${name}"; GET /storage_destinations lists them, POST /storage_destinations adds one.`,
    );
  }

  private async stored(accountId: string, nameOrId: string): Promise<DestinationRow> {
    const row = await this.deps.repository.find(accountId, nameOrId);
    if (!row) throw serviceError('not_found', `No storage destination "${nameOrId}" in this account.`);
    return row;
  }

  /** Its record; a GCS key sealed under another SECRETS_KEY shows no client_email (using it says why). */
  private async record(row: DestinationRow): Promise<StorageDestinationRecord> {
    let clientEmail: string | null = null;
    if (row.type === 'gcs') {
      try {
        clientEmail = clientEmailOf(this.openSecret(row));
      } catch (err) {
        if ((err as { type?: string }).type !== 'secret_unreadable') throw err;
      }
    }
    return destinationRecord(row, clientEmail);
  }

  private openSecret(row: DestinationRow): string {
    return this.deps.secrets.open(
      row.secret_encrypted,
      `The credentials stored for storage destination "${row.name}"`,
      `create it again (DELETE, then POST /storage_destinations)`,
    );
  }

  private fieldsOf(row: DestinationRow): DestinationFields {
    return {
      name: row.name,
      type: row.type === 'gcs' ? 'gcs' : 's3',
      endpoint: row.endpoint,
      region: row.region,
      bucket: row.bucket,
      access_key_id: row.access_key_id,
      secret: this.openSecret(row),
    };
  }

  /**
   * A client for the destination. An s3 endpoint's host is resolved and checked now (a refused
   * address: invalid_storage_destination; a name that does not resolve: storage_unreachable);
   * the client connects only to the address checked.
   */
  private async client(f: DestinationFields): Promise<BucketClient> {
    const timeoutMs = this.deps.timeoutMs;
    if (f.type === 'gcs') return gcsBucket({ bucket: f.bucket, credentials: f.secret, apiEndpoint: this.deps.gcsApiEndpoint, timeoutMs });
    const endpoint = s3EndpointOf(f);
    const host = new URL(endpoint).hostname;
    const admission = await this.deps.policy.admit(host);
    if (!admission.allowed) {
      if (admission.unresolvable) throw serviceError('storage_unreachable', `endpoint: ${host} ${admission.reason}; check endpoint.`);
      throw serviceError(
        'invalid_storage_destination',
        `endpoint: ${host} ${admission.reason}; storage endpoints at private or internal addresses are refused (an operator can allow one with EGRESS_ALLOW_ADDRESSES).`,
      );
    }
    return s3Bucket({
      endpoint,
      region: f.region ?? DEFAULT_REGION,
      bucket: f.bucket,
      accessKeyId: f.access_key_id ?? '',
      secretAccessKey: f.secret,
      admitted: { address: admission.address, family: admission.family },
      timeoutMs,
    });
  }

  /** Writes a small object and deletes it again; throws the failure's code with a note naming what failed. */
  private async writeTest(f: DestinationFields, what: string): Promise<{ key: string; ms: number }> {
    const started = Date.now();
    const bucket = await this.client(f);
    const key = `.snapservice-test/${randomId(12)}.txt`;
    try {
      await bucket.put(key, Buffer.from('snapservice storage destination test; safe to delete\n'), 'text/plain');
      await bucket.delete(key);
      return { key, ms: Date.now() - started };
    } catch (err) {
      const { code, detail } = storageFailureOf(err);
      throw serviceError(code, failureNote(code, what, detail));
    } finally {
      bucket.close();
    }
  }
}
