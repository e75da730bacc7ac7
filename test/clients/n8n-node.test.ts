/**
 * The official n8n node (PagePixels/n8n-nodes-pagepixels-screenshots), replayed: it is not on
 * the npm registry, and n8n itself is far too large to run here, so each operation's request
 * is sent exactly as n8n's RoutingNode puts it on the wire (docs/clients.md): axios with qs
 * (`arrayFormat: 'indices'`, brackets percent-encoded), `json=true` in every query
 * (requestDefaults), `Accept: application/json`, `User-Agent: n8n`, and the options a user
 * added but left untouched sent at their defaults (0, "", false, the example texts).
 * v1.0.0 POSTs a JSON body with `json` and `analyze_image_with_ai` in the query; v0.1.0 sends
 * everything as GET query parameters, with lists as indexed keys. The answer is read as the
 * node's output item: the JSON body of a 2xx.
 */
import { expect } from 'chai';
import { imageSize } from '../support/capture-helpers';
import { type ClientWorld, clientWorld, send } from './harness';

/** Every option of the node's Options collection, added and left untouched, as v1.0.0 sends them in its JSON body. */
const V1_UNTOUCHED = {
  time_zone: '',
  wait: 0,
  wait_for: '',
  multi_step_actions:
    '[{"type": "click", "selector": "#some-element-on-the-page"}, {"type": "text_field", "selector": "#searchInput", "value": "setting a search input field ' +
    'to a specific value on the webpage."}]',
  incremental_scroll: false,
  page_width: 0,
  page_height: 0,
  fullpage: false,
  fullpage_advanced: false,
  selectors: '',
  hover_on_selected: false,
  image_format: 'jpeg',
  quality: 0,
  scale_factor: 1,
  css_inject: '',
  js_inject: '',
  user_agent: '',
  headers: '[{"key1": "value1", "key2": "value2"}]',
  cookies: '[{"key1": "value1", "key2": "value2"}]',
  ttl: 0,
  accept_language: '',
  latitude: '',
  longitude: '',
  accuracy: '',
  thumb_width: 0,
  thumb_height: 0,
  no_ads: false,
  no_tracking: false,
  no_cookie_banners: false,
  disable_js: false,
  disable_third_party_js: false,
  custom_title: '',
  custom_description: '',
};

/** The same options as v0.1.0 puts them in its query (headers, cookies and actions, left empty, vanish). */
const V01_UNTOUCHED =
  'time_zone=&wait=0&wait_for=&incremental_scroll=false&page_width=0&page_height=0&fullpage=false&fullpage_advanced=false&selectors=&' +
  'hover_on_selected=false&image_format=jpeg&quality=0&scale_factor=1&css_inject=&js_inject=&user_agent=&ttl=0&accept_language=&latitude=&' +
  'longitude=&accuracy=&thumb_width=0&thumb_height=0&no_ads=false&no_tracking=false&no_cookie_banners=false&disable_js=false&' +
  'disable_third_party_js=false&custom_title=&custom_description=';

/** qs.stringify's value encoding (RFC 3986, as encodeURIComponent). */
const enc = encodeURIComponent;

