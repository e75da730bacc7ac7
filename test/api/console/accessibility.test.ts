/**
 * The web console's accessibility, in the real Chromium against the real system: every page
 * (sign-in, the account's pages found in its menu, a capture's page, a built capture's result,
 * a new and an edited configuration, the operator's sign-in and pages) checked with axe-core,
 * injected through the DevTools protocol (Runtime.evaluate: the
 * pages' CSP allows no script but their own, and none is added to them), failing on any
 * violation of impact "serious" or "critical"; and signing in and reaching the gallery with the
 * keyboard alone.
 *
 * With CONSOLE_SHOTS=1 it also writes each page as docs/images/console-<page>.png, taken by the
 * service itself (a /snap of the page with the browser's session cookie; docs/console.md shows them): `npm run build && CONSOLE_SHOTS=1 TEST_SPEC=dist/test/api/console/accessibility.test.js
 * node node_modules/mocha/bin/mocha.js`.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { By, Key, until, type WebDriver } from 'selenium-webdriver';
import chrome from 'selenium-webdriver/chrome';
import CHROME_ARGS from '../../../grid/config/chrome-args.json';
import { snapSuite } from '../../support/capture-helpers';
import { request } from '../../support/http';

const { DEFAULT_CHROME_BIN, DEFAULT_CHROMEDRIVER_BIN } = require('../../../../scripts/ensure-system-deps.js') as {
  DEFAULT_CHROME_BIN: string;
  DEFAULT_CHROMEDRIVER_BIN: string;
};

const OPERATOR_TOKEN = 'op-a11y-token-0123456789abcdef';
const AXE_SOURCE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const SHOTS = process.env.CONSOLE_SHOTS === '1' ? path.resolve(__dirname, '../../../../docs/images') : null;

interface Violation {
  id: string;
  impact: string | null;
  help: string;
  targets: string[];
}

describe('web console: accessibility (axe-core) and the keyboard', function () {
  this.timeout(240_000);
  const t = snapSuite(() => ({
    ALLOW_PRIVATE_NETWORKS: 'true',
    CAPTURE_SESSIONS: '1',
    CAPTURE_TIMEOUT_MS: '15000',
    CONSOLE_OPERATOR_TOKEN: OPERATOR_TOKEN,
    CONSOLE_SIGNIN_MAX: '100',
  }));
  const base = () => t.sys.base;
  let driver: WebDriver;
  let key = '';
  let job = '';
  let configId = '';

  before(async () => {
    const account = await t.sys.account('big');
    key = account.access_token;
    for (const [page, title] of [
      ['/plain?n=1', 'The plain page'],
      ['/tall', 'A tall page'],
      ['/plain?n=2', 'The plain page, again'],
    ] as const) {
      const r = await request<{ job_id: string; screenshot_configuration_id: string }>(base(), 'POST', '/snap', {
        headers: { authorization: `Bearer ${key}` },
        json: { url: `${t.fx.origin}${page}`, custom_title: title, json: true, wait: 0, ttl: 0, page_width: 800, page_height: 600 },
      });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      job = r.body.job_id;
      configId = r.body.screenshot_configuration_id;
    }
    const options = new chrome.Options().setChromeBinaryPath(process.env.CHROME_BIN || DEFAULT_CHROME_BIN).addArguments(...CHROME_ARGS);
    driver = chrome.Driver.createSession(options, new chrome.ServiceBuilder(process.env.CHROMEDRIVER_BIN || DEFAULT_CHROMEDRIVER_BIN).build());
    await (driver as chrome.Driver).sendAndGetDevToolsCommand('Emulation.setDeviceMetricsOverride', {
      width: 1280,
      height: 860,
      deviceScaleFactor: 1,
      mobile: false,
    });
    if (SHOTS) fs.mkdirSync(SHOTS, { recursive: true });
  });

  after(async () => {
    await (driver as chrome.Driver | undefined)?.sendAndGetDevToolsCommand('Browser.close', {}).catch(() => undefined);
    await driver?.quit().catch(() => undefined);
  });

  const open = async (address: string) => {
    await driver.get(base() + address);
    await driver.wait(until.elementLocated(By.css('h1')), 10_000);
  };

  /** axe-core's violations on the page shown now, of impact serious or critical. */
  async function seriousViolations(): Promise<Violation[]> {
    await (driver as chrome.Driver).sendAndGetDevToolsCommand('Runtime.evaluate', { expression: AXE_SOURCE });
    const all = await driver.executeAsyncScript<Violation[]>(`
      const done = arguments[arguments.length - 1];
      window.axe.run(document, { resultTypes: ['violations'] }).then(
        (r) => done(r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }))),
        (e) => done([{ id: 'axe-failed', impact: 'critical', help: String(e), targets: [] }]),
      );`);
    return all.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  }

  /** Checks the page shown now; with CONSOLE_SHOTS=1 writes it to docs/images/console-<name>.png. */
  async function check(name: string, address: string): Promise<string[]> {
    await open(address);
    const found = (await seriousViolations()).map((v) => `${name} (${address}): ${v.impact} ${v.id}: ${v.help} at ${v.targets.join(', ')}`);
    if (SHOTS) {
      // Taken by the service itself: a /snap of the page, carrying the browser's console cookies.
      const cookies = (await driver.manage().getCookies()).map((c) => ({ key: c.name, value: c.value, path: c.path ?? '/' }));
      const r = await t.snap({ url: base() + address, cookies: JSON.stringify(cookies), image_format: 'png', page_width: 1280, page_height: 860 });
      expect(r.status, `the service's own capture of ${address}: ${r.raw.toString().slice(0, 200)}`).to.equal(200);
      fs.writeFileSync(path.join(SHOTS, `console-${name}.png`), r.raw);
    }
    return found;
  }

  async function signInAs(address: string, field: string, secret: string): Promise<void> {
    await open(address);
    await driver.findElement(By.id(field)).sendKeys(secret, Key.ENTER);
    await driver.wait(async () => !(await driver.getCurrentUrl()).includes('/sign-in'), 10_000);
    await driver.wait(until.elementLocated(By.css('h1')), 10_000);
  }

  it('finds no serious or critical axe-core violation on any console page, the operator view included', async () => {
    await driver.manage().deleteAllCookies();
    const problems: string[] = [];
    problems.push(...(await check('sign-in', '/console/sign-in')));
    await signInAs('/console/sign-in', 'key', key);
    problems.push(...(await check('overview', '/console')));
    // Every page of the account's menu (pages added later are checked as they appear in it).
    const menu = await driver.executeScript<string[]>(
      "return [...document.querySelectorAll('nav[aria-label=Console] a')].map((a) => new URL(a.href).pathname)",
    );
    expect(menu).to.include('/console/captures');
    for (const address of menu.filter((p) => p !== '/console')) problems.push(...(await check(address.split('/').pop() as string, address)));
    problems.push(...(await check('capture', `/console/captures/${job}`)));
    problems.push(...(await check('build-result', `/console/build/${job}`)));
    problems.push(...(await check('config-new', '/console/configs/new')));
    problems.push(...(await check('config-edit', `/console/configs/${configId}/edit`)));
    problems.push(...(await check('not-found', '/console/no-such-page')));

    problems.push(...(await check('operator-sign-in', '/console/operator/sign-in')));
    await signInAs('/console/operator/sign-in', 'token', OPERATOR_TOKEN);
    const operatorMenu = await driver.executeScript<string[]>(
      "return [...document.querySelectorAll('nav[aria-label=Operator] a')].map((a) => new URL(a.href).pathname)",
    );
    expect(operatorMenu).to.include.members(['/console/operator', '/console/operator/capacity', '/console/operator/locations']);
    for (const address of operatorMenu) problems.push(...(await check(`operator-${address.split('/')[3] ?? 'accounts'}`, address)));
    expect(problems, problems.join('\n')).to.deep.equal([]);
  });

  it('signs in and reaches the gallery with the keyboard alone', async () => {
    await driver.manage().deleteAllCookies();
    await open('/console/sign-in');
    const actions = () => driver.actions({ async: true });
    // The key field has the focus (autofocus is applied at the page's first rendering update after
    // it loads, which a busy machine may not have run yet); type the key and press Enter.
    const focused = async () => (await driver.switchTo().activeElement()).getAttribute('id');
    await driver.wait(async () => (await focused()) === 'key', 5_000).catch(() => undefined);
    expect(await focused()).to.equal('key');
    await actions().sendKeys(key, Key.ENTER).perform();
    await driver.wait(async () => new URL(await driver.getCurrentUrl()).pathname === '/console', 10_000);
    await driver.wait(until.elementLocated(By.css('h1')), 10_000);
    // Tab until the menu's Captures link has the focus, then Enter.
    let reached = false;
    for (let i = 0; i < 15 && !reached; i++) {
      await actions().sendKeys(Key.TAB).perform();
      const focused = await driver.switchTo().activeElement();
      reached = (await focused.getAttribute('href'))?.endsWith('/console/captures') === true;
    }
    expect(reached, 'the Captures link is reached with Tab').to.equal(true);
    await actions().sendKeys(Key.ENTER).perform();
    await driver.wait(async () => new URL(await driver.getCurrentUrl()).pathname === '/console/captures', 10_000);
    await driver.wait(until.elementLocated(By.css('.gallery a')), 10_000);
    expect(await driver.findElement(By.css('h1')).getText()).to.equal('Captures');
    // And a capture's page, by keyboard: Tab to the first thumbnail's link, Enter.
    let onCapture = false;
    for (let i = 0; i < 30 && !onCapture; i++) {
      await actions().sendKeys(Key.TAB).perform();
      onCapture = /\/console\/captures\/[^/]+$/.test((await (await driver.switchTo().activeElement()).getAttribute('href')) ?? '');
    }
    expect(onCapture, 'a capture is reached with Tab').to.equal(true);
    await actions().sendKeys(Key.ENTER).perform();
    await driver.wait(async () => /\/console\/captures\/[^/]+$/.test(new URL(await driver.getCurrentUrl()).pathname), 10_000);
  });
});
