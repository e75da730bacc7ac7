/**
 * multi_step_actions end to end: /snap on a real Selenium Grid (standalone, Debian
 * Chromium) against fixture pages served locally, plus the capture engine itself for what
 * the public answer does not show (the texts read by `change` steps, the egress policy on
 * a step's navigation).
 */
import { expect } from 'chai';
import { BlockerLoader } from '../../../services/capture/page/blocking';
import { BrowserPool } from '../../../services/capture/browsers/browser-pool';
import { EgressPolicy } from '../../../services/shared/egress';
import { CaptureEngine } from '../../../services/capture/browsers/engine';
import type { SnapOptions } from '../../../services/shared/screenshot-options';
import { configFrom } from '../../support/backends';
import { sharedGrid } from '../../support/grid';
import { qs, request } from '../../support/http';
import type { RunningSystem } from '../../support/system';
import { pixel, screenshotsUsed, startCaptureSystem } from '../../support/capture-helpers';
import { expectEnvelope } from '../../support/errors';
import { type ActionFixtures, LOGIN, PRICES, startActionFixtures } from './action-fixtures';

/** The engines of this file share one blocker, as the capture service's engine does. */
const blockers = new BlockerLoader();

type Step = Record<string, string | number | boolean>;

describe('multi_step_actions on a real Selenium Grid', function () {
  this.timeout(120_000);
  let fx: ActionFixtures;
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  let token: string;

  /** GET /snap: the steps travel as a JSON string, as on every GET and form. */
  const snap = (steps: Step[], params: Record<string, string | number | boolean>, key = token) =>
    request(sys.base, 'GET', `/snap?${qs({ access_token: key, wait: 0, ttl: 0, multi_step_actions: JSON.stringify(steps), ...params })}`);
  const html = async (steps: Step[], path: string, params: Record<string, string | number | boolean> = {}) => {
    const r = await snap(steps, { url: `${fx.origin}${path}`, html_only: true, ...params });
    expect(r.status, r.raw.toString().slice(0, 400)).to.equal(200);
    return String(r.body.html);
  };
  const used = (key: string) => screenshotsUsed(sys, key);

  before(async () => {
    fx = await startActionFixtures();
    ({ sys, token, cleanup } = await startCaptureSystem({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '2', CAPTURE_TIMEOUT_MS: '15000' }));
  });
  after(async () => {
    await cleanup?.();
    await fx?.stop();
  });

  describe('forms', () => {
    it('signs in with text_field and submit (POST JSON), and captures the page behind the login', async () => {
      const before = fx.seen.length;
      const r = await request(sys.base, 'POST', '/snap', {
        json: {
          access_token: token,
          url: `${fx.origin}/login`,
          html_only: true,
          wait: 0,
          ttl: 0,
          multi_step_actions: [
            { type: 'text_field', selector: '#username', value: LOGIN.username },
            { type: 'text_field', selector: '#password', value: LOGIN.password },
            { type: 'submit' },
          ],
        },
      });
      expect(r.status, r.raw.toString().slice(0, 400)).to.equal(200);
      expect(r.body.html).to.contain(`<h1 id="welcome">Welcome back, ${LOGIN.username}</h1>`);
      // The field's prefilled "guest" was replaced, not appended to, and the server saw the form.
      const posts = fx.seen.slice(before).filter((s) => s.method === 'POST' && s.path === '/login');
      expect(posts).to.have.length(1);
      expect(new URLSearchParams(posts[0]!.body).get('username')).to.equal(LOGIN.username);
    });

    it('captures the server’s refusal when the password is wrong (the steps themselves succeeded)', async () => {
      const page = await html(
        [
          { type: 'text_field', selector: '#username', value: LOGIN.username },
          { type: 'text_field', selector: '#password', value: 'wrong' },
          { type: 'submit' },
        ],
        '/login',
      );
      expect(page).to.contain('Wrong username or password.');
    });

    it('submit with nothing focused submits the first form', async () => {
      expect(await html([{ type: 'submit' }], '/search')).to.contain('<h1 id="results">Results for trail shoes</h1>');
    });

    it('select picks an option by value or by visible text, and the page reacts to the change', async () => {
      const byValue = await html([{ type: 'select', selector: '#size', value: 'l' }], '/shop', { selectors: '#price' });
      expect(byValue).to.equal(`<span id="price">${PRICES.l}</span>`);
      const byText = await html([{ type: 'select', selector: '#size', value: 'Medium' }], '/shop', { selectors: '#price' });
      expect(byText).to.equal(`<span id="price">${PRICES.m}</span>`);
    });

    it('checkbox ticks the terms box with a click: the button is enabled and the text changes', async () => {
      const page = await html([{ type: 'checkbox', selector: '#agree', value: 'true' }], '/terms');
      expect(page).to.contain('<button id="continue">Continue</button>');
      expect(page).to.contain('<p id="status">Thanks for accepting</p>');
    });
  });

  describe('pointer', () => {
    it('hover shows a menu that only CSS :hover reveals', async () => {
      const params = { url: `${fx.origin}/menu`, page_width: 400, page_height: 300, image_format: 'png' };
      const plain = await snap([], params);
      expect(await pixel(plain.raw, 100, 100)).to.deep.equal([255, 255, 255]);
      const hovered = await snap([{ type: 'hover', selector: '#products' }], params);
      expect(hovered.status).to.equal(200);
      expect(await pixel(hovered.raw, 100, 100)).to.deep.equal([255, 0, 0]);
    });

    it('click is a real (trusted) click: the tabs switch', async () => {
      const page = await html([{ type: 'click', selector: '#tab-reviews' }], '/tabs');
      expect(page).to.contain('<section id="reviews" class="panel active">');
      expect(page).to.contain('<section id="details" class="panel">');
    });

    it('a click that follows a link leaves the next (slow) page loaded before the next step', async () => {
      const page = await html(
        [
          { type: 'click', selector: '#next' },
          { type: 'javascript', value: 'document.body.dataset.state = document.readyState' },
        ],
        '/links',
      );
      expect(page).to.contain('Second page (slow)');
      expect(page).to.contain('data-state="complete"');
    });
  });

  describe('navigation, scripts and styles', () => {
    it('redirect goes to another page, and later steps act on it', async () => {
      const page = await html(
        [
          { type: 'redirect', value: `${fx.origin}/second` },
          { type: 'css', value: '#title { color: rgb(1, 2, 3); }' },
        ],
        '/links',
      );
      expect(page).to.contain('<h1 id="title">Second page</h1>');
      expect(page).to.contain('#title { color: rgb(1, 2, 3); }');
    });

    it('evaluateJs waits for an async function and for a returned promise', async () => {
      const page = await html(
        [
          { type: 'evaluateJs', value: "async () => { await new Promise((r) => setTimeout(r, 300)); document.body.dataset.done = 'yes'; }" },
          { type: 'evaluateJs', value: "new Promise((r) => setTimeout(() => { document.body.dataset.second = 'yes'; r(42); }, 200))" },
        ],
        '/second',
      );
      expect(page).to.contain('data-done="yes"');
      expect(page).to.contain('data-second="yes"');
    });

    it('javascript runs the script without waiting for what it returns', async () => {
      const page = await html(
        [
          {
            type: 'javascript',
            value: "document.body.dataset.now = 'yes'; new Promise((r) => setTimeout(() => { document.body.dataset.later = 'yes'; r(); }, 4000))",
          },
        ],
        '/second',
      );
      expect(page).to.contain('data-now="yes"');
      expect(page).not.to.contain('data-later');
    });

    it('css inserts a style that changes the pixels', async () => {
      const r = await snap([{ type: 'css', value: '#box { background: rgb(0, 0, 255) !important; }' }], {
        url: `${fx.origin}/box`,
        page_width: 400,
        page_height: 300,
        image_format: 'png',
      });
      expect(r.status).to.equal(200);
      expect(await pixel(r.raw, 100, 100)).to.deep.equal([0, 0, 255]);
    });
  });

  describe('waiting', () => {
    it('wait (milliseconds given as text) lets the page’s timer fire', async () => {
      expect(await html([], '/timer')).not.to.contain('data-timer');
      expect(await html([{ type: 'wait', value: '500' }], '/timer')).to.contain('data-timer="fired"');
    });

    it('wait_for_selector waits for late content', async () => {
      expect(await html([{ type: 'wait_for_selector', selector: '#late' }], '/late')).to.contain('<p id="late">late content</p>');
    });

    it('the global wait runs after the steps', async () => {
      const page = await html([{ type: 'javascript', value: "setTimeout(() => { document.body.dataset.tick = 'yes'; }, 300)" }], '/second', { wait: 800 });
      expect(page).to.contain('data-tick="yes"');
    });
  });

  describe('a failing step stops the capture with 422 action_failed and spends no credit', () => {
    it('a click on a missing element names the step index and type', async () => {
      const { access_token } = await sys.account('free');
      const r = await snap(
        [
          { type: 'wait', value: '0' },
          { type: 'click', selector: '#missing' },
        ],
        { url: `${fx.origin}/tabs` },
        access_token,
      );
      expectEnvelope(r, 422, 'action_failed', 'multi_step_actions[1] (click)', '#missing');
      expect(await used(access_token)).to.equal(0);
    });

    it('an evaluateJs that throws', async () => {
      const { access_token } = await sys.account('free');
      const r = await snap([{ type: 'evaluateJs', value: "async () => { throw new Error('boom'); }" }], { url: `${fx.origin}/second` }, access_token);
      expectEnvelope(r, 422, 'action_failed', 'multi_step_actions[0] (evaluateJs)', 'boom');
      expect(await used(access_token)).to.equal(0);
    });

    it('a select without that option lists the options there are', async () => {
      const r = await snap([{ type: 'select', selector: '#size', value: 'XL' }], { url: `${fx.origin}/shop` });
      expectEnvelope(r, 422, 'action_failed', 'multi_step_actions[0] (select): no option "XL" in #size', 'options: s (Small), m (Medium), l (Large)');
    });

    it('a malformed step is refused with 400 before any capture', async () => {
      const { access_token } = await sys.account('free');
      const before = fx.seen.length;
      const r = await snap([{ type: 'click' }], { url: `${fx.origin}/tabs` }, access_token);
      expectEnvelope(r, 400, 'invalid_parameter', 'multi_step_actions[0] (click): needs "selector"');
      expect(fx.seen.length).to.equal(before);
      expect(await used(access_token)).to.equal(0);
    });
  });
});

