/**
 * no_ads, no_tracking, disable_third_party_js and no_cookie_banners: the decisions on their
 * own (real EasyList/EasyPrivacy from the Debian package, no browser), then end to end on a
 * real Selenium Grid, with well-known ad and tracker hostnames mapped to a local fixture
 * server (see consent-fixtures.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import sharp from 'sharp';
import { DEFAULT_LISTS, LIST_PACKAGE, PageBlocker, isThirdParty, wantsBlocking } from '../../../services/capture/page/blocking';
import { startCaptureSystem } from '../../support/capture-helpers';
import { IN_PAGE_POLICY_ONLY } from '../../support/backends';
import { qs, request } from '../../support/http';
import type { RunningSystem } from '../../support/system';
import {
  AD_IMAGE_HOST,
  AD_SCRIPT_HOST,
  type BlockingFixtures,
  CMP_API_HOST,
  CMP_BROKEN_HOST,
  CONSENT_HOST,
  NEWS_HOST,
  OTHER_VENDOR_HOST,
  PLAIN_HOST,
  SHOP_HOST,
  SHOP_STATIC_HOST,
  TRACKER_HOST,
  hostResolverRules,
  startBlockingFixtures,
} from './consent-fixtures';

type RGB = [number, number, number];

/** RGB of some pixels of one image. */
async function pixels(image: Buffer, points: Array<[number, number]>): Promise<RGB[]> {
  const { data, info } = await sharp(image).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return points.map(([x, y]) => {
    const i = (y * info.width + x) * info.channels;
    return [data[i] ?? -1, data[i + 1] ?? -1, data[i + 2] ?? -1];
  });
}

const WHITE: RGB = [255, 255, 255];
const RED: RGB = [255, 0, 0];
const GREEN: RGB = [0, 128, 0];
const BLUE: RGB = [0, 0, 255];
const ORANGE: RGB = [255, 165, 0];
const PURPLE: RGB = [128, 0, 128];
const TEAL: RGB = [0, 128, 128];
/** Where the news page shows: the ad script's box, the ad image, the ad iframe, the tracker's box, #ad_banner, .banner-ad. */
const NEWS_POINTS: Array<[number, number]> = [
  [150, 125],
  [150, 310],
  [470, 310],
  [150, 420],
  [150, 505],
  [150, 565],
];

