/**
 * GET/POST /snap end to end against a real Selenium Grid (standalone, Debian Chromium),
 * with fixture pages served locally.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import type { FixtureServer } from '../support/fixtures';
import { type HttpAnswer, jobFinished, request } from '../support/http';
import { gridBrowserDirs, killBrowser, sharedGrid } from '../support/grid';
import { imageSize, pixel, pixelsOf, screenshotsUsed, snapSuite } from '../support/capture-helpers';
import { servePages } from '../support/local-server';
import { expectEnvelope } from '../support/errors';
import { IN_PAGE_POLICY_ONLY } from '../support/backends';

const size = imageSize;

describe('snap on a real Selenium Grid', function () {
  this.timeout(120_000);
  const t = snapSuite({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '2', CAPTURE_TIMEOUT_MS: '8000' });
  const snap = t.snap;
  const used = (key = t.token) => screenshotsUsed(t.sys, key);

  describe('image size and format', () => {
    for (const [w, h] of [
      [800, 600],
      [1280, 720],
      [375, 812],
    ]) {
      it(`is exactly ${w}x${h} for page_width=${w}, page_height=${h}`, async () => {
        const r = await snap({ url: `${t.fx.origin}/plain`, page_width: w, page_height: h, image_format: 'png' });
        expect(r.status).to.equal(200);
        expect(r.headers.get('content-type')).to.equal('image/png');
        expect(await size(r.raw)).to.deep.equal([w, h]);
      });
    }

    it('doubles both sides with scale_factor=2', async () => {
      const r = await snap({ url: `${t.fx.origin}/plain`, page_width: 640, page_height: 480, scale_factor: 2, image_format: 'png' });
      expect(await size(r.raw)).to.deep.equal([1280, 960]);
    });

    it('defaults to a 1920x1000 JPEG', async () => {
      const r = await snap({ url: `${t.fx.origin}/plain` });
      expect(r.headers.get('content-type')).to.equal('image/jpeg');
      expect(r.raw.subarray(0, 3).toString('hex')).to.equal('ffd8ff');
      expect(await size(r.raw)).to.deep.equal([1920, 1000]);
    });

    it("has each capture's own viewport while each browser prepares its next page for the last one's", async () => {
      // Two browsers, three viewports in turn: every capture lands on a page prepared for another one.
      for (let round = 0; round < 2; round++) {
        for (const [w, h, scale, size2] of [
          [640, 480, 1, [640, 480]],
          [1920, 1000, 1, [1920, 1000]],
          [640, 480, 2, [1280, 960]],
        ] as const) {
          const r = await snap({
            url: `${t.fx.origin}/plain`,
            ...(w === 1920 ? {} : { page_width: w, page_height: h, scale_factor: scale }),
            image_format: 'png',
          });
          expect(await size(r.raw), `${w}x${h} at ${scale}x, round ${round + 1}`).to.deep.equal(size2);
        }
      }
    });

    it("captures the page's whole scroll height with fullpage", async () => {
      const r = await snap({ url: `${t.fx.origin}/tall`, page_width: 800, page_height: 600, fullpage: true, image_format: 'png' });
      expect(await size(r.raw)).to.deep.equal([800, 2600]);
    });

    it("captures only the element's box with selectors", async () => {
      const r = await snap({ url: `${t.fx.origin}/plain`, selectors: '#box', image_format: 'png' });
      expect(await size(r.raw)).to.deep.equal([300, 200]);
      expect(await pixel(r.raw, 150, 100)).to.deep.equal([0, 0, 255]);
    });

    it('selectors: an element partly beyond the left or top edge is captured as the page lays it out (its box, the part on the page drawn where it sits)', async () => {
      const doc = (body: string) =>
        `<!DOCTYPE html><html><head><meta charset="utf-8"><style>html{background:rgb(255,255,0)}html,body{margin:0;padding:0}</style></head><body>${body}</body></html>`;
      const [YELLOW, GREEN, BLUE] = ['255,255,0', '50,160,50', '0,0,255'];
      const halves = (a: string, b: string) =>
        `<div style="width:200px;height:100px;background:${a}"></div><div style="width:200px;height:100px;background:${b}"></div>`;
      const site = await servePages(({ path }) => {
        // 400x100, its left 100 px beyond the page's left edge: green, then blue from x=200 of the element.
        if (path === '/left')
          return { body: doc(`<div id="t" style="position:absolute;left:-100px;top:100px;display:flex">${halves('rgb(50,160,50)', 'rgb(0,0,255)')}</div>`) };
        // The same turned on its side, its top 100 px above the page's top.
        if (path === '/top')
          return {
            body: doc(
              `<div id="t" style="position:absolute;left:100px;top:-100px;width:100px">${halves('rgb(50,160,50)', 'rgb(0,0,255)').replace(/width:200px;height:100px/g, 'width:100px;height:200px')}</div>`,
            ),
          };
        // A carousel's track moved left by its first slide (translateX), the second slide showing.
        if (path === '/carousel')
          return {
            body: doc(
              '<div style="position:absolute;left:0;top:100px;width:800px;height:200px;overflow:hidden"><div id="t" style="width:2400px;height:200px;transform:translateX(-800px);display:flex">' +
                ['rgb(220,20,60)', 'rgb(50,160,50)', 'rgb(30,144,255)'].map((c) => `<div style="width:800px;height:200px;background:${c}"></div>`).join('') +
                '</div></div>',
            ),
          };
        return undefined;
      });
      try {
        const shot = async (path: string) => {
          const r = await snap({ url: `${site.origin}${path}`, selectors: '#t', page_width: 800, page_height: 600, image_format: 'png', wait: 0 });
          expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
          return { size: await imageSize(r.raw), px: await pixelsOf(r.raw) };
        };
        // What is beyond the page's edge shows the page's background (yellow), left as above the top.
        const left = await shot('/left');
        expect(left.size).to.deep.equal([400, 100]);
        const row = (p: typeof left.px, xs: number[], y: number) => xs.map((x) => p.at(x, y).join(','));
        expect(row(left.px, [10, 90, 110, 190, 210, 390], 50)).to.deep.equal([YELLOW, YELLOW, GREEN, GREEN, BLUE, BLUE]);
        const top = await shot('/top');
        expect(top.size).to.deep.equal([100, 400]);
        expect([10, 90, 110, 190, 210, 390].map((y) => top.px.at(50, y).join(','))).to.deep.equal([YELLOW, YELLOW, GREEN, GREEN, BLUE, BLUE]);
        // The slide in view where it sits in the track; the slides beyond the carousel's box are not drawn.
        const carousel = await shot('/carousel');
        expect(carousel.size).to.deep.equal([2400, 200]);
        expect(row(carousel.px, [10, 790, 810, 1590, 1610, 2390], 100)).to.deep.equal([YELLOW, YELLOW, GREEN, GREEN, YELLOW, YELLOW]);
      } finally {
        await site.stop();
      }
    });

    it('makes smaller JPEGs at quality 10 than at 90', async () => {
      const low = await snap({ url: `${t.fx.origin}/noisy`, page_width: 800, page_height: 600, quality: 10 });
      const high = await snap({ url: `${t.fx.origin}/noisy`, page_width: 800, page_height: 600, quality: 90 });
      expect(low.raw.length).to.be.below(high.raw.length * 0.6);
    });

    it('writes WebP and PDF with their magic bytes and content types', async () => {
      const webp = await snap({ url: `${t.fx.origin}/plain`, image_format: 'webp' });
      expect(webp.headers.get('content-type')).to.equal('image/webp');
      expect(webp.raw.subarray(0, 4).toString()).to.equal('RIFF');
      expect(webp.raw.subarray(8, 12).toString()).to.equal('WEBP');
      const pdf = await snap({ url: `${t.fx.origin}/plain`, image_format: 'pdf' });
      expect(pdf.headers.get('content-type')).to.equal('application/pdf');
      expect(pdf.raw.subarray(0, 5).toString()).to.equal('%PDF-');
    });
  });

  describe('page options', () => {
    it('css_inject and js_inject change the pixels', async () => {
      const base = { url: `${t.fx.origin}/white`, page_width: 400, page_height: 300, image_format: 'png' };
      expect(await pixel((await snap(base)).raw, 10, 10)).to.deep.equal([255, 255, 255]);
      const css = await snap({ ...base, css_inject: 'div { background: rgb(255, 0, 0) !important; }' });
      expect(await pixel(css.raw, 10, 10)).to.deep.equal([255, 0, 0]);
      const js = await snap({ ...base, js_inject: "document.querySelector('div').style.background = 'rgb(0, 255, 0)'" });
      expect(await pixel(js.raw, 10, 10)).to.deep.equal([0, 255, 0]);
    });

    it('hover_on_selected shows the :hover style of the element', async () => {
      const plain = await snap({ url: `${t.fx.origin}/hover`, selectors: '#btn', image_format: 'png' });
      expect(await pixel(plain.raw, 100, 50)).to.deep.equal([0, 128, 0]);
      const hovered = await snap({ url: `${t.fx.origin}/hover`, selectors: '#btn', hover_on_selected: true, image_format: 'png' });
      expect(await pixel(hovered.raw, 100, 50)).to.deep.equal([255, 0, 0]);
    });

    it('no :hover at the top-left, also where the load event comes long after the document is parsed (the pointer is parked early)', async () => {
      const shot = await snap({ url: `${t.fx.origin}/hover-late-load`, page_width: 400, page_height: 300, image_format: 'png' });
      expect(await pixel(shot.raw, 100, 50)).to.deep.equal([0, 128, 0]);
    });

    it('wait_for waits for late content', async () => {
      const early = await snap({ url: `${t.fx.origin}/late`, html_only: true });
      // The script's own text names the element; only the rendered element counts.
      expect(early.body.html).not.to.contain('<p id="late">');
      const waited = await snap({ url: `${t.fx.origin}/late`, html_only: true, wait_for: '#late' });
      expect(waited.body.html).to.contain('<p id="late">late content</p>');
    });

    it('wait_for answers the moment the element appears: one that exists for 5 ms is seen', async () => {
      const r = await snap({ url: `${t.fx.origin}/flash`, html_only: true, wait_for: '#flash' });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
    });

    it('wait_for still looks again on a page that replaced setTimeout, and sees a state no DOM change announces (:checked)', async () => {
      const r = await snap({ url: `${t.fx.origin}/stalled-timers`, html_only: true, wait_for: '#c:checked' });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
    });

    it('fullpage_advanced and incremental_scroll scroll lazy content into view', async () => {
      const plain = await snap({ url: `${t.fx.origin}/lazy`, html_only: true });
      expect(plain.body.html).not.to.contain('<p id="lazy-loaded">');
      const advanced = await snap({ url: `${t.fx.origin}/lazy`, html_only: true, fullpage_advanced: true });
      expect(advanced.body.html).to.contain('<p id="lazy-loaded">');
      const incremental = await snap({ url: `${t.fx.origin}/lazy`, html_only: true, incremental_scroll: true });
      expect(incremental.body.html).to.contain('<p id="lazy-loaded">');
    });

    it('sends headers, cookies, user_agent and accept_language to the site', async () => {
      const tag = `t${Date.now()}`;
      const r = await request(t.sys.base, 'POST', '/snap', {
        json: {
          access_token: t.token,
          url: `${t.fx.origin}/echo?${tag}`,
          wait: 0,
          ttl: 0,
          headers: [{ key: 'X-Test-Header', value: tag }],
          cookies: { session: tag },
          user_agent: `SnapTest/${tag}`,
          accept_language: 'de-CH',
        },
      });
      expect(r.status).to.equal(200);
      const seen = t.fx.seen.filter((s) => s.path === '/echo' && s.headers['x-test-header'] === tag);
      expect(seen).to.have.length(1);
      const h = seen[0]!.headers;
      expect(h['user-agent']).to.equal(`SnapTest/${tag}`);
      expect(h['accept-language']).to.match(/^de-CH/);
      expect(h.cookie).to.contain(`session=${tag}`);
    });

    it('refuses a header or cookie the browser would not take, naming the item and saying why, with nothing spent or sent', async () => {
      const before = await used();
      const sent = t.fx.seen.length;
      const refused = async (field: 'headers' | 'cookies', item: Record<string, string>, ...fragments: string[]) => {
        const r = await request(t.sys.base, 'POST', '/snap', {
          json: { access_token: t.token, url: `${t.fx.origin}/echo`, wait: 0, ttl: 0, [field]: [{ key: 'X-Fine', value: 'ok' }, item] },
        });
        expectEnvelope(r, 400, 'invalid_parameter', `${field}[1]`, ...fragments);
      };
      // Each of these made a 500 (the browser refused the command), a page that failed to load
      // (net::ERR_INVALID_ARGUMENT), a request the site's server refused, or was dropped.
      await refused('headers', { key: 'X Bad', value: '1' }, '"X Bad" is not a header name');
      await refused('headers', { key: 'X-Split', value: 'a\r\nX-Injected: 1' }, 'line break');
      await refused('headers', { key: 'X-Ctl', value: 'a\u0001b' }, 'control character');
      await refused('headers', { key: 'Host', value: 'x.example' }, 'written by the browser itself');
      await refused('headers', { key: 'Content-Length', value: '3' }, 'written by the browser itself');
      await refused('headers', { key: 'Connection', value: 'close' }, 'written by the browser itself');
      await refused('headers', { key: 'Proxy-Authorization', value: 'Basic eA==' }, 'written by the browser itself');
      await refused('headers', { key: 'user-agent', value: 'Bot/1' }, 'user_agent');
      await refused('cookies', { key: 'a', value: 'x;y' }, "';'");
      await refused('cookies', { key: 'a=b', value: 'v' }, "'='");
      await refused('cookies', { key: 'a', value: 'x\ty' }, 'control character');
      await refused('cookies', { key: 'a', value: ' lead' }, 'spaces around it');
      await refused('cookies', { key: 'a', value: 'v', domain: '.' }, 'is not a host name');
      await refused('cookies', { key: 'a', value: 'v', domain: 'bad domain' }, 'is not a host name');
      await refused('cookies', { key: 'a', value: 'v', path: 'nopath' }, "start with '/'");
      await refused('cookies', { key: 'a', value: 'v', path: '/a;b' }, "';'");
      expect(await used(), 'nothing spent').to.equal(before);
      expect(t.fx.seen.length, 'nothing sent to the site').to.equal(sent);
      // What the browser takes goes through: a tab in a header, a space, comma or quote in a cookie.
      const tag = `f${Date.now()}`;
      const ok = await request(t.sys.base, 'POST', '/snap', {
        json: {
          access_token: t.token,
          url: `${t.fx.origin}/echo?${tag}`,
          wait: 0,
          ttl: 0,
          html_only: true,
          headers: [
            { key: 'X-Tab', value: 'a\tb' },
            { key: 'Accept-Language', value: 'fr-CH' },
          ],
          cookies: [{ key: 'c', value: 'a b,"c"' }],
        },
      });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
      const h = t.fx.seen.find((s) => s.path === '/echo' && s.query === tag)?.headers ?? {};
      expect(h['x-tab']).to.equal('a\tb');
      expect(h['accept-language']).to.equal('fr-CH');
      expect(h.cookie).to.equal('c=a b,"c"');
    });

    it('without user_agent, sends a desktop Chrome user agent, to the site and to page script, with no "HeadlessChrome"', async () => {
      const tag = `d${Date.now()}`;
      // The default user agent is set while the page is prepared; a capture that overrides it
      // comes first, on the same browsers, to show nothing of it stays behind.
      await snap({ url: `${t.fx.origin}/echo?${tag}-custom`, html_only: true, user_agent: `SnapTest/${tag}` });
      const r = await snap({ url: `${t.fx.origin}/echo?${tag}`, wait: 0, html_only: true, js_inject: 'document.body.dataset.ua = navigator.userAgent' });
      expect(r.status).to.equal(200);
      const seen = t.fx.seen.filter((s) => s.path === '/echo' && s.query === tag);
      expect(seen).to.have.length(1);
      const ua = String(seen[0]!.headers['user-agent']);
      expect(ua).to.match(/ Chrome\/\d+/);
      expect(ua).not.to.contain('Headless');
      expect(r.body.html).to.contain(`data-ua="${ua}"`);
    });

    it('gives page script the time_zone and the geolocation', async () => {
      const r = await snap({
        url: `${t.fx.origin}/env`,
        html_only: true,
        wait_for: '#geo.done',
        time_zone: 'Asia/Tokyo',
        latitude: 48.8584,
        longitude: 2.2945,
        accuracy: 10,
      });
      expect(r.body.html).to.contain('<p id="tz">Asia/Tokyo</p>');
      expect(r.body.html).to.contain('48.8584,2.2945');
    });

    it('disable_js stops scripts', async () => {
      const on = await snap({ url: `${t.fx.origin}/js-rendered`, html_only: true });
      expect(on.body.html).to.contain('<p id="from-js">');
      const off = await snap({ url: `${t.fx.origin}/js-rendered`, html_only: true, disable_js: true });
      expect(off.body.html).not.to.contain('<p id="from-js">');
      expect(off.body.html).to.contain('<div id="static">static</div>');
    });

    it('shares no cookie between two captures in a row', async () => {
      await snap({ url: `${t.fx.origin}/echo` });
      const before = t.fx.seen.length;
      const second = await snap({ url: `${t.fx.origin}/echo`, html_only: true });
      const req = t.fx.seen.slice(before).find((s) => s.path === '/echo');
      expect(req?.headers.cookie).to.equal(undefined);
      // Only the cookie this response set; nothing from the first capture (fromjs=1).
      expect(second.body.html).to.contain('<p id="cookies">cookies:visited=yes</p>');
    });
  });

  describe('answers', () => {
    it('json=true answers exactly the record, whose links load without a key', async () => {
      const r = await snap({ url: `${t.fx.origin}/plain`, json: true, image_format: 'png', page_width: 800, page_height: 600 });
      expect(r.status).to.equal(200);
      expect(r.body).to.have.all.keys(
        'success',
        'id',
        'embed_url',
        'screenshot_configuration_id',
        'direct_link',
        'direct_thumbnail_link',
        'taken_at_timestamp',
        'taken_at',
        'job_id',
        // Beyond the spec (docs/api.md): the page reached its wait_until moment; its final status and address.
        'load_finished',
        'status_code',
        'final_url',
      );
      expect(r.body.load_finished).to.equal(true);
      expect([r.body.status_code, r.body.final_url]).to.deep.equal([200, `${t.fx.origin}/plain`]);
      const b = r.body as Record<string, string>;
      expect(b.taken_at_timestamp).to.match(/^\d{13}$/);
      expect(b.taken_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00$/);
      expect(new Date(b.taken_at!).getTime()).to.equal(Number(b.taken_at_timestamp));
      expect(b.embed_url).to.equal(`${t.sys.config.appUrl}/embed/${b.screenshot_configuration_id}`);
      const image = await fetch(b.direct_link!);
      expect(image.status).to.equal(200);
      expect(await size(Buffer.from(await image.arrayBuffer()))).to.deep.equal([800, 600]);
      const thumb = await fetch(b.direct_thumbnail_link!);
      expect(thumb.status).to.equal(200);
      expect(await size(Buffer.from(await thumb.arrayBuffer()))).to.deep.equal([400, 300]);
      // Public names are random, not sequential ids.
      expect(b.direct_link).to.match(/\/cdn\/[A-Za-z0-9]{24}\.png$/);
    });

    it("makes a capture's thumbnail when it is first asked for, and only a thumbnail a capture recorded", async () => {
      const files = path.join(t.sys.config.dataDir, 'files');
      const r = await snap({ url: `${t.fx.origin}/plain`, json: true, page_width: 800, page_height: 600, thumb_width: 200, thumb_height: 100 });
      const link = String(r.body.direct_thumbnail_link);
      const name = link.split('/').pop()!;
      expect(name).to.match(/^[A-Za-z0-9]{24}-t200x100\.jpeg$/);
      expect(fs.existsSync(path.join(files, name)), 'stored before it was asked for').to.equal(false);
      const thumb = await fetch(link);
      expect(thumb.status).to.equal(200);
      expect(thumb.headers.get('content-type')).to.equal('image/jpeg');
      expect(await size(Buffer.from(await thumb.arrayBuffer()))).to.deep.equal([200, 100]);
      expect(fs.existsSync(path.join(files, name)), 'stored once made').to.equal(true);
      // A name of the same shape that no capture recorded (another size of the same thumbnail, a made-up one): 404, nothing made.
      for (const other of [name.replace('-t200x100', '-t300'), `${'a'.repeat(24)}-t400.jpeg`]) {
        expectEnvelope(await request(t.sys.base, 'GET', `/cdn/${other}`), 404, 'not_found');
        expect(fs.existsSync(path.join(files, other))).to.equal(false);
      }
    });

    it('html_only answers {success, html}: the rendered DOM, or the outerHTML of selectors', async () => {
      const r = await snap({ url: `${t.fx.origin}/js-rendered`, html_only: true });
      expect(r.body).to.have.all.keys('success', 'html');
      expect(r.body.html).to.match(/^<!DOCTYPE html>/);
      expect(r.body.html).to.contain('<p id="from-js">rendered by script</p>');
      const el = await snap({ url: `${t.fx.origin}/js-rendered`, html_only: true, selectors: '#from-js' });
      expect(el.body.html).to.equal('<p id="from-js">rendered by script</p>');
    });

    it('reuses a capture within ttl without spending a credit, and ttl=0 captures fresh', async () => {
      const { access_token } = await t.sys.account('free');
      const params = { url: `${t.fx.origin}/plain?ttl-test`, page_width: 500, page_height: 400, json: true };
      const first = await snap({ ...params, ttl: 600 }, access_token);
      expect(first.headers.get('x-cache')).to.equal('MISS');
      const second = await snap({ ...params, ttl: 600 }, access_token);
      expect(second.headers.get('x-cache')).to.equal('HIT');
      expect(second.body.id).to.equal(first.body.id);
      expect(await used(access_token)).to.equal(1);
      const fresh = await snap({ ...params, ttl: 0 }, access_token);
      expect(fresh.headers.get('x-cache')).to.equal('MISS');
      expect(fresh.body.id).not.to.equal(first.body.id);
      expect(await used(access_token)).to.equal(2);
    });

    it("never answers a snap with a configuration's capture of the same page and options; the next snap reuses the snap's own", async () => {
      const { access_token } = await t.sys.account('paid');
      const params = { url: `${t.fx.origin}/plain?config-and-snap`, page_width: 500, page_height: 400, wait: 0 };
      const auth = { authorization: `Bearer ${access_token}` };
      const config = await request<{ screenshot_configuration_id: string; job_id: string }>(t.sys.base, 'POST', '/screenshot_configs', {
        headers: auth,
        json: { ...params, scheduled_screenshot: true, scheduled_every: 1, scheduled_interval: 'days' },
      });
      expect(config.status, JSON.stringify(config.body)).to.equal(200);
      expect((await jobFinished(t.sys.base, access_token, config.body.job_id)).body.status).to.equal('completed');
      const first = await snap({ ...params, ttl: 600, json: true }, access_token);
      expect(first.headers.get('x-cache')).to.equal('MISS');
      expect(first.body.screenshot_configuration_id).not.to.equal(config.body.screenshot_configuration_id);
      const second = await snap({ ...params, ttl: 600, json: true }, access_token);
      expect(second.headers.get('x-cache')).to.equal('HIT');
      expect(second.body.id).to.equal(first.body.id);
    });

    it('puts snaps of the same page and options in one configuration', async () => {
      const a = await snap({ url: `${t.fx.origin}/plain?same`, json: true });
      const b = await snap({ url: `${t.fx.origin}/plain?same`, json: true });
      const c = await snap({ url: `${t.fx.origin}/plain?same`, json: true, page_width: 1000 });
      expect(a.body.screenshot_configuration_id).to.equal(b.body.screenshot_configuration_id);
      expect(c.body.screenshot_configuration_id).not.to.equal(a.body.screenshot_configuration_id);
    });
  });

  describe('failures spend no credit', () => {
    it('a dead URL is 422 page_load_failed and refunded', async () => {
      const { access_token } = await t.sys.account('free');
      const r = await snap({ url: 'http://127.0.0.1:9/nothing-listens-here' }, access_token);
      expectEnvelope(r, 422, 'page_load_failed', 'could not be loaded');
      expect(await used(access_token)).to.equal(0);
    });

    it('a selector the browser cannot read is 400 invalid_parameter naming it, image or html_only, and refunded', async () => {
      const { access_token } = await t.sys.account('free');
      for (const extra of [{}, { html_only: true }] as Array<Record<string, boolean>>) {
        expectEnvelope(
          await snap({ url: `${t.fx.origin}/plain`, selectors: '##[', ...extra }, access_token),
          400,
          'invalid_parameter',
          'selectors: "##[" is not a valid CSS selector',
        );
      }
      expect(await used(access_token)).to.equal(0);
    });

    it('a selector that matches nothing is 422 selector_not_found and refunded', async () => {
      const { access_token } = await t.sys.account('free');
      expectEnvelope(await snap({ url: `${t.fx.origin}/plain`, selectors: '#missing' }, access_token), 422, 'selector_not_found', '#missing');
      expect(await used(access_token)).to.equal(0);
    });

    it('a capture that hangs ends with 504 capture_timeout, and the next capture works', async () => {
      const { access_token } = await t.sys.account('free');
      const hung = await snap({ url: `${t.fx.origin}/hang` }, access_token);
      expectEnvelope(hung, 504, 'capture_timeout');
      expect(await used(access_token)).to.equal(0);
      for (let i = 0; i < 3; i++) {
        const next = await snap({ url: `${t.fx.origin}/plain`, page_width: 640, page_height: 480, image_format: 'png' }, access_token);
        expect(next.status).to.equal(200);
        expect(await size(next.raw)).to.deep.equal([640, 480]);
      }
    });
  });
});

/** A public page framing a private address and a cross-site page that loads one: the page is captured, nothing private is reached. */
async function expectFramesGuarded(fx: FixtureServer, snap: (params: Record<string, string | number | boolean>) => Promise<HttpAnswer>): Promise<void> {
  const before = fx.seen.length;
  const r = await snap({ url: `http://fixture.test:${fx.port}/with-private-frames`, html_only: true });
  expect(r.status).to.equal(200);
  expect(r.body.html).to.contain('framing page');
  const seen = fx.seen.slice(before).map((s) => `${s.headers.host}${s.path}`);
  // The cross-site frame itself is public and loads; nothing reaches the private address.
  expect(seen).to.include(`other.test:${fx.port}/with-private-image`);
  expect(seen.filter((s) => s.startsWith('127.0.0.1'))).to.deep.equal([]);
}