describe('multi_step_actions in the capture engine', function () {
  this.timeout(120_000);
  let fx: ActionFixtures;
  let pool: BrowserPool;
  let open: CaptureEngine;
  let guarded: CaptureEngine;

  before(async () => {
    const grid = await sharedGrid();
    fx = await startActionFixtures();
    const { capture } = configFrom({});
    pool = new BrowserPool(
      // "fixture.test" stands for a public site: Chromium resolves it to the fixture server.
      {
        seleniumUrl: grid.url,
        chromeBin: capture.chromeBin,
        chromedriverBin: capture.chromedriverBin,
        extraArgs: ['--host-resolver-rules=MAP fixture.test 127.0.0.1'],
      },
      { sessions: 1, queueMax: 4, queueTimeoutMs: 30_000, keepAliveMs: 20_000 },
      { log: { warn: () => undefined, info: () => undefined } },
    );
    await pool.start();
    open = new CaptureEngine({ pool, policy: new EgressPolicy(true), blocker: () => blockers.get(), timeoutMs: 15_000 });
    // The real policy, with fixture.test resolving (for the policy) to a public address.
    guarded = new CaptureEngine({
      pool,
      policy: new EgressPolicy(false, async (host) => (host === 'fixture.test' ? ['93.184.215.14'] : ['127.0.0.1'])),
      blocker: () => blockers.get(),
      timeoutMs: 15_000,
    });
  });
  after(async () => {
    await pool?.stop();
    await fx?.stop();
  });

  const capture = (engine: CaptureEngine, o: Partial<SnapOptions> & { url: string }) => engine.capture({ wait: 0, html_only: true, ...o });
  const rejection = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (err) {
      return err as { type: string; code: number; message: string };
    }
    throw new Error('expected the capture to fail');
  };

  it('change steps return the element’s text, read when the step runs', async () => {
    const out = await capture(open, {
      url: `${fx.origin}/shop`,
      multi_step_actions: [
        { type: 'change', selector: '#price', send_to: 'webhook', url: 'https://hooks.example.com/price' },
        { type: 'select', selector: '#size', value: 'm' },
        { type: 'change', selector: 'h1', send_to: 'slack', url: 'https://hooks.slack.com/services/T0/B0/x' },
        { type: 'change', selector: '#price', send_to: 'webhook', url: 'https://hooks.example.com/price' },
      ],
    });
    expect(out.changes).to.deep.equal([
      { index: 0, selector: '#price', text: PRICES.s, send_to: 'webhook', url: 'https://hooks.example.com/price' },
      { index: 2, selector: 'h1', text: 'Trail Runner', send_to: 'slack', url: 'https://hooks.slack.com/services/T0/B0/x' },
      { index: 3, selector: '#price', text: PRICES.m, send_to: 'webhook', url: 'https://hooks.example.com/price' },
    ]);
    expect((await capture(open, { url: `${fx.origin}/shop` })).changes).to.equal(undefined);
  });

  it('a change step on a missing element fails with action_failed', async () => {
    const err = await rejection(
      capture(open, {
        url: `${fx.origin}/shop`,
        multi_step_actions: [{ type: 'change', selector: '#gone', send_to: 'webhook', url: 'https://hooks.example.com/x' }],
      }),
    );
    expect(err.type).to.equal('action_failed');
    expect(err.message).to.contain('multi_step_actions[0] (change): no element matches "#gone"');
  });

  it('a redirect step to a private address is refused by the egress policy', async () => {
    const before = fx.seen.filter((s) => s.path === '/second').length;
    const err = await rejection(
      capture(guarded, {
        url: `http://fixture.test:${fx.port}/links`,
        multi_step_actions: [{ type: 'redirect', value: `http://127.0.0.1:${fx.port}/second` }],
      }),
    );
    expect(err.type).to.equal('url_not_allowed');
    expect(err.message).to.contain('multi_step_actions[0] (redirect)');
    expect(fx.seen.filter((s) => s.path === '/second').length).to.equal(before);
  });

  it('a click on a link to a private address is refused by the egress policy', async () => {
    const before = fx.seen.filter((s) => s.path === '/second').length;
    const err = await rejection(
      capture(guarded, { url: `http://fixture.test:${fx.port}/private-link`, multi_step_actions: [{ type: 'click', selector: '#inside' }] }),
    );
    expect(err.type).to.equal('url_not_allowed');
    expect(err.message).to.contain('multi_step_actions[0] (click)');
    expect(err.message).to.contain('127.0.0.1');
    expect(fx.seen.filter((s) => s.path === '/second').length).to.equal(before);
  });

  it('an evaluateJs whose promise never settles fails before the capture’s time budget runs out', async () => {
    // Without the step's own limit this would end as 504 capture_timeout.
    const short = new CaptureEngine({ pool, policy: new EgressPolicy(true), blocker: () => blockers.get(), timeoutMs: 3_000 });
    const err = await rejection(capture(short, { url: `${fx.origin}/second`, multi_step_actions: [{ type: 'evaluateJs', value: 'new Promise(() => {})' }] }));
    expect(err.type).to.equal('action_failed');
    expect(err.message).to.match(/^multi_step_actions\[0\] \(evaluateJs\): the result did not settle within \d+ ms\.$/);
  });

  it('a redirect step to a public address passes the policy', async () => {
    const out = await capture(guarded, {
      url: `http://fixture.test:${fx.port}/links`,
      multi_step_actions: [{ type: 'redirect', value: `http://fixture.test:${fx.port}/second` }],
    });
    expect(out.html).to.contain('<h1 id="title">Second page</h1>');
  });
});