describe('client replay: the official n8n node', function () {
  this.timeout(120_000);
  const w: ClientWorld = clientWorld();

  /** n8n's headers for the API-key credential (Use Bearer Prefix on, unless `bare`). */
  const headers = (bare = false, json = false): Record<string, string> => ({
    accept: 'application/json',
    authorization: bare ? w.key : `Bearer ${w.key}`,
    'user-agent': 'n8n',
    ...(json ? { 'content-type': 'application/json' } : {}),
  });
  const post = (target: string, body: Record<string, unknown>) => send(w.base, 'POST', target, headers(false, true), JSON.stringify(body));
  const get = (target: string, bare = false) => send(w.base, 'GET', target, headers(bare));
  const expectRecord = (r: Awaited<ReturnType<typeof send>>) => {
    expect(r.status, r.raw.toString().slice(0, 400)).to.equal(200);
    expect(r.body).to.include({ success: true });
    expect(r.body).to.include.keys('id', 'direct_link', 'job_id', 'screenshot_configuration_id');
  };

  describe('v1.0.0: POST with a JSON body, json (and analyze_image_with_ai) in the query', () => {
    it('Quick Snap with every option added and left untouched: the example actions run, the example headers and cookies reach the page', async () => {
      const r = await post('/snap?json=true', { url: `${w.site.origin}/page?op=v1-quick`, ...V1_UNTOUCHED });
      expectRecord(r);
      // page_width=0, quality=0, thumb_width=0: the defaults (1920x1000 JPEG).
      const image = await w.file(String(r.body.direct_link));
      expect(image.subarray(0, 3).toString('hex')).to.equal('ffd8ff');
      expect(await imageSize(image)).to.deep.equal([1920, 1000]);
      const seen = w.seenAt('/page').find((s) => s.query === 'op=v1-quick');
      expect(seen?.headers).to.include({ key1: 'value1', key2: 'value2', cookie: 'key1=value1; key2=value2' });
    });

    it('Quick Snap with headers and cookies typed as the node asks ([{"Header-Name": "value"}] as JSON text)', async () => {
      const r = await post('/snap?json=true', {
        url: `${w.site.origin}/page?op=v1-headers`,
        headers: '[{"X-Api": "1", "Accept-Language": "fr"}]',
        cookies: '[{"sid": "abc"}]',
        wait: 0,
        ttl: 0,
        multi_step_actions: '[{"type": "change", "selector": "#price", "send_to": "slack", "url": "http://127.0.0.1:9/hook", "custom_id": "n8n-1"}]',
      });
      expectRecord(r);
      const seen = w.seenAt('/page').find((s) => s.query === 'op=v1-headers');
      expect(seen?.headers).to.include({ 'x-api': '1', 'accept-language': 'fr', cookie: 'sid=abc' });
    });

    it('AI Analysis Screenshot: POST /snap?json=true&analyze_image_with_ai=true with ai_prompt in the body', async () => {
      const r = await post('/snap?json=true&analyze_image_with_ai=true', {
        url: `${w.site.origin}/page?op=v1-ai`,
        ai_prompt: 'Name the button',
        wait: 0,
        ttl: 0,
      });
      expectRecord(r);
      expect(r.body.ai).to.include({ ai_analyzed: true, ai_prompt: 'Name the button' });
      expect(JSON.stringify(w.ai.of('analyze').at(-1)?.body)).to.contain('Name the button');
    });

    it('Real Location Screenshot: proxy_server in the body, a name from /real_locations', async () => {
      const before = w.upstreamUsers.length;
      const r = await post('/snap?json=true', { url: `${w.site.origin}/page?op=v1-located`, proxy_server: 'New York', wait: 0, ttl: 0 });
      expectRecord(r);
      expect(r.body).to.include({ is_proxy_screenshot: true, proxy_server: 'New York' });
      expect(w.upstreamUsers.slice(before).some((u) => u.startsWith('us-newyork-session-'))).to.equal(true);
    });

    it('Snap HTML: POST /snap_html?json=true with html_content', async () => {
      const r = await post('/snap_html?json=true', {
        html_content: '<h1>Hi from n8n</h1>',
        ...V1_UNTOUCHED,
        multi_step_actions: '[]',
        headers: '[]',
        cookies: '[]',
      });
      expectRecord(r);
    });

    it('List Real Locations (GET /real_locations?json=true), and the credential test with the bare key', async () => {
      const r = await get('/real_locations?json=true');
      expect(r.body).to.deep.equal({ success: true, results: ['London', 'New York', 'USA'] });
      // The credential test: no json=true, "Use Bearer Prefix" off.
      const test = await send(w.base, 'GET', '/real_locations', { authorization: w.key, accept: 'application/json, text/plain, */*', 'user-agent': 'n8n' });
      expect(test.status).to.equal(200);
    });
  });

  describe('v0.1.0: GET, every parameter in the query, lists as indexed keys', () => {
    it('Quick Snap with every option added and left untouched', async () => {
      const r = await get(`/snap?json=true&url=${enc(`${w.site.origin}/page?op=v01-quick`)}&${V01_UNTOUCHED}`);
      expectRecord(r);
      expect(await imageSize(await w.file(String(r.body.direct_link)))).to.deep.equal([1920, 1000]);
    });

    it('Quick Snap with headers[0], cookies[0] (a Set-Cookie-like string) and multi_step_actions[N] (one JSON text each)', async () => {
      const query = [
        'json=true',
        `url=${enc(`${w.site.origin}/page?op=v01-lists`)}`,
        `multi_step_actions%5B0%5D=${enc('{"type":"click","selector":"#login"}')}`,
        `multi_step_actions%5B1%5D=${enc('{"type":"wait","value":"100"}')}`,
        'wait=0',
        `headers%5B0%5D=${enc('X-Test: a b')}`,
        `headers%5B1%5D=${enc('Accept-Language: fr')}`,
        `cookies%5B0%5D=${enc('sid=abc; Path=/')}`,
        'ttl=0',
      ].join('&');
      const r = await get(`/snap?${query}`, true);
      expectRecord(r);
      const seen = w.seenAt('/page').find((s) => s.query === 'op=v01-lists');
      expect(seen?.headers).to.include({ 'x-test': 'a b', 'accept-language': 'fr', cookie: 'sid=abc' });
    });

    it('AI Analysis Screenshot: GET /snap_ai_analysis?json=true&analyze_image_with_ai=true&url=…&ai_prompt=…', async () => {
      const r = await get(
        `/snap_ai_analysis?json=true&analyze_image_with_ai=true&url=${enc(`${w.site.origin}/page?op=v01-ai`)}` +
          `&ai_prompt=${enc('Describe the page')}&wait=0&ttl=0`,
      );
      expectRecord(r);
      expect(r.body.ai).to.include({ ai_analyzed: true, ai_prompt: 'Describe the page' });
    });

    it('Real Location Screenshot: GET /snap_real_location?json=true&url=…&proxy_server=…', async () => {
      const before = w.upstreamUsers.length;
      const r = await get(`/snap_real_location?json=true&url=${enc(`${w.site.origin}/page?op=v01-located`)}&proxy_server=London&wait=0&ttl=0`);
      expectRecord(r);
      expect(r.body).to.include({ is_proxy_screenshot: true, proxy_server: 'London' });
      expect(w.upstreamUsers.slice(before).some((u) => u.startsWith('gb-london-session-'))).to.equal(true);
    });

    it('Snap HTML: GET /snap_html?json=true&html_content=…', async () => {
      const r = await get(`/snap_html?json=true&html_content=${enc('<h1>Hi</h1>')}&${V01_UNTOUCHED}`);
      expectRecord(r);
    });

    it('the endpoints the node adds refuse what they cannot do, in the envelope', async () => {
      const noPrompt = await get(`/snap_ai_analysis?json=true&analyze_image_with_ai=true&url=${enc(`${w.site.origin}/page`)}`);
      expect([noPrompt.status, noPrompt.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
      expect(String(noPrompt.body.note)).to.contain('ai_prompt is required');
      const off = await get(`/snap_ai_analysis?json=true&analyze_image_with_ai=false&ai_prompt=x&url=${enc(`${w.site.origin}/page`)}`);
      expect(String(off.body.note)).to.contain('analyze_image_with_ai: this endpoint analyses the capture');
      const noPlace = await get(`/snap_real_location?json=true&url=${enc(`${w.site.origin}/page`)}`);
      expect([noPlace.status, noPlace.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
      expect(String(noPlace.body.note)).to.contain('real_location is required');
      const unknown = await get(`/snap_real_location?json=true&url=${enc(`${w.site.origin}/page`)}&proxy_server=Atlantis`);
      expect([unknown.status, unknown.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
    });
  });
});
