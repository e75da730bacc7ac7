/**
 * The web console at /console, driven in the real Chromium (a local ChromeDriver session, as
 * test/ops/fonts.test.ts starts one) against the real system on the shared Grid, with captures
 * taken through /snap of local fixture pages and an AI answer from a local stand-in of the
 * service's AI: signing in with a key (by keyboard), the overview's usage and chart, the gallery
 * paged and filtered, one capture's page with its image, signing out; and its protections:
 * a wrong key refused and sign-in attempts limited per address, a session ended by its key's
 * rotation, the CSRF token and Origin of every POST, another account's objects answered 404,
 * markup in titles, URLs and AI answers shown as text that never runs, the security headers;
 * and every page, the operator's included, 375 px wide without scrolling sideways, each of its
 * controls reached with Tab.
 */
import { expect } from 'chai';
import { By, Key, until, type WebDriver } from 'selenium-webdriver';
import chrome from 'selenium-webdriver/chrome';
import CHROME_ARGS from '../../../grid/config/chrome-args.json';
import { type FakeProvider, startFakeProvider } from '../../support/ai-providers';
import { snapSuite } from '../../support/capture-helpers';
import { consoleGet, consoleSignIn, documentGone, expectNothingRan as expectNothingRanIn } from '../../support/console';
import { request } from '../../support/http';

const { DEFAULT_CHROME_BIN, DEFAULT_CHROMEDRIVER_BIN } = require('../../../../scripts/ensure-system-deps.js') as {
  DEFAULT_CHROME_BIN: string;
  DEFAULT_CHROMEDRIVER_BIN: string;
};

/** What a page tries to run: a dialog, an element the page never wrote, a flag set on the document. */
const TITLE_ATTACK = `<script>alert("title")</script><img src=x id=injected-title onerror="alert('img');document.documentElement.dataset.pwned='title'">`;
const URL_ATTACK = `"><svg id=injected-url onload="alert('url')">`;
const AI_ATTACK = `</pre><script>alert("ai")</script><img src=x id=injected-ai onerror="document.documentElement.dataset.pwned='ai'">`;
const SIGNIN_MAX = 20;
const OPERATOR_TOKEN = 'op-console-test-token-0123456789abcdef';

/**
 * Run in the page: how far it scrolls sideways, and the interactive elements a person can see
 * (links, buttons, fields, summaries, other elements with tabindex >= 0; not disabled, not
 * hidden, not inside a closed <details>: its summary is counted, which opens it), each marked data-kb="<n>" and named for the report. Radios count as one
 * per group (Tab reaches a group once; the arrows move within it). A focusin listener marks each
 * element that receives focus with data-kb-reached.
 */
const LAYOUT_PROBE = `
  const seen = new Set();
  const all = [...document.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex]')].filter((el) => {
    if (el.disabled || el.type === 'hidden') return false;
    // A control taken out of the order (tabindex=-1) is one Tab never reaches: kept, to be found; another element only when it asks to be in the order.
    if (!el.matches('a[href], button, input, select, textarea, summary') && el.tabIndex < 0) return false;
    if (el.getClientRects().length === 0 || getComputedStyle(el).visibility === 'hidden') return false;
    const closed = el.closest('details:not([open])');
    if (closed && !(el.tagName === 'SUMMARY' && el.parentElement === closed)) return false;
    if (el.type === 'radio') { const group = el.form ? el.form.id + '/' + el.name : el.name; if (seen.has(group)) return false; seen.add(group); }
    return true;
  });
  all.forEach((el, i) => el.setAttribute('data-kb', String(i)));
  document.addEventListener('focusin', (e) => {
    const t = e.target;
    if (t && t.setAttribute) t.setAttribute('data-kb-reached', '1');
    if (t && t.type === 'radio') document.querySelectorAll('input[type=radio][name="' + t.name + '"]').forEach((r) => r.setAttribute('data-kb-reached', '1'));
  });
  // What sticks out past the right edge (the innermost such elements), for the report.
  const wide = [...document.body.querySelectorAll('*')].filter((el) => el.getBoundingClientRect().right > 376 && ![...el.children].some((c) => c.getBoundingClientRect().right > 376) && !el.closest('.table-wrap, .scroll'));
  const name = (el) => el.tagName.toLowerCase() + (el.className && typeof el.className === 'string' ? '.' + el.className.trim().split(/\\s+/).join('.') : '');
  const inScroller = (el) => el.closest('.table-wrap, .scroll') !== null;
  wide.push(...[...document.body.querySelectorAll('*')].filter((el) => el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX === 'visible' && !inScroller(el) && el.getClientRects().length > 0 && el.getBoundingClientRect().right <= 376 && el.scrollWidth > 376 - el.getBoundingClientRect().left));
  return { scroll: document.documentElement.scrollWidth, count: all.length, wide: wide.slice(0, 5).map((el) => (el.parentElement ? name(el.parentElement) + ' > ' : '') + name(el) + ' ' + Math.round(el.getBoundingClientRect().right) + ' px') };
`;
const UNREACHED = `return [...document.querySelectorAll('[data-kb]:not([data-kb-reached])')].map((el) =>
  el.tagName.toLowerCase() + (el.type ? '[type=' + el.type + ']' : '') + ' "' + (el.textContent || el.name || el.id || '').trim().slice(0, 40) + '"' +
  (el.closest('form') ? ' in form ' + (el.closest('form').getAttribute('action') || '') : ''));`;

