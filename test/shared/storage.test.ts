import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../services/shared/config';
import { createFileStore, type FileStore, GcsFileStore, LocalFileStore, RecentWrites } from '../../services/shared/storage';
import { type FakeGcs, startFakeGcs } from '../support/fake-gcs-server';

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the promise to reject');
}

let gcs: FakeGcs;
let tmpRoot: string;
const savedEmulatorHost = process.env.STORAGE_EMULATOR_HOST;

let counter = 0;
const fresh = () => `run${++counter}-${randomBytes(4).toString('hex')}`;

/** The behaviour every FileStore must show; `make` returns a new, empty store. */
function behavesAsFileStore(make: () => FileStore): void {
  let store: FileStore;
  beforeEach(() => {
    store = make();
  });
  afterEach(async () => {
    await store.close();
  });

  it('returns what was put, with its content type', async () => {
    const html = Buffer.from('<!doctype html><p>héllo</p>', 'utf8');
    await store.put('Ab3x9.html', html, 'text/html; charset=utf-8');
    await store.put('Ab3x9.jpeg', Buffer.from([0xff, 0xd8, 0xff, 0xe0]), 'image/jpeg');
    const got = await store.get('Ab3x9.html');
    expect(got).to.not.equal(null);
    expect(got!.data.equals(html)).to.equal(true);
    expect(got!.contentType).to.equal('text/html; charset=utf-8');
    expect((await store.get('Ab3x9.jpeg'))!.contentType).to.equal('image/jpeg');
  });

  it('keeps binary data byte for byte (300 KB of random bytes)', async () => {
    // Also embeds what a multipart body or a text decoder could trip on.
    const data = Buffer.concat([randomBytes(150 * 1024), Buffer.from('\r\n--boundary--\r\n'), Buffer.from([0, 0xff, 0xfe]), randomBytes(150 * 1024)]);
    await store.put('blob_1.bin', data, 'application/octet-stream');
    const got = await store.get('blob_1.bin');
    expect(got!.data.length).to.equal(data.length);
    expect(got!.data.equals(data)).to.equal(true);
  });

  it('stores an empty file', async () => {
    await store.put('empty.txt', Buffer.alloc(0), 'text/plain');
    const got = await store.get('empty.txt');
    expect(got!.data.length).to.equal(0);
    expect(got!.contentType).to.equal('text/plain');
  });

  it('replaces an object put again under the same name', async () => {
    await store.put('same.png', Buffer.from('one'), 'image/png');
    await store.put('same.png', Buffer.from('two!'), 'image/webp');
    const got = await store.get('same.png');
    expect(got!.data.toString()).to.equal('two!');
    expect(got!.contentType).to.equal('image/webp');
  });

  it('answers null for a name that was never put', async () => {
    expect(await store.get('never-there.jpeg')).to.equal(null);
  });

  it('deletes, and deleting again or deleting a missing name is fine', async () => {
    await store.put('gone.jpeg', Buffer.from('x'), 'image/jpeg');
    await store.delete('gone.jpeg');
    expect(await store.get('gone.jpeg')).to.equal(null);
    await store.delete('gone.jpeg');
    await store.delete('never-there.jpeg');
  });

  it('handles concurrent puts of different names', async () => {
    const files = Array.from({ length: 24 }, (_, i) => ({ name: `c${i}.jpeg`, data: randomBytes(1000 + i * 777), type: i % 2 ? 'image/jpeg' : 'image/png' }));
    await Promise.all(files.map((f) => store.put(f.name, f.data, f.type)));
    const got = await Promise.all(files.map((f) => store.get(f.name)));
    got.forEach((g, i) => {
      expect(g!.data.equals(files[i].data), files[i].name).to.equal(true);
      expect(g!.contentType).to.equal(files[i].type);
    });
  });

  for (const bad of ['../escape.jpeg', 'a/b.jpeg', '..', '.', '.hidden', '', 'a..b', 'sp ace.png', 'back\\slash', 'x'.repeat(256)]) {
    it(`refuses the name ${JSON.stringify(bad.length > 20 ? `${bad.slice(0, 8)}…(${bad.length})` : bad)}`, async () => {
      expect((await rejection(store.put(bad, Buffer.from('x'), 'text/plain'))).message).to.match(/Invalid file name/);
      expect((await rejection(store.get(bad))).message).to.match(/Invalid file name/);
      expect((await rejection(store.delete(bad))).message).to.match(/Invalid file name/);
    });
  }
}

