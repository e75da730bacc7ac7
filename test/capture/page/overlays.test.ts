/**
 * hide_selectors, remove_selectors, block_chats, block_overlays and press_escape: the chat
 * decisions on their own, then end to end on the real Grid with local pages that do what real
 * sites do (a Bootstrap-style newsletter modal that locks the page's scrolling, a Tidio
 * bubble loaded from code.tidio.co — mapped to a local server — and an Intercom launcher,
 * the same modal inside an open shadow root, an application drawn in one fixed layer of a
 * shadow root, a site's fixed header and sticky sidebar, a dialog that closes on Escape), checked in the
 * pixels and in the record's `overlays`.
 */
import { expect } from 'chai';
import { SNAP_PARAMS } from '../../../services/api/request-schemas';
import { CHAT_HOSTS, withChatBlocking } from '../../../services/capture/page/overlays';
import { pixelsOf, startCaptureSystem } from '../../support/capture-helpers';
import { errorOf, expectEnvelope } from '../../support/errors';
import { type HttpAnswer, qs, request } from '../../support/http';
import { type LocalServer, servePages } from '../../support/local-server';
import type { RunningSystem } from '../../support/system';
import { mapToLoopback } from '../../support/test-dns';

type Rgb = [number, number, number];
const WHITE: Rgb = [255, 255, 255];
const GREEN: Rgb = [0, 160, 0];
const RED: Rgb = [200, 0, 0];
const BLUE: Rgb = [0, 0, 200];
const PURPLE: Rgb = [120, 0, 160];
const ORANGE: Rgb = [255, 140, 0];
const NAVY: Rgb = [20, 20, 120];
const GREY: Rgb = [120, 120, 120];
const near = (a: Rgb, b: Rgb) => a.every((v, i) => Math.abs(v - b[i]!) <= 12);

const SITE = 'www.overlays.test';
const TIDIO = 'code.tidio.co';
mapToLoopback([TIDIO]);

const page = (style: string, body: string) =>
  `<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0;padding:0;background:#fff}${style}</style></head><body>${body}</body></html>`;

const PAGES: Record<string, (port: number) => string> = {
  // Bootstrap's shape: .modal (fixed, the whole viewport) holding the dialog, a separate
  // .modal-backdrop, and body.modal-open { overflow: hidden }; shown at the load event.
  '/newsletter': () =>
    page(
      '#hero{position:absolute;left:0;top:0;width:800px;height:600px;background:rgb(0,160,0)}' +
        '#tail{position:absolute;left:0;top:1800px;width:800px;height:200px;background:rgb(0,0,200)}#doc{height:2000px}' +
        'body.modal-open{overflow:hidden}.modal{position:fixed;inset:0;z-index:1050;display:flex;align-items:center;justify-content:center}' +
        '.modal-dialog{width:400px;height:300px;background:rgb(200,0,0)}.modal-backdrop{position:fixed;inset:0;z-index:1040;background:rgba(0,0,0,0.6)}',
      '<div id="doc"><div id="hero"></div><div id="tail"></div></div>' +
        "<script>addEventListener('load', () => { document.body.classList.add('modal-open');" +
        'document.body.insertAdjacentHTML(\'beforeend\', \'<div class="modal-backdrop fade show"></div><div id="newsletter" class="modal fade show">' +
        '<div class="modal-dialog">Subscribe to our newsletter</div></div>\'); });</script>',
    ),
  // The same modal drawn the way Usercentrics and web-component modals draw theirs: a plain
  // host at the end of the body, the backdrop and the dialog fixed inside its open shadow root.
  '/shadow-modal': () =>
    page(
      '#hero{position:absolute;left:0;top:0;width:800px;height:600px;background:rgb(0,160,0)}' +
        '#tail{position:absolute;left:0;top:1800px;width:800px;height:200px;background:rgb(0,0,200)}#doc{height:2000px}',
      '<div id="doc"><div id="hero"></div><div id="tail"></div></div><div id="consent-root"></div>' +
        "<script>document.body.style.overflow = 'hidden'; document.getElementById('consent-root').attachShadow({ mode: 'open' }).innerHTML = " +
        '\'<div class="uc-backdrop" style="position:fixed;inset:0;background:rgba(0,0,0,0.6)"></div>' +
        '<div id="uc-dialog" class="uc-banner" style="position:fixed;left:200px;top:150px;width:400px;height:300px;background:rgb(200,0,0)"></div>\';</script>',
    ),
  // An application drawn whole in one fixed layer inside a custom element's shadow root, its
  // document locked: no page under it, so nothing to uncover.
  '/shadow-app': () =>
    page(
      '',
      '<app-shell></app-shell><script>customElements.define("app-shell", class extends HTMLElement { constructor() { super();' +
        'this.attachShadow({ mode: "open" }).innerHTML = \'<main style="position:fixed;inset:0;background:rgb(0,160,0)">' +
        '<nav style="position:absolute;left:0;top:0;width:200px;height:600px;background:rgb(20,20,120)"></nav></main>\'; } });' +
        'document.documentElement.style.overflow = "hidden";</script>',
    ),
  // Tidio's loader from its own host draws the bubble (bottom right); Intercom's lightweight launcher is in the page (bottom left).
  '/chat': (port) =>
    page(
      '.intercom-lightweight-app{position:fixed;left:20px;bottom:20px;width:60px;height:60px;background:rgb(255,140,0)}',
      `<p>Support page</p><div class="intercom-lightweight-app"></div><script src="http://${TIDIO}:${port}/widget.js"></script>`,
    ),
  // A site's own fixed header and sticky sidebar, no modal, scrolling free.
  '/header': () =>
    page(
      'header{position:fixed;top:0;left:0;right:0;height:80px;background:rgb(20,20,120);z-index:50}' +
        '.layout{display:flex;padding-top:80px}aside{position:sticky;top:80px;width:200px;height:520px;background:rgb(120,120,120);align-self:flex-start}' +
        'main{flex:1;height:3000px;background:rgb(0,160,0)}',
      '<header></header><div class="layout"><aside></aside><main></main></div>',
    ),
  '/blocks': () =>
    page(
      '.blk{width:800px;height:100px}',
      '<div id="a" class="blk promo" style="background:rgb(200,0,0)"></div><div id="b" class="blk" style="background:rgb(0,160,0)"></div>' +
        '<div id="c" class="blk" style="background:rgb(0,0,200)"></div>',
    ),
  // A dialog that closes on a real Escape key press only (isTrusted), as many modal libraries' do.
  '/escape': () =>
    page(
      '#content{position:absolute;inset:0;background:rgb(0,160,0)}#dlg{position:fixed;left:200px;top:150px;width:400px;height:300px;background:rgb(200,0,0)}',
      '<div id="content"></div><div id="dlg" role="dialog"></div>' +
        "<script>addEventListener('keydown', (e) => { if (e.key === 'Escape' && e.isTrusted) document.getElementById('dlg').remove(); });</script>",
    ),
};

