/**
 * The behaviour every FileStore must show, for the suites of each backend (storage.unit.test.ts:
 * local disk; storage.test.ts: Cloud Storage through the fake GCS server).
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { FileStore } from '../../services/shared/storage';

export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the promise to reject');
}

let counter = 0;
export const fresh = () => `run${++counter}-${randomBytes(4).toString('hex')}`;

/** The behaviour every FileStore must show; `make` returns a new, empty store. */
export function behavesAsFileStore(make: () => FileStore): void {
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
