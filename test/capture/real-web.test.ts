/**
 * What real pages do that must neither hold nor spoil a capture, end to end on the real Grid,
 * with site isolation on (`--site-per-process`: a cross-site frame runs in a renderer of its
 * own, as in the full browser, so what is handled in frames is handled there too):
 * JavaScript dialogs (answered at once, in frames too), popups (closed, never captured), a
 * renderer that runs out of memory (page_crashed at once, the browser kept), loads that never
 * finish (captured as drawn at navigation_timeout, the record says so), a server that never
 * answers (page_load_failed at the bound), wait_until, and a capture that runs out of time
 * naming what it was waiting for.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { pixelsOf, snapSuite } from '../support/capture-helpers';
import { type LocalServer, servePages, serveLocally } from '../support/local-server';

type Rgb = [number, number, number];
const GREEN: Rgb = [0, 160, 0];
const RED: Rgb = [200, 0, 0];
const BLUE: Rgb = [0, 0, 200];
const near = (a: Rgb, b: Rgb) => a.every((v, i) => Math.abs(v - b[i]!) <= 10);

/** A page that is one colour all over (a block filling the viewport). */
const block = (c: Rgb, extra = '') =>
  `<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0}#b{position:fixed;inset:0;background:rgb(${c.join(',')})}</style></head>` +
  `<body><div id="b">x</div>${extra}</body></html>`;

/** Turns the page green once its script has run on past what should hold it. */
const GO_GREEN = `document.getElementById('b').style.background = 'rgb(${GREEN.join(',')})';`;

async function colourAt(image: Buffer, x = 50, y = 50): Promise<Rgb> {
  return (await pixelsOf(image)).at(x, y);
}