const WIDGET_JS =
  "const c = document.createElement('div'); c.id = 'tidio-chat';" +
  'c.innerHTML = \'<div style="position:fixed;right:20px;bottom:20px;width:60px;height:60px;border-radius:30px;' +
  'background:rgb(120,0,160)"></div>\'; document.body.appendChild(c);';

describe('hide_selectors and remove_selectors as requests send them', () => {
  const parse = (raw: Record<string, unknown>) => SNAP_PARAMS.parse({ url: 'https://example.com/', ...raw }) as Record<string, unknown>;

  it('takes a JSON array, one selector as text (never split at its commas, an attribute selector too), or the parameter repeated', () => {
    expect(parse({ hide_selectors: '["#a", ".b"]' }).hide_selectors).to.deep.equal(['#a', '.b']);
    expect(parse({ hide_selectors: '.a, .b' }).hide_selectors).to.deep.equal(['.a, .b']);
    expect(parse({ remove_selectors: '[data-popup="1"]' }).remove_selectors).to.deep.equal(['[data-popup="1"]']);
    expect(parse({ remove_selectors: ['#a', '#b'] }).remove_selectors).to.deep.equal(['#a', '#b']);
    expect(parse({ hide_selector: '#a' }).hide_selectors, 'Urlbox').to.deep.equal(['#a']);
    expect(parse({ hide: '#a', remove: '#b' }), 'Microlink').to.deep.include({ hide_selectors: ['#a'], remove_selectors: ['#b'] });
  });

  it('refuses an empty list, an empty selector and more than 50 with invalid_parameter naming the option', () => {
    for (const raw of [
      { hide_selectors: '[]' },
      { hide_selectors: '[""]' },
      { remove_selectors: JSON.stringify(Array.from({ length: 51 }, (_, i) => `#e${i}`)) },
    ]) {
      const err = errorOf(() => parse(raw));
      expect(err.type, JSON.stringify(raw)).to.equal('invalid_parameter');
      expect(err.message, JSON.stringify(raw)).to.contain(Object.keys(raw)[0]);
    }
  });
});