// "fixture.test" and "other.test" stand for two public sites: Chromium resolves them to the fixture server.
// So these suites check the in-page policy without the gateway (IN_PAGE_POLICY_ONLY), which would
// resolve the names itself and see loopback; egress-gateway.test.ts proves the same refusals through it.
const PUBLIC_NAMES = JSON.stringify(['--host-resolver-rules=MAP fixture.test 127.0.0.1, MAP other.test 127.0.0.1']);

describe('snap egress policy and capacity (ALLOW_PRIVATE_NETWORKS unset)', function () {
  this.timeout(120_000);
  const t = snapSuite((fx) => ({
    CAPTURE_SESSIONS: '1',
    CAPTURE_QUEUE_MAX: '0',
    ...IN_PAGE_POLICY_ONLY,
    // Chromium also counts the fixture server as a public address, as a real site's would be.
    CHROME_EXTRA_ARGS: JSON.stringify([...JSON.parse(PUBLIC_NAMES), `--ip-address-space-overrides=127.0.0.1:${fx.port}=public`]),
  }));

  const usedNow = () => screenshotsUsed(t.sys, t.token);

  it('refuses http://127.0.0.1 and the metadata address with 400 url_not_allowed, spending nothing', async () => {
    expectEnvelope(await t.snap({ url: `${t.fx.origin}/plain` }), 400, 'url_not_allowed', '127.0.0.1');
    expectEnvelope(await t.snap({ url: 'http://169.254.169.254/latest/meta-data/' }), 400, 'url_not_allowed', '169.254.169.254');
    expectEnvelope(await t.snap({ url: 'http://localhost:9/' }), 400, 'url_not_allowed');
    expect(await usedNow()).to.equal(0);
  });

  it('refuses a redirect to a private address', async () => {
    expectEnvelope(await t.snap({ url: `http://fixture.test:${t.fx.port}/to-private` }), 400, 'url_not_allowed', '127.0.0.1');
    expect(await usedNow()).to.equal(0);
  });

  it('blocks sub-requests of the page to private addresses', async () => {
    const before = t.fx.seen.length;
    const r = await t.snap({ url: `http://fixture.test:${t.fx.port}/with-private-image`, html_only: true });
    expect(r.status).to.equal(200);
    expect(r.body.html).to.contain('public page');
    const paths = t.fx.seen.slice(before).map((s) => s.path);
    expect(paths).to.include('/with-private-image');
    expect(paths).not.to.include('/pixel.png');
  });

  it('blocks private addresses in frames too: a frame of one, and what a cross-site frame loads', async () => {
    await expectFramesGuarded(t.fx, t.snap);
  });

  it("refuses a public page's WebSocket to a private address (Chromium's Local Network Access: CDP cannot pause a handshake)", async () => {
    let upgrades = 0;
    const internal = http.createServer((_req, res) => res.end('internal'));
    internal.on('upgrade', (_req, socket) => {
      upgrades++;
      socket.destroy();
    });
    await new Promise<void>((resolve) => internal.listen(0, '127.0.0.1', resolve));
    try {
      const port = (internal.address() as AddressInfo).port;
      const r = await t.snap({ url: `http://fixture.test:${t.fx.port}/with-private-socket?port=${port}`, html_only: true, wait_for: 'body[data-ws]' });
      expect(r.status).to.equal(200);
      expect(r.body.html).to.contain('data-ws="refused"');
      expect(upgrades).to.equal(0);
    } finally {
      internal.close();
    }
  });

  it('answers 503 capacity_exhausted with Retry-After when every browser is busy and the queue is full', async () => {
    const slow = t.snap({ url: `http://fixture.test:${t.fx.port}/slow` });
    await new Promise((r) => setTimeout(r, 500));
    const refused = await t.snap({ url: `http://fixture.test:${t.fx.port}/plain` });
    expectEnvelope(refused, 503, 'capacity_exhausted', 'busy');
    expect(Number(refused.headers.get('retry-after'))).to.be.greaterThan(0);
    expect((await slow).status).to.equal(200);
  });
});

