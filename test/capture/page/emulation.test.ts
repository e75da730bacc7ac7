/**
 * dark_mode, reduced_motion, media_type and device presets (services/capture/page/emulation.ts)
 * on a real browser, against local pages that style themselves by those media features the
 * way real sites do; plus GET /devices and the values refused.
 */
import type http from 'node:http';
import { expect } from 'chai';
import { DEVICES } from '../../../services/shared/devices';
import { expectEnvelope } from '../../support/errors';
import { request } from '../../support/http';
import { type LocalServer, servePages } from '../../support/local-server';
import { imageSize, pixel, snapSuite } from '../../support/capture-helpers';

const page = (style: string, body: string) =>
  `<!DOCTYPE html><html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><style>html,body{margin:0;padding:0}${style}</style></head><body>${body}</body></html>`;

const PAGES: Record<string, string> = {
  // A site with a dark theme: white by default, black under prefers-color-scheme: dark.
  '/scheme': page('body{background:rgb(255,255,255);height:100vh}@media (prefers-color-scheme: dark){body{background:rgb(0,0,0)}}', '<p>theme</p>'),
  // A banner that animates unless reduced motion is asked (red), green when it is; a block that is blue on
  // screen and green in print.
  '/media': page(
    '#motion{width:100px;height:100px;background:rgb(255,0,0)}@media (prefers-reduced-motion: reduce){#motion{background:rgb(0,255,0)}}' +
      '#print{width:100px;height:100px;background:rgb(0,0,255)}@media print{#print{background:rgb(0,255,0)}}',
    '<div id="motion"></div><div id="print"></div>',
  ),
  // What the page sees of the device it runs on, written into the document.
  '/device': page(
    '',
    '<pre id="seen"></pre><script>document.getElementById("seen").textContent = JSON.stringify({ ua: navigator.userAgent, dpr: devicePixelRatio, ' +
      'coarse: matchMedia("(pointer: coarse)").matches, touch: navigator.maxTouchPoints, width: innerWidth, height: innerHeight, platform: navigator.platform, ' +
      'hints: navigator.userAgentData ? { mobile: navigator.userAgentData.mobile, platform: navigator.userAgentData.platform } : null });</script>',
  ),
  // A page written for desktops only (no meta viewport): a mobile browser lays it out 980 px wide and zooms it out.
  '/desktop-only': `<!DOCTYPE html><html><body><p id="w"></p><script>document.getElementById("w").textContent = "layout " + innerWidth;</script></body></html>`,
};

interface Seen {
  ua: string;
  dpr: number;
  coarse: boolean;
  touch: number;
  width: number;
  height: number;
  platform: string;
  hints: { mobile: boolean; platform: string } | null;
}

