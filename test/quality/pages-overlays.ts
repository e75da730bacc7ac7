/**
 * What real pages draw over themselves: cookie banners and walls of the common consent
 * platforms (with no_cookie_banners=true they must be gone and the page behind them drawn
 * as it is), and chat widgets and newsletter modals (captured as the page shows them: the
 * page and the widget both drawn, nothing blank). 800x600, PNG, wait=0.
 *
 * The OneTrust and consentmanager banners are the blocking tests' (test/capture/page/consent-fixtures.ts:
 * an <h1> "Article" at the top, the banner over the bottom 200 px); Didomi's, CookieYes's and
 * Usercentrics's walls are here, with the markup and ids their SDKs use (the ones autoconsent's
 * rules look for).
 */
import { CMP_API_HOST, CMP_BROKEN_HOST, CONSENT_HOST } from '../capture/page/consent-fixtures';
import { COLOURS, type QualityPage, type Rgb, box, css, doc, solidDoc } from './page';
import { expectBlank, expectColour, expectInk, expectSize } from './picture';

const NO_BANNERS = { no_cookie_banners: true };

/** A consent fixture's page: the banner's 200 px at the bottom are blank again, the article's heading is drawn. */
function fixtureBanner(name: string, host: string, mimics: string): QualityPage {
  return {
    name,
    mimics,
    routes: {},
    params: { ...NO_BANNERS, url: (o) => o.consent(host) },
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 600);
      expectBlank(p, { x: 0, y: 420, w: 800, h: 180 }, 'where the consent banner was');
      expectInk(p, { x: 0, y: 0, w: 300, h: 100 }, 'the article’s heading behind the banner');
    },
  };
}

/** The page under the walls: a header bar, a picture, text. */
const HEADER: Rgb = COLOURS.blue;
const PICTURE: Rgb = COLOURS.green;
const article = () =>
  box(HEADER, 0, 0, 800, 80) +
  box(PICTURE, 20, 120, 300, 200) +
  '<p style="position:absolute;left:360px;top:120px;width:400px;margin:0;font:20px sans-serif">The article readers came for, under the wall.</p>';

/** The article is drawn as it is: not darkened by a backdrop, not covered by a dialog. */
function expectArticle(p: Parameters<typeof expectColour>[0]): void {
  expectColour(p, 400, 40, HEADER, 'the page header (no backdrop over it)');
  expectColour(p, 100, 220, PICTURE, 'the picture at the side');
  expectColour(p, 250, 250, PICTURE, 'the picture where the dialog was');
  expectInk(p, { x: 360, y: 120, w: 400, h: 60 }, 'the article text');
  expectBlank(p, { x: 0, y: 440, w: 800, h: 160 }, 'the bottom of the page (no dialog)');
}

const DIDOMI_WALL =
  '<script>(function () { var host = document.createElement("div"); host.id = "didomi-host";' +
  'host.innerHTML = \'<div class="didomi-popup-backdrop" style="position:fixed;inset:0;background:rgba(0,0,0,0.7);z-index:2147483640">\' +' +
  '\'<div id="didomi-popup" class="didomi-popup-container" style="position:fixed;left:200px;top:150px;width:400px;height:320px;background:#fff;padding:20px">\' +' +
  "'<h2>We value your privacy</h2><p>We and our partners store and access information on your device.</p>' +" +
  '\'<button id="didomi-notice-disagree-button">Disagree and close</button> <button id="didomi-notice-agree-button">Agree and close</button></div></div>\';' +
  'document.body.appendChild(host); document.body.classList.add("didomi-popup-open");' +
  'function close(choice) { host.innerHTML = ""; document.body.classList.remove("didomi-popup-open"); document.documentElement.dataset.consent = choice; }' +
  'document.getElementById("didomi-notice-disagree-button").addEventListener("click", function () { close("disagreed"); });' +
  'document.getElementById("didomi-notice-agree-button").addEventListener("click", function () { close("agreed"); });' +
  '})();</script>';

