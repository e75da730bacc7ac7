/**
 * FileStore on Cloud Storage, against the fake GCS server (test/support/fake-gcs-server.ts):
 * the behaviour every store shows, what it sends, retries, its recent uploads read without a
 * request, and createFileStore's gs:// store writing to the bucket.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../services/shared/config';
import { createFileStore, GcsFileStore } from '../../services/shared/storage';
import { type FakeGcs, startFakeGcs } from '../support/fake-gcs-server';
import { behavesAsFileStore, fresh, rejection } from './file-store-behaviour';

let gcs: FakeGcs;
let tmpRoot: string;
const savedEmulatorHost = process.env.STORAGE_EMULATOR_HOST;

describe('FileStore on Cloud Storage (the fake GCS server)', () => {
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

  describe('GcsFileStore (against the fake GCS server)', () => {
    // The bucket itself: this process's recent writes are not kept in memory.
    behavesAsFileStore(
      () => new GcsFileStore({ bucket: 'snap-test', prefix: `${fresh()}/`, apiEndpoint: gcs.endpoint, projectId: 'test-project', remember: false }),
    );

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
    it('reads a Cloud Storage object it has just uploaded without a request', async () => {
      const prefix = `${fresh()}/`;
      const store = new GcsFileStore({ bucket: 'snap-test', prefix, apiEndpoint: gcs.endpoint });
      await store.put('u.jpeg', Buffer.from('uploaded'), 'image/jpeg');
      const before = gcs.requests.length;
      expect((await store.get('u.jpeg'))!.data.toString()).to.equal('uploaded');
      expect(gcs.requests.length).to.equal(before);
    });
  });

  describe('createFileStore', () => {
    it('uses Cloud Storage for a gs:// URL, the path being a folder inside the bucket', async () => {
      const folder = fresh();
      const store = createFileStore(loadConfig({ DATA_DIR: tmpRoot, STORAGE_URL: `gs://snap-bucket/${folder}/shots`, GCS_API_ENDPOINT: gcs.endpoint }));
      expect(store).to.be.instanceOf(GcsFileStore);
      expect((store as GcsFileStore).bucketName).to.equal('snap-bucket');
      expect((store as GcsFileStore).prefix).to.equal(`${folder}/shots/`);
      await store.put('k.jpeg', Buffer.from('k'), 'image/jpeg');
      expect(gcs.objects.has(`snap-bucket/${folder}/shots/k.jpeg`)).to.equal(true);
    });
  });
});