describe('chat widget requests (block_chats)', () => {
  const lists = { decide: () => ({ block: false }) };
  const req = (url: string, resourceType = 'Script') => ({ url, pageUrl: 'https://shop.example/', resourceType, isMainFrame: false });

  it("discards the chat widgets' hosts, and their subdomains, with block_chats only", () => {
    const d = withChatBlocking(lists, { block_chats: true });
    expect(d?.decide(req('https://widget.intercom.io/widget/abc'), {}).block).to.equal(true);
    expect(d?.decide(req('https://client.crisp.chat/l.js'), {}).block).to.equal(true);
    expect(d?.decide(req('https://x.static.zdassets.com/ekr/snippet.js'), {}).block).to.equal(true);
    expect(d?.decide(req('https://embed.tawk.to/123/default'), {}).block).to.equal(true);
    expect(d?.decide(req('https://shop.example/app.js'), {}).block).to.equal(false);
    expect(d?.decide(req('https://notintercom.io/x.js'), {}).block).to.equal(false);
    expect(withChatBlocking(lists, {})).to.equal(lists);
    expect(withChatBlocking(null, {})).to.equal(null);
    expect(CHAT_HOSTS).to.include.members(['js.driftt.com', 'code.tidio.co', 'cdn.livechatinc.com', 'static.olark.com', 'js.usemessages.com']);
  });

  it("still asks the lists' blocker for other requests, and never blocks the page itself", () => {
    const d = withChatBlocking({ decide: () => ({ block: true, reason: 'EasyList' }) }, { block_chats: true });
    expect(d?.decide(req('https://shop.example/ad.js'), {})).to.deep.equal({ block: true, reason: 'EasyList' });
    const pageItself = { url: 'https://widget.intercom.io/', pageUrl: 'https://widget.intercom.io/', resourceType: 'Document', isMainFrame: true };
    expect(withChatBlocking(null, { block_chats: true })?.decide(pageItself, {}).block).to.equal(false);
  });
});