describe('page blocking decisions (EasyList, EasyPrivacy, tldts)', () => {
  let blocker: PageBlocker;
  const page = 'https://news.example-site.com/article';
  before(async function () {
    // Parsed once per process (from the cache in os.tmpdir() after the first run).
    this.timeout(60_000);
    blocker = await PageBlocker.load();
  });

  it('wantsBlocking is true for any of the three request options only', () => {
    expect(wantsBlocking({})).to.equal(false);
    expect(wantsBlocking({ no_ads: false, no_tracking: false, disable_third_party_js: false })).to.equal(false);
    expect(wantsBlocking({ no_ads: true })).to.equal(true);
    expect(wantsBlocking({ no_tracking: true })).to.equal(true);
    expect(wantsBlocking({ disable_third_party_js: true })).to.equal(true);
  });

  it('no_ads blocks ad requests from EasyList, and only with no_ads', () => {
    const ad = { url: 'https://pagead2.googlesyndication.com/pagead/js/adsbygoogle.js', pageUrl: page, resourceType: 'Script' };
    expect(blocker.decide(ad, { no_ads: true })).to.include({ block: true });
    expect(blocker.decide(ad, { no_ads: true }).reason).to.match(/^EasyList /);
    expect(blocker.decide(ad, { no_tracking: true }).block).to.equal(false);
    expect(blocker.decide(ad, {}).block).to.equal(false);
    const img = { url: `http://${AD_IMAGE_HOST}:8080/ddm/ad/banner.svg`, pageUrl: page, resourceType: 'Image' };
    expect(blocker.decide(img, { no_ads: true }).block).to.equal(true);
  });

  it('no_tracking blocks trackers from EasyPrivacy, and only with no_tracking', () => {
    for (const url of [
      'https://www.google-analytics.com/analytics.js',
      'https://www.googletagmanager.com/gtag/js?id=G-1',
      `http://${TRACKER_HOST}:8080/beacon.js`,
    ]) {
      const req = { url, pageUrl: page, resourceType: 'Script' };
      expect(blocker.decide(req, { no_tracking: true }), url).to.include({ block: true });
      expect(blocker.decide(req, { no_tracking: true }).reason).to.match(/^EasyPrivacy /);
      expect(blocker.decide(req, { no_ads: true }).block, url).to.equal(false);
    }
  });

  it("lets the page's own requests through", () => {
    const o = { no_ads: true, no_tracking: true };
    expect(blocker.decide({ url: 'https://news.example-site.com/app.js', pageUrl: page, resourceType: 'Script' }, o).block).to.equal(false);
    expect(blocker.decide({ url: 'https://cdn.example-site.com/logo.png', pageUrl: page, resourceType: 'Image' }, o).block).to.equal(false);
    expect(blocker.decide({ url: 'data:image/png;base64,AAAA', pageUrl: page, resourceType: 'Image' }, o).block).to.equal(false);
  });

  it('never blocks the main document, even on a listed host; an iframe from it is blocked', () => {
    const url = 'https://pagead2.googlesyndication.com/pagead/show_ads.html';
    expect(blocker.decide({ url, pageUrl: url, resourceType: 'Document', isMainFrame: true }, { no_ads: true }).block).to.equal(false);
    expect(blocker.decide({ url, pageUrl: url, resourceType: 'Document' }, { no_ads: true }).block).to.equal(false);
    expect(blocker.decide({ url, pageUrl: page, resourceType: 'Document', isMainFrame: false }, { no_ads: true }).block).to.equal(true);
  });

  it('disable_third_party_js drops scripts of other registrable domains only', () => {
    const shop = 'https://www.shop-example.test/';
    const o = { disable_third_party_js: true };
    expect(blocker.decide({ url: 'https://static.shop-example.test/app.js', pageUrl: shop, resourceType: 'Script' }, o).block).to.equal(false);
    expect(blocker.decide({ url: 'https://www.shop-example.test/app.js', pageUrl: shop, resourceType: 'Script' }, o).block).to.equal(false);
    expect(blocker.decide({ url: 'https://widgets.other-vendor.test/w.js', pageUrl: shop, resourceType: 'Script' }, o)).to.deep.equal({
      block: true,
      reason: 'third-party script',
    });
    // Other resource types of third parties are not scripts.
    expect(blocker.decide({ url: 'https://widgets.other-vendor.test/w.png', pageUrl: shop, resourceType: 'Image' }, o).block).to.equal(false);
    expect(blocker.decide({ url: 'https://widgets.other-vendor.test/w.css', pageUrl: shop, resourceType: 'Stylesheet' }, o).block).to.equal(false);
    // Without the option, third-party scripts run.
    expect(blocker.decide({ url: 'https://widgets.other-vendor.test/w.js', pageUrl: shop, resourceType: 'Script' }, {}).block).to.equal(false);
  });

  it('uses the public suffix list (with private suffixes) for first and third parties', () => {
    expect(isThirdParty('https://static.bbc.co.uk/a.js', 'https://www.bbc.co.uk/')).to.equal(false);
    expect(isThirdParty('https://evil.co.uk/a.js', 'https://www.bbc.co.uk/')).to.equal(true);
    expect(isThirdParty('https://alice.github.io/a.js', 'https://bob.github.io/')).to.equal(true);
    expect(isThirdParty('https://cdn.bob.github.io/a.js', 'https://bob.github.io/')).to.equal(false);
    expect(isThirdParty('http://127.0.0.1:8080/a.js', 'http://127.0.0.1:9090/')).to.equal(false);
    expect(isThirdParty('http://10.0.0.1/a.js', 'http://127.0.0.1/')).to.equal(true);
  });

  it('cosmeticCss hides what EasyList hides generically, keyed on the page', () => {
    const css = blocker.cosmeticCss(page, { no_ads: true }, { ids: ['ad_banner', 'main'], classes: ['banner-ad', 'content'], hrefs: [] });
    expect(css).to.contain('#ad_banner');
    expect(css).to.contain('.banner-ad');
    expect(css).to.match(/display: none !important/);
    expect(css).not.to.contain('#main');
    // Without DOM features only the unconditional rules come back.
    const base = blocker.cosmeticCss(page, { no_ads: true });
    expect(base).not.to.contain('#ad_banner');
    expect(blocker.cosmeticCss(page, {}, { ids: ['ad_banner'] })).to.equal('');
    expect(blocker.cosmeticCss('about:blank', { no_ads: true }, { ids: ['ad_banner'] })).to.equal('');
  });

  it('names the Debian package when a list is missing', async () => {
    let err: (Error & { type?: string }) | null = null;
    try {
      await PageBlocker.load({ easylist: '/nonexistent/easylist.txt', easyprivacy: DEFAULT_LISTS.easyprivacy });
    } catch (e) {
      err = e as Error & { type?: string };
    }
    expect(err?.type).to.equal('internal_error');
    expect(err?.message).to.contain(LIST_PACKAGE).and.to.contain('/nonexistent/easylist.txt');
  });

  it('caches compiled lists in the cache directory, keyed by the list version', async function () {
    this.timeout(30_000);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snaptest-lists-'));
    try {
      const lists = { easylist: path.join(dir, 'a.txt'), easyprivacy: path.join(dir, 'p.txt') };
      fs.writeFileSync(lists.easylist, '||ads.example-adserver.test^\n##.sponsored-box\n');
      fs.writeFileSync(lists.easyprivacy, '||metrics.example-tracker.test^\n');
      const cache = path.join(dir, 'cache');
      fs.mkdirSync(cache);
      const first = await PageBlocker.load(lists, cache);
      const req = { url: 'https://ads.example-adserver.test/x.js', pageUrl: page, resourceType: 'Script' };
      expect(first.decide(req, { no_ads: true }).block).to.equal(true);
      // The cache is written in the background.
      for (let i = 0; i < 50 && fs.readdirSync(cache).filter((f) => f.endsWith('.bin')).length < 2; i++) await new Promise((r) => setTimeout(r, 20));
      const cached = fs.readdirSync(cache).filter((f) => f.endsWith('.bin'));
      expect(cached).to.have.length(2);
      const second = await PageBlocker.load(lists, cache);
      expect(second.decide(req, { no_ads: true }).block).to.equal(true);
      // A changed list is parsed again and replaces its old cache.
      fs.writeFileSync(lists.easylist, '||other-ads.example-adserver.test^\n');
      fs.utimesSync(lists.easylist, new Date(), new Date(Date.now() + 5000));
      const third = await PageBlocker.load(lists, cache);
      expect(third.decide(req, { no_ads: true }).block).to.equal(false);
      for (let i = 0; i < 50 && fs.readdirSync(cache).filter((f) => f.includes('easylist')).length !== 1; i++) await new Promise((r) => setTimeout(r, 20));
      expect(fs.readdirSync(cache).filter((f) => f.includes('easylist') && f.endsWith('.bin'))).to.have.length(1);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('page blocking and consent on a real Selenium Grid', function () {
  this.timeout(120_000);
  let fx: BlockingFixtures;
  let sys: RunningSystem;
  const blockers = () => {
    if (!sys.capture) throw new Error('this system runs no capture service');
    return sys.capture.blockers;
  };
  let cleanup: () => Promise<void>;
  let token: string;

  const snap = (params: Record<string, string | number | boolean>) =>
    request(sys.base, 'GET', `/snap?${qs({ access_token: token, wait: 0, ttl: 0, page_width: 800, page_height: 600, ...params })}`);
  const png = async (params: Record<string, string | number | boolean>) => {
    const r = await snap({ image_format: 'png', ...params });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    return r.raw;
  };

  before(async () => {
    fx = await startBlockingFixtures();
    ({ sys, token, cleanup } = await startCaptureSystem({
      ALLOW_PRIVATE_NETWORKS: 'true',
      CAPTURE_SESSIONS: '2',
      CAPTURE_TIMEOUT_MS: '15000',
      CHROME_EXTRA_ARGS: JSON.stringify([hostResolverRules()]),
    }));
  });
  after(async () => {
    await cleanup?.();
    await fx?.stop();
  });

  describe('no_ads and no_tracking', () => {
    it('without options, the ads and the tracker load and show', async () => {
      const since = fx.seen.length;
      const image = await png({ url: fx.url(NEWS_HOST) });
      expect(await pixels(image, NEWS_POINTS)).to.deep.equal([RED, GREEN, TEAL, BLUE, ORANGE, PURPLE]);
      expect(fx.received(AD_SCRIPT_HOST, '/pagead/js/adsbygoogle.js', since)).to.equal(true);
      expect(fx.received(AD_IMAGE_HOST, '/ddm/ad/banner.svg', since)).to.equal(true);
      expect(fx.received(AD_IMAGE_HOST, '/ddm/adi/frame.html', since)).to.equal(true);
      expect(fx.received(TRACKER_HOST, '/beacon.js', since)).to.equal(true);
    });

    it('no_ads blocks the ad script, image and iframe (never requested) and hides ad elements; the tracker still runs', async () => {
      const since = fx.seen.length;
      const image = await png({ url: fx.url(NEWS_HOST), no_ads: true });
      const [script, img, frame, tracker, adBanner, bannerAd] = await pixels(image, NEWS_POINTS);
      expect(script, 'ad script box').to.deep.equal(WHITE);
      // Blocked images and frames are collapsed: no broken-image icon, no error page.
      expect(img, 'ad image').to.deep.equal(WHITE);
      expect(frame, 'ad iframe').to.deep.equal(WHITE);
      expect(tracker, 'tracker box').to.deep.equal(BLUE);
      expect(adBanner, '#ad_banner').to.deep.equal(WHITE);
      expect(bannerAd, '.banner-ad').to.deep.equal(WHITE);
      expect(fx.received(NEWS_HOST, '/', since)).to.equal(true);
      expect(fx.received(AD_SCRIPT_HOST, '/pagead/js/adsbygoogle.js', since)).to.equal(false);
      expect(fx.received(AD_IMAGE_HOST, '/ddm/ad/banner.svg', since)).to.equal(false);
      expect(fx.received(AD_IMAGE_HOST, '/ddm/adi/frame.html', since)).to.equal(false);
      expect(fx.received(TRACKER_HOST, '/beacon.js', since)).to.equal(true);
    });

    it('no_ads hides listed elements by display:none (seen in the DOM with html_only)', async () => {
      const r = await snap({
        url: fx.url(NEWS_HOST),
        no_ads: true,
        html_only: true,
        js_inject:
          "document.body.dataset.hidden = ['ad_banner', 'ad-slot', 'tracker-slot'].map((id) => id + ':' + " +
          "getComputedStyle(document.getElementById(id)).display).join(',')",
      });
      expect(r.status).to.equal(200);
      expect(r.body.html).to.contain('data-hidden="ad_banner:none,ad-slot:none,tracker-slot:block"');
      expect(r.body.html).not.to.contain('data-ad-script="ran"');
      expect(r.body.html).to.match(/<img id="ad-img"[^>]*style="[^"]*display: none !important/);
      expect(r.body.html).to.match(/<iframe id="ad-frame"[^>]*style="[^"]*display: none !important/);
    });

    it('no_tracking blocks the tracker only', async () => {
      const since = fx.seen.length;
      const image = await png({ url: fx.url(NEWS_HOST), no_tracking: true });
      expect(await pixels(image, NEWS_POINTS)).to.deep.equal([RED, GREEN, TEAL, WHITE, ORANGE, PURPLE]);
      expect(fx.received(TRACKER_HOST, '/beacon.js', since)).to.equal(false);
      expect(fx.received(AD_SCRIPT_HOST, '/pagead/js/adsbygoogle.js', since)).to.equal(true);
    });

    it('loads a page that is itself on a listed host (the main document is never blocked)', async () => {
      const r = await snap({ url: fx.url(AD_IMAGE_HOST, '/ddm/adi/frame.html'), no_ads: true, html_only: true });
      expect(r.status).to.equal(200);
      expect(r.body.html).to.contain('ad frame');
    });

    it('answers a clear error naming the Debian package when a list is missing, and recovers', async () => {
      blockers().use({ lists: { easylist: '/nonexistent/easylist.txt', easyprivacy: DEFAULT_LISTS.easyprivacy } });
      try {
        const r = await snap({ url: fx.url(NEWS_HOST), no_ads: true });
        expect(r.status).to.equal(500);
        expect(r.body).to.include({ error_code: 'internal_error' });
        expect(String(r.body.note)).to.contain(LIST_PACKAGE).and.to.contain('/nonexistent/easylist.txt');
        // Captures without blocking options are not affected.
        expect((await snap({ url: fx.url(PLAIN_HOST) })).status).to.equal(200);
      } finally {
        blockers().use({});
      }
      expect((await snap({ url: fx.url(NEWS_HOST), no_ads: true })).status).to.equal(200);
    });

    it('no_ads and no_tracking together block both', async () => {
      const since = fx.seen.length;
      const image = await png({ url: fx.url(NEWS_HOST), no_ads: true, no_tracking: true });
      const [script, , , tracker, adBanner] = await pixels(image, NEWS_POINTS);
      expect([script, tracker, adBanner]).to.deep.equal([WHITE, WHITE, WHITE]);
      expect(fx.received(TRACKER_HOST, '/beacon.js', since)).to.equal(false);
      expect(fx.received(AD_SCRIPT_HOST, '/pagead/js/adsbygoogle.js', since)).to.equal(false);
    });
  });

  describe('disable_third_party_js', () => {
    it('runs first-party scripts (same registrable domain) and drops third-party ones', async () => {
      const on = await snap({ url: fx.url(SHOP_HOST), html_only: true });
      expect(on.body.html).to.contain('<p id="first-party">').and.to.contain('<p id="third-party">').and.to.contain('<p id="inline">');
      const since = fx.seen.length;
      const off = await snap({ url: fx.url(SHOP_HOST), html_only: true, disable_third_party_js: true });
      expect(off.status).to.equal(200);
      expect(off.body.html).to.contain('<p id="first-party">first-party ran</p>');
      expect(off.body.html).to.contain('<p id="inline">inline ran</p>');
      expect(off.body.html).not.to.contain('<p id="third-party">');
      expect(fx.received(SHOP_STATIC_HOST, '/app.js', since)).to.equal(true);
      expect(fx.received(OTHER_VENDOR_HOST, '/widget.js', since)).to.equal(false);
    });
  });

  describe('no_cookie_banners', () => {
    it('shows the consent banner without the option', async () => {
      const image = await png({ url: fx.url(CONSENT_HOST) });
      expect((await pixels(image, [[400, 550]]))[0]).to.deep.equal([200, 0, 0]);
    });

    it('refuses consent (clicks "Reject All") and the banner is gone', async () => {
      const image = await png({ url: fx.url(CONSENT_HOST), no_cookie_banners: true });
      expect((await pixels(image, [[400, 550]]))[0]).to.deep.equal(WHITE);
      const r = await snap({ url: fx.url(CONSENT_HOST), no_cookie_banners: true, html_only: true });
      expect(r.body.html).to.match(/^<!DOCTYPE html>\n<html data-consent="rejected">/);
      expect(r.body.html).to.match(/id="onetrust-banner-sdk"[^>]*display: none/);
    });

    it("refuses through the CMP's JavaScript API when that is the rule (a main-world step)", async () => {
      const r = await snap({ url: fx.url(CMP_API_HOST), no_cookie_banners: true, html_only: true });
      expect(r.status).to.equal(200);
      expect(r.body.html).to.match(/^<!DOCTYPE html>\n<html data-consent="rejected-by-api">/);
    });

    it('hides a banner it could not dismiss (the cosmetic fallback)', async () => {
      const shown = await png({ url: fx.url(CMP_BROKEN_HOST) });
      expect((await pixels(shown, [[400, 550]]))[0]).to.deep.equal([0, 0, 200]);
      const hidden = await png({ url: fx.url(CMP_BROKEN_HOST), no_cookie_banners: true });
      expect((await pixels(hidden, [[400, 550]]))[0]).to.deep.equal(WHITE);
    });

    it('with disable_js, still hides a banner in the page markup', async () => {
      const hidden = await png({ url: fx.url(CMP_BROKEN_HOST), no_cookie_banners: true, disable_js: true });
      expect((await pixels(hidden, [[400, 550]]))[0]).to.deep.equal(WHITE);
    });

    it('leaves a page without a banner as it is', async () => {
      const plain = await png({ url: fx.url(PLAIN_HOST) });
      const handled = await png({ url: fx.url(PLAIN_HOST), no_cookie_banners: true });
      const points: Array<[number, number]> = [
        [100, 150],
        [150, 320],
        [500, 300],
      ];
      expect(await pixels(plain, points)).to.deep.equal([BLUE, [0, 160, 0], WHITE]);
      expect(await pixels(handled, points)).to.deep.equal(await pixels(plain, points));
    });
  });
});

describe('page blocking with the egress policy on (ALLOW_PRIVATE_NETWORKS unset)', function () {
  this.timeout(120_000);
  let fx: BlockingFixtures;
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  let token: string;
  const snap = (params: Record<string, string | number | boolean>) =>
    request(sys.base, 'GET', `/snap?${qs({ access_token: token, wait: 0, ttl: 0, ...params })}`);

  before(async () => {
    fx = await startBlockingFixtures();
    // The ad hosts stand for public sites here, so the policy is the in-page one (the gateway would see loopback).
    ({ sys, token, cleanup } = await startCaptureSystem({
      CAPTURE_SESSIONS: '1',
      CHROME_EXTRA_ARGS: JSON.stringify([hostResolverRules()]),
      ...IN_PAGE_POLICY_ONLY,
    }));
  });
  after(async () => {
    await cleanup?.();
    await fx?.stop();
  });

  it('still refuses private targets and redirects with url_not_allowed', async () => {
    const direct = await snap({ url: `http://127.0.0.1:${fx.port}/pixel.svg`, no_ads: true });
    expect(direct.status).to.equal(400);
    expect(direct.body).to.include({ error_code: 'url_not_allowed' });
    const redirected = await snap({ url: fx.url(PLAIN_HOST, '/to-private'), no_ads: true, disable_third_party_js: true });
    expect(redirected.status).to.equal(400);
    expect(redirected.body).to.include({ error_code: 'url_not_allowed' });
    expect(String(redirected.body.note)).to.contain('127.0.0.1');
  });

  it('blocks ads and private sub-requests of the same page', async () => {
    const since = fx.seen.length;
    const r = await snap({ url: fx.url(PLAIN_HOST, '/private-image'), no_ads: true, html_only: true });
    expect(r.status).to.equal(200);
    expect(r.body.html).to.contain('public page');
    expect(fx.received(PLAIN_HOST, '/private-image', since)).to.equal(true);
    expect(fx.received('127.0.0.1', '/pixel.svg', since)).to.equal(false);
    expect(fx.received(AD_SCRIPT_HOST, '/pagead/js/adsbygoogle.js', since)).to.equal(false);
  });
});
