/**
 * Fixture sites for the blocking and consent tests, served by one local server that answers
 * by Host header: Chromium maps the names below to 127.0.0.1 (--host-resolver-rules), so a
 * page on news.fixture.test loads "ads" from pagead2.googlesyndication.com and a "tracker"
 * from sb.scorecardresearch.com (comScore), all served here. Every request is recorded (host, path).
 *
 * Page layouts are absolute, so a pixel tells what happened:
 *   news:    (150,125) red when the adsbygoogle.js ad script ran; (150,310) green when the ad
 *            image loaded; (470,310) teal when the ad iframe loaded; (150,420) blue when the tracker's beacon.js ran; (150,505) orange unless the
 *            #ad_banner element is hidden; (150,565) purple unless .banner-ad is hidden.
 *   consent: a OneTrust-style banner fills the bottom 200 px in red; its "Reject All" button
 *            removes it and marks <html data-consent="rejected">.
 *   cmp-api: a consentmanager "ncmp" banner (blue, bottom 200 px) that only the CMP's JS API
 *            (window.__npcmp("reject")) removes; it marks <html data-consent="rejected-by-api">.
 *   cmp-broken: the same banner without the API (the opt-out fails).
 *   shop:    #first-party / #third-party paragraphs written by scripts from
 *            static.shop-example.test and widgets.other-vendor.test.
 */
import { type PageAnswer, servePages } from '../../support/local-server';
import { mapToLoopback } from '../../support/test-dns';

export const AD_SCRIPT_HOST = 'pagead2.googlesyndication.com';
export const AD_IMAGE_HOST = 'ad.doubleclick.net';
export const TRACKER_HOST = 'sb.scorecardresearch.com';
export const NEWS_HOST = 'news.fixture.test';
export const CONSENT_HOST = 'consent.fixture.test';
export const CMP_API_HOST = 'cmp-api.fixture.test';
export const CMP_BROKEN_HOST = 'cmp-broken.fixture.test';
export const PLAIN_HOST = 'plain.fixture.test';
export const SHOP_HOST = 'www.shop-example.test';
export const SHOP_STATIC_HOST = 'static.shop-example.test';
export const OTHER_VENDOR_HOST = 'widgets.other-vendor.test';

/** Every name the browser must resolve to the fixture server. */
export const FIXTURE_HOSTS = [
  AD_SCRIPT_HOST,
  AD_IMAGE_HOST,
  TRACKER_HOST,
  NEWS_HOST,
  CONSENT_HOST,
  CMP_API_HOST,
  CMP_BROKEN_HOST,
  PLAIN_HOST,
  SHOP_HOST,
  SHOP_STATIC_HOST,
  OTHER_VENDOR_HOST,
];
// The egress gateway resolves them with the shared test DNS server; the browser maps them itself when there is none.
mapToLoopback(FIXTURE_HOSTS);

/** The Chromium flag that sends FIXTURE_HOSTS to 127.0.0.1. */
export function hostResolverRules(): string {
  return `--host-resolver-rules=${FIXTURE_HOSTS.map((h) => `MAP ${h} 127.0.0.1`).join(', ')}`;
}

export interface SeenHostRequest {
  host: string;
  path: string;
}

export interface BlockingFixtures {
  port: number;
  /** http://<host>:<port><path> */
  url(host: string, path?: string): string;
  seen: SeenHostRequest[];
  /** Whether host received a request for path since index `since` of seen. */
  received(host: string, path: string, since?: number): boolean;
  stop(): Promise<void>;
}

const page = (body: string, head = '') =>
  '<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0;padding:0;background:#fff}.abs{position:absolute;left:0;width:300px}</style>' +
  `${head}</head><body>${body}</body></html>`;

type Route = (port: number) => PageAnswer;

