/**
 * The console's customer pages in the real Chromium (a local ChromeDriver session, as
 * console.test.ts starts one) against the real system on the shared Grid, the scheduler on a
 * controllable clock and the notifier pumped by hand: a change alert produced by a
 * configuration's text change step on a local page that changes, shown with its before and after;
 * its webhook delivery to a local receiver that fails then succeeds, shown with its attempts and
 * redelivered from the page; keys and secrets (the API key rotated and shown once, the console
 * still signed in, the old key refused; a proxy's password never in a page); the CSRF token of
 * every POST; another account's ids answered 404; markup in a custom title and a change value
 * shown as text that never runs.
 */
import { expect } from 'chai';
import { By, until, type WebDriver } from 'selenium-webdriver';
import chrome from 'selenium-webdriver/chrome';
import CHROME_ARGS from '../../../grid/config/chrome-args.json';
import { type Receiver, startReceiver } from '../../notifier/receivers';
import { startCaptureSystem } from '../../support/capture-helpers';
import { consoleGet, consoleSignIn, documentGone, expectNothingRan as expectNothingRanIn } from '../../support/console';
import { jobFinished, request } from '../../support/http';
import { type LocalServer, serveLocally } from '../../support/local-server';
import type { RunningSystem } from '../../support/system';

const { DEFAULT_CHROME_BIN, DEFAULT_CHROMEDRIVER_BIN } = require('../../../../scripts/ensure-system-deps.js') as {
  DEFAULT_CHROME_BIN: string;
  DEFAULT_CHROMEDRIVER_BIN: string;
};

const TITLE_ATTACK = `<script>alert("title")</script><img src=x id=injected-title onerror="document.documentElement.dataset.pwned='title'">`;
const VALUE_ATTACK = `<img src=x id=injected-change onerror="document.documentElement.dataset.pwned='change'"> 12 EUR`;
const PROXY_PASSWORD = 'pw-Zq8-never-shown';

type Body = Record<string, unknown>;
const escapeText = (t: string) => t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