const COOKIEYES_WALL =
  '<div class="cky-overlay" style="position:fixed;inset:0;background:rgba(0,0,0,0.5);z-index:9998"></div>' +
  '<div class="cky-consent-container" style="position:fixed;left:0;right:0;bottom:0;height:160px;background:#fff;z-index:9999">' +
  '<div class="cky-consent-bar"><p class="cky-title">We value your privacy</p><p>We use cookies to enhance your browsing experience.</p>' +
  '<button class="cky-btn cky-btn-customize" data-cky-tag="settings-button">Customize</button>' +
  '<button class="cky-btn cky-btn-reject" data-cky-tag="reject-button">Reject All</button>' +
  '<button class="cky-btn cky-btn-accept" data-cky-tag="accept-button">Accept All</button></div></div>' +
  '<script>document.querySelectorAll("[data-cky-tag=reject-button],[data-cky-tag=accept-button]").forEach(function (b) { b.addEventListener("click", function () {' +
  'document.cookie = "cookieyes-consent=advertisement:" + (b.dataset.ckyTag === "accept-button" ? "yes" : "no") + "; path=/";' +
  'document.querySelector(".cky-overlay").remove(); document.querySelector(".cky-consent-container").remove(); }); });</script>';

/**
 * Usercentrics's wall (German and Swiss publishers): #usercentrics-root at the end of the body
 * holds, in its open shadow root, a backdrop and the dialog with the data-testid buttons its
 * SDK draws; body.overflowHidden locks the page; UC_UI is its JavaScript API (as far as the
 * rules use it). Denying empties the root and unlocks the page.
 */
const USERCENTRICS_WALL =
  '<div id="usercentrics-root" data-nosnippet="true"></div><script>(function () { var consent = null; var host = document.getElementById("usercentrics-root");' +
  'var root = host.attachShadow({ mode: "open" }); root.innerHTML = \'<div data-testid="uc-container">' +
  '<div style="position:fixed;inset:0;background:rgba(0,0,0,0.6);z-index:2147483646"></div>' +
  '<div role="dialog" aria-modal="true" style="position:fixed;left:150px;top:130px;width:500px;height:300px;background:#fff;z-index:2147483647;padding:20px;font:16px sans-serif">' +
  '<h2>Privacy Settings</h2><p>We use cookies and similar technologies. You can accept all or deny all.</p>' +
  '<button data-testid="uc-more-button">More Information</button> <button data-testid="uc-deny-all-button">Deny</button> ' +
  '<button data-testid="uc-accept-all-button">Accept All</button></div></div>\'; document.body.classList.add("overflowHidden");' +
  'function close(choice) { consent = choice; root.innerHTML = ""; document.body.classList.remove("overflowHidden"); document.documentElement.dataset.consent = choice; }' +
  'root.querySelector("[data-testid=uc-deny-all-button]").addEventListener("click", function () { close("denied"); });' +
  'root.querySelector("[data-testid=uc-accept-all-button]").addEventListener("click", function () { close("accepted"); });' +
  'window.UC_UI = { isInitialized: function () { return true; }, closeCMP: function () { close(consent || "closed"); return Promise.resolve(); },' +
  'denyAllConsents: function () { close("denied"); return Promise.resolve(); }, acceptAllConsents: function () { close("accepted"); return Promise.resolve(); },' +
  'areAllConsentsAccepted: function () { return consent === "accepted"; } };' +
  '})();</script>';

const LAUNCHER: Rgb = [106, 27, 154];
const MODAL_BUTTON: Rgb = COLOURS.orange;

/** The article with a newsletter pop-up: a half-black backdrop, and a small dialog of its own over it (not inside it). */
const newsletterModal = () =>
  doc(
    article() +
      '<script>addEventListener("DOMContentLoaded", function () { document.body.insertAdjacentHTML("beforeend", ' +
      '\'<div style="position:fixed;inset:0;background:rgba(0,0,0,0.5);z-index:1000"></div><div style="position:fixed;left:250px;top:100px;width:300px;' +
      'height:260px;background:#fff;z-index:1001;font:20px sans-serif;text-align:center"><h3>Get 10% off</h3><p>Join our newsletter</p>' +
      `<div style="position:absolute;left:50px;top:190px;width:200px;height:50px;background:${css(MODAL_BUTTON)}"></div></div>'); });</script>`,
  );

/**
 * The same pop-up drawn inside an open shadow root (a web-component modal, a consent platform's
 * own element): the host is a plain div at the end of the body, the backdrop and the dialog
 * are fixed layers inside its root, and the body's scrolling is locked.
 */
