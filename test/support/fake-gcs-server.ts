/**
 * An in-memory stand-in for the Google Cloud Storage JSON API, speaking the wire format
 * for exactly the calls GcsFileStore makes through @google-cloud/storage v7, so the real
 * client is exercised without network access or credentials:
 *
 *   POST   /upload/storage/v1/b/{bucket}/o?uploadType=multipart&name={object}   (also uploadType=media)
 *   GET    /storage/v1/b/{bucket}/o/{object}            object resource (JSON)
 *   GET    /storage/v1/b/{bucket}/o/{object}?alt=media  the bytes
 *   DELETE /storage/v1/b/{bucket}/o/{object}            204
 *
 * Object paths may also start with /download/storage/v1, or lack /storage/v1 altogether
 * (what the client sends when STORAGE_EMULATOR_HOST is set). Every bucket exists.
 * Responses carry the crc32c/md5 hashes real GCS sends, because the client checks them
 * after uploads and downloads.
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeGcsObject {
  data: Buffer;
  contentType: string;
}

export interface FakeGcs {
  /** e.g. "http://127.0.0.1:41234"; pass as apiEndpoint. */
  endpoint: string;
  /** Keyed by "bucket/objectName". */
  objects: Map<string, FakeGcsObject>;
  requests: Array<{ method: string; url: string }>;
  /** The next `count` requests are answered with `status` (a GCS-style JSON error) and have no effect. */
  failNext(count: number, status: number): void;
  stop(): Promise<void>;
}

const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    table[i] = c >>> 0;
  }
  return table;
})();

/** CRC32C (Castagnoli), base64 of the big-endian value, as GCS reports it. */
export function crc32cBase64(data: Buffer): string {
  let crc = 0xffffffff;
  for (const byte of data) crc = CRC32C_TABLE[(crc ^ byte) & 0xff] ^ (crc >>> 8);
  const out = Buffer.alloc(4);
  out.writeUInt32BE((crc ^ 0xffffffff) >>> 0);
  return out.toString('base64');
}

interface ObjectFacts {
  generation: string;
  created: string;
  md5: string;
  crc32c: string;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly reason: string,
  ) {
    super(message);
  }
}

function readBody(req: http.IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** Splits a multipart/related body into its parts (headers lower-cased). */
function parseMultipart(body: Buffer, contentTypeHeader: string): Array<{ headers: Record<string, string>; body: Buffer }> {
  const match = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentTypeHeader);
  if (!match) throw new HttpError(400, 'Missing multipart boundary', 'badRequest');
  const boundary = match[1] ?? match[2];
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: Array<{ headers: Record<string, string>; body: Buffer }> = [];
  let pos = body.indexOf(delimiter);
  if (pos < 0) throw new HttpError(400, 'Multipart body has no boundary line', 'badRequest');
  for (;;) {
    pos += delimiter.length;
    if (body.subarray(pos, pos + 2).toString() === '--') break;
    if (body.subarray(pos, pos + 2).toString() !== '\r\n') throw new HttpError(400, 'Malformed multipart boundary line', 'badRequest');
    pos += 2;
    const headerEnd = body.indexOf('\r\n\r\n', pos);
    if (headerEnd < 0) throw new HttpError(400, 'Multipart part without header end', 'badRequest');
    const headers: Record<string, string> = {};
    for (const line of body.subarray(pos, headerEnd).toString('utf8').split('\r\n')) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const next = body.indexOf(Buffer.concat([Buffer.from('\r\n'), delimiter]), headerEnd + 4);
    if (next < 0) throw new HttpError(400, 'Multipart part without closing boundary', 'badRequest');
    parts.push({ headers, body: body.subarray(headerEnd + 4, next) });
    pos = next + 2;
  }
  return parts;
}

