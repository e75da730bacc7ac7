/**
 * Where captured images, thumbnails and HTML live between the capture service that writes
 * them and the api service that serves them under CDN_URL. The bytes go through storage,
 * never through the message bus, so the two services only share a file name.
 *
 * STORAGE_URL picks the backend:
 *   unset              local disk at DATA_DIR/files (embedded mode, one machine)
 *   file:///abs/dir    local disk at that folder (e.g. a volume shared by several containers)
 *   gs://bucket/prefix Google Cloud Storage; objects are named "prefix/<name>"
 *
 * GCS_API_ENDPOINT (e.g. http://127.0.0.1:4443) sends the Cloud Storage JSON API calls to
 * an emulator or test server instead of storage.googleapis.com; requests to it carry no
 * credentials. Unset, the client uses Application Default Credentials against real GCS.
 * (The Google client also reads STORAGE_EMULATOR_HOST itself; prefer GCS_API_ENDPOINT.)
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Bucket, IdempotencyStrategy, Storage } from '@google-cloud/storage';
import { type Config, ConfigError, quoted } from './config';

export interface StoredFile {
  data: Buffer;
  contentType: string;
}

export interface FileStore {
  /** Writes an object; name is a flat file name like "Ab3x...9.jpeg" (letters, digits, '.', '-', '_'). */
  put(name: string, data: Buffer, contentType: string): Promise<void>;
  /** null when absent. */
  get(name: string): Promise<StoredFile | null>;
  /** Idempotent. */
  delete(name: string): Promise<void>;
  close(): Promise<void>;
}

/**
 * What this process wrote to one storage location in the last few seconds, kept in memory
 * for whoever in the process reads it next: a snap's answer reads the image its capture has
 * just written, and in one process (embedded mode, or api and capture together) that read
 * then costs nothing, where it took about 4 ms from local disk while the capture's browser
 * is being recycled, and a download from Cloud Storage. Every store of the same location in
 * the process shares one (the api's and capture's are separate stores). Bounded: files up
 * to MAX_FILE_BYTES, MAX_BYTES in all, each for KEEP_MS; a delete forgets at once. A file
 * deleted by another process may still be read here for at most KEEP_MS. Buffers are
 * shared, never copied: neither writers nor readers change them.
 */
export class RecentWrites {
  static readonly KEEP_MS = 5_000;
  static readonly MAX_FILE_BYTES = 8 * 1024 * 1024;
  static readonly MAX_BYTES = 32 * 1024 * 1024;
  private static readonly byLocation = new Map<string, RecentWrites>();

  /** Insertion order is age order: the oldest first. */
  private readonly files = new Map<string, { file: StoredFile; until: number }>();
  private bytes = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** The process's memory of `location` (a folder or a bucket and prefix). */
  static of(location: string): RecentWrites {
    let recent = RecentWrites.byLocation.get(location);
    if (!recent) {
      recent = new RecentWrites();
      RecentWrites.byLocation.set(location, recent);
    }
    return recent;
  }

  remember(name: string, file: StoredFile): void {
    this.forget(name);
    if (file.data.length > RecentWrites.MAX_FILE_BYTES) return;
    this.files.set(name, { file, until: this.now() + RecentWrites.KEEP_MS });
    this.bytes += file.data.length;
    this.prune();
  }

  recall(name: string): StoredFile | null {
    const entry = this.files.get(name);
    if (!entry) return null;
    if (entry.until > this.now()) return entry.file;
    this.forget(name);
    return null;
  }

  forget(name: string): void {
    const entry = this.files.get(name);
    if (!entry) return;
    this.files.delete(name);
    this.bytes -= entry.file.data.length;
  }

  /** Drops what has expired, and the oldest while over MAX_BYTES. */
  private prune(): void {
    const now = this.now();
    for (const [name, entry] of this.files) {
      if (entry.until > now && this.bytes <= RecentWrites.MAX_BYTES) break;
      this.forget(name);
    }
  }
}

// A leading dot is refused too: it keeps names clear of LocalFileStore's own ".types"
// folder and ".tmp-" files, and of "." / "..".
const NAME_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}$/;

/** Throws unless name is a flat file name that cannot escape its folder or prefix. */
export function assertFileName(name: string): void {
  if (typeof name !== 'string' || !NAME_PATTERN.test(name) || name.includes('..')) {
    throw new Error(
      `Invalid file name ${JSON.stringify(String(name).slice(0, 100))}: use 1-255 letters, digits, '.', '-', '_', not starting with '.' and without '..'`,
    );
  }
}

/**
 * The content types a name's extension stands for: those of the files a capture writes
 * (capture/jobs/files.ts). Nothing depends on the two agreeing: a type not listed here, or
 * changed there, gets a type file of its own.
 */