const shadowModal = () =>
  doc(
    article() +
      '<div id="modal-root"></div><script>document.body.style.overflow = "hidden";' +
      'document.getElementById("modal-root").attachShadow({ mode: "open" }).innerHTML = ' +
      '\'<div style="position:fixed;inset:0;background:rgba(0,0,0,0.6);z-index:1000"></div>' +
      '<div style="position:fixed;left:200px;top:150px;width:400px;height:300px;background:#fff;z-index:1001;font:20px sans-serif;text-align:center">' +
      `<h3>Before you go</h3><div style="position:absolute;left:100px;top:200px;width:200px;height:50px;background:${css(MODAL_BUTTON)}"></div></div>';</script>`,
  );

/**
 * A modal web component: <promo-dialog> draws a fixed backdrop and a fixed panel in its
 * shadow root; what the panel shows is the page's own markup, slotted in (so the element at
 * the viewport's centre is in the document, its fixed layer in the shadow root). The page
 * locks scrolling on <html>.
 */
const webComponentModal = () =>
  doc(
    article() +
      '<script>customElements.define("promo-dialog", class extends HTMLElement { connectedCallback() { if (this.shadowRoot) return;' +
      'this.attachShadow({ mode: "open" }).innerHTML = \'<div part="backdrop" style="position:fixed;inset:0;background:rgba(0,0,0,0.5)"></div>' +
      '<div part="panel" style="position:fixed;left:150px;top:100px;width:500px;height:400px;background:#fff"><slot></slot></div>\';' +
      'document.documentElement.style.overflow = "hidden"; } });</script>' +
      '<promo-dialog><div style="position:absolute;left:100px;top:100px;width:300px;height:200px;background:' +
      `${css(MODAL_BUTTON)};font:20px sans-serif">Members save 20%</div></promo-dialog>`,
  );

/**
 * A cookie wall of no known platform (a site's own, a small vendor's): found by autoconsent's
 * heuristic rule, which runs in its second pass, 500 ms after the first: with wait=0 the
 * handling waits for it; with a longer wait it runs during the wait.
 */
function genericWall(wait: number): QualityPage {
  return {
    name: wait ? `consent-generic-wall-wait-${wait}` : 'consent-generic-wall',
    mimics:
      `a cookie wall of no known platform (a site's own, a small vendor's), wait=${wait}: a backdrop, a dialog saying it uses cookies, Reject all and ` +
      'Accept all, the page locked',
    routes: {
      '/': {
        body: doc(
          article() +
            '<div id="cookie-consent-wall" style="position:fixed;inset:0;background:rgba(0,0,0,0.6);z-index:1000"><div role="dialog" aria-label="Cookie consent" ' +
            'style="position:fixed;left:200px;top:150px;width:400px;height:280px;background:rgb(230,230,230);font:16px sans-serif;padding:20px;box-sizing:border-box">' +
            '<p>We use cookies to personalise content and ads.</p><button id="cc-reject">Reject all</button> <button id="cc-accept">Accept all</button></div></div>' +
            "<script>document.body.style.overflow = 'hidden'; ['cc-reject', 'cc-accept'].forEach(function (id) { document.getElementById(id).onclick = function () { " +
            "document.getElementById('cookie-consent-wall').remove(); document.body.style.overflow = ''; document.documentElement.dataset.consent = id; }; });</script>",
        ),
      },
    },
    params: { ...NO_BANNERS, wait },
    async check(a) {
      expectArticle(await a.picture());
    },
  };
}