type Body = Record<string, unknown>;

describe('web console in the real Chromium', function () {
  this.timeout(180_000);
  let ai: FakeProvider;
  before(async () => {
    ai = await startFakeProvider('openai');
  });
  after(async () => ai?.stop());
  const t = snapSuite(() => ({
    ALLOW_PRIVATE_NETWORKS: 'true',
    CAPTURE_SESSIONS: '2',
    CAPTURE_TIMEOUT_MS: '15000',
    SERVICE_AI_PROVIDER: 'openai',
    SERVICE_AI_BASE_URL: ai.baseUrl,
    SERVICE_AI_API_KEY: ai.key,
    SERVICE_AI_MODEL: 'gpt-4o-mini',
    CONSOLE_SIGNIN_MAX: String(SIGNIN_MAX),
    CONSOLE_SIGNIN_WINDOW_SECONDS: '600',
    CONSOLE_OPERATOR_TOKEN: OPERATOR_TOKEN,
  }));

  describe('driven in Chromium', () => {
    let driver: WebDriver;
    /** Account A's captures, newest first: [attack, second, first]; B's one capture. */
    const a = { key: '', accountId: '', jobs: [] as string[], configs: [] as string[] };
    const b = { key: '', job: '', config: '' };

    const base = () => t.sys.base;
    const snapJson = async (key: string, params: Body) => {
      const r = await request<Body>(base(), 'POST', '/snap', {
        headers: { authorization: `Bearer ${key}` },
        json: { json: true, wait: 0, ttl: 0, page_width: 800, page_height: 600, ...params },
      });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      return r.body as { job_id: string; screenshot_configuration_id: string };
    };

    before(async () => {
      const accountA = await t.sys.account('big');
      a.key = accountA.access_token;
      a.accountId = accountA.account_id;
      const first = await snapJson(a.key, { url: `${t.fx.origin}/plain?n=1`, custom_title: 'First capture' });
      const second = await snapJson(a.key, { url: `${t.fx.origin}/plain?n=2` });
      ai.queue('analyze', { text: AI_ATTACK });
      const attack = await snapJson(a.key, {
        url: `${t.fx.origin}/plain?q=${URL_ATTACK}`,
        custom_title: TITLE_ATTACK,
        analyze_image_with_ai: true,
        ai_prompt: 'What does the page say?',
      });
      a.jobs = [attack.job_id, second.job_id, first.job_id];
      a.configs = [attack.screenshot_configuration_id, second.screenshot_configuration_id, first.screenshot_configuration_id];
      const accountB = await t.sys.account('big');
      b.key = accountB.access_token;
      const other = await snapJson(b.key, { url: `${t.fx.origin}/plain?n=b`, custom_title: 'B only' });
      b.job = other.job_id;
      b.config = other.screenshot_configuration_id;

      const options = new chrome.Options().setChromeBinaryPath(process.env.CHROME_BIN || DEFAULT_CHROME_BIN).addArguments(...CHROME_ARGS);
      // A dialog stays open for the test to find (the default would dismiss it and fail the next command instead).
      options.set('unhandledPromptBehavior', 'ignore');
      driver = chrome.Driver.createSession(options, new chrome.ServiceBuilder(process.env.CHROMEDRIVER_BIN || DEFAULT_CHROMEDRIVER_BIN).build());
      await desktop();
    });

    after(async () => {
      // ChromeDriver's quit leaves Chromium's headless shell running (as BrowserSlot.quit says): close the browser first.
      await (driver as chrome.Driver | undefined)?.sendAndGetDevToolsCommand('Browser.close', {}).catch(() => undefined);
      await driver?.quit().catch(() => undefined);
    });

    const viewport = (width: number, height: number, mobile: boolean) =>
      (driver as chrome.Driver).sendAndGetDevToolsCommand('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile });
    const desktop = () => viewport(1280, 900, false);

    const open = async (path: string) => {
      await driver.get(base() + path);
      await driver.wait(until.elementLocated(By.css('h1')), 10_000);
    };
    const text = async (css: string) => (await driver.findElement(By.css(css))).getText();
    /** Clicks and waits for the page it leads to (the old document gone, the new one's heading there). */
    const follow = async (css: string) => {
      const was = await driver.findElement(By.css('html'));
      await driver.findElement(By.css(css)).click();
      await driver.wait(documentGone(was), 10_000);
      await driver.wait(until.elementLocated(By.css('h1')), 10_000);
    };
    const texts = async (css: string) => Promise.all((await driver.findElements(By.css(css))).map((e) => e.getText()));
    const attr = async (css: string, name: string) => (await driver.findElement(By.css(css))).getAttribute(name);
    const path = async () => new URL(await driver.getCurrentUrl()).pathname + new URL(await driver.getCurrentUrl()).search;
    const cookieValue = async () =>
      (
        await driver
          .manage()
          .getCookie('console_session')
          .catch(() => null)
      )?.value ?? null;

    /** Signs in by keyboard alone: the key field has the focus; type the key, Enter. */
    async function signIn(key: string, next = '') {
      await driver.manage().deleteAllCookies();
      await open(`/console/sign-in${next}`);
      const focused = await driver.switchTo().activeElement();
      expect(await focused.getAttribute('id'), 'the key field has the focus').to.equal('key');
      await focused.sendKeys(key, Key.ENTER);
      await driver.wait(
        async () => (await driver.getCurrentUrl()).includes('/sign-in') === false || (await driver.findElements(By.css('.notice.error'))).length > 0,
        10_000,
      );
      await driver.wait(until.elementLocated(By.css('h1')), 10_000);
    }

    const expectNothingRan = () => expectNothingRanIn(driver, '#injected-title, #injected-url, #injected-ai');

    /** Signs in over HTTP from here (not the browser), as the form does. */
    const signInByHttp = (key: string, headers: Record<string, string> = {}) => consoleSignIn(base(), key, headers);
    const getWith = (session: string, pathname: string) => consoleGet(base(), session, pathname);

    describe('signed in with a key', () => {
      before(async () => {
        await signIn(a.key);
      });

      it('exchanges the key for an HttpOnly session cookie, shows the overview, and never puts the key in an address or a page', async () => {
        expect(await path()).to.equal('/console');
        expect(await text('h1')).to.equal('Overview');
        const cookie = await driver.manage().getCookie('console_session');
        expect(cookie).to.include({ httpOnly: true, path: '/console', sameSite: 'Lax', secure: false });
        expect(cookie.value).not.to.contain(a.key);
        expect(await driver.executeScript('return document.cookie')).not.to.contain('console_session');
        expect(await driver.getPageSource()).not.to.contain(a.key);
        expect(await driver.getCurrentUrl()).not.to.contain(a.key);
      });

      it("shows this month's usage against the plan and today's captures in the chart", async () => {
        await open('/console');
        expect(await attr('meter#m-screenshots', 'value')).to.equal('3');
        expect(await attr('meter#m-screenshots', 'max')).to.equal('100000');
        expect(await text('.meter:has(#m-screenshots) .figure')).to.equal('3 of 100,000');
        expect(await attr('meter#m-ai', 'value')).to.equal('1');
        expect(await text('.meter:has(#m-bandwidth) .figure')).to.match(/^0 B of /);
        const now = new Date();
        const month = now.toLocaleString('en-US', { month: 'long', timeZone: 'UTC' });
        const titles = await driver.executeScript<string[]>("return [...document.querySelectorAll('svg.chart rect.bar title')].map((t) => t.textContent)");
        expect(titles).to.have.length(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 0)).getUTCDate());
        expect(titles).to.include(`${month} ${now.getUTCDate()}: 3 captures`);
        const bar = await driver.findElement(By.css(`svg.chart g:nth-of-type(${now.getUTCDate()}) rect.bar`));
        expect(Number(await bar.getAttribute('height'))).to.be.greaterThan(100);
        // The newest captures, linked to their pages.
        const links = await driver.findElements(By.css('.gallery a'));
        expect(await Promise.all(links.map((l) => l.getAttribute('href')))).to.deep.equal(a.jobs.map((j) => `${base()}/console/captures/${j}`));
      });

      it('pages through the gallery of captures made with /snap, newest first, each a thumbnail linking to its page', async () => {
        await open('/console/captures?limit=2');
        const hrefs = async () => Promise.all((await driver.findElements(By.css('.gallery a'))).map((l) => l.getAttribute('href')));
        expect(await hrefs()).to.deep.equal(a.jobs.slice(0, 2).map((j) => `${base()}/console/captures/${j}`));
        expect(await text('[role=status]')).to.equal('Captures 1 to 2, newest first.');
        // Every thumbnail is the capture's thumbnail, loaded.
        await driver.wait(
          () => driver.executeScript<boolean>("return [...document.querySelectorAll('.gallery img')].every((i) => i.complete && i.naturalWidth > 0)"),
          10_000,
        );
        expect(await attr('.gallery img', 'src')).to.match(/\/cdn\/[^/]+$/);
        expect(await driver.findElements(By.css('a[rel=prev]'))).to.have.length(0);
        await follow('a[rel=next]');
        expect(await path()).to.equal('/console/captures?limit=2&page=2');
        expect(await hrefs()).to.deep.equal([`${base()}/console/captures/${a.jobs[2]}`]);
        expect(await text('.gallery .name')).to.equal('First capture');
        expect(await driver.findElements(By.css('a[rel=next]'))).to.have.length(0);
        await follow('a[rel=prev]');
        expect(await hrefs()).to.have.length(2);
      });

      it('filters the gallery by configuration and by date, with the form', async () => {
        await open('/console/captures');
        await driver.findElement(By.css(`#f-config option[value="${a.configs[1]}"]`)).click();
        await driver.findElement(By.css('form.filters button[type=submit]')).click();
        await driver.wait(until.urlContains('config='), 10_000);
        expect(await Promise.all((await driver.findElements(By.css('.gallery a'))).map((l) => l.getAttribute('href')))).to.deep.equal([
          `${base()}/console/captures/${a.jobs[1]}`,
        ]);
        const tomorrow = new Date(Date.now() + 86_400_000).toISOString().slice(0, 10);
        await open(`/console/captures?from=${tomorrow}`);
        expect(await text('[role=status]')).to.equal('No captures match.');
        const today = new Date().toISOString().slice(0, 10);
        await open(`/console/captures?from=${today}&to=${today}`);
        expect(await driver.findElements(By.css('.gallery li'))).to.have.length(3);
        await open('/console/captures?from=someday');
        expect(await text('.notice.error')).to.contain('from: a date as YYYY-MM-DD');
      });

      it("shows one capture's page: the image itself, its files, its job and timings", async () => {
        await open(`/console/captures/${a.jobs[2]}`);
        expect(await text('h1')).to.equal('First capture');
        await driver.wait(() => driver.executeScript<boolean>("const i = document.querySelector('img.shot'); return i.complete && i.naturalWidth > 0"), 10_000);
        // The capture itself: 800x600, as asked.
        expect(await driver.executeScript("const i = document.querySelector('img.shot'); return [i.naturalWidth, i.naturalHeight]")).to.deep.equal([800, 600]);
        expect(await attr('img.shot', 'alt')).to.equal('Screenshot of First capture');
        expect(await texts('section[aria-labelledby=image-h] li a')).to.deep.equal(['Image, full size']);
        const facts = await driver.executeScript<Record<string, string>>(
          "return Object.fromEntries([...document.querySelectorAll('dl.facts dt')].map((dt) => [dt.textContent, dt.nextElementSibling.textContent]))",
        );
        expect(facts).to.include({ Job: a.jobs[2], State: 'completed', Configuration: 'First capture', 'Page status': '200', 'Page loaded': 'yes' });
        expect(facts.Took).to.match(/^\d+\.\d s$/);
        expect(facts['Final address']).to.equal(`${t.fx.origin}/plain?n=1`);
        expect(await text('section[aria-labelledby=ai-h]')).to.contain('No AI analysis was asked for.');
      });

      it('fits 375 px wide without scrolling sideways, and is reached by keyboard (the skip link first)', async () => {
        await viewport(375, 812, true);
        try {
          for (const p of ['/console', '/console/captures', `/console/captures/${a.jobs[0]}`]) {
            await open(p);
            const [scroll, width] = await driver.executeScript<[number, number]>('return [document.documentElement.scrollWidth, window.innerWidth]');
            expect(scroll, p).to.be.at.most(width);
          }
          await open('/console');
          await driver.findElement(By.css('body')).sendKeys(Key.TAB);
          const first = await driver.switchTo().activeElement();
          expect(await first.getText()).to.equal('Skip to content');
        } finally {
          await desktop();
        }
      });

      it("fits 375 px wide on every page, customer and operator, and Tab reaches every control on it (each form's submit button included)", async () => {
        const problems: string[] = [];
        /** At 375 px: `p` does not scroll sideways, and Tab from the top of the page gives the focus to every control a person can see. */
        const check = async (p: string) => {
          await open(p);
          const h1 = await text('h1');
          if (/^(Not found|Something went wrong|Cannot show this)$/.test(h1)) problems.push(`${p}: answered "${h1}"`);
          const probe = await driver.executeScript<{ scroll: number; count: number; wide: string[] }>(LAYOUT_PROBE);
          if (probe.scroll > 375) problems.push(`${p}: scrolls sideways (${probe.scroll} px wide: ${probe.wide.join(', ')})`);
          if (probe.count === 0) problems.push(`${p}: no control found`);
          // A field focused on load (the sign-in forms) was reached without a key.
          await driver.executeScript("document.activeElement && document.activeElement.setAttribute('data-kb-reached', '1')");
          // Tab until every control had the focus (a scrolling box may take a stop of its own), at most twice round the page; never
          // more Tabs at once than controls are left, so the focus does not leave the page past its last one (a page
          // without the focus gets no autofocus, which the later tests rely on).
          let unreached = await driver.executeScript<string[]>(UNREACHED);
          for (let sent = 0; unreached.length > 0 && sent < probe.count * 2 + 20; ) {
            const keys = Math.min(10, unreached.length);
            await driver
              .actions({ async: true })
              .sendKeys(...Array<string>(keys).fill(Key.TAB))
              .perform();
            sent += keys;
            unreached = await driver.executeScript<string[]>(UNREACHED);
          }
          if (unreached.length) problems.push(`${p}: not reached by Tab: ${unreached.join('; ')}`);
        };
        await viewport(375, 812, true);
        try {
          for (const p of [
            '/console',
            '/console/captures',
            `/console/captures/${a.jobs[0]}`,
            `/console/captures/${a.jobs[2]}`,
            '/console/build',
            `/console/build/${a.jobs[2]}`,
            '/console/configs',
            '/console/configs/new',
            `/console/configs/${a.configs[2]}/edit`,
            '/console/changes',
            '/console/webhooks',
            '/console/keys',
          ])
            await check(p);
          await driver.manage().deleteAllCookies();
          await check('/console/sign-in');
          await check('/console/operator/sign-in');
          await driver.findElement(By.id('token')).sendKeys(OPERATOR_TOKEN, Key.ENTER);
          await driver.wait(async () => !(await driver.getCurrentUrl()).includes('/sign-in'), 10_000);
          for (const p of ['/console/operator', '/console/operator/capacity', '/console/operator/locations']) await check(p);
          expect(problems, problems.join('\n')).to.deep.equal([]);
        } finally {
          await desktop();
          await driver.manage().deleteAllCookies();
          // The page has the focus again, whatever the Tabs did.
          await driver.switchTo().window(await driver.getWindowHandle());
        }
      });
    });

    describe('safe as a public page', () => {
      before(async () => {
        await signIn(a.key);
      });

      it('shows markup in a custom title, a URL and an AI answer as text, and none of it runs (no dialog, no element, no flag)', async () => {
        await open(`/console/captures/${a.jobs[0]}`);
        await expectNothingRan();
        expect(await text('h1')).to.equal(TITLE_ATTACK);
        expect(await driver.getTitle()).to.equal(`${TITLE_ATTACK} · snapservice console`);
        expect(await text('.capture-url')).to.contain('/plain?q=');
        expect(await text('pre.ai-answer')).to.equal(AI_ATTACK);
        expect(await text('section[aria-labelledby=ai-h]')).to.contain('What does the page say?');
        await open('/console/captures');
        await expectNothingRan();
        expect(await texts('.gallery .name')).to.include(TITLE_ATTACK);
        // The filter names it too (cut at 80 characters).
        const options = await driver.executeScript<string[]>("return [...document.querySelectorAll('#f-config option')].map((o) => o.textContent)");
        expect(options).to.include(`${TITLE_ATTACK.slice(0, 79)}…`);
        await open('/console');
        await expectNothingRan();
      });

      it('answers every console page with a CSP that allows no inline script and no framing, and nosniff', async () => {
        const session = (await signInByHttp(a.key)).session;
        for (const p of ['/console/sign-in', '/console', '/console/captures', `/console/captures/${a.jobs[0]}`, '/console/nowhere']) {
          const r = await getWith(session, p);
          const csp = r.headers.get('content-security-policy') ?? '';
          expect(csp, p).to.contain("script-src 'self'").and.contain("frame-ancestors 'none'").and.contain("default-src 'none'");
          expect(csp, p).not.to.contain('unsafe-inline');
          expect(r.headers.get('x-content-type-options'), p).to.equal('nosniff');
          expect(r.headers.get('x-frame-options'), p).to.equal('DENY');
          expect(r.headers.get('cache-control'), p).to.equal('no-store');
        }
        // The script is a file under /console/assets, served under the same policy.
        await open('/console');
        const script = (await attr('script[src]', 'src')) ?? '';
        expect(new URL(script).pathname).to.match(/^\/console\/assets\/console\.[0-9a-f]{12}\.js$/);
        const r = await fetch(script);
        expect(r.headers.get('content-type')).to.equal('text/javascript; charset=utf-8');
        expect(r.headers.get('content-security-policy')).to.contain("frame-ancestors 'none'");
      });

      it('sets the session cookie HttpOnly, SameSite=Lax, on /console, and Secure when the request came over TLS', async () => {
        const plain = await signInByHttp(a.key);
        expect(plain.status).to.equal(303);
        expect(plain.setCookie).to.match(/; Path=\/console; HttpOnly; SameSite=Lax; Max-Age=604800$/);
        expect(plain.cookiesSet, "each cookie set once: the session, and the sign-in form's deleted").to.deep.equal(['console_session', 'console_signin']);
        const tls = await signInByHttp(a.key, { 'x-forwarded-proto': 'https' });
        expect(tls.setCookie).to.match(/; HttpOnly; SameSite=Lax; Max-Age=604800; Secure$/);
      });

      it('refuses a wrong key, and limits sign-in attempts per client address (429 with Retry-After), right keys included', async () => {
        await signIn('sk_wrong');
        expect(await text('.notice.error')).to.equal('That API key is not valid.');
        expect(await path()).to.equal('/console/sign-in');
        expect(await cookieValue()).to.equal(null);
        expect(await driver.getPageSource()).not.to.contain('sk_wrong');

        const from = { 'x-forwarded-for': '198.51.100.7' };
        for (let i = 0; i < SIGNIN_MAX; i++) expect((await signInByHttp(`sk_guess${i}`, from)).status, `attempt ${i + 1}`).to.equal(401);
        const limited = await signInByHttp(a.key, from);
        expect(limited.status).to.equal(429);
        expect(Number(limited.retryAfter)).to.be.within(1, 600);
        expect(limited.session).to.equal('');
        // Another address is not held back.
        expect((await signInByHttp(a.key, { 'x-forwarded-for': '198.51.100.8' })).status).to.equal(303);
      });

      it('refuses a POST without its CSRF token, or from another Origin, and the session stays as it was', async () => {
        await signIn(a.key);
        // In the browser: the sign-out form without its token.
        await driver.executeScript('document.querySelector(\'form[action="/console/sign-out"] input[name=_csrf]\').remove()');
        await follow('form[action="/console/sign-out"] button');
        expect(await text('h1')).to.equal('Not signed out');
        expect(await text('.notice.error')).to.contain('security token');
        await open('/console');
        expect(await text('h1')).to.equal('Overview');

        const session = (await signInByHttp(a.key)).session;
        const page = await (await getWith(session, '/console')).text();
        const token = /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
        const post = (body: Record<string, string>, headers: Record<string, string> = {}) =>
          fetch(`${base()}/console/sign-out`, {
            method: 'POST',
            redirect: 'manual',
            headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `console_session=${session}`, ...headers },
            body: new URLSearchParams(body).toString(),
          });
        expect((await post({})).status, 'no token').to.equal(403);
        expect((await post({ _csrf: `${token}x` })).status, 'a wrong token').to.equal(403);
        expect((await post({ _csrf: token }, { origin: 'http://evil.example' })).status, 'another origin').to.equal(403);
        expect((await getWith(session, '/console')).status, 'still signed in').to.equal(200);
        // The sign-in form has its token too (a page elsewhere cannot sign the browser in to its own account).
        const noToken = await fetch(`${base()}/console/sign-in`, {
          method: 'POST',
          redirect: 'manual',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: `key=${a.key}`,
        });
        expect(noToken.status).to.equal(403);
        expect(noToken.headers.getSetCookie().some((c) => c.startsWith('console_session='))).to.equal(false);
        // With its token and this site's Origin, the same POST signs out.
        expect((await post({ _csrf: token }, { origin: base() })).status).to.equal(303);
        expect((await getWith(session, '/console')).status).to.equal(303);
      });

      it("answers 404 to a session of account A asking for B's capture or configuration, as the API does", async () => {
        await signIn(a.key);
        await open(`/console/captures/${b.job}`);
        expect(await text('h1')).to.equal('Not found');
        expect(await driver.getPageSource()).not.to.contain('B only');
        await open(`/console/captures?config=${b.config}`);
        expect(await text('h1')).to.equal('Not found');
        const session = (await signInByHttp(a.key)).session;
        expect((await getWith(session, `/console/captures/${b.job}`)).status).to.equal(404);
        expect((await getWith(session, `/console/captures?config=${b.config}`)).status).to.equal(404);
        expect((await request(base(), 'GET', `/jobs/${b.job}?access_token=${a.key}`)).status, 'the API').to.equal(404);
        // B's own session sees it.
        expect((await getWith((await signInByHttp(b.key)).session, `/console/captures/${b.job}`)).status).to.equal(200);
      });
    });

    describe('sessions end', () => {
      it('signs out: the session ends (its cookie no longer opens a page) and the browser is back at sign-in', async () => {
        await signIn(a.key, `?next=${encodeURIComponent('/console/captures?limit=2')}`);
        expect(await path(), 'back where it was going').to.equal('/console/captures?limit=2');
        const session = (await cookieValue()) ?? '';
        expect(session).to.have.length(43);
        expect((await getWith(session, '/console')).status).to.equal(200);
        await driver.findElement(By.css('form[action="/console/sign-out"] button')).click();
        await driver.wait(until.urlContains('/console/sign-in'), 10_000);
        expect(await text('.notice')).to.equal('You are signed out.');
        expect(await cookieValue()).to.equal(null);
        await driver.get(`${base()}/console`);
        expect(await path()).to.equal('/console/sign-in');
        const replayed = await getWith(session, '/console/captures');
        expect([replayed.status, replayed.headers.get('location')]).to.deep.equal([303, '/console/sign-in?next=%2Fconsole%2Fcaptures']);
      });

      it('ends a session when its key is rotated (as the key itself stops working)', async () => {
        const account = await t.sys.account('big');
        const session = (await signInByHttp(account.access_token)).session;
        expect((await getWith(session, '/console')).status).to.equal(200);
        await t.sys.broker.call('billing.rotateKey', { accountId: account.account_id });
        const r = await getWith(session, '/console');
        expect([r.status, r.headers.get('location')]).to.deep.equal([303, '/console/sign-in']);
        expect(r.headers.getSetCookie().join()).to.contain('console_session=; Path=/console');
      });
    });
  });
});