describe('web console: changes, webhooks, keys and secrets in the real Chromium', function () {
  this.timeout(240_000);
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  let site: LocalServer;
  let hooks: Receiver;
  let driver: WebDriver;
  let clock = Date.now();
  let price = '10 EUR';
  const a = { key: '', accountId: '', config: '', delivery: '' };
  const b = { key: '', config: '' };
  const base = () => sys.base;

  const api = (key: string, method: string, p: string, json?: Body) =>
    request<Body>(base(), method, p, { headers: { authorization: `Bearer ${key}` }, ...(json ? { json } : {}) });

  before(async () => {
    site = await serveLocally((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(`<!DOCTYPE html><html><body><h1>Shop</h1><p id="price">${escapeText(price)}</p></body></html>`);
    });
    // The first attempt fails (500), every later one succeeds.
    hooks = await startReceiver((n) => (n === 0 ? { status: 500, body: 'down' } : { status: 200 }));
    const started = await startCaptureSystem(
      { ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1', CAPTURE_TIMEOUT_MS: '15000', CONSOLE_SIGNIN_MAX: '50' },
      { scheduler: { now: () => clock, autoTick: false }, notifier: { autoPoll: false } },
    );
    sys = started.sys;
    cleanup = started.cleanup;
    const accountA = await sys.account('big', { byo_proxy: 1 });
    a.key = accountA.access_token;
    a.accountId = accountA.account_id;
    const created = await api(a.key, 'POST', '/screenshot_configs', {
      url: `${site.origin}/`,
      wait: 0,
      page_width: 400,
      page_height: 300,
      custom_title: TITLE_ATTACK,
      scheduled_screenshot: true,
      scheduled_every: 1,
      scheduled_interval: 'hours',
      multi_step_actions: [{ type: 'change', selector: '#price', send_to: 'webhook', url: `${hooks.origin}/alerts` }],
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    a.config = created.body.screenshot_configuration_id as string;
    await jobFinished(base(), a.key, created.body.job_id as string);
    await sys.notifier!.pump();
    // The page changes; the next scheduled capture alerts.
    price = VALUE_ATTACK;
    clock += 2 * 3_600_000;
    const due = (await sys.scheduler!.tick()).find((s) => s.configId === a.config);
    expect(due, 'the configuration was due').to.not.equal(undefined);
    expect((await jobFinished(base(), a.key, due!.jobId)).body.status).to.equal('completed');
    await sys.notifier!.pump();
    expect(hooks.received, 'the alert was sent once, and failed').to.have.length(1);
    const deliveries = await api(a.key, 'GET', '/webhook_deliveries');
    a.delivery = ((deliveries.body.webhook_deliveries as Body[])[0] as { id: string }).id;

    const accountB = await sys.account('big', { byo_proxy: 1 });
    b.key = accountB.access_token;
    const other = await api(b.key, 'POST', '/screenshot_configs', { url: `${site.origin}/`, wait: 0, custom_title: 'B only' });
    b.config = other.body.screenshot_configuration_id as string;

    const options = new chrome.Options().setChromeBinaryPath(process.env.CHROME_BIN || DEFAULT_CHROME_BIN).addArguments(...CHROME_ARGS);
    options.set('unhandledPromptBehavior', 'ignore');
    driver = chrome.Driver.createSession(options, new chrome.ServiceBuilder(process.env.CHROMEDRIVER_BIN || DEFAULT_CHROMEDRIVER_BIN).build());
    await (driver as chrome.Driver).sendAndGetDevToolsCommand('Emulation.setDeviceMetricsOverride', {
      width: 1280,
      height: 900,
      deviceScaleFactor: 1,
      mobile: false,
    });
    await signIn(a.key);
  });

  after(async () => {
    await (driver as chrome.Driver | undefined)?.sendAndGetDevToolsCommand('Browser.close', {}).catch(() => undefined);
    await driver?.quit().catch(() => undefined);
    await cleanup?.();
    await Promise.all([hooks?.stop(), site?.stop()]);
  });

  const open = async (path: string) => {
    await driver.get(base() + path);
    await driver.wait(until.elementLocated(By.css('h1')), 10_000);
  };
  const text = async (css: string) => (await driver.findElement(By.css(css))).getText();
  const texts = async (css: string) => Promise.all((await driver.findElements(By.css(css))).map((e) => e.getText()));
  const submit = async (css: string) => {
    const was = await driver.findElement(By.css('html'));
    await (await driver.findElement(By.css(css))).click();
    await driver.wait(documentGone(was), 10_000);
    await driver.wait(until.elementLocated(By.css('h1')), 10_000);
  };

  async function signIn(key: string) {
    await driver.manage().deleteAllCookies();
    await open('/console/sign-in');
    await (await driver.findElement(By.id('key'))).sendKeys(key);
    await submit('form button[type=submit]');
  }

  const expectNothingRan = () => expectNothingRanIn(driver, '#injected-title, #injected-change');

  /** A session of its own over HTTP, and the token its pages carry. */
  async function httpSession(key: string): Promise<{ session: string; token: string }> {
    const s = await consoleSignIn(base(), key);
    expect(s.status).to.equal(303);
    const page = await (await consoleGet(base(), s.session, '/console/keys')).text();
    return { session: s.session, token: /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '' };
  }
  const post = (session: string, path: string, form: Record<string, string>) =>
    fetch(base() + path, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `console_session=${session}` },
      body: new URLSearchParams(form).toString(),
    });

  it('lists the change alert with its before and after, the markup of the title and the new value shown as text', async () => {
    await open('/console/changes');
    expect(await text('h1')).to.equal('Change notifications');
    expect(await texts('.change h2')).to.deep.equal([TITLE_ATTACK]);
    expect(await text('.change dd.before')).to.equal('10 EUR');
    expect(await text('.change dd.after')).to.equal(VALUE_ATTACK);
    expect(await texts('.change .word-diff del')).to.include('10');
    expect((await texts('.change .word-diff ins')).join(' ')).to.contain('id=injected-change');
    await expectNothingRan();
    // One configuration's history, from the alert's link.
    await submit('.change h2 a');
    expect(new URL(await driver.getCurrentUrl()).search).to.equal(`?config=${a.config}`);
    expect(await text('h1')).to.equal(`Changes of ${TITLE_ATTACK}`);
    expect(await text('.change dd.after')).to.equal(VALUE_ATTACK);
    await expectNothingRan();
  });

  it('shows the delivery with its failed attempt, and Redeliver sends it again (the receiver sees the second attempt)', async () => {
    await open('/console/webhooks');
    const item = `#delivery-${a.delivery}`;
    expect(await text(`${item} dd.status`)).to.equal('pending');
    const rows = await driver.findElements(By.css(`${item} table.attempts tbody tr`));
    expect(rows).to.have.length(1);
    expect(await text(`${item} table.attempts tbody tr td.code`)).to.equal('500');
    await submit(`${item} form button`);
    expect(await text('.notice')).to.contain(a.delivery);
    await driver.wait(() => hooks.received.length === 2, 15_000);
    let status = '';
    await driver.wait(async () => {
      await open('/console/webhooks');
      status = await text(`${item} dd.status`);
      return status === 'delivered';
    }, 15_000);
    expect(await texts(`${item} table.attempts tbody tr td.code`)).to.deep.equal(['500', '200']);
    expect(JSON.parse(hooks.received[1]!.body)).to.include({ retrieved_value: VALUE_ATTACK });
    await expectNothingRan();
  });

  it('adds a proxy whose password appears nowhere in the HTML (the answer, the page, the API)', async () => {
    await open('/console/keys');
    await (await driver.findElement(By.id('px-host'))).sendKeys('127.0.0.1');
    await (await driver.findElement(By.id('px-port'))).sendKeys('3128');
    await (await driver.findElement(By.id('px-user'))).sendKeys('alice');
    await (await driver.findElement(By.id('px-password'))).sendKeys(PROXY_PASSWORD);
    await (await driver.findElement(By.css('input[name=test]'))).click();
    await submit('form[action="/console/keys/proxies"] button');
    expect(await text('.notice')).to.equal('The proxy was stored.');
    expect(await texts('tr.proxy td:nth-of-type(2)')).to.deep.equal(['alice (password stored)']);
    expect(await driver.getPageSource()).not.to.contain(PROXY_PASSWORD);
    await open('/console/keys');
    expect(await driver.getPageSource()).not.to.contain(PROXY_PASSWORD);
    expect(JSON.stringify((await api(a.key, 'GET', '/proxies')).body)).not.to.contain(PROXY_PASSWORD);
  });

  it('refuses a POST without its CSRF token: nothing is sent again, nothing rotated', async () => {
    await open('/console/webhooks');
    await driver.executeScript(`document.querySelector('#delivery-${a.delivery} form input[name=_csrf]').remove()`);
    await submit(`#delivery-${a.delivery} form button`);
    expect(await text('h1')).to.equal('Nothing was changed');
    const { session, token } = await httpSession(a.key);
    const before = await api(a.key, 'GET', '/webhook_secret');
    expect((await post(session, '/console/keys/rotate-webhook-secret', {})).status).to.equal(403);
    expect((await post(session, '/console/keys/rotate-webhook-secret', { _csrf: `${token}x` })).status).to.equal(403);
    expect((await post(session, `/console/webhooks/${a.delivery}/redeliver`, {})).status).to.equal(403);
    expect((await api(a.key, 'GET', '/webhook_secret')).body.secret).to.equal(before.body.secret);
    await new Promise((r) => setTimeout(r, 500));
    expect(hooks.received).to.have.length(2);
  });

  it("answers 404 to another account's configuration, delivery and proxy, and changes nothing of them; a bad page number is a 400", async () => {
    const proxies = (await api(a.key, 'GET', '/proxies')).body.proxies as Array<{ id: number }>;
    const proxyId = proxies[0]!.id;
    const { session, token } = await httpSession(b.key);
    expect((await consoleGet(base(), session, `/console/changes?config=${a.config}`)).status).to.equal(404);
    expect((await post(session, `/console/webhooks/${a.delivery}/redeliver`, { _csrf: token })).status).to.equal(404);
    expect((await post(session, `/console/keys/proxies/${proxyId}/delete`, { _csrf: token })).status).to.equal(404);
    expect((await post(session, `/console/keys/proxies/${proxyId}/test`, { _csrf: token })).status).to.equal(404);
    // B's own pages show nothing of A's.
    const changes = await (await consoleGet(base(), session, '/console/changes')).text();
    const hooksPage = await (await consoleGet(base(), session, '/console/webhooks')).text();
    expect(changes).not.to.contain(a.config);
    expect(hooksPage).not.to.contain(a.delivery);
    expect((await consoleGet(base(), session, `/console/changes?config=${b.config}`)).status).to.equal(200);
    // A list's page number is read alike on every list page: a bad one is a 400 that says what to give.
    for (const list of ['/console/configs', '/console/changes', '/console/webhooks', '/console/captures']) {
      for (const bad of ['abc', '0', '2000000']) {
        const r = await consoleGet(base(), session, `${list}?page=${bad}`);
        expect(r.status, `${list}?page=${bad}`).to.equal(400);
        expect(await r.text(), `${list}?page=${bad}`).to.contain('page: a whole number from 1 to 1000000.');
      }
    }
    await new Promise((r) => setTimeout(r, 500));
    expect(hooks.received, 'nothing sent again').to.have.length(2);
    expect(((await api(a.key, 'GET', '/proxies')).body.proxies as unknown[]).length, "A's proxy is still there").to.equal(1);
  });

  it('rotates the webhook secret and shows the new one once', async () => {
    await open('/console/keys');
    await submit('form[action="/console/keys/rotate-webhook-secret"] button');
    const shown = await (await driver.findElement(By.id('new-secret'))).getAttribute('value');
    expect(shown).to.match(/^whsec_/);
    expect((await api(a.key, 'GET', '/webhook_secret')).body.secret).to.equal(shown);
    await open('/console/keys');
    expect(await driver.getPageSource()).not.to.contain(shown);
  });

  it('rotates the API key: the new key shown once, the console still signed in, the old key no longer signs in', async () => {
    const oldKey = a.key;
    await open('/console/keys');
    await submit('form[action="/console/keys/rotate-key"] button');
    expect(await text('h1')).to.equal('Keys and secrets');
    const newKey = (await (await driver.findElement(By.id('new-secret'))).getAttribute('value')) ?? '';
    expect(newKey).to.be.a('string').and.not.equal(oldKey);
    expect(newKey.length).to.be.greaterThan(10);
    // Shown once: the next page (same browser, still signed in) never shows it again.
    await open('/console/keys');
    expect(await text('h1')).to.equal('Keys and secrets');
    expect(new URL(await driver.getCurrentUrl()).pathname).to.equal('/console/keys');
    expect(await driver.getPageSource()).not.to.contain(newKey);
    // And the session's forms work: a POST with the new session's token.
    await submit('form[action="/console/keys/rotate-webhook-secret"] button');
    expect(await (await driver.findElement(By.id('new-secret'))).getAttribute('value')).to.match(/^whsec_/);
    // The old key opens neither a console session nor the API; the new one opens both.
    expect((await consoleSignIn(base(), oldKey)).status).to.equal(401);
    expect((await api(oldKey, 'GET', '/proxies')).status).to.equal(401);
    expect((await consoleSignIn(base(), newKey)).status).to.equal(303);
    expect((await api(newKey, 'GET', '/proxies')).status).to.equal(200);
    a.key = newKey;
  });

  it('rotates the API key at the sign-in limit too: reopening the session with the new key is no sign-in attempt, so the key is shown', async () => {
    // Mistyped keys from this address until the sign-in limit answers 429 (the last test here: the window stays used).
    let status = 0;
    for (let i = 0; i < 60 && status !== 429; i++) status = (await consoleSignIn(base(), 'sk_mistyped0000000000000000')).status;
    expect(status).to.equal(429);
    await open('/console/keys');
    await submit('form[action="/console/keys/rotate-key"] button');
    expect(await text('h1')).to.equal('Keys and secrets');
    const newKey = (await (await driver.findElement(By.id('new-secret'))).getAttribute('value')) ?? '';
    expect(newKey).to.match(/^sk_/);
    expect((await api(newKey, 'GET', '/proxies')).status).to.equal(200);
    // Still signed in, with the new key's session.
    await open('/console/keys');
    expect(new URL(await driver.getCurrentUrl()).pathname).to.equal('/console/keys');
    a.key = newKey;
  });
});