export const OVERLAY_PAGES: QualityPage[] = [
  fixtureBanner('consent-onetrust', CONSENT_HOST, 'OneTrust’s cookie banner (most large sites): refused with "Reject All"'),
  fixtureBanner('consent-cmp-api', CMP_API_HOST, 'consentmanager’s banner, refused through the CMP’s JavaScript API'),
  fixtureBanner('consent-cosmetic', CMP_BROKEN_HOST, 'a consent banner that cannot be refused (its API is missing): hidden'),
  {
    name: 'consent-didomi-wall',
    mimics: 'Didomi’s consent wall (French and Italian publishers): a dark backdrop over the whole page, the page locked until a choice',
    routes: { '/': { body: doc(article() + DIDOMI_WALL, { head: '<style>body.didomi-popup-open{overflow:hidden}</style>' }) } },
    params: NO_BANNERS,
    async check(a) {
      expectArticle(await a.picture());
    },
  },
  {
    name: 'consent-cookieyes-wall',
    mimics: 'CookieYes’s banner with its overlay (small business and WordPress sites)',
    routes: { '/': { body: doc(article() + COOKIEYES_WALL) } },
    params: NO_BANNERS,
    async check(a) {
      expectArticle(await a.picture());
    },
  },
  genericWall(0),
  genericWall(800),
  {
    name: 'consent-usercentrics-wall',
    mimics: 'Usercentrics’s consent wall, drawn inside the open shadow root of #usercentrics-root, the page locked until a choice',
    routes: { '/': { body: doc(article() + USERCENTRICS_WALL, { head: '<style>body.overflowHidden{overflow:hidden}</style>' }) } },
    params: NO_BANNERS,
    async check(a) {
      expectArticle(await a.picture());
    },
  },
  {
    name: 'chat-widget',
    mimics: 'chat launchers (Intercom, Drift, Zendesk, HubSpot): a loader script from the vendor’s site adds a cross-site frame and a greeting bubble',
    routes: { '/': ({ origins }) => ({ body: doc(article() + `<script async src="${origins.other}/chat-widget/loader.js"></script>`) }) },
    otherRoutes: {
      '/loader.js': {
        headers: { 'content-type': 'text/javascript' },
        body:
          '(function () { var base = document.currentScript.src; var f = document.createElement("iframe"); f.src = new URL("launcher", base).href;' +
          'f.title = "chat"; f.style.cssText = "position:fixed;right:20px;bottom:20px;width:64px;height:64px;border:0;border-radius:50%;z-index:2147483000";' +
          'document.body.appendChild(f); var b = document.createElement("div"); b.textContent = "Hi! Questions? We are online.";' +
          'b.style.cssText = "position:fixed;right:20px;bottom:100px;width:220px;padding:10px;background:#fff;box-shadow:0 2px 8px rgba(0,0,0,.3);' +
          'border-radius:8px;font:16px sans-serif;z-index:2147483000"; document.body.appendChild(b); })();',
      },
      '/launcher': { body: solidDoc(LAUNCHER) },
    },
    params: {},
    async check(a) {
      const p = await a.picture();
      expectColour(p, 400, 40, HEADER, 'the page header');
      expectColour(p, 100, 220, PICTURE, 'the page’s picture');
      expectColour(p, 748, 548, LAUNCHER, 'the chat launcher (a cross-site frame)');
      expectInk(p, { x: 540, y: 420, w: 240, h: 80 }, 'the greeting bubble');
    },
  },
  {
    name: 'newsletter-modal',
    mimics: 'newsletter and discount pop-ups (Klaviyo, Mailchimp, OptinMonster) shown over a dimmed page as it loads',
    routes: { '/': { body: newsletterModal() } },
    params: {},
    async check(a) {
      const p = await a.picture();
      expectInk(p, { x: 250, y: 100, w: 300, h: 100 }, 'the modal’s heading');
      expectColour(p, 400, 315, MODAL_BUTTON, 'the modal’s button');
      // The page behind it: drawn, dimmed by the half-black backdrop.
      expectColour(p, 100, 220, PICTURE.map((v) => Math.round(v / 2)) as Rgb, 'the page’s picture behind the backdrop', 6);
      expectColour(p, 600, 40, HEADER.map((v) => Math.round(v / 2)) as Rgb, 'the page header behind the backdrop', 6);
    },
  },
  {
    name: 'shadow-modal-blocked',
    mimics: 'a modal and its backdrop drawn inside an open shadow root (web-component modals, Usercentrics), the body locked, with block_overlays',
    routes: { '/': { body: shadowModal() } },
    params: { block_overlays: true },
    async check(a) {
      expectArticle(await a.picture());
    },
  },
  {
    name: 'web-component-modal-blocked',
    mimics: 'a modal web component whose fixed panel (in its shadow root) shows slotted page markup, <html> locked, with block_overlays',
    routes: { '/': { body: webComponentModal() } },
    params: { block_overlays: true },
    async check(a) {
      expectArticle(await a.picture());
    },
  },
  {
    name: 'newsletter-modal-blocked',
    mimics: 'the same pop-up with block_overlays: the dialog and its backdrop are removed, the article drawn as it is',
    routes: { '/': { body: newsletterModal() } },
    params: { block_overlays: true },
    async check(a) {
      expectArticle(await a.picture());
    },
  },
];