const TYPE_OF_EXTENSION: Readonly<Record<string, string>> = {
  jpeg: 'image/jpeg',
  png: 'image/png',
  webp: 'image/webp',
  pdf: 'application/pdf',
  html: 'text/html; charset=utf-8',
  md: 'text/markdown; charset=utf-8',
  json: 'application/json; charset=utf-8',
};

function impliedType(name: string): string | undefined {
  const extension = path.extname(name).slice(1);
  return Object.hasOwn(TYPE_OF_EXTENSION, extension) ? TYPE_OF_EXTENSION[extension] : undefined;
}

/** Removes a file if it is there (one unlink: rm's force looks first). */
async function removeIfThere(file: string): Promise<void> {
  try {
    await fs.unlink(file);
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
}

function isNotFound(err: unknown): boolean {
  return typeof err === 'object' && err !== null && ((err as { code?: unknown }).code === 'ENOENT' || (err as { code?: unknown }).code === 404);
}

/**
 * Each object is the bytes at <dir>/<name>, kept as-is so the folder can be inspected or
 * served directly, and its content type: the one its extension stands for (TYPE_OF_EXTENSION,
 * the files a capture writes), or else a file of its own at <dir>/.types/<name>. Each file
 * is written to a temporary file and renamed into place, the type first, so a reader sees
 * either nothing or a complete file with its type. Overwriting a name with a different
 * type is not atomic as a pair, which is fine because names are unique per artifact.
 *
 * A capture's image creates one file, not two: creating a file is the dearest part of a
 * local write. On an ext4 without a journal (the bench machine's) each create scans the
 * inodes deleted lately (the kernel's recently_deleted): 20-600 µs of kernel CPU per file,
 * against about 40 µs for the write of a 15 kB image and its rename (docs/benchmark.md).
 */
export class LocalFileStore implements FileStore {
  readonly dir: string;
  private readonly typesDir: string;
  private readonly recent: RecentWrites | null;

  /** `remember`: keep this process's recent writes in memory (RecentWrites); tests of the disk itself turn it off. */
  constructor(dir: string, { remember = true }: { remember?: boolean } = {}) {
    this.dir = path.resolve(dir);
    this.typesDir = path.join(this.dir, '.types');
    this.recent = remember ? RecentWrites.of(`file://${this.dir}`) : null;
    // Synchronous so a folder that cannot be created stops start-up instead of the first capture.
    mkdirSync(this.typesDir, { recursive: true });
  }

  async put(name: string, data: Buffer, contentType: string): Promise<void> {
    assertFileName(name);
    const typePath = path.join(this.typesDir, name);
    // Both at once: the type's temporary file (or, for a type the extension stands for, the
    // removal of a type file an earlier object of the name had), and the bytes'.
    const [type, bytes] = await Promise.allSettled([
      impliedType(name) === contentType ? removeIfThere(typePath).then(() => null) : this.writeTemp(Buffer.from(contentType, 'utf8')),
      this.writeTemp(data),
    ]);
    try {
      if (type.status === 'rejected') throw type.reason;
      if (bytes.status === 'rejected') throw bytes.reason;
      if (type.value) await fs.rename(type.value, typePath);
      await fs.rename(bytes.value, path.join(this.dir, name));
    } catch (err) {
      await Promise.all([type, bytes].map((t) => (t.status === 'fulfilled' && t.value ? fs.rm(t.value, { force: true }) : undefined)));
      throw err;
    }
    this.recent?.remember(name, { data, contentType });
  }

  async get(name: string): Promise<StoredFile | null> {
    assertFileName(name);
    const recent = this.recent?.recall(name);
    if (recent) return recent;
    // Both at once: the type is only looked at when the bytes are there.
    const [data, type] = await Promise.allSettled([fs.readFile(path.join(this.dir, name)), fs.readFile(path.join(this.typesDir, name), 'utf8')]);
    if (data.status === 'rejected') {
      if (isNotFound(data.reason)) return null;
      throw data.reason;
    }
    // No type file: the extension's type (or a delete ran between the two reads, or a file was copied in by hand).
    if (type.status === 'rejected' && !isNotFound(type.reason)) throw type.reason;
    return { data: data.value, contentType: type.status === 'fulfilled' ? type.value : (impliedType(name) ?? 'application/octet-stream') };
  }

  async delete(name: string): Promise<void> {
    assertFileName(name);
    this.recent?.forget(name);
    await fs.rm(path.join(this.dir, name), { force: true });
    await fs.rm(path.join(this.typesDir, name), { force: true });
  }

  async close(): Promise<void> {}

  /** A temporary file with the data, in the same folder as the targets (same file system, so rename() is atomic). */
  private async writeTemp(data: Buffer): Promise<string> {
    const temp = path.join(this.dir, `.tmp-${randomBytes(12).toString('hex')}`);
    try {
      await fs.writeFile(temp, data, { flag: 'wx' });
      return temp;
    } catch (err) {
      await fs.rm(temp, { force: true });
      throw err;
    }
  }
}

export interface GcsFileStoreOptions {
  bucket: string;
  /** Prepended verbatim to every name; include the trailing '/' for a folder. */
  prefix: string;
  /** An emulator or test server, e.g. "http://127.0.0.1:4443". Requests to it are not authenticated. */
  apiEndpoint?: string;
  projectId?: string;
  /** Keep this process's recent writes in memory (RecentWrites; default true); tests of the bucket itself turn it off. */
  remember?: boolean;
}

export class GcsFileStore implements FileStore {
  readonly bucketName: string;
  readonly prefix: string;
  private readonly bucket: Bucket;
  private readonly recent: RecentWrites | null;

  constructor(opts: GcsFileStoreOptions) {
    this.bucketName = opts.bucket;
    this.prefix = opts.prefix;
    this.recent = opts.remember === false ? null : RecentWrites.of(`gs://${opts.bucket}/${opts.prefix}@${opts.apiEndpoint ?? ''}`);
    const storage = new Storage({
      ...(opts.projectId ? { projectId: opts.projectId } : {}),
      // A custom endpoint makes the client skip google-auth-library entirely, so it needs
      // neither credentials nor the metadata server.
      ...(opts.apiEndpoint ? { apiEndpoint: opts.apiEndpoint, useAuthWithCustomEndpoint: false } : {}),
      retryOptions: {
        // Each name always gets the same bytes and delete ignores "not found", so every call
        // is safe to repeat. The default (RetryConditional) never retries these uploads and,
        // after one, switches retries off on the shared client for later downloads too.
        idempotencyStrategy: IdempotencyStrategy.RetryAlways,
        maxRetries: 3,
        totalTimeout: 60,
      },
    });
    this.bucket = storage.bucket(opts.bucket);
  }

  async put(name: string, data: Buffer, contentType: string): Promise<void> {
    assertFileName(name);
    // resumable:false = one multipart request; resumable sessions only pay off for large files.
    await this.bucket.file(this.prefix + name).save(data, { resumable: false, contentType, metadata: { contentType } });
    this.recent?.remember(name, { data, contentType });
  }

  async get(name: string): Promise<StoredFile | null> {
    assertFileName(name);
    const recent = this.recent?.recall(name);
    if (recent) return recent;
    // createReadStream rather than download(): its response carries the object's
    // Content-Type, which saves a second (metadata) request.
    const stream = this.bucket.file(this.prefix + name).createReadStream();
    let contentType = 'application/octet-stream';
    stream.on('response', (res: { headers?: Record<string, string | undefined> }) => {
      const type = res.headers?.['content-type'];
      if (type) contentType = type;
    });
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of stream) chunks.push(chunk as Buffer);
    } catch (err) {
      if (isNotFound(err)) return null;
      throw err;
    }
    return { data: Buffer.concat(chunks), contentType };
  }

  async delete(name: string): Promise<void> {
    assertFileName(name);
    this.recent?.forget(name);
    await this.bucket.file(this.prefix + name).delete({ ignoreNotFound: true });
  }

  async close(): Promise<void> {}
}