export async function startFakeGcs(): Promise<FakeGcs> {
  const objects = new Map<string, FakeGcsObject>();
  // Generation and hashes, remembered per object record so tests may also put records into
  // `objects` directly.
  const facts = new WeakMap<FakeGcsObject, ObjectFacts>();
  const requests: Array<{ method: string; url: string }> = [];
  let failures = { count: 0, status: 503 };
  let generation = Date.now() * 1000;

  const factsOf = (o: FakeGcsObject): ObjectFacts => {
    let f = facts.get(o);
    if (!f) {
      generation += 1;
      f = {
        generation: String(generation),
        created: new Date().toISOString(),
        md5: createHash('md5').update(o.data).digest('base64'),
        crc32c: crc32cBase64(o.data),
      };
      facts.set(o, f);
    }
    return f;
  };

  const resource = (key: string, o: FakeGcsObject) => {
    const f = factsOf(o);
    const slash = key.indexOf('/');
    const bucket = key.slice(0, slash);
    const name = key.slice(slash + 1);
    return {
      kind: 'storage#object',
      id: `${bucket}/${name}/${f.generation}`,
      selfLink: `${endpoint}/storage/v1/b/${bucket}/o/${encodeURIComponent(name)}`,
      mediaLink: `${endpoint}/download/storage/v1/b/${bucket}/o/${encodeURIComponent(name)}?generation=${f.generation}&alt=media`,
      name,
      bucket,
      generation: f.generation,
      metageneration: '1',
      contentType: o.contentType,
      storageClass: 'STANDARD',
      size: String(o.data.length),
      md5Hash: f.md5,
      crc32c: f.crc32c,
      etag: Buffer.from(f.generation).toString('base64'),
      timeCreated: f.created,
      updated: f.created,
    };
  };

  const sendJson = (res: http.ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };

  const sendError = (res: http.ServerResponse, status: number, message: string, reason: string) => {
    sendJson(res, status, { error: { code: status, message, errors: [{ message, domain: 'global', reason }] } });
  };

  const notFound = (bucket: string, name: string) => new HttpError(404, `No such object: ${bucket}/${name}`, 'notFound');

  const save = (bucket: string, name: string, data: Buffer, contentType: string, res: http.ServerResponse) => {
    const o: FakeGcsObject = { data, contentType };
    const key = `${bucket}/${name}`;
    objects.set(key, o);
    sendJson(res, 200, resource(key, o));
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://fake-gcs');
    // Read the body first so a failed request never leaves the client mid-upload.
    const body = await readBody(req);
    if (failures.count > 0) {
      failures.count -= 1;
      throw new HttpError(failures.status, `Injected failure ${failures.status}`, 'backendError');
    }

    const upload = /^\/upload\/storage\/v1\/b\/([^/]+)\/o\/?$/.exec(url.pathname);
    if (upload && method === 'POST') {
      const bucket = decodeURIComponent(upload[1]);
      const uploadType = url.searchParams.get('uploadType');
      if (uploadType === 'multipart') {
        const parts = parseMultipart(body, req.headers['content-type'] ?? '');
        if (parts.length !== 2) throw new HttpError(400, `Expected 2 multipart parts, got ${parts.length}`, 'badRequest');
        const metadata = JSON.parse(parts[0].body.toString('utf8')) as { name?: string; contentType?: string };
        const name = url.searchParams.get('name') ?? metadata.name;
        if (!name) throw new HttpError(400, 'Required', 'required');
        save(bucket, name, Buffer.from(parts[1].body), metadata.contentType ?? parts[1].headers['content-type'] ?? 'application/octet-stream', res);
        return;
      }
      if (uploadType === 'media') {
        const name = url.searchParams.get('name');
        if (!name) throw new HttpError(400, 'Required', 'required');
        save(bucket, name, body, req.headers['content-type'] ?? 'application/octet-stream', res);
        return;
      }
      throw new HttpError(400, `fake-gcs: uploadType=${uploadType} is not supported`, 'invalid');
    }

    const object = /^(?:\/download)?(?:\/storage\/v1)?\/b\/([^/]+)\/o\/(.+)$/.exec(url.pathname);
    if (object) {
      const bucket = decodeURIComponent(object[1]);
      const name = decodeURIComponent(object[2]);
      const key = `${bucket}/${name}`;
      const o = objects.get(key);
      if (method === 'DELETE') {
        if (!o) throw notFound(bucket, name);
        objects.delete(key);
        res.writeHead(204);
        res.end();
        return;
      }
      if (method === 'GET') {
        if (!o) throw notFound(bucket, name);
        if (url.searchParams.get('alt') === 'media') {
          const f = factsOf(o);
          res.writeHead(200, {
            'content-type': o.contentType,
            'content-length': o.data.length,
            'x-goog-hash': `crc32c=${f.crc32c},md5=${f.md5}`,
            'x-goog-stored-content-encoding': 'identity',
            'x-goog-stored-content-length': o.data.length,
            'x-goog-generation': f.generation,
            'x-goog-metageneration': '1',
            etag: `"${f.md5}"`,
          });
          res.end(o.data);
          return;
        }
        sendJson(res, 200, resource(key, o));
        return;
      }
    }
    throw new HttpError(400, `fake-gcs: ${method} ${url.pathname} is not supported`, 'invalid');
  };

  const server = http.createServer((req, res) => {
    requests.push({ method: req.method ?? 'GET', url: req.url ?? '/' });
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError) sendError(res, err.status, err.message, err.reason);
      else sendError(res, 500, String(err instanceof Error ? err.message : err), 'backendError');
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    endpoint,
    objects,
    requests,
    failNext(count, status) {
      failures = { count, status };
    },
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // The client keeps connections alive; without this close() waits for them to idle out.
        server.closeAllConnections();
      }),
  };
}
