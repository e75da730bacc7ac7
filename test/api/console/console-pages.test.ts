/**
 * The console's capture builder and configurations, driven in the real Chromium (a local
 * ChromeDriver, as console.test.ts) against the real system, capturing local fixture pages:
 * a capture built with options runs in the background and its image appears (checked by its
 * pixels); a bad value shows the API's own note and charges nothing; the curl snippet carries
 * the options; a configuration is created, listed with its schedule in words and next run,
 * edited, captured now and deleted after a confirmation; a POST without its token is refused;
 * another account's configuration is 404; a title with markup shows as text.
 */
import { expect } from 'chai';
import { By, until, type WebDriver, type WebElement } from 'selenium-webdriver';
import chrome from 'selenium-webdriver/chrome';
import sharp from 'sharp';
import CHROME_ARGS from '../../../grid/config/chrome-args.json';
import { snapSuite } from '../../support/capture-helpers';
import { consoleGet, consoleSignIn, consoleToken, documentGone, expectNothingRan as expectNothingRanIn } from '../../support/console';
import { request } from '../../support/http';

const { DEFAULT_CHROME_BIN, DEFAULT_CHROMEDRIVER_BIN } = require('../../../../scripts/ensure-system-deps.js') as {
  DEFAULT_CHROME_BIN: string;
  DEFAULT_CHROMEDRIVER_BIN: string;
};

const TITLE_ATTACK = `<img src=x id=injected-title onerror="document.documentElement.dataset.pwned='title'"><script>alert(1)</script>`;

