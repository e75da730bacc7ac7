/** The web console over plain HTTP (no browser): signing in as its form does, and pages asked for with a session cookie; and, in the browser, what a page must not have run and when it has gone. */
import { expect } from 'chai';
import { type WebDriver, type WebElement, error } from 'selenium-webdriver';

export interface ConsoleSignIn {
  status: number;
  location: string | null;
  retryAfter: string | null;
  /** The name of each cookie the answer set, in the order of its Set-Cookie headers. */
  cookiesSet: string[];
  /** The Set-Cookie of the session ('' when none was set). */
  setCookie: string;
  /** The session cookie's value ('' when none was set). */
  session: string;
}

/** GETs the sign-in page (its form's token and cookie), then POSTs the form with `key`, as a browser would; `headers` go on both. */
export async function consoleSignIn(base: string, key: string, headers: Record<string, string> = {}): Promise<ConsoleSignIn> {
  const form = await fetch(`${base}/console/sign-in`, { headers });
  const token = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const signinCookie = (form.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const r = await fetch(`${base}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: signinCookie, ...headers },
    body: new URLSearchParams({ _csrf: token, key }).toString(),
  });
  const setCookie = r.headers.getSetCookie().find((c) => c.startsWith('console_session=')) ?? '';
  return {
    status: r.status,
    location: r.headers.get('location'),
    retryAfter: r.headers.get('retry-after'),
    cookiesSet: r.headers.getSetCookie().map((c) => c.split('=')[0] ?? ''),
    setCookie,
    session: /^console_session=([^;]*)/.exec(setCookie)?.[1] ?? '',
  };
}

/** A console page asked for with a session cookie, redirects not followed. */
export function consoleGet(base: string, session: string, path: string): Promise<Response> {
  return fetch(base + path, { redirect: 'manual', headers: { cookie: `console_session=${session}` } });
}

/** The CSRF token a signed-in page's forms carry. */
export async function consoleToken(base: string, session: string): Promise<string> {
  return /name="_csrf" value="([^"]+)"/.exec(await (await consoleGet(base, session, '/console')).text())?.[1] ?? '';
}

/** Signs out with the session's token. */
export function consoleSignOut(base: string, session: string, token: string): Promise<Response> {
  return fetch(`${base}/console/sign-out`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: `console_session=${session}` },
    body: new URLSearchParams({ _csrf: token }).toString(),
  });
}

/**
 * What a script-injection corpus must leave behind in the page the browser shows: no dialog
 * opened, no element the attack would write (`injected`: a selector of them; elements with
 * inline handlers are always looked for), no inline script, no flag set on the document.
 */
export async function expectNothingRan(driver: WebDriver, injected: string): Promise<void> {
  let dialog: string | null = null;
  try {
    dialog = await driver.switchTo().alert().getText();
  } catch {
    // NoSuchAlertError: none opened.
  }
  expect(dialog, 'a dialog opened').to.equal(null);
  const found = await driver.executeScript(
    `return {
      elements: document.querySelectorAll(${JSON.stringify(`${injected}, img[src="x"], svg[onload], [onerror], [onload]`)}).length,
      inlineScripts: [...document.scripts].filter((s) => !s.src).length,
      flag: document.documentElement.dataset.pwned || null,
    }`,
  );
  expect(found).to.deep.equal({ elements: 0, inlineScripts: 0, flag: null });
}

/**
 * For driver.wait: true once `el`'s document is gone (the page navigated away). until.stalenessOf,
 * also taking for stale the "Node with given id does not belong to the document" that Chrome
 * answers instead at times (SeleniumHQ/selenium#15401), which until.stalenessOf throws.
 */
export function documentGone(el: WebElement): () => Promise<boolean> {
  return () =>
    el.isEnabled().then(
      () => false,
      (err: Error) => {
        if (err instanceof error.StaleElementReferenceError || /does not belong to the document/.test(err.message)) return true;
        throw err;
      },
    );
}