describe('emulation: dark_mode, reduced_motion, media_type and device presets', function () {
  this.timeout(120_000);
  let site: LocalServer;
  const seenHeaders: http.IncomingHttpHeaders[] = [];
  before(async () => {
    site = await servePages(({ req, path }) => {
      if (path === '/device') seenHeaders.push(req.headers);
      const body = PAGES[path];
      return body === undefined ? undefined : { body };
    });
  });
  after(() => site.stop());
  // One browser: a capture that follows another lands on the same one.
  const t = snapSuite({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1', CAPTURE_TIMEOUT_MS: '10000' });
  const at = (path: string) => `${site.origin}${path}`;
  const seenBy = async (params: Record<string, string | number | boolean>): Promise<Seen> => {
    const r = await t.snap({ url: at('/device'), html_only: true, ...params });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    const m = /<pre id="seen">(.*?)<\/pre>/.exec(String(r.body.html));
    return JSON.parse(m![1]!.replace(/&quot;/g, '"').replace(/&amp;/g, '&')) as Seen;
  };

  it('dark_mode=true shows the dark theme in the pixels; the next capture on the same browser is light again', async () => {
    const dark = await t.snap({ url: at('/scheme'), dark_mode: true, image_format: 'png', page_width: 400, page_height: 300 });
    expect(dark.status).to.equal(200);
    expect(await pixel(dark.raw, 200, 200)).to.deep.equal([0, 0, 0]);
    const plain = await t.snap({ url: at('/scheme'), image_format: 'png', page_width: 400, page_height: 300 });
    expect(await pixel(plain.raw, 200, 200)).to.deep.equal([255, 255, 255]);
  });

  it('reduced_motion=true and media_type=print are seen by the page (its styles for them show in the pixels)', async () => {
    const plain = await t.snap({ url: at('/media'), image_format: 'png', page_width: 400, page_height: 300 });
    expect(await pixel(plain.raw, 50, 50), 'motion, plain').to.deep.equal([255, 0, 0]);
    expect(await pixel(plain.raw, 50, 150), 'print block, plain').to.deep.equal([0, 0, 255]);
    const reduced = await t.snap({ url: at('/media'), reduced_motion: true, image_format: 'png', page_width: 400, page_height: 300 });
    expect(await pixel(reduced.raw, 50, 50), 'motion, reduced_motion').to.deep.equal([0, 255, 0]);
    expect(await pixel(reduced.raw, 50, 150), 'print block, reduced_motion').to.deep.equal([0, 0, 255]);
    const print = await t.snap({ url: at('/media'), media_type: 'print', image_format: 'png', page_width: 400, page_height: 300 });
    expect(await pixel(print.raw, 50, 50), 'motion, print').to.deep.equal([255, 0, 0]);
    expect(await pixel(print.raw, 50, 150), 'print block, print').to.deep.equal([0, 255, 0]);
  });

  it('device=Pixel 9: the page sees its user agent, scale, touch, mobile client hints; the image is its viewport × scale', async () => {
    const pixel9 = DEVICES.find((d) => d.name === 'Pixel 9')!;
    seenHeaders.length = 0;
    const seen = await seenBy({ device: 'pixel 9' });
    expect(seen.ua).to.equal(pixel9.user_agent);
    expect(seen.dpr).to.equal(3);
    expect(seen.coarse).to.equal(true);
    expect(seen.touch).to.be.greaterThan(0);
    expect([seen.width, seen.height]).to.deep.equal([360, 732]);
    expect(seen.hints).to.deep.equal({ mobile: true, platform: 'Android' });
    expect(seen.platform).to.equal('Linux armv8l');
    expect(seenHeaders.at(-1)?.['sec-ch-ua-mobile']).to.equal('?1');
    expect(seenHeaders.at(-1)?.['sec-ch-ua-platform']).to.equal('"Android"');

    const image = await t.snap({ url: at('/scheme'), device: 'Pixel 9', image_format: 'png' });
    expect(await imageSize(image.raw)).to.deep.equal([360 * 3, 732 * 3]);
    // Mobile emulation: a page without a meta viewport gets a mobile browser's 980 px layout.
    const desktopOnly = await t.snap({ url: at('/desktop-only'), device: 'Pixel 9', html_only: true });
    expect(desktopOnly.body.html).to.contain('layout 980');

    // The next capture on the same browser is a desktop one again.
    const after = await seenBy({});
    expect(after.coarse).to.equal(false);
    expect(after.dpr).to.equal(1);
    expect(after.ua).not.to.equal(pixel9.user_agent);
  });

  it('device=iPhone 15 Pro: the page sees Safari on an iPhone (navigator.platform "iPhone", no navigator.userAgentData, no client hints)', async () => {
    seenHeaders.length = 0;
    const seen = await seenBy({ device: 'iPhone 15 Pro' });
    expect(seen.ua).to.contain('iPhone');
    expect(seen.platform).to.equal('iPhone');
    // What a page's "is this a phone?" check reads first: Safari has no userAgentData.
    expect(seen.hints).to.equal(null);
    expect(seenHeaders.at(-1)?.['sec-ch-ua-mobile']).to.equal(undefined);
    // The next capture on the same browser sees the browser's own again.
    const after = await seenBy({});
    expect(after.platform).to.equal('Linux x86_64');
    expect(after.hints).not.to.equal(null);
  });

  it('page_width, page_height, scale_factor and user_agent given with a device override the preset', async () => {
    const seen = await seenBy({ device: 'iPhone 15 Pro', page_width: 500, page_height: 400, scale_factor: 2, user_agent: 'OwnAgent/1.0' });
    expect(seen.ua).to.equal('OwnAgent/1.0');
    expect(seen.dpr).to.equal(2);
    expect([seen.width, seen.height]).to.deep.equal([500, 400]);
    // The rest of the preset stays: touch.
    expect(seen.coarse).to.equal(true);
    const image = await t.snap({ url: at('/scheme'), device: 'iPhone 15 Pro', page_width: 500, image_format: 'png' });
    expect(await imageSize(image.raw)).to.deep.equal([500 * 3, 659 * 3]);
  });

  it('GET /devices lists every preset, in the envelope of the other lists', async () => {
    const r = await request<{ success: boolean; count: number; devices: Array<Record<string, unknown>> }>(
      t.sys.base,
      'GET',
      `/devices?access_token=${t.token}`,
    );
    expect(r.status).to.equal(200);
    expect(r.body.success).to.equal(true);
    expect(r.body.count).to.equal(DEVICES.length).and.be.greaterThan(100);
    const iphone = r.body.devices.find((d) => d.name === 'iPhone 15 Pro');
    expect(iphone).to.include({ width: 393, height: 659, scale_factor: 3, mobile: true, touch: true, client_hints: null });
    const pixel9 = r.body.devices.find((d) => d.name === 'Pixel 9') as { client_hints: { platform: string; model: string; mobile: boolean } };
    expect(pixel9.client_hints).to.include({ platform: 'Android', model: 'Pixel 9', mobile: true });
    // In the OpenAPI document, with the published record schema, and the options with their values.
    const api = await request<{ paths: Record<string, { get?: { responses: Record<string, unknown> } }>; components?: unknown }>(
      t.sys.base,
      'GET',
      '/openapi.json',
    );
    const doc = JSON.stringify(api.body);
    expect(api.body.paths['/devices']?.get, 'GET /devices in /openapi.json').to.not.equal(undefined);
    expect(JSON.stringify(api.body.paths['/devices'])).to.contain('client_hints');
    for (const name of ['"dark_mode"', '"reduced_motion"', '"media_type"', '"device"']) expect(doc).to.contain(name);
  });

  it('refuses bad values with 400 invalid_parameter; an unknown device names GET /devices', async () => {
    expectEnvelope(await t.snap({ url: at('/scheme'), device: 'Nokia 3310' }), 400, 'invalid_parameter', 'device', 'GET /devices');
    expectEnvelope(await t.snap({ url: at('/scheme'), device: 'iphone 15 pr' }), 400, 'invalid_parameter', 'did you mean iPhone 15 Pro');
    expectEnvelope(await t.snap({ url: at('/scheme'), media_type: 'tv' }), 400, 'invalid_parameter', 'media_type', 'screen, print');
    expectEnvelope(await t.snap({ url: at('/scheme'), dark_mode: 'sometimes' }), 400, 'invalid_parameter', 'dark_mode');
    expectEnvelope(await t.snap({ url: at('/scheme'), reduced_motion: 'maybe' }), 400, 'invalid_parameter', 'reduced_motion');
  });
});