describe('console capture builder and configurations in the real Chromium', function () {
  this.timeout(180_000);
  const t = snapSuite(() => ({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '2', CAPTURE_TIMEOUT_MS: '15000' }));
  let driver: WebDriver;
  const a = { key: '', session: '' };
  const b = { key: '', config: '' };
  const base = () => t.sys.base;

  const used = async (key: string) =>
    (await request<{ results: Record<string, number> }>(base(), 'GET', '/account_limits', { headers: { authorization: `Bearer ${key}` } })).body.results
      .screenshot_current_month_usage;
  /** The usage once no capture of an earlier test is still settling its credit (two reads half a second apart agree). */
  const settledUsage = async (key: string) => {
    let last = await used(key);
    for (let i = 0; i < 20; i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      const now = await used(key);
      if (now === last) return now;
      last = now;
    }
    return last;
  };
  /** Opens a page and waits for it: its own h1, not the last page's (which a loaded machine can still show when get returns). */
  const open = async (path: string) => {
    const old = await driver.findElement(By.css('html')).catch(() => null);
    await driver.get(base() + path);
    if (old) await driver.wait(documentGone(old), 30_000);
    await driver.wait(until.elementLocated(By.css('h1')), 10_000);
  };
  const text = async (css: string) => (await driver.findElement(By.css(css))).getText();
  const field = async (name: string, value: string) => {
    const el = await driver.findElement(By.css(`[name="${name}"]`));
    // Its group may be folded: open it, then type (or choose) as a person would.
    await driver.executeScript('arguments[0].closest("details").open = true', el);
    if ((await el.getTagName()) === 'select') await el.findElement(By.css(`option[value="${value}"]`)).click();
    else {
      await el.clear();
      await el.sendKeys(value);
    }
  };
  /** Clicks a link or button and waits for the next page. */
  const follow = async (el: WebElement) => {
    const old = await driver.findElement(By.css('html'));
    await el.click();
    await driver.wait(documentGone(old), 30_000);
    await driver.wait(until.elementLocated(By.css('h1')), 10_000);
  };
  /** Sends the form by its button and waits for the next page. */
  const submit = async (css = 'main form button[type=submit]') => {
    const old = await driver.findElement(By.css('html'));
    await driver.findElement(By.css(css)).click();
    await driver.wait(documentGone(old), 30_000);
    await driver.wait(until.elementLocated(By.css('h1')), 10_000);
  };
  const expectNothingRan = () => expectNothingRanIn(driver, '#injected-title');

  before(async () => {
    const accountA = await t.sys.account('big');
    a.key = accountA.access_token;
    const accountB = await t.sys.account('big');
    b.key = accountB.access_token;
    const created = await request<{ screenshot_configuration_id: string }>(base(), 'POST', '/screenshot_configs', {
      headers: { authorization: `Bearer ${b.key}` },
      json: { url: `${t.fx.origin}/plain?n=b`, custom_title: 'B only', wait: 0 },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    b.config = created.body.screenshot_configuration_id;
    const options = new chrome.Options().setChromeBinaryPath(process.env.CHROME_BIN || DEFAULT_CHROME_BIN).addArguments(...CHROME_ARGS);
    options.set('unhandledPromptBehavior', 'ignore');
    driver = chrome.Driver.createSession(options, new chrome.ServiceBuilder(process.env.CHROMEDRIVER_BIN || DEFAULT_CHROMEDRIVER_BIN).build());
    // Signed in by the form, in the browser.
    await open('/console/sign-in');
    await driver.findElement(By.id('key')).sendKeys(a.key);
    await submit('form button[type=submit]');
    a.session = (await consoleSignIn(base(), a.key)).session;
  });

  after(async () => {
    await (driver as chrome.Driver | undefined)?.sendAndGetDevToolsCommand('Browser.close', {}).catch(() => undefined);
    await driver?.quit().catch(() => undefined);
  });

  it('builds a capture from the option table, runs it in the background, and shows its image when done; the curl snippet carries the options', async () => {
    await open('/console/build');
    expect(await text('h1')).to.equal('Build a capture');
    // Every /snap option has its labelled field, with its description.
    expect(await driver.findElements(By.css('label[for="o-dark_mode"]'))).to.have.length(1);
    expect(await text('#d-page_width')).to.contain('Default: 1920');
    const before = await used(a.key);
    await field('url', `${t.fx.origin}/plain?built=1`);
    await field('page_width', '800');
    await field('page_height', '600');
    await field('wait', '0');
    await field('ttl', '0');
    await submit();
    expect(new URL(await driver.getCurrentUrl()).pathname).to.match(/^\/console\/build\/[A-Za-z0-9_-]+$/);
    // The page asks the job's state from the script and shows the image when done.
    await driver.wait(until.elementLocated(By.css('img#preview')), 60_000);
    await driver.wait(() => driver.executeScript<boolean>("const i = document.querySelector('img#preview'); return i.complete && i.naturalWidth > 0"), 10_000);
    const src = String(await (await driver.findElement(By.css('img#preview'))).getAttribute('src'));
    const { data, info } = await sharp(Buffer.from(await (await fetch(src)).arrayBuffer()))
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect([info.width, info.height], 'the page_width and page_height given').to.deep.equal([800, 600]);
    // The fixture's blue box (300x200 at 40 px margin) is at (150, 120).
    const at = (150 + 120 * info.width) * info.channels;
    expect([data[at], data[at + 1], data[at + 2]]).to.satisfy(([r, g, bl]: number[]) => (bl as number) > 200 && (r as number) < 60 && (g as number) < 60);
    // The job settles its credit as it ends: one screenshot charged.
    let charged = 0;
    await driver
      .wait(async () => {
        charged = await used(a.key);
        return charged === before + 1;
      }, 10_000)
      .catch(() => undefined);
    expect(charged, 'one screenshot charged').to.equal(before + 1);
    const curl = await text('#snippet-curl');
    expect(curl).to.match(/^curl -G 'http:\/\/[^']+\/snap'/);
    expect(curl).to.contain("--data-urlencode 'page_width=800'");
    expect(curl).to.contain(`--data-urlencode 'url=${t.fx.origin}/plain?built=1'`);
    expect(await text('#snippet-npm')).to.contain('client.snap(');
    expect(await text('#snippet-python')).to.contain('"page_width": 800');
    expect(await text('#snippet-mcp')).to.contain('"name": "snap"');
  });

  it("shows the API's own note next to a bad option and charges nothing", async () => {
    const before = await used(a.key);
    await open('/console/build');
    await field('url', `${t.fx.origin}/plain?bad=1`);
    await field('page_width', '50');
    await submit();
    expect(await text('h1')).to.equal('Build a capture');
    const api = await request<{ note: string }>(base(), 'POST', '/snap', {
      headers: { authorization: `Bearer ${a.key}` },
      json: { url: `${t.fx.origin}/plain?bad=1`, page_width: 50 },
    });
    expect(api.status).to.equal(400);
    expect(await text('#e-page_width')).to.equal(api.body.note);
    expect(await (await driver.findElement(By.id('o-page_width'))).getAttribute('aria-invalid')).to.equal('true');
    expect(await (await driver.findElement(By.id('o-page_width'))).getAttribute('value'), 'the value sent is kept').to.equal('50');
    expect(await used(a.key), 'nothing charged').to.equal(before);
  });

  it('refuses what a capture in the background cannot honour (ttl above 0, html_only, json), saying how to ask for it; nothing charged', async () => {
    const { session } = await consoleSignIn(base(), a.key);
    const token = await consoleToken(base(), session);
    const before = await settledUsage(a.key);
    for (const [name, value] of [
      ['ttl', '3600'],
      ['html_only', 'true'],
      ['json', 'true'],
    ]) {
      const r = await fetch(`${base()}/console/build`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: `console_session=${session}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ _csrf: token, url: `${t.fx.origin}/plain?bg=1`, [name]: value }).toString(),
      });
      expect(r.status, name).to.equal(400);
      expect(await r.text(), name)
        .to.contain(`${name}: `)
        .and.contain('GET /snap');
    }
    expect(await used(a.key), 'nothing charged').to.equal(before);
  });

  it('creates a configuration, lists it with its schedule in words and next run, edits it, captures it now and deletes it after confirming', async () => {
    await open('/console/configs/new');
    await field('url', `${t.fx.origin}/plain?config=1`);
    await field('custom_title', TITLE_ATTACK);
    await field('wait', '0');
    await field('scheduled_screenshot', 'true');
    await field('scheduled_every', '1');
    await field('scheduled_interval', 'days');
    await submit();
    expect(await text('h1')).to.equal('Configurations');
    expect(await text('.notice')).to.contain('created');
    const row = async () => driver.findElement(By.xpath(`//tr[.//a[contains(@class,'config-name') and contains(., 'injected-title')]]`));
    // Its title shows as text, and nothing of it runs.
    expect(await (await (await row()).findElement(By.css('.config-name'))).getText()).to.equal(TITLE_ATTACK);
    await expectNothingRan();
    expect(await (await (await row()).findElement(By.css('.schedule'))).getText()).to.match(/^every day at \d\d:\d\d UTC$/);
    const next = await (await (await row()).findElement(By.css('.next-run time'))).getAttribute('datetime');
    const nextMs = Date.parse(String(next));
    expect(nextMs - Date.now()).to.be.within(0, 86_400_000);
    expect(await (await (await row()).findElement(By.css('.schedule'))).getText()).to.equal(`every day at ${new Date(nextMs).toISOString().slice(11, 16)} UTC`);
    // Edit: every 2 hours.
    await follow(await (await row()).findElement(By.linkText('Edit')));
    expect(await text('h1')).to.equal(`Edit ${TITLE_ATTACK}`);
    await expectNothingRan();
    await field('scheduled_every', '2');
    await field('scheduled_interval', 'hours');
    await field('scheduled_screenshot', 'true');
    await submit();
    expect(await text('.notice')).to.contain('saved');
    expect(await (await (await row()).findElement(By.css('.schedule'))).getText()).to.match(/^every 2 hours at minute \d\d$/);
    // Capture now: a job, and its capture shows up.
    const before = await used(a.key);
    await follow(await (await row()).findElement(By.css('form[action$="/capture"] button')));
    await driver.wait(until.urlMatches(/\/console\/captures\/[A-Za-z0-9_-]+$/), 10_000);
    await driver.wait(until.elementLocated(By.css('img.shot')), 60_000);
    expect(await used(a.key)).to.be.greaterThan(before);
    // Delete, after the confirmation page.
    await open('/console/configs');
    await follow(await (await row()).findElement(By.linkText('Delete')));
    expect(await text('h1')).to.equal(`Delete ${TITLE_ATTACK}?`);
    await expectNothingRan();
    await submit('main form button.danger');
    expect(await text('.notice')).to.contain('deleted');
    expect(await driver.findElements(By.xpath(`//a[contains(@class,'config-name') and contains(., 'injected-title')]`))).to.have.length(0);
  });

  it('refuses a POST without its CSRF token: nothing is created or captured', async () => {
    const before = await settledUsage(a.key);
    const post = (path: string, body: Record<string, string>) =>
      fetch(base() + path, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `console_session=${a.session}` },
        body: new URLSearchParams(body).toString(),
      });
    const r1 = await post('/console/build', { url: `${t.fx.origin}/plain?csrf=1` });
    expect(r1.status).to.equal(403);
    expect(await r1.text()).to.contain('security token');
    expect((await post('/console/configs', { url: `${t.fx.origin}/plain?csrf=2` })).status).to.equal(403);
    // In the browser: the builder's form without its token.
    await open('/console/build');
    await driver.executeScript("document.querySelector('main form input[name=_csrf]').remove()");
    await field('url', `${t.fx.origin}/plain?csrf=3`);
    await submit();
    expect(await text('h1')).to.equal('Not captured');
    expect(await used(a.key)).to.equal(before);
  });

  it("answers 404 to another account's configuration, on every page and form of it", async () => {
    const token = /name="_csrf" value="([^"]+)"/.exec(await (await consoleGet(base(), a.session, '/console/configs')).text())?.[1] ?? '';
    for (const path of [`/console/configs/${b.config}/edit`, `/console/configs/${b.config}/delete`]) {
      const r = await consoleGet(base(), a.session, path);
      expect(r.status, path).to.equal(404);
      expect(await r.text()).not.to.contain('B only');
    }
    for (const path of [`/console/configs/${b.config}`, `/console/configs/${b.config}/capture`, `/console/configs/${b.config}/delete`]) {
      const r = await fetch(base() + path, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `console_session=${a.session}` },
        body: new URLSearchParams({ _csrf: token, wait: '100' }).toString(),
      });
      expect(r.status, path).to.equal(404);
    }
    await open(`/console/configs/${b.config}/edit`);
    expect(await text('h1')).to.equal('Not found');
    // B's configuration is still there, unchanged.
    const still = await request<{ config: Record<string, unknown> }>(base(), 'GET', `/screenshot_configs/${b.config}`, {
      headers: { authorization: `Bearer ${b.key}` },
    });
    expect(still.status).to.equal(200);
    expect(still.body.config.wait).to.equal(0);
  });
});
