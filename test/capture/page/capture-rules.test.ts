/**
 * The fail-on rules (fail_on_status, fail_if_selector_missing, fail_if_selector_present,
 * fail_if_content_contains, fail_if_content_missing) and the page's final status and address
 * in the record, end to end on the real Grid, with local pages that do what real sites do: a
 * 404 page, a 503 maintenance page, a 200 "Access denied" block page with a captcha, a page
 * moved by a 301.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { CdpConnection } from '../../../services/capture/page/cdp';
import { pixel, screenshotsUsed, snapSuite } from '../../support/capture-helpers';
import { expectEnvelope } from '../../support/errors';
import { jobFinished, request } from '../../support/http';
import { type LocalServer, servePages } from '../../support/local-server';

type Body = Record<string, unknown>;

/** A page of one colour with a heading: the picture tells the page was captured. */
const page = (colour: string, body: string) =>
  `<!doctype html><html><head><style>html,body{margin:0;height:100%;background:${colour}}</style></head><body>${body}</body></html>`;

describe('fail-on rules and the final status in the record (real browser)', function () {
  this.timeout(120_000);
  const t = snapSuite({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '2', CAPTURE_TIMEOUT_MS: '15000' });
  let site: LocalServer;
  const at = (path: string) => `${site.origin}${path}`;
  const used = () => screenshotsUsed(t.sys, t.token);

  before(async () => {
    site = await servePages(({ path }) => {
      if (path === '/missing') return { status: 404, body: page('rgb(200,0,0)', '<h1>Page not found</h1>') };
      if (path === '/down') return { status: 503, body: page('rgb(0,0,200)', '<h1>Down for maintenance</h1>') };
      if (path === '/blocked') {
        return {
          body: page(
            'rgb(0,200,0)',
            '<h1>Access denied</h1><p>Please prove you are human.</p><div id="captcha" class="g-recaptcha challenge">captcha here</div>',
          ),
        };
      }
      if (path === '/ok') return { body: page('rgb(255,255,255)', '<main id="content"><h1>Welcome to the shop</h1></main>') };
      if (path === '/old') return { status: 301, headers: { location: '/ok' }, body: '' };
      // A challenge page: answered 503, it moves on to the real page by script (as a bot check does once passed).
      if (path === '/challenge')
        return { status: 503, body: page('rgb(90,90,90)', "<p>Checking your browser…</p><script>setTimeout(() => { location.href = '/ok'; }, 300);</script>") };
      return undefined;
    });
  });
  after(() => site?.stop());

  /** The capture failed with 422 capture_rule_failed, the note naming each fragment, and nothing was charged. */
  async function expectRuleFailed(params: Record<string, string | number | boolean>, ...fragments: string[]): Promise<void> {
    const before = await used();
    expectEnvelope(await t.snap(params), 422, 'capture_rule_failed', ...fragments);
    expect(await used(), 'nothing charged').to.equal(before);
  }

  describe('fail_on_status, on the main document', () => {
    it('fails a page answering 404 with 422, naming the rule and the status; nothing charged', async () => {
      await expectRuleFailed({ url: at('/missing'), fail_on_status: '404' }, 'fail_on_status', 'HTTP 404', '"404"', at('/missing'));
      await expectRuleFailed({ url: at('/missing'), fail_on_status: '4xx' }, 'fail_on_status', 'HTTP 404', '"4xx"');
      await expectRuleFailed({ url: at('/missing'), fail_on_status: '400-403, 404 ,500-599' }, 'HTTP 404');
    });

    it('fails a page answering 503 with 422 for 5xx and 500-599', async () => {
      await expectRuleFailed({ url: at('/down'), fail_on_status: '5xx' }, 'fail_on_status', 'HTTP 503', '"5xx"');
      await expectRuleFailed({ url: at('/down'), fail_on_status: '404,500-599' }, 'HTTP 503');
    });

    it('on an error page the list names, wait_for that never matches and a step that finds nothing answer the rule, not a timeout or the step', async () => {
      await expectRuleFailed(
        { url: at('/down'), fail_on_status: '5xx', multi_step_actions: JSON.stringify([{ type: 'click', selector: '#accept' }]) },
        'fail_on_status',
        'HTTP 503',
        'running multi_step_actions',
      );
      await expectRuleFailed({ url: at('/down'), fail_on_status: '5xx', wait_for: '#content' }, 'fail_on_status', 'HTTP 503', 'wait_for');
    });

    it('still checks the status where the order of work puts it: a 503 page that moves on to the real one is captured', async () => {
      const r = await t.snap({
        url: at('/challenge'),
        fail_on_status: '5xx',
        wait_for: '#content',
        image_format: 'png',
        page_width: 400,
        page_height: 300,
        json: true,
      });
      expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
      expect(r.body).to.include({ status_code: 200, final_url: at('/ok') });
    });

    it('captures a page whose status the list does not name', async () => {
      const r = await t.snap({ url: at('/missing'), fail_on_status: '5xx', image_format: 'png', page_width: 400, page_height: 300 });
      expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
      expect(await pixel(r.raw, 200, 250)).to.deep.equal([200, 0, 0]);
      const ok = await t.snap({ url: at('/ok'), fail_on_status: '4xx,5xx', json: true });
      expect(ok.status).to.equal(200);
    });

    it('refuses bad spellings with 400 invalid_parameter and a note saying what to write, before anything is captured', async () => {
      const before = await used();
      for (const [value, says] of [
        ['abc', '"abc" is not a status code'],
        ['40x', '"40x" is not a status code'],
        ['600', '"600" is not an HTTP status'],
        ['599-500', 'empty range'],
        ['404,', 'empty entry'],
      ]) {
        expectEnvelope(await t.snap({ url: at('/missing'), fail_on_status: value! }), 400, 'invalid_parameter', 'fail_on_status', says!, 'e.g. 404,500-599');
      }
      expect(await used()).to.equal(before);
    });
  });

  describe('selector and content rules, on a "block page" answering 200', () => {
    it('fail_if_content_contains: "access DENIED" matches "Access denied" (case ignored); the note shows the text as seen', async () => {
      await expectRuleFailed(
        { url: at('/blocked'), fail_if_content_contains: 'access DENIED' },
        'fail_if_content_contains',
        '"access DENIED"',
        '(as "Access denied")',
      );
    });

    it('fail_if_selector_present: a captcha element fails it, the note naming the element', async () => {
      await expectRuleFailed(
        { url: at('/blocked'), fail_if_selector_present: '.g-recaptcha' },
        'fail_if_selector_present',
        '".g-recaptcha"',
        'div#captcha.g-recaptcha.challenge',
      );
    });

    it('fail_if_content_missing and fail_if_selector_missing: the text and the element a working page has', async () => {
      await expectRuleFailed({ url: at('/blocked'), fail_if_content_missing: 'welcome' }, 'fail_if_content_missing', `does not contain "welcome"`);
      await expectRuleFailed(
        { url: at('/blocked'), fail_if_selector_missing: 'main#content' },
        'fail_if_selector_missing',
        'no element matches "main#content"',
      );
    });

    it('a working page passes all four and is captured', async () => {
      const r = await t.snap({
        url: at('/ok'),
        fail_if_content_contains: 'access denied',
        fail_if_selector_present: '.g-recaptcha',
        fail_if_content_missing: 'WELCOME to the shop',
        fail_if_selector_missing: 'main#content',
        image_format: 'png',
        page_width: 400,
        page_height: 300,
      });
      expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
      expect(await pixel(r.raw, 200, 250)).to.deep.equal([255, 255, 255]);
    });

    it('an unreadable selector is 400 invalid_parameter naming the option; nothing charged', async () => {
      const before = await used();
      expectEnvelope(
        await t.snap({ url: at('/ok'), fail_if_selector_present: 'div[' }),
        400,
        'invalid_parameter',
        'fail_if_selector_present',
        'not a valid CSS selector',
      );
      expect(await used()).to.equal(before);
    });
  });

  describe('without rules (as before)', () => {
    it('captures the 404 page, the 503 page and the block page, and records each status', async () => {
      for (const [path, colour, status] of [
        ['/missing', [200, 0, 0], 404],
        ['/down', [0, 0, 200], 503],
        ['/blocked', [0, 200, 0], 200],
      ] as const) {
        const r = await t.snap({ url: at(path), image_format: 'png', page_width: 400, page_height: 300, json: true });
        expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
        expect([r.body.status_code, r.body.final_url]).to.deep.equal([status, at(path)]);
        const image = Buffer.from(await (await fetch(String(r.body.direct_link))).arrayBuffer());
        expect(await pixel(image, 200, 250)).to.deep.equal(colour);
      }
    });
  });

  it('without rules, reads the status and address in the call that waits for the fonts: no round trip of its own', async () => {
    const send = sinon.spy(CdpConnection.prototype, 'send');
    let r: Awaited<ReturnType<typeof t.snap>>;
    try {
      r = await t.snap({ url: at('/old'), json: true });
    } finally {
      send.restore();
    }
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect([r.body.status_code, r.body.final_url]).to.deep.equal([200, at('/ok')]);
    const expressions = send
      .getCalls()
      .filter((c) => c.args[0] === 'Runtime.evaluate')
      .map((c) => String((c.args[1] as { expression?: string }).expression));
    const reads = expressions.filter((e) => e.includes("getEntriesByType('navigation')") || e.includes('getEntriesByType("navigation")'));
    expect(reads, 'one call into the page reads the status').to.have.length(1);
    expect(reads[0], 'and it is the wait for the fonts').to.include('loadingdone');
  });

  it("records the final status and address after a redirect, in the snap record and the account's list", async () => {
    const r = await t.snap({ url: at('/old'), json: true });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect([r.body.status_code, r.body.final_url]).to.deep.equal([200, at('/ok')]);
    const list = await request<{ screenshots: Body[] }>(t.sys.base, 'GET', '/screenshots?limit=50', { headers: { authorization: `Bearer ${t.token}` } });
    const listed = list.body.screenshots.find((s) => s.id === r.body.id);
    expect([listed?.status_code, listed?.final_url]).to.deep.equal([200, at('/ok')]);
  });

  it('/snap_html: the rules read the given document, answered 200 at its own address', async () => {
    const html = page('rgb(0,200,0)', '<h1>Access denied</h1>');
    const post = (json: Body) =>
      request<Body>(t.sys.base, 'POST', '/snap_html', {
        headers: { authorization: `Bearer ${t.token}` },
        json: { wait: 0, ttl: 0, html_content: html, ...json },
      });
    const before = await used();
    expectEnvelope(await post({ fail_if_content_contains: 'denied' }), 422, 'capture_rule_failed', 'fail_if_content_contains', '(as "denied")');
    expect(await used()).to.equal(before);
    const r = await post({ fail_on_status: '4xx,5xx', json: true });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect([r.body.status_code, r.body.final_url]).to.deep.equal([200, 'http://snap-html.localhost/']);
  });

  it("fails a configuration's job (create and capture-now) with the rule's code and note, and charges nothing", async () => {
    const api = (method: string, path: string, json?: Body) =>
      request<Body>(t.sys.base, method, path, { headers: { authorization: `Bearer ${t.token}` }, ...(json ? { json } : {}) });
    const before = await used();
    const created = await api('POST', '/screenshot_configs', { url: at('/blocked'), wait: 0, fail_if_selector_present: '#captcha' });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const job = await jobFinished(t.sys.base, t.token, String(created.body.job_id));
    expect(job.status).to.equal(422);
    expect(job.body).to.deep.include({ success: false, status: 'failed', error_code: 'capture_rule_failed' });
    expect(String(job.body.note)).to.contain('fail_if_selector_present').and.contain('"#captcha"');
    const id = String(created.body.screenshot_configuration_id);
    const again = await api('POST', `/screenshot_configs/${id}/capture`);
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    const second = await jobFinished(t.sys.base, t.token, String(again.body.job_id));
    expect([second.status, second.body.error_code]).to.deep.equal([422, 'capture_rule_failed']);
    const shots = await api('GET', `/screenshot_configs/${id}/screenshots`);
    expect(shots.body.screenshots).to.deep.equal([]);
    expect(await used()).to.equal(before);
    // The configuration keeps its rule (a bad value is refused there too).
    const bad = await api('POST', '/screenshot_configs', { url: at('/ok'), fail_on_status: '4xx;5xx' });
    expectEnvelope(bad, 400, 'invalid_parameter', 'fail_on_status');
  });
});