describe('FileStore', () => {
  before(async () => {
    // The Google client reads this itself and would redirect part of its requests.
    delete process.env.STORAGE_EMULATOR_HOST;
    gcs = await startFakeGcs();
    tmpRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'storage-test-'));
  });

  after(async () => {
    await gcs?.stop();
    if (tmpRoot) await fs.rm(tmpRoot, { recursive: true, force: true });
    if (savedEmulatorHost !== undefined) process.env.STORAGE_EMULATOR_HOST = savedEmulatorHost;
  });

  describe('LocalFileStore', () => {
    let dir: string;
    // The disk itself: this process's recent writes are not kept in memory.
    behavesAsFileStore(() => {
      dir = path.join(tmpRoot, fresh(), 'files');
      return new LocalFileStore(dir, { remember: false });
    });

    describe('with its recent writes in memory (as services use it)', () => {
      behavesAsFileStore(() => new LocalFileStore(path.join(tmpRoot, fresh(), 'files')));
    });

    it('creates its folder and keeps the bytes as a plain file there', async () => {
      const store = new LocalFileStore(path.join(tmpRoot, fresh(), 'a', 'b'));
      await store.put('x.jpeg', Buffer.from('jpeg bytes'), 'image/jpeg');
      expect(await fs.readFile(path.join(store.dir, 'x.jpeg'), 'utf8')).to.equal('jpeg bytes');
    });

    it('leaves no temporary files behind and writes nothing outside its folder', async () => {
      const store = new LocalFileStore(dir);
      await Promise.all([store.put('p.jpeg', randomBytes(5000), 'image/jpeg'), store.put('q.png', randomBytes(5000), 'image/png')]);
      await rejection(store.put('../outside.jpeg', Buffer.from('x'), 'image/jpeg'));
      expect((await fs.readdir(dir)).sort()).to.deep.equal(['.types', 'p.jpeg', 'q.png']);
      expect(await fs.readdir(path.dirname(dir))).to.deep.equal(['files']);
    });

    it('never shows a reader of the folder a partly written file', async () => {
      const store = new LocalFileStore(dir);
      const a = Buffer.alloc(2 * 1024 * 1024, 'a');
      const b = Buffer.alloc(3 * 1024 * 1024, 'b');
      await store.put('big.bin', a, 'application/octet-stream');
      let writing = true;
      const writer = (async () => {
        for (let i = 0; i < 10; i++) await store.put('big.bin', i % 2 ? a : b, 'application/octet-stream');
        writing = false;
      })();
      let reads = 0;
      // Read from the folder, as another process does (this one's recent writes are in memory).
      while (writing) {
        const got = await fs.readFile(path.join(dir, 'big.bin'));
        expect(got.equals(a) || got.equals(b)).to.equal(true);
        reads++;
      }
      await writer;
      expect(reads).to.be.greaterThan(0);
    });
  });

  describe('GcsFileStore (against the fake GCS server)', () => {
    // The bucket itself: this process's recent writes are not kept in memory.
    behavesAsFileStore(() => new GcsFileStore({ bucket: 'snap-test', prefix: `${fresh()}/`, apiEndpoint: gcs.endpoint, projectId: 'test-project', remember: false }));

    it('uploads with one multipart request for prefix+name in the right bucket', async () => {
      const prefix = `${fresh()}/shots/`;
      const store = new GcsFileStore({ bucket: 'snap-test', prefix, apiEndpoint: gcs.endpoint });
      const data = randomBytes(2048);
      const before = gcs.requests.length;
      await store.put('Ab3x9.jpeg', data, 'image/jpeg');
      const sent = gcs.requests.slice(before);
      expect(sent).to.have.length(1);
      const url = new URL(sent[0].url, gcs.endpoint);
      expect(sent[0].method).to.equal('POST');
      expect(url.pathname).to.equal('/upload/storage/v1/b/snap-test/o');
      expect(url.searchParams.get('uploadType')).to.equal('multipart');
      expect(url.searchParams.get('name')).to.equal(`${prefix}Ab3x9.jpeg`);
      const stored = gcs.objects.get(`snap-test/${prefix}Ab3x9.jpeg`);
      expect(stored!.contentType).to.equal('image/jpeg');
      expect(stored!.data.equals(data)).to.equal(true);
    });

    it('reads an object with one media request and maps the 404 of a missing one to null', async () => {
      const prefix = `${fresh()}/`;
      gcs.objects.set(`snap-test/${prefix}seeded.png`, { data: Buffer.from('png'), contentType: 'image/png' });
      const store = new GcsFileStore({ bucket: 'snap-test', prefix, apiEndpoint: gcs.endpoint });
      const before = gcs.requests.length;
      expect(await store.get('seeded.png')).to.deep.equal({ data: Buffer.from('png'), contentType: 'image/png' });
      expect(await store.get('missing.png')).to.equal(null);
      expect(gcs.requests.slice(before)).to.deep.equal([
        { method: 'GET', url: `/storage/v1/b/snap-test/o/${encodeURIComponent(`${prefix}seeded.png`)}?alt=media` },
        { method: 'GET', url: `/storage/v1/b/snap-test/o/${encodeURIComponent(`${prefix}missing.png`)}?alt=media` },
      ]);
    });

    it('keeps stores with different prefixes apart', async () => {
      const one = new GcsFileStore({ bucket: 'snap-test', prefix: `${fresh()}/`, apiEndpoint: gcs.endpoint });
      const two = new GcsFileStore({ bucket: 'snap-test', prefix: `${fresh()}/`, apiEndpoint: gcs.endpoint });
      await one.put('x.jpeg', Buffer.from('one'), 'image/jpeg');
      expect(await two.get('x.jpeg')).to.equal(null);
      await two.delete('x.jpeg');
      expect((await one.get('x.jpeg'))!.data.toString()).to.equal('one');
    });

    it('retries an upload and a read that hit a passing server error', async () => {
      const store = new GcsFileStore({ bucket: 'snap-test', prefix: `${fresh()}/`, apiEndpoint: gcs.endpoint, remember: false });
      gcs.failNext(1, 503);
      await store.put('retry.jpeg', Buffer.from('after retry'), 'image/jpeg');
      gcs.failNext(1, 503);
      expect((await store.get('retry.jpeg'))!.data.toString()).to.equal('after retry');
    });

    it('reports other server errors instead of treating them as missing', async () => {
      const store = new GcsFileStore({ bucket: 'snap-test', prefix: `${fresh()}/`, apiEndpoint: gcs.endpoint });
      gcs.failNext(1, 403);
      const err = await rejection(store.get('x.jpeg'));
      expect((err as Error & { code?: number }).code).to.equal(403);
    });
  });

  describe('RecentWrites (what this process wrote in the last seconds, in memory)', () => {
    it('answers a file this process has just written from memory, to every store of that folder in the process', async () => {
      const dir = path.join(tmpRoot, fresh(), 'files');
      const writer = new LocalFileStore(dir);
      await writer.put('r.jpeg', Buffer.from('recent'), 'image/jpeg');
      // Gone from the disk behind the stores' backs: only memory can still answer it.
      await fs.rm(path.join(dir, 'r.jpeg'));
      expect(await writer.get('r.jpeg')).to.deep.equal({ data: Buffer.from('recent'), contentType: 'image/jpeg' });
      expect(await new LocalFileStore(dir).get('r.jpeg')).to.deep.equal({ data: Buffer.from('recent'), contentType: 'image/jpeg' });
      expect(await new LocalFileStore(dir, { remember: false }).get('r.jpeg')).to.equal(null);
      expect(await new LocalFileStore(path.join(tmpRoot, fresh(), 'files')).get('r.jpeg')).to.equal(null);
    });

    it('forgets a file the moment a store of the process deletes it', async () => {
      const dir = path.join(tmpRoot, fresh(), 'files');
      await new LocalFileStore(dir).put('d.jpeg', Buffer.from('doomed'), 'image/jpeg');
      await new LocalFileStore(dir).delete('d.jpeg');
      expect(await new LocalFileStore(dir).get('d.jpeg')).to.equal(null);
    });

    it('reads a Cloud Storage object it has just uploaded without a request', async () => {
      const prefix = `${fresh()}/`;
      const store = new GcsFileStore({ bucket: 'snap-test', prefix, apiEndpoint: gcs.endpoint });
      await store.put('u.jpeg', Buffer.from('uploaded'), 'image/jpeg');
      const before = gcs.requests.length;
      expect((await store.get('u.jpeg'))!.data.toString()).to.equal('uploaded');
      expect(gcs.requests.length).to.equal(before);
    });

    it('keeps each file for KEEP_MS, only files up to MAX_FILE_BYTES, at most MAX_BYTES in all (the oldest go first)', () => {
      let now = 0;
      const recent = new RecentWrites(() => now);
      const file = (bytes: number) => ({ data: Buffer.alloc(bytes), contentType: 'image/jpeg' });
      recent.remember('a', file(10));
      now = RecentWrites.KEEP_MS - 1;
      expect(recent.recall('a')).to.not.equal(null);
      now = RecentWrites.KEEP_MS;
      expect(recent.recall('a')).to.equal(null);
      recent.remember('big', file(RecentWrites.MAX_FILE_BYTES + 1));
      expect(recent.recall('big')).to.equal(null);
      // Five files a little over a fifth of the total each: the oldest goes.
      const names = ['p', 'q', 'r', 's', 't'];
      for (const name of names) recent.remember(name, file(RecentWrites.MAX_BYTES / 5 + 1));
      expect(names.map((n) => recent.recall(n) !== null)).to.deep.equal([false, true, true, true, true]);
    });
  });

  describe('createFileStore', () => {
    it('uses DATA_DIR/files on local disk when STORAGE_URL is unset', async () => {
      const dataDir = path.join(tmpRoot, fresh());
      const store = createFileStore(loadConfig({ DATA_DIR: dataDir }));
      expect(store).to.be.instanceOf(LocalFileStore);
      expect((store as LocalFileStore).dir).to.equal(path.join(dataDir, 'files'));
      expect((await fs.stat(path.join(dataDir, 'files'))).isDirectory()).to.equal(true);
    });

    it('uses the given folder for a file:// URL', () => {
      const dir = path.join(tmpRoot, fresh(), 'shared volume');
      const store = createFileStore(loadConfig({ DATA_DIR: tmpRoot, STORAGE_URL: `file://${dir.replace(/ /g, '%20')}/` }));
      expect(store).to.be.instanceOf(LocalFileStore);
      expect((store as LocalFileStore).dir).to.equal(dir);
    });

    it('uses Cloud Storage for a gs:// URL, the path being a folder inside the bucket', async () => {
      const folder = fresh();
      const store = createFileStore(loadConfig({ DATA_DIR: tmpRoot, STORAGE_URL: `gs://snap-bucket/${folder}/shots`, GCS_API_ENDPOINT: gcs.endpoint }));
      expect(store).to.be.instanceOf(GcsFileStore);
      expect((store as GcsFileStore).bucketName).to.equal('snap-bucket');
      expect((store as GcsFileStore).prefix).to.equal(`${folder}/shots/`);
      await store.put('k.jpeg', Buffer.from('k'), 'image/jpeg');
      expect(gcs.objects.has(`snap-bucket/${folder}/shots/k.jpeg`)).to.equal(true);
    });

    it('puts objects at the top of the bucket for a bare gs://bucket', () => {
      const store = createFileStore(loadConfig({ DATA_DIR: tmpRoot, STORAGE_URL: 'gs://snap-bucket' }));
      expect(store).to.be.instanceOf(GcsFileStore);
      expect((store as GcsFileStore).prefix).to.equal('');
    });

    it('stops with a message naming STORAGE_URL when it has no bucket', () => {
      expect(() => createFileStore(loadConfig({ DATA_DIR: tmpRoot, STORAGE_URL: 'gs:///x' }))).to.throw(/STORAGE_URL/);
    });
  });
});