describe('overlays on a real Selenium Grid (hide_selectors, remove_selectors, block_chats, block_overlays, press_escape)', function () {
  this.timeout(120_000);
  let site: LocalServer;
  let sys: RunningSystem;
  let token: string;
  let cleanup: () => Promise<void>;
  const requested: string[] = [];

  const url = (path: string) => `http://${SITE}:${site.port}${path}`;
  const snap = (params: Record<string, string | number | boolean>): Promise<HttpAnswer> =>
    request(sys.base, 'GET', `/snap?${qs({ access_token: token, wait: 0, ttl: 0, page_width: 800, page_height: 600, image_format: 'png', ...params })}`);
  const shot = async (params: Record<string, string | number | boolean>) => {
    const r = await snap(params);
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    return pixelsOf(r.raw);
  };
  const record = async (params: Record<string, string | number | boolean>) => {
    const r = await snap({ ...params, json: true });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    return r.body as { overlays?: Array<{ element: string; reason: string; selector?: string }>; id: string };
  };

  before(async () => {
    site = await servePages(({ req, path }, port) => {
      requested.push(`${req.headers.host?.split(':')[0]}${path}`);
      if (path === '/widget.js') return { body: WIDGET_JS, headers: { 'content-type': 'text/javascript' } };
      const p = PAGES[path];
      return p ? { body: p(port) } : undefined;
    });
    ({ sys, token, cleanup } = await startCaptureSystem({
      ALLOW_PRIVATE_NETWORKS: 'true',
      CAPTURE_SESSIONS: '2',
      CAPTURE_TIMEOUT_MS: '15000',
      CHROME_EXTRA_ARGS: JSON.stringify([`--host-resolver-rules=MAP ${SITE} 127.0.0.1, MAP ${TIDIO} 127.0.0.1`]),
    }));
  });
  after(async () => {
    await cleanup?.();
    await site?.stop();
  });

  describe('block_overlays', () => {
    it('without it, the newsletter modal and its backdrop cover the page', async () => {
      const p = await shot({ url: url('/newsletter') });
      expect(near(p.at(400, 300), RED), `modal ${p.at(400, 300)}`).to.equal(true);
      expect(near(p.at(50, 50), GREEN), 'the backdrop darkens the page').to.equal(false);
    });

    it("removes the modal and its backdrop: the page's own content shows behind, and the record says what and why", async () => {
      const p = await shot({ url: url('/newsletter'), block_overlays: true });
      expect(near(p.at(400, 300), GREEN), `centre ${p.at(400, 300)}`).to.equal(true);
      expect(near(p.at(50, 50), GREEN), `corner ${p.at(50, 50)}`).to.equal(true);
      const r = await record({ url: url('/newsletter'), block_overlays: true });
      expect(r.overlays).to.deep.equal([
        { element: 'div#newsletter.modal.fade.show', reason: 'overlay' },
        { element: 'div.modal-backdrop.fade.show', reason: 'overlay' },
      ]);
    });

    it("restores the page's scrolling: a full page shows its end, and the page is no longer locked", async () => {
      const p = await shot({ url: url('/newsletter'), block_overlays: true, fullpage: true });
      expect(p.height).to.equal(2000);
      expect(near(p.at(400, 300), GREEN), `top ${p.at(400, 300)}`).to.equal(true);
      expect(near(p.at(400, 1900), BLUE), `end ${p.at(400, 1900)}`).to.equal(true);
      const html = await snap({ url: url('/newsletter'), block_overlays: true, html_only: true, image_format: 'jpeg' });
      expect(html.status).to.equal(200);
      expect((html.body as { html: string }).html).to.match(/<body class="modal-open" style="overflow: visible !important;">/);
    });

    it('finds the layers inside an open shadow root: removes them, lists them and unlocks the page', async () => {
      const before = await shot({ url: url('/shadow-modal') });
      expect(near(before.at(400, 300), RED), `modal without block_overlays ${before.at(400, 300)}`).to.equal(true);
      const p = await shot({ url: url('/shadow-modal'), block_overlays: true });
      expect(near(p.at(400, 300), GREEN), `centre ${p.at(400, 300)}`).to.equal(true);
      expect(near(p.at(50, 50), GREEN), `corner ${p.at(50, 50)}`).to.equal(true);
      expect((await record({ url: url('/shadow-modal'), block_overlays: true })).overlays).to.deep.equal([
        { element: 'div#uc-dialog.uc-banner', reason: 'overlay' },
        { element: 'div.uc-backdrop', reason: 'overlay' },
      ]);
      const html = await snap({ url: url('/shadow-modal'), block_overlays: true, html_only: true, image_format: 'jpeg' });
      expect(html.status).to.equal(200);
      expect((html.body as { html: string }).html).to.match(/<body style="overflow: visible !important;">/);
    });

    it('keeps an application drawn in one fixed layer inside a shadow root (its host is no page under it)', async () => {
      const p = await shot({ url: url('/shadow-app'), block_overlays: true });
      expect(near(p.at(500, 300), GREEN), `app ${p.at(500, 300)}`).to.equal(true);
      expect(near(p.at(100, 300), NAVY), `app's navigation ${p.at(100, 300)}`).to.equal(true);
      expect((await record({ url: url('/shadow-app'), block_overlays: true })).overlays).to.deep.equal([]);
    });

    it("keeps a site's fixed header and sticky sidebar (the pixels show them; nothing is listed)", async () => {
      const p = await shot({ url: url('/header'), block_overlays: true });
      expect(near(p.at(400, 40), NAVY), `header ${p.at(400, 40)}`).to.equal(true);
      expect(near(p.at(100, 300), GREY), `sidebar ${p.at(100, 300)}`).to.equal(true);
      expect(near(p.at(500, 300), GREEN), `main ${p.at(500, 300)}`).to.equal(true);
      const full = await shot({ url: url('/header'), block_overlays: true, fullpage: true });
      expect(near(full.at(400, 40), NAVY), 'header in a full page').to.equal(true);
      expect((await record({ url: url('/header'), block_overlays: true })).overlays).to.deep.equal([]);
    });
  });

  describe('block_chats', () => {
    it("without it, Tidio's bubble and Intercom's launcher show", async () => {
      const since = requested.length;
      const p = await shot({ url: url('/chat') });
      expect(near(p.at(750, 550), PURPLE), `tidio ${p.at(750, 550)}`).to.equal(true);
      expect(near(p.at(50, 550), ORANGE), `intercom ${p.at(50, 550)}`).to.equal(true);
      expect(requested.slice(since)).to.include(`${TIDIO}/widget.js`);
    });

    it("blocks the widget's script (never requested) and hides the widget's container; the record lists it", async () => {
      const since = requested.length;
      const p = await shot({ url: url('/chat'), block_chats: true });
      expect(p.at(750, 550), 'tidio').to.deep.equal(WHITE);
      expect(p.at(50, 550), 'intercom').to.deep.equal(WHITE);
      expect(requested.slice(since)).to.include(`${SITE}/chat`);
      expect(requested.slice(since)).to.not.include(`${TIDIO}/widget.js`);
      const r = await record({ url: url('/chat'), block_chats: true });
      expect(r.overlays).to.deep.equal([{ element: 'div.intercom-lightweight-app', reason: 'chat', selector: '.intercom-lightweight-app' }]);
    });
  });

  describe('hide_selectors and remove_selectors', () => {
    it('hide_selectors leaves the area showing the background (the layout stays)', async () => {
      const p = await shot({ url: url('/blocks'), hide_selectors: '#a' });
      expect(p.at(400, 50), 'where #a was').to.deep.equal(WHITE);
      expect(near(p.at(400, 150), GREEN), '#b in place').to.equal(true);
      const r = await record({ url: url('/blocks'), hide_selector: '#a' });
      expect(r.overlays).to.deep.equal([{ element: 'div#a.blk.promo', reason: 'hide_selectors', selector: '#a' }]);
    });

    it('remove_selectors closes the layout up behind the element (a JSON array)', async () => {
      const p = await shot({ url: url('/blocks'), remove_selectors: '["#a", ".nothing-matches"]' });
      expect(near(p.at(400, 50), GREEN), `#b moved up ${p.at(400, 50)}`).to.equal(true);
      expect(near(p.at(400, 150), BLUE), '#c moved up').to.equal(true);
      const r = await record({ url: url('/blocks'), remove_selectors: '["#a", ".nothing-matches"]' });
      expect(r.overlays).to.deep.equal([{ element: 'div#a.blk.promo', reason: 'remove_selectors', selector: '#a' }]);
    });

    it('takes the parameter repeated in the query (as the Python client sends a list), and refuses any other parameter repeated', async () => {
      const base = qs({ access_token: token, url: url('/blocks'), wait: 0, ttl: 0, page_width: 800, page_height: 600, image_format: 'png' });
      const r = await request(sys.base, 'GET', `/snap?${base}&hide_selectors=%23a&hide_selectors=%23c`);
      expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
      const p = await pixelsOf(r.raw);
      expect(p.at(400, 50), 'where #a was').to.deep.equal(WHITE);
      expect(near(p.at(400, 150), GREEN), '#b in place').to.equal(true);
      expect(p.at(400, 250), 'where #c was').to.deep.equal(WHITE);
      const removed = await request(sys.base, 'GET', `/snap?${base}&remove=%23a&remove=%23b`);
      expect(near((await pixelsOf(removed.raw)).at(400, 50), BLUE), '#c moved up').to.equal(true);
      expectEnvelope(await request(sys.base, 'GET', `/snap?${base}&page_height=500`), 400, 'invalid_parameter', 'page_height: given more than once');
    });

    it('reads an attribute selector given as text as a selector, not as JSON', async () => {
      const p = await shot({ url: url('/blocks'), remove_selectors: '[id="a"]' });
      expect(near(p.at(400, 50), GREEN)).to.equal(true);
    });

    it('refuses a selector the browser cannot parse, or an empty list, with 400 and a note', async () => {
      expectEnvelope(
        await snap({ url: url('/blocks'), hide_selectors: 'div[' }),
        400,
        'invalid_parameter',
        'hide_selectors',
        'div[',
        'not a valid CSS selector',
      );
      expectEnvelope(await snap({ url: url('/blocks'), remove_selectors: '["#a", "##b"]' }), 400, 'invalid_parameter', 'remove_selectors', '##b');
      expectEnvelope(await snap({ url: url('/blocks'), hide_selectors: '[]' }), 400, 'invalid_parameter', 'hide_selectors');
    });

    it('a record without any overlay option has no overlays field', async () => {
      expect(await record({ url: url('/blocks') })).to.not.have.property('overlays');
    });
  });

  describe('press_escape', () => {
    it('a real Escape key press closes a dialog that listens for it', async () => {
      const open = await shot({ url: url('/escape') });
      expect(near(open.at(400, 300), RED), 'the dialog without press_escape').to.equal(true);
      const closed = await shot({ url: url('/escape'), press_escape: true });
      expect(near(closed.at(400, 300), GREEN), `after Escape ${closed.at(400, 300)}`).to.equal(true);
    });
  });

  describe('the archive', () => {
    it("the account-wide list's record of a capture carries the same overlays (stored)", async () => {
      const r = await record({ url: url('/blocks'), hide_selectors: '#a' });
      const list = await request<{ screenshots?: Array<{ id: string; overlays?: unknown }> }>(
        sys.base,
        'GET',
        `/screenshots?${qs({ access_token: token, limit: 100 })}`,
      );
      expect(list.status, list.raw.toString().slice(0, 300)).to.equal(200);
      const mine = list.body.screenshots?.find((s) => s.id === r.id);
      expect(mine?.overlays).to.deep.equal([{ element: 'div#a.blk.promo', reason: 'hide_selectors', selector: '#a' }]);
    });
  });
});
