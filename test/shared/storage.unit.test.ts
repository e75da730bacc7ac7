/**
 * FileStore on local disk: the behaviour every store shows, the folder's files, this process's
 * recent writes in memory, and createFileStore's choice of store (without contacting one).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { loadConfig } from '../../services/shared/config';
import { createFileStore, GcsFileStore, LocalFileStore, RecentWrites } from '../../services/shared/storage';
import { behavesAsFileStore, fresh, rejection } from './file-store-behaviour';

let tmpRoot: string;

describe('FileStore on local disk', () => {
  before(async () => {
    tmpRoot = await fs.mkdtemp(path.join(os.tmpdir(), 'storage-test-'));
  });

  after(async () => {
    if (tmpRoot) await fs.rm(tmpRoot, { recursive: true, force: true });
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

    it("writes a type file only for a type the name's extension does not stand for, and reads each type back", async () => {
      const store = new LocalFileStore(dir, { remember: false });
      await store.put('shot.jpeg', Buffer.from('jpeg'), 'image/jpeg');
      await store.put('page.md', Buffer.from('# md'), 'text/markdown; charset=utf-8');
      await store.put('data.json', Buffer.from('{}'), 'application/json');
      await store.put('blob.bin', Buffer.from('?'), 'application/x-thing');
      // One file created per capture output: the extension says what it is.
      expect((await fs.readdir(path.join(dir, '.types'))).sort()).to.deep.equal(['blob.bin', 'data.json']);
      const reader = new LocalFileStore(dir, { remember: false });
      expect((await reader.get('shot.jpeg'))?.contentType).to.equal('image/jpeg');
      expect((await reader.get('page.md'))?.contentType).to.equal('text/markdown; charset=utf-8');
      expect((await reader.get('data.json'))?.contentType).to.equal('application/json');
      expect((await reader.get('blob.bin'))?.contentType).to.equal('application/x-thing');
    });

    it("drops a name's old type file when it is written again with its extension's type", async () => {
      const store = new LocalFileStore(dir, { remember: false });
      await store.put('again.png', Buffer.from('not yet a png'), 'application/octet-stream');
      await store.put('again.png', Buffer.from('png'), 'image/png');
      expect(await store.get('again.png')).to.deep.equal({ data: Buffer.from('png'), contentType: 'image/png' });
      expect(await fs.readdir(path.join(dir, '.types'))).to.deep.equal([]);
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

    it('puts objects at the top of the bucket for a bare gs://bucket', () => {
      const store = createFileStore(loadConfig({ DATA_DIR: tmpRoot, STORAGE_URL: 'gs://snap-bucket' }));
      expect(store).to.be.instanceOf(GcsFileStore);
      expect((store as GcsFileStore).prefix).to.equal('');
    });

    it('stops with a message naming STORAGE_URL when it has no bucket', () => {
      expect(() => createFileStore(loadConfig({ DATA_DIR: tmpRoot, STORAGE_URL: 'gs:///x' }))).to.throw(/STORAGE_URL/);
    });

    it("stops with a message naming STORAGE_URL when it names no bucket Cloud Storage could have (the Kubernetes example's placeholder)", () => {
      for (const bad of ['gs://CHANGE-ME-bucket/snapservice', 'gs://ab/x', 'gs://-bucket', 'gs://my bucket/x'.replace(' ', '%20')]) {
        expect(() => createFileStore(loadConfig({ DATA_DIR: tmpRoot, STORAGE_URL: bad })), bad).to.throw(
          /STORAGE_URL names .*cannot be a Cloud Storage bucket/,
        );
      }
      expect(createFileStore(loadConfig({ DATA_DIR: tmpRoot, STORAGE_URL: 'gs://snap_bucket.example-1/x' }))).to.be.instanceOf(GcsFileStore);
    });
  });
});
