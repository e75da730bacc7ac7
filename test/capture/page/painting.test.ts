/**
 * What the picture waits for before it is taken, on the real Grid: a loading="lazy" image at
 * the bottom of the first screen (a gallery's first row) starts loading only once layout shows
 * it in view, after the load event; the capture waits for it rather than taking its empty box.
 * With wait_for, the drawing is looked at in wait_for's own call: a page still drawing is waited
 * for as without it, and a settled one is read there (its status and address with it).
 */
import { expect } from 'chai';
import { pixel, snapSuite } from '../../support/capture-helpers';
import { type LocalServer, servePages } from '../../support/local-server';

const GREEN = '<svg xmlns="http://www.w3.org/2000/svg" width="200" height="150"><rect width="200" height="150" fill="rgb(0,160,0)"/></svg>';

/** A 600 px tall heading block, then a lazy image whose top 100 px are in an 800x700 viewport. */
const GALLERY =
  '<!doctype html><html><head><style>html,body{margin:0;background:#fff}header{height:600px;background:#eee}' +
  'img{display:block;width:200px;height:150px;background:rgb(200,200,200)}</style></head><body>' +
  '<header><h1>Gallery</h1></header><img src="/thumb.svg?slow" alt="" loading="lazy" width="200" height="150"></body></html>';

describe('painting: what a viewport capture waits for (real Grid)', function () {
  this.timeout(60_000);
  const t = snapSuite({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1' });
  let site: LocalServer;
  before(async () => {
    site = await servePages(({ path }) => {
      if (path === '/gallery') return { body: GALLERY };
      if (path === '/gone') return { status: 410, body: '<!doctype html><html><body><main id="ready">gone, and said so</main></body></html>' };
      // A thumbnail made on first request: it takes a moment.
      if (path === '/thumb.svg') return { body: GREEN, headers: { 'content-type': 'image/svg+xml', 'cache-control': 'no-store' }, delayMs: 800 };
      return undefined;
    });
  });
  after(() => site.stop());

  it('a lazy image in view that starts after the load event is drawn, not its empty box', async () => {
    const r = await t.snap({ url: `${site.origin}/gallery`, image_format: 'png', page_width: 800, page_height: 700 });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    // The image's visible top (y 600-700), left column: green, not the grey placeholder.
    expect(await pixel(r.raw, 100, 650)).to.deep.equal([0, 160, 0]);
  });

  it('with wait_for on an element there from the start, the lazy image in view is still waited for', async () => {
    const r = await t.snap({ url: `${site.origin}/gallery`, image_format: 'png', page_width: 800, page_height: 700, wait_for: 'header h1' });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(await pixel(r.raw, 100, 650)).to.deep.equal([0, 160, 0]);
  });

  it("with wait_for on a page already drawn, the record keeps the page's final status and address", async () => {
    const r = await t.snap({ url: `${site.origin}/gone`, wait_for: '#ready', json: true });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(r.body.status_code).to.equal(410);
    expect(r.body.final_url).to.equal(`${site.origin}/gone`);
  });
});