export function createFileStore(config: Readonly<Config>): FileStore {
  const raw = config.storageUrl;
  if (raw === null) return new LocalFileStore(path.join(config.dataDir, 'files'));
  const url = new URL(raw);
  if (url.protocol === 'file:') {
    try {
      return new LocalFileStore(fileURLToPath(url));
    } catch (err) {
      if (err instanceof TypeError) throw new ConfigError(`STORAGE_URL must be file:///absolute/folder, got ${quoted(raw)}`);
      throw err;
    }
  }
  if (url.protocol === 'gs:') {
    if (!url.hostname) throw new ConfigError(`STORAGE_URL must name a bucket, as in gs://bucket/prefix; got ${quoted(raw)}`);
    // Cloud Storage's bucket names: 3 to 222 lowercase letters, digits, dashes, underscores and
    // dots, a letter or digit at each end. Checked at start: a name the bucket can never have
    // (an example's CHANGE-ME left in place) would otherwise fail every capture's upload.
    if (!/^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/.test(url.hostname)) {
      throw new ConfigError(
        `STORAGE_URL names "${url.hostname}", which cannot be a Cloud Storage bucket (lowercase letters, digits, dashes, underscores and dots, 3 to 222 characters); set it to your gs://bucket/prefix`,
      );
    }
    const folder = decodeURIComponent(url.pathname.replace(/^\/+|\/+$/g, ''));
    const endpoint = config.gcsApiEndpoint;
    return new GcsFileStore({
      bucket: url.hostname,
      // "gs://b/shots" means the folder shots/, not a name prefix glued to every file name.
      prefix: folder === '' ? '' : `${folder}/`,
      ...(endpoint ? { apiEndpoint: endpoint } : {}),
    });
  }
  throw new ConfigError(`STORAGE_URL must start with gs:// or file://, got ${quoted(raw)}`);
}