describe('real pages: dialogs, popups, crashes and loads that never finish (real Grid)', function () {
  this.timeout(120_000);
  // A renderer's JavaScript heap capped low, so that a page that allocates without end runs
  // out of memory in a second rather than in ten (the crash is the same).
  const t = snapSuite({
    ALLOW_PRIVATE_NETWORKS: 'true',
    CAPTURE_SESSIONS: '2',
    CAPTURE_TIMEOUT_MS: '15000',
    CHROME_EXTRA_ARGS: '--js-flags=--max-old-space-size=64 --site-per-process',
  });
  let site: LocalServer;
  let silent: { origin: string; stop(): Promise<void> };
  let popupPings = 0;
  const streams = new Set<http.ServerResponse>();
  let streamingOrigin = '';
  let stopStreaming: () => Promise<void> = async () => undefined;
  before(async () => {
    site = await servePages(({ path }) => {
      switch (path) {
        case '/dialogs':
          // Every kind while loading: the page goes on, and sees what each was answered.
          return {
            body: block(
              RED,
              `<script>alert('hello'); const ok = confirm('sure?'); const typed = prompt('name?', 'x'); document.title = ok + ',' + typed; ${GO_GREEN}</script>`,
            ),
          };
        case '/dialog-frame':
          // The frame from another site (localhost, not 127.0.0.1): a renderer of its own.
          return {
            body: block(
              RED,
              `<iframe src="http://localhost:${site.port}/dialog-inner" style="position:fixed;left:0;top:0;width:300px;height:300px;border:0"></iframe>`,
            ),
          };
        case '/consent-frame':
          // A consent wall drawn by a frame of another site (piano.io's banner), over the bottom 200 px;
          // the frame asks the page to remove it once refused.
          return {
            body: block(
              GREEN,
              `<iframe id="cmp" src="http://localhost:${site.port}/piano" style="position:fixed;left:0;bottom:0;width:100%;height:200px;border:0"></iframe>` +
                "<script>addEventListener('message', (e) => { if (e.data === 'piano-closed') { document.getElementById('cmp').remove(); " +
                "document.documentElement.dataset.consent = 'rejected'; } });</script>",
            ),
          };
        case '/piano':
          return {
            body:
              `<body style="margin:0"><div id="piano-cookie_banner" style="height:200px;background:rgb(${RED.join(',')})">We use cookies ` +
              '<button data-acceptance-button>Accept</button><button data-close-button>Close</button></div>' +
              "<script>document.querySelector('[data-close-button]').onclick = () => parent.postMessage('piano-closed', '*');" +
              "document.querySelector('[data-acceptance-button]').onclick = () => parent.postMessage('piano-accepted', '*');</script></body>",
          };
        case '/dialog-inner':
          return {
            body: `<body style="margin:0"><script>alert('from a frame');</script><div style="width:300px;height:300px;background:rgb(${BLUE.join(',')})"></div></body>`,
          };
        case '/leave':
          // Asks before being left (after a click: a page's beforeunload needs the user's gesture).
          return { body: block(RED, `<script>addEventListener('beforeunload', (e) => { e.preventDefault(); e.returnValue = 'stay?'; });</script>`) };
        case '/next':
          return { body: block(GREEN) };
        case '/popup':
          return { body: block(GREEN, `<script>window.open('/popped', '_blank'); window.open('/popped', 'other', 'width=500,height=500');</script>`) };
        case '/popped':
          return { body: block(RED, "<script>const ping = () => fetch('/popped-alive'); ping(); setInterval(ping, 100);</script>") };
        case '/popped-alive':
          popupPings++;
          return { body: 'alive' };
        case '/oom':
          // Allocates without end while it loads.
          return { body: block(GREEN, '<script>const a = []; for (;;) a.push(new Array(1e6).fill(1.5));</script>') };
        case '/hanging-image':
          // The document is complete, its image never comes: the load event never fires.
          return { body: block(GREEN, `<img src="${streamingOrigin}/never-image" width="10" height="10">`) };
        case '/late-fetch':
          // Draws green only with what it fetches 300 ms after its load event (networkidle waits 500 ms without a request).
          return {
            body: block(
              RED,
              `<script>addEventListener('load', () => setTimeout(() => fetch('/data').then((r) => r.text()).then(() => { ${GO_GREEN} }), 300));</script>`,
            ),
          };
        case '/data':
          return { body: 'ok', delayMs: 100 };
        case '/busy':
          // Loads, then keeps its renderer busy for good.
          return { body: block(GREEN, "<script>addEventListener('load', () => setTimeout(() => { for (;;) {} }, 50));</script>") };
        default:
          return undefined;
      }
    });
    // Paths served by hand: a body that never ends, an image that never comes, an event stream
    // that stays open, a long poll never answered.
    const streaming = await serveLocally((req, res) => {
      streams.add(res);
      res.on('close', () => streams.delete(res));
      // Pages drawn with coloured blocks only (no text, no image), which open a stream or a long poll once loaded.
      const opens = { '/sse-page': "new EventSource('/events')", '/long-poll-page': "fetch('/poll')" }[req.url ?? ''];
      if (opens) {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(
          `<!DOCTYPE html><html><head><style>html,body{margin:0}</style></head><body><section style="height:200px;background:rgb(${RED.join(',')})"></section>` +
            `<section style="height:200px;background:rgb(${BLUE.join(',')})"></section><script>addEventListener('load', () => { ${opens}; });</script></body></html>`,
        );
        return;
      }
      if (req.url === '/events') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
        res.write('data: first\n\n');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      if (req.url === '/never-ending') res.write(block(GREEN).replace('</body></html>', ''));
      else if (req.url === '/never-drawn') res.write('<!DOCTYPE html><html><head><title>');
      // Anything else (the image) gets its headers and nothing more.
    });
    // A server that accepts connections and never answers.
    const server = http.createServer(() => undefined);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    silent = {
      origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      stop: () =>
        new Promise((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
    streamingOrigin = streaming.origin;
    stopStreaming = () => streaming.stop();
  });
  after(async () => {
    for (const res of streams) res.destroy();
    await Promise.all([site?.stop(), silent?.stop(), stopStreaming()]);
  });
  const url = (path: string) => `${site.origin}${path}`;

  /** A snap and the ms it took. */
  async function timed(params: Record<string, string | number | boolean>) {
    const t0 = Date.now();
    const r = await t.snap({ image_format: 'png', page_width: 400, page_height: 300, ...params });
    return { r, ms: Date.now() - t0 };
  }

  it('answers alert, confirm and prompt at once while the page loads: the page goes on, and is captured in well under a second', async () => {
    const { r, ms } = await timed({ url: url('/dialogs') });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(await colourAt(r.raw)).to.satisfy((c: Rgb) => near(c, GREEN));
    expect(ms).to.be.below(1500);
    // confirm was dismissed (false), prompt too (null): what the page saw.
    const html = await t.snap({ url: url('/dialogs'), html_only: true });
    expect(html.body.html).to.match(/<title>false,null<\/title>/);
  });

  it('answers a dialog opened by a frame of another site, in its own renderer', async () => {
    const { r } = await timed({ url: url('/dialog-frame') });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(await colourAt(r.raw, 100, 100)).to.satisfy((c: Rgb) => near(c, BLUE));
  });

  it('refuses a consent wall drawn by a frame of another site, in its own renderer (no_cookie_banners)', async () => {
    const shown = await timed({ url: url('/consent-frame') });
    expect(await colourAt(shown.r.raw, 200, 250), 'the wall, without no_cookie_banners').to.satisfy((c: Rgb) => near(c, RED));
    // A moment for the page to act on the frame's message, two renderers apart (as the default
    // wait gives it): long enough for a machine under load (the whole suite on two cores).
    const refused = await timed({ url: url('/consent-frame'), no_cookie_banners: true, wait: 2000 });
    expect(refused.r.status, JSON.stringify(refused.r.body)).to.equal(200);
    expect(await colourAt(refused.r.raw, 200, 250), 'the page behind the wall').to.satisfy((c: Rgb) => near(c, GREEN));
    // The refusal itself: the close button clicked in the frame, and the page acting on its
    // message, two renderers apart: without the click it never comes.
    const html = await t.snap({ url: url('/consent-frame'), no_cookie_banners: true, html_only: true, wait: 2000 });
    expect(html.body.html, 'refused through the close button, not hidden').to.match(/data-consent="rejected"/);
  });

  it('leaves a page that asks before being left (beforeunload is accepted)', async () => {
    const steps = [
      { type: 'click', selector: '#b' },
      { type: 'redirect', value: url('/next') },
    ];
    const { r, ms } = await timed({ url: url('/leave'), multi_step_actions: JSON.stringify(steps) });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(await colourAt(r.raw)).to.satisfy((c: Rgb) => near(c, GREEN));
    expect(ms).to.be.below(5000);
  });

  it('closes the popups a page opens and captures the page itself', async () => {
    popupPings = 0;
    // A second to run in, were they left open: a popup pings its server as it loads and every 100 ms
    // (two popups, about 20 pings). Closed as they are created, they may ping once each at most.
    const { r } = await timed({ url: url('/popup'), wait: 1000 });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(await colourAt(r.raw)).to.satisfy((c: Rgb) => near(c, GREEN));
    expect(popupPings, 'pings from popups left open').to.be.at.most(2);
  });

  it('answers a renderer that runs out of memory at once with page_crashed, charges nothing, and the browser captures again', async () => {
    const { r, ms } = await timed({ url: url('/oom') });
    expect(r.status, JSON.stringify(r.body)).to.equal(422);
    expect(r.body.error_code).to.equal('page_crashed');
    expect(r.body.note).to.match(/crashed .*out of memory/);
    expect(ms).to.be.below(8000);
    // Both browsers still capture.
    const [a, b] = await Promise.all([timed({ url: url('/next') }), timed({ url: url('/next') })]);
    expect([a.r.status, b.r.status]).to.deep.equal([200, 200]);
  });

  it('captures a page whose body never ends as it is drawn at navigation_timeout, and says so in the record', async () => {
    const { r, ms } = await timed({ url: `${streamingOrigin}/never-ending`, navigation_timeout: 2000, wait: 0 });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(await colourAt(r.raw)).to.satisfy((c: Rgb) => near(c, GREEN));
    expect(ms).to.be.within(1900, 4500);
    const rec = await t.snap({ url: `${streamingOrigin}/never-ending`, navigation_timeout: 2000, wait: 0, json: true });
    expect(rec.body.load_finished).to.equal(false);
    const done = await t.snap({ url: url('/next'), json: true });
    expect(done.body.load_finished).to.equal(true);
  });

  it('fails a page that drew nothing by navigation_timeout with page_load_failed', async () => {
    const { r, ms } = await timed({ url: `${streamingOrigin}/never-drawn`, navigation_timeout: 1500 });
    expect(r.status, JSON.stringify(r.body)).to.equal(422);
    expect(r.body.error_code).to.equal('page_load_failed');
    expect(r.body.note).to.match(/drew nothing within 1\.5 s \(navigation_timeout\)/);
    expect(ms).to.be.below(3500);
  });

  it('fails a server that never answers at navigation_timeout, naming it', async () => {
    const { r, ms } = await timed({ url: `${silent.origin}/`, navigation_timeout: 2000 });
    expect(r.status, JSON.stringify(r.body)).to.equal(422);
    expect(r.body.error_code).to.equal('page_load_failed');
    expect(r.body.note).to.contain(`The server of ${silent.origin}/ sent no answer within 2 s`);
    expect(ms).to.be.within(1900, 4000);
  });

  it('wait_until=domcontentloaded does not wait for an image that never comes; load waits until navigation_timeout', async () => {
    const parsed = await timed({ url: url('/hanging-image'), wait_until: 'domcontentloaded', wait: 0 });
    expect(parsed.r.status, JSON.stringify(parsed.r.body)).to.equal(200);
    expect(parsed.ms).to.be.below(1500);
    const loaded = await timed({ url: url('/hanging-image'), navigation_timeout: 2000, wait: 0, json: true });
    expect(loaded.r.body.load_finished).to.equal(false);
    expect(loaded.ms).to.be.within(1900, 4500);
  });

  it('wait_until=networkidle waits for what the page fetches after its load event; load does not', async () => {
    const idle = await timed({ url: url('/late-fetch'), wait_until: 'networkidle', wait: 0 });
    expect(await colourAt(idle.r.raw)).to.satisfy((c: Rgb) => near(c, GREEN));
    const load = await timed({ url: url('/late-fetch'), wait_until: 'load', wait: 0 });
    expect(await colourAt(load.r.raw)).to.satisfy((c: Rgb) => near(c, RED));
  });

  it('wait_until=networkidle leaves an open event stream aside: the page is captured once loaded and quiet, not at navigation_timeout', async () => {
    const { r, ms } = await timed({ url: `${streamingOrigin}/sse-page`, wait_until: 'networkidle', navigation_timeout: 6000, wait: 0 });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    // Well before navigation_timeout (6 s), with room for a busy machine (about 1 s alone).
    expect(ms, 'ms to the picture').to.be.below(5000);
    const px = await pixelsOf(r.raw);
    expect(px.at(50, 100)).to.satisfy((c: Rgb) => near(c, RED));
    expect(px.at(50, 250)).to.satisfy((c: Rgb) => near(c, BLUE));
    const rec = await t.snap({ url: `${streamingOrigin}/sse-page`, wait_until: 'networkidle', navigation_timeout: 6000, wait: 0, json: true });
    expect(rec.body.load_finished).to.equal(true);
  });

  it('a long poll holds networkidle until navigation_timeout; a page drawn with coloured blocks only is then captured as drawn, never "drew nothing"', async () => {
    const { r, ms } = await timed({ url: `${streamingOrigin}/long-poll-page`, wait_until: 'networkidle', navigation_timeout: 2000, wait: 0 });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(ms).to.be.within(1900, 4500);
    const px = await pixelsOf(r.raw);
    expect(px.at(50, 100)).to.satisfy((c: Rgb) => near(c, RED));
    expect(px.at(50, 250)).to.satisfy((c: Rgb) => near(c, BLUE));
    const rec = await t.snap({ url: `${streamingOrigin}/long-poll-page`, wait_until: 'networkidle', navigation_timeout: 2000, wait: 0, json: true });
    expect(rec.body.load_finished).to.equal(false);
  });

  it('refuses a wait_until or navigation_timeout it does not know, saying what it takes', async () => {
    const bad = await t.snap({ url: url('/next'), wait_until: 'networkidle0' });
    expect(bad.status).to.equal(400);
    expect(bad.body.error_code).to.equal('invalid_parameter');
    expect(bad.body.note)
      .to.match(/wait_until/)
      .and.match(/load, domcontentloaded, networkidle/);
    const big = await t.snap({ url: url('/next'), navigation_timeout: 60_000 });
    expect(big.status).to.equal(400);
    expect(big.body.note).to.match(/navigation_timeout/);
  });

  it('names what a capture that ran out of time was doing, and a page script that kept the renderer busy', async () => {
    const { r } = await timed({ url: url('/busy'), wait: 500 });
    expect(r.status, JSON.stringify(r.body)).to.equal(504);
    expect(r.body.error_code).to.equal('capture_timeout');
    expect(r.body.note).to.match(/stopped while (reading the page's final status and address|waiting for the page's web fonts|taking the screenshot)/);
    expect(r.body.note).to.contain("the page's own script kept its renderer busy");
  });
});