const ROUTES: Record<string, Record<string, Route>> = {
  [NEWS_HOST]: {
    '/': (port) => ({
      body: page(
        '<h1 style="position:absolute;left:320px;top:0">News</h1>' +
          '<div id="ad-slot" class="abs" style="top:0;height:250px"></div>' +
          `<img id="ad-img" class="abs" style="top:260px;height:100px" alt="" src="http://${AD_IMAGE_HOST}:${port}/ddm/ad/banner.svg">` +
          `<iframe id="ad-frame" class="abs" style="left:320px;top:260px;height:100px;border:0" ` +
          `src="http://${AD_IMAGE_HOST}:${port}/ddm/adi/frame.html"></iframe>` +
          '<div id="tracker-slot" class="abs" style="top:370px;height:100px"></div>' +
          '<div id="ad_banner" class="abs" style="top:480px;height:50px;background:rgb(255,165,0)">ad banner</div>' +
          '<div class="banner-ad abs" style="top:540px;height:50px;background:rgb(128,0,128)">banner ad</div>' +
          `<script async src="http://${AD_SCRIPT_HOST}:${port}/pagead/js/adsbygoogle.js"></script>` +
          `<script async src="http://${TRACKER_HOST}:${port}/beacon.js"></script>`,
      ),
    }),
  },
  [AD_SCRIPT_HOST]: {
    '/pagead/js/adsbygoogle.js': () => ({
      headers: { 'content-type': 'text/javascript' },
      body: 'document.getElementById("ad-slot").style.background = "rgb(255,0,0)"; document.documentElement.dataset.adScript = "ran";',
    }),
  },
  [AD_IMAGE_HOST]: {
    '/ddm/adi/frame.html': () => ({ body: page('<div style="height:100vh;background:rgb(0,128,128)">ad frame</div>') }),
    '/ddm/ad/banner.svg': () => ({
      headers: { 'content-type': 'image/svg+xml' },
      body: '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="100"><rect width="300" height="100" fill="rgb(0,128,0)"/></svg>',
    }),
  },
  [TRACKER_HOST]: {
    '/beacon.js': () => ({
      headers: { 'content-type': 'text/javascript' },
      body: 'document.getElementById("tracker-slot").style.background = "rgb(0,0,255)"; document.documentElement.dataset.tracker = "ran";',
    }),
  },
  [CONSENT_HOST]: {
    // Markup as OneTrust's SDK builds it (the ids autoconsent's Onetrust rule looks for),
    // inserted by script the way the SDK does.
    '/': () => ({
      body: page(
        '<h1>Article</h1><p>Some text.</p>' +
          '<script>(function () {' +
          'var sdk = document.createElement("div"); sdk.id = "onetrust-consent-sdk";' +
          'sdk.innerHTML = \'<div id="onetrust-banner-sdk" class="otFlat" role="region" aria-label="Cookie banner" ' +
          'style="position:fixed;left:0;right:0;bottom:0;height:200px;background:rgb(200,0,0);color:#fff;z-index:1000">' +
          '<div id="onetrust-policy-text">We use cookies to improve your experience.</div>' +
          '<div id="onetrust-button-group"><button id="onetrust-pc-btn-handler">Cookie Settings</button>' +
          '<button id="onetrust-reject-all-handler">Reject All</button><button id="onetrust-accept-btn-handler">Accept All Cookies</button></div></div>\';' +
          'document.body.appendChild(sdk);' +
          'document.getElementById("onetrust-reject-all-handler").addEventListener("click", function () { ' +
          'document.getElementById("onetrust-banner-sdk").style.display = "none"; document.documentElement.dataset.consent = "rejected"; });' +
          'document.getElementById("onetrust-accept-btn-handler").addEventListener("click", function () { ' +
          'document.getElementById("onetrust-banner-sdk").style.display = "none"; document.documentElement.dataset.consent = "accepted"; });' +
          '})();</script>',
      ),
    }),
  },
  [CMP_API_HOST]: {
    // consentmanager.net's "ncmp" banner: autoconsent refuses through the CMP's JavaScript
    // API (window.__npcmp), a rule step that runs in the page's main world.
    '/': () => ({
      body: page(
        '<h1>Article</h1>' +
          '<div id="ncmp__tool"><div class="ncmp__banner ncmp__active" ' +
          'style="position:fixed;left:0;right:0;bottom:0;height:200px;background:rgb(0,0,200);color:#fff">We and our partners use cookies.</div></div>' +
          '<script>window.__npcmp = function (action) { if (action !== "reject") return; document.querySelector("#ncmp__tool ' +
          '.ncmp__banner").classList.remove("ncmp__active"); document.querySelector("#ncmp__tool .ncmp__banner").style.display = "none"; ' +
          'document.documentElement.dataset.consent = "rejected-by-api"; };</script>',
      ),
    }),
  },
  [CMP_BROKEN_HOST]: {
    // The same banner without the CMP's API: the opt-out fails, the cosmetic fallback hides it.
    '/': () => ({
      body: page(
        '<h1>Article</h1>' +
          '<div id="ncmp__tool"><div class="ncmp__banner ncmp__active" ' +
          'style="position:fixed;left:0;right:0;bottom:0;height:200px;background:rgb(0,0,200);color:#fff">We and our partners use cookies.</div></div>',
      ),
    }),
  },
  [PLAIN_HOST]: {
    // .message-overlay is among autoconsent's pre-hiding selectors: it must stay visible here.
    '/': () => ({
      body: page(
        '<h1>Plain</h1><div style="width:300px;height:200px;background:rgb(0,0,255)"></div><div class="message-overlay" ' +
          'style="width:300px;height:100px;background:rgb(0,160,0)"></div>',
      ),
    }),
    // For the egress policy: an ad and an image from a private address on a "public" page.
    '/private-image': (port) => ({
      body: page(
        `<p>public page</p><img alt="" src="http://127.0.0.1:${port}/pixel.svg"><script async ` +
          `src="http://${AD_SCRIPT_HOST}:${port}/pagead/js/adsbygoogle.js"></script><div id="ad-slot"></div>`,
      ),
    }),
    '/to-private': (port) => ({ status: 302, headers: { location: `http://127.0.0.1:${port}/pixel.svg` }, body: '' }),
  },
  '127.0.0.1': {
    '/pixel.svg': () => ({ headers: { 'content-type': 'image/svg+xml' }, body: '<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"/>' }),
  },
  [SHOP_HOST]: {
    '/': (port) => ({
      body: page(
        '<h1>Shop</h1><div id="out"></div><script>document.getElementById("out").insertAdjacentHTML("beforeend", "<p id=\\"inline\\">inline ' +
          'ran</p>")</script>' +
          `<script src="http://${SHOP_STATIC_HOST}:${port}/app.js"></script>` +
          `<script src="http://${OTHER_VENDOR_HOST}:${port}/widget.js"></script>`,
      ),
    }),
  },
  [SHOP_STATIC_HOST]: {
    '/app.js': () => ({
      headers: { 'content-type': 'text/javascript' },
      body: 'document.getElementById("out").insertAdjacentHTML("beforeend", "<p id=\\"first-party\\">first-party ran</p>");',
    }),
  },
  [OTHER_VENDOR_HOST]: {
    '/widget.js': () => ({
      headers: { 'content-type': 'text/javascript' },
      body: 'document.getElementById("out").insertAdjacentHTML("beforeend", "<p id=\\"third-party\\">third-party ran</p>");',
    }),
  },
};

export async function startBlockingFixtures(): Promise<BlockingFixtures> {
  const seen: SeenHostRequest[] = [];
  const server = await servePages(({ req, path }, port) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    seen.push({ host, path });
    return ROUTES[host]?.[path]?.(port);
  });
  return {
    port: server.port,
    url: (host, path = '/') => `http://${host}:${server.port}${path}`,
    seen,
    received: (host, path, since = 0) => seen.slice(since).some((s) => s.host === host && s.path === path),
    stop: server.stop,
  };
}
