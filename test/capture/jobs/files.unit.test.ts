/**
 * CaptureFiles: a capture's files are stored all or nothing; an image's thumbnail is named
 * with it and made when first asked for, a PDF's with the capture (a real LocalFileStore in
 * a temporary folder; a failing store where a failure is the point).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import sharp from 'sharp';
import sinon from 'sinon';
import { CaptureFiles } from '../../../services/capture/jobs/files';
import type { CaptureOutput } from '../../../services/capture/page/page-capture';
import { type FileStore, LocalFileStore } from '../../../services/shared/storage';

const OPTIONS = { url: 'https://example.com/' };

async function jpegOutput(): Promise<CaptureOutput> {
  const image = await sharp({ create: { width: 800, height: 500, channels: 3, background: { r: 0, g: 0, b: 255 } } })
    .jpeg()
    .toBuffer();
  return { image, contentType: 'image/jpeg' };
}

describe('CaptureFiles (unit: a local store in a temporary folder)', () => {
  let dir: string;
  let store: LocalFileStore;
  let files: CaptureFiles;

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'capture-files-'));
    store = new LocalFileStore(dir);
    files = new CaptureFiles(store);
  });
  afterEach(() => {
    sinon.restore();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const stored = () => fs.readdirSync(dir).filter((f) => !f.startsWith('.'));

  it('stores the image and names its thumbnail, which it does not make yet', async () => {
    const put = sinon.spy(store, 'put');
    const out = await jpegOutput();
    const rendering = files.render(OPTIONS)(out);
    // Not awaited yet: the image's write is already under way.
    sinon.assert.calledOnceWithExactly(put, sinon.match(/\.jpeg$/), out.image as Buffer, 'image/jpeg');
    const written = await files.write(await rendering);
    expect(written.content_type).to.equal('image/jpeg');
    expect(written.thumb_name).to.match(/^[A-Za-z0-9]{24}-t400\.jpeg$/);
    expect(stored()).to.deep.equal([written.image_name]);
    expect((await store.get(written.image_name ?? ''))?.data.equals(out.image as Buffer)).to.equal(true);
  });

  it('makes and stores a named thumbnail from the stored image when asked for', async () => {
    const written = await files.write(await files.render(OPTIONS)(await jpegOutput()));
    expect(await files.thumbnailOf(written.thumb_name!, written.image_name!)).to.equal(true);
    expect(stored().sort()).to.deep.equal([written.image_name, written.thumb_name].sort());
    const thumb = await store.get(written.thumb_name!);
    expect(thumb?.contentType).to.equal('image/jpeg');
    expect(await sharp(thumb?.data).metadata()).to.include({ width: 400, height: 250, format: 'jpeg' });
  });

  it('makes the thumbnail thumb_width wide, and with thumb_height cut from the top of the image', async () => {
    // Red above, blue below.
    const image = await sharp({ create: { width: 800, height: 1000, channels: 3, background: { r: 0, g: 0, b: 255 } } })
      .composite([{ input: { create: { width: 800, height: 300, channels: 3, background: { r: 255, g: 0, b: 0 } } }, top: 0, left: 0 }])
      .png()
      .toBuffer();
    const out = { image, contentType: 'image/png' };
    const wide = await files.write(await files.render({ ...OPTIONS, thumb_width: 200 })(out));
    expect(await files.thumbnailOf(wide.thumb_name!, wide.image_name!)).to.equal(true);
    const whole = (await store.get(wide.thumb_name ?? ''))?.data;
    expect(await sharp(whole).metadata()).to.include({ width: 200, height: 250, format: 'png' });
    const cut = await files.write(await files.render({ ...OPTIONS, thumb_width: 200, thumb_height: 50 })(out));
    expect(await files.thumbnailOf(cut.thumb_name!, cut.image_name!)).to.equal(true);
    const top = (await store.get(cut.thumb_name ?? ''))?.data;
    expect(await sharp(top).metadata()).to.include({ width: 200, height: 50 });
    const { data } = await sharp(top).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    expect([...data.subarray(0, 3)]).to.deep.equal([255, 0, 0]);
    expect([...data.subarray(data.length - 3)]).to.deep.equal([255, 0, 0]);
  });

  it('makes a thumbnail asked for several times at once once', async () => {
    const written = await files.write(await files.render(OPTIONS)(await jpegOutput()));
    const put = sinon.spy(store, 'put');
    const made = await Promise.all([1, 2, 3].map(() => files.thumbnailOf(written.thumb_name!, written.image_name!)));
    expect(made).to.deep.equal([true, true, true]);
    sinon.assert.calledOnceWithExactly(put, written.thumb_name!, sinon.match.instanceOf(Buffer), 'image/jpeg');
  });

  it("makes no thumbnail when the image is gone, or from a name that is not a thumbnail's", async () => {
    const written = await files.write(await files.render(OPTIONS)(await jpegOutput()));
    expect(await files.thumbnailOf(written.image_name!, written.image_name!)).to.equal(false);
    await files.remove({ ...written, thumb_name: null });
    expect(await files.thumbnailOf(written.thumb_name!, written.image_name!)).to.equal(false);
    expect(stored()).to.deep.equal([]);
  });

  it("makes a PDF's thumbnail with the capture, from the raster beside it", async () => {
    const raster = (await jpegOutput()).image as Buffer;
    const written = await files.write(
      await files.render(OPTIONS)({ image: Buffer.from('%PDF-1.4 ...'), contentType: 'application/pdf', thumbnailSource: raster }),
    );
    expect(written.content_type).to.equal('application/pdf');
    expect(stored().sort()).to.deep.equal([written.image_name, written.thumb_name].sort());
    expect(await sharp((await store.get(written.thumb_name!))?.data).metadata()).to.include({ width: 400, height: 250, format: 'jpeg' });
  });

  it('removes the PDF when its thumbnail cannot be made', async () => {
    const rendering = files.render(OPTIONS)({
      image: Buffer.from('%PDF-1.4 ...'),
      contentType: 'application/pdf',
      thumbnailSource: Buffer.from('not an image'),
    });
    let failed: unknown = null;
    await rendering.catch((err: unknown) => {
      failed = err;
    });
    expect(failed).to.be.instanceOf(Error);
    expect(stored()).to.deep.equal([]);
  });

  it('removes the PDF when its thumbnail cannot be stored', async () => {
    // The first write (the PDF) goes through; the next (the thumbnail) fails.
    let puts = 0;
    const failing: FileStore = {
      put: (name, data, type) => (puts++ === 0 ? store.put(name, data, type) : Promise.reject(new Error('disk full'))),
      get: (name) => store.get(name),
      delete: (name) => store.delete(name),
      close: () => store.close(),
    };
    const writer = new CaptureFiles(failing);
    const raster = (await jpegOutput()).image as Buffer;
    const rendered = await writer.render(OPTIONS)({ image: Buffer.from('%PDF-1.4 ...'), contentType: 'application/pdf', thumbnailSource: raster });
    let failed: Error | null = null;
    await writer.write(rendered).catch((err: Error) => {
      failed = err;
    });
    expect(failed).to.have.property('message', 'disk full');
    expect(stored()).to.deep.equal([]);
  });

  it('discards what a rendered capture wrote when it is not recorded after all', async () => {
    const rendered = await files.render(OPTIONS)(await jpegOutput());
    await rendered.written;
    expect(stored()).to.have.length(1);
    await files.discard(rendered);
    expect(stored()).to.deep.equal([]);
  });

  it('stores an html_only capture as its HTML alone, without a thumbnail', async () => {
    const written = await files.write(await files.render({ ...OPTIONS, html_only: true })({ html: '<p>hi</p>' }));
    expect(written).to.include({ image_name: null, thumb_name: null, content_type: 'text/html; charset=utf-8' });
    expect((await store.get(written.html_name ?? ''))?.data.toString()).to.equal('<p>hi</p>');
  });

  const META = {
    url: 'https://example.com/',
    title: 'T',
    description: null,
    language: 'en',
    canonical_url: null,
    open_graph: {},
    twitter: {},
    icons: [],
    status_code: 200,
    response_headers: {},
    redirects: [],
    fonts: [],
  };

  it("stores markdown=true's and metadata=true's files named like the image, and removes them with it", async () => {
    const out = { ...(await jpegOutput()), markdown: '# T\n', metadata: META };
    const written = await files.write(await files.render(OPTIONS)(out));
    const id = written.image_name?.replace(/\.jpeg$/, '');
    expect([written.markdown_name, written.metadata_name]).to.deep.equal([`${id}.md`, `${id}.metadata.json`]);
    const md = await store.get(written.markdown_name ?? '');
    expect([md?.contentType, md?.data.toString()]).to.deep.equal(['text/markdown; charset=utf-8', '# T\n']);
    expect(JSON.parse((await store.get(written.metadata_name ?? ''))?.data.toString() ?? '')).to.deep.equal(META);
    expect(stored().sort()).to.deep.equal([written.image_name, written.markdown_name, written.metadata_name].sort());
    await files.remove(written);
    expect(stored()).to.deep.equal([]);
  });

  it('removes the image and the Markdown when the metadata cannot be stored', async () => {
    const failing: FileStore = {
      put: (name, data, type) => (name.endsWith('.metadata.json') ? Promise.reject(new Error('disk full')) : store.put(name, data, type)),
      get: (name) => store.get(name),
      delete: (name) => store.delete(name),
      close: () => store.close(),
    };
    const writer = new CaptureFiles(failing);
    const rendered = await writer.render(OPTIONS)({ ...(await jpegOutput()), markdown: '# T\n', metadata: META });
    let failed: Error | null = null;
    await writer.write(rendered).catch((err: Error) => {
      failed = err;
    });
    expect(failed).to.have.property('message', 'disk full');
    expect(stored()).to.deep.equal([]);
  });
});