// The full browser (which operators may choose with CHROME_BIN) isolates sites: a cross-site
// frame runs in a renderer of its own, whose requests the page's interception would not see.
// Embedded mode (a local ChromeDriver), as a Grid node starts the browser its stereotype names.
describe('snap egress policy in frames on the full Chromium (embedded, CHROME_BIN=/usr/bin/chromium)', function () {
  this.timeout(120_000);
  const t = snapSuite({ SELENIUM_URL: '', CAPTURE_SESSIONS: '1', CHROME_BIN: '/usr/bin/chromium', CHROME_EXTRA_ARGS: PUBLIC_NAMES, ...IN_PAGE_POLICY_ONLY });

  it('blocks private addresses in frames too: a frame of one, and what a cross-site frame loads', async () => {
    await expectFramesGuarded(t.fx, t.snap);
  });
});

describe('snap when a browser dies (a crash, the OOM killer)', function () {
  this.timeout(120_000);
  const t = snapSuite({ CAPTURE_SESSIONS: '1', ALLOW_PRIVATE_NETWORKS: 'true' });
  let gridUrl: string;
  before(async () => {
    gridUrl = (await sharedGrid()).url;
  });

  /** The one browser of this system: the session that was not there before it started. */
  async function ourBrowser(others: string[]): Promise<string> {
    const mine = (await gridBrowserDirs(gridUrl)).filter((d) => !others.includes(d));
    expect(mine, 'exactly one browser session of this system on the Grid').to.have.length(1);
    return mine[0]!;
  }

  it('between captures: the next capture works, on a new browser, and is charged once', async () => {
    expect((await t.snap({ url: `${t.fx.origin}/plain` })).status).to.equal(200);
    const before = await screenshotsUsed(t.sys, t.token);
    const dir = await ourBrowser([]);
    killBrowser(dir);
    const r = await t.snap({ url: `${t.fx.origin}/plain` });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(await screenshotsUsed(t.sys, t.token)).to.equal(before + 1);
    expect(await gridBrowserDirs(gridUrl)).not.to.include(dir);
  });

  it('during a capture: the capture is taken again on a new browser and answered, charged once', async () => {
    const before = await screenshotsUsed(t.sys, t.token);
    const dir = await ourBrowser([]);
    const pending = t.snap({ url: `${t.fx.origin}/slow` });
    await new Promise((r) => setTimeout(r, 800));
    killBrowser(dir);
    const r = await pending;
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(r.headers.get('content-type')).to.equal('image/jpeg');
    expect(await screenshotsUsed(t.sys, t.token)).to.equal(before + 1);
  });

  it('during a capture with multi_step_actions: not taken again (the steps may have acted on the site), 502 browser_failed and refunded', async () => {
    const before = await screenshotsUsed(t.sys, t.token);
    const seenBefore = t.fx.seen.filter((s) => s.path === '/plain').length;
    const dir = await ourBrowser([]);
    const pending = request(t.sys.base, 'POST', '/snap', {
      json: { access_token: t.token, url: `${t.fx.origin}/plain`, wait: 0, ttl: 0, multi_step_actions: [{ type: 'wait', value: '5000' }] },
    });
    await new Promise((r) => setTimeout(r, 1500));
    killBrowser(dir);
    expectEnvelope(await pending, 502, 'browser_failed', 'multi_step_actions');
    expect(t.fx.seen.filter((s) => s.path === '/plain').length, 'the page was loaded once').to.equal(seenBefore + 1);
    expect(await screenshotsUsed(t.sys, t.token)).to.equal(before);
  });
});
