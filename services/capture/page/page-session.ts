/**
 * The page a capture works on, and what every part of a capture (page-capture, actions,
 * blocking, consent) and the browser slot that prepares the page share about it: the
 * option defaults a prepared page is set up for, commands on the page's flat CDP session,
 * running code in the page, and the few waits and checks each of them needs.
 */
import { OPTION_DEFAULTS, type SnapOptions } from '../../shared/screenshot-options';
import { type CdpConnection, CdpError } from './cdp';

/** The capture options' defaults (the option table's); a prepared page is set up for them. */
export const DEFAULTS = OPTION_DEFAULTS;

type Params = Record<string, unknown>;

/** A page's device metrics: its viewport in CSS pixels and its device scale factor. */
export interface Viewport {
  width: number;
  height: number;
  scale: number;
}

/** The viewport the options ask for. */
export function viewportOf(o: Pick<SnapOptions, 'page_width' | 'page_height' | 'scale_factor'>): Viewport {
  return { width: o.page_width ?? DEFAULTS.page_width, height: o.page_height ?? DEFAULTS.page_height, scale: o.scale_factor ?? DEFAULTS.scale_factor };
}

export const sameViewport = (a: Viewport, b: Viewport): boolean => a.width === b.width && a.height === b.height && a.scale === b.scale;

/** Emulation.setDeviceMetricsOverride's parameters for a viewport (never a mobile one). */
export const deviceMetrics = (v: Viewport): Params => ({ width: v.width, height: v.height, deviceScaleFactor: v.scale, mobile: false });

interface EvalResult<T> {
  result: { value?: T; type: string; subtype?: string; objectId?: string };
  exceptionDetails?: { text: string; exception?: { description?: string } };
}

/** The value of an evaluation, or its exception thrown as an Error with the page's message. */
function evaluated<T>(r: EvalResult<T>): T {
  if (r.exceptionDetails) throw new Error(r.exceptionDetails.exception?.description ?? r.exceptionDetails.text);
  return r.result.value as T;
}

/** A JavaScript string literal of s, for expressions sent to the page and for notes. */
export const quote = (s: string): string => JSON.stringify(s);

/**
 * The expression that calls a function with JSON arguments in the page. The function is
 * sent as its source text (toString), so it may use nothing but its arguments and the page.
 */
export function inPageCall<A extends unknown[]>(fn: (...args: A) => unknown, ...args: A): string {
  return `(${fn.toString()})(${args.map((a) => JSON.stringify(a)).join(', ')})`;
}

export class PageSession {
  constructor(
    readonly cdp: CdpConnection,
    readonly sessionId: string,
    /** The page's own browser context (permissions are granted per context). */
    readonly contextId: string,
    /** The page's target (its tab). */
    readonly targetId: string,
    /** The page's main frame (the same across its navigations). */
    readonly mainFrameId: string,
    /** The device metrics the page was prepared with (presetPage). */
    readonly viewport: Viewport = viewportOf({}),
  ) {}

  send<T = Params>(method: string, params: Params = {}): Promise<T> {
    return this.cdp.send<T>(method, params, this.sessionId);
  }

  /** A command whose result is one base64 `data` field (a screenshot, a PDF), decoded (CdpConnection.sendForData). */
  sendForData(method: string, params: Params = {}): Promise<Buffer> {
    return this.cdp.sendForData(method, params, this.sessionId);
  }

  /**
   * Evaluates an expression in the page and returns its value (awaiting promises). The
   * capture's own look at the page: the page is not told that its visitor acted (no user
   * activation), so it stays as a visitor who has not touched it sees it (evaluateAsVisitor).
   */
  evaluate<T>(expression: string, awaitPromise = true): Promise<T> {
    return this.evaluateAs<T>(expression, awaitPromise, false);
  }

  /**
   * As evaluate, for what the visitor does (js_inject, an action's click, typing or choice):
   * the page gets user activation, as from a person's act (it may then open a window, play
   * sound, show what waits for an interaction), as a script run in DevTools' console does.
   */
  evaluateAsVisitor<T>(expression: string, awaitPromise = true): Promise<T> {
    return this.evaluateAs<T>(expression, awaitPromise, true);
  }

  /** Runs a function in the page (see inPageCall) and returns its value: a look, as evaluate. */
  run<A extends unknown[], T>(fn: (...args: A) => T, ...args: A): Promise<T> {
    return this.evaluate<T>(inPageCall(fn, ...args), false);
  }

  /** Runs a function in the page as the visitor's act, as evaluateAsVisitor. */
  runAsVisitor<A extends unknown[], T>(fn: (...args: A) => T, ...args: A): Promise<T> {
    return this.evaluateAsVisitor<T>(inPageCall(fn, ...args), false);
  }

  /**
   * Evaluates an expression and keeps its object in the page (a remote object, a look as
   * evaluate) for callOn; undefined when it is not an object. The caller releases it
   * (Runtime.releaseObject).
   */
  async evaluateToObject(expression: string): Promise<string | undefined> {
    const r = await this.send<EvalResult<unknown>>('Runtime.evaluate', { expression, returnByValue: false });
    evaluated(r);
    return r.result.objectId;
  }

  /** Calls a function in the page with `this` the object evaluateToObject kept, and returns its value. */
  async callOn<T>(objectId: string, functionDeclaration: string): Promise<T> {
    return evaluated(await this.send<EvalResult<T>>('Runtime.callFunctionOn', { objectId, functionDeclaration, returnByValue: true }));
  }

  private async evaluateAs<T>(expression: string, awaitPromise: boolean, userGesture: boolean): Promise<T> {
    return evaluated(await this.send<EvalResult<T>>('Runtime.evaluate', { expression, returnByValue: true, awaitPromise, userGesture }));
  }
}

/**
 * What a capture needs before its first request, set on every prepared page while the
 * browser is idle (BrowserSlot), so that a capture asking for the same sends two commands
 * fewer on its own path: the user agent, and the device metrics (the viewport the slot's
 * last capture asked for, which is what the next one most often asks for too). Both stay
 * in force across navigations; a capture that asks for another viewport sets its own.
 */
export async function presetPage(cdp: CdpConnection, sessionId: string, userAgent: string, viewport: Viewport): Promise<void> {
  await Promise.all([
    cdp.send('Emulation.setDeviceMetricsOverride', deviceMetrics(viewport), sessionId),
    cdp.send('Emulation.setUserAgentOverride', { userAgent }, sessionId),
  ]);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/**
 * The tab (or the whole browser) went away under a command: the browser's failure, not the
 * page's nor the caller's, so it keeps its own answer whatever the capture was doing.
 */
export function browserGone(err: unknown): boolean {
  return err instanceof CdpError && /Target closed|Session with given id not found|connection closed/i.test(err.message);
}

/**
 * Runs in the page (pass it to inPageCall or PageSession.run): adds a stylesheet, marked by
 * one attribute so that what we injected can be told from the page's own.
 */
export function insertStyle(css: string, attribute: string, value: string): void {
  const style = document.createElement('style');
  style.setAttribute(attribute, value);
  style.textContent = css;
  (document.head || document.documentElement).appendChild(style);
}

/**
 * In the page: 'present' as soon as an element matches (checked now, then on every DOM
 * change), 'missing' when none has after sliceMs, or the page's reason for an invalid selector.
 */
function pageWatch(selector: string, sliceMs: number): Promise<'present' | 'missing' | { invalid: string }> {
  try {
    if (document.querySelector(selector)) return Promise.resolve('present');
  } catch (err) {
    return Promise.resolve({ invalid: String(err) });
  }
  return new Promise((resolve) => {
    const done = (answer: 'present' | 'missing') => {
      observer.disconnect();
      clearTimeout(timer);
      resolve(answer);
    };
    const observer = new MutationObserver(() => {
      if (document.querySelector(selector)) done('present');
    });
    observer.observe(document, { childList: true, subtree: true, attributes: true });
    const timer = setTimeout(() => done(document.querySelector(selector) ? 'present' : 'missing'), sliceMs);
  });
}

/**
 * The longest one look waits in the page: a match the DOM does not announce (a state such as
 * :checked) is still seen this often, and a look that a navigation cut short is taken again soon.
 */
const SELECTOR_SLICE_MS = 250;

/**
 * Waits until an element matches the selector: in the page, answered the moment the DOM
 * change that makes it match happens (no polling delay); gives up ('timed-out') at `until`
 * (epoch ms). An invalid selector is answered at once, with the page's reason. `then`: an
 * expression evaluated in the page, at once, in the same call once an element matches (a read
 * the caller needs next, without a round trip of its own); its value is answered as `{ read }`.
 */
export async function waitForSelector(page: PageSession, selector: string, until: number): Promise<'present' | 'timed-out' | { invalid: string }>;
export async function waitForSelector(
  page: PageSession,
  selector: string,
  until: number,
  then: string,
): Promise<{ read: unknown } | 'timed-out' | { invalid: string }>;
export async function waitForSelector(
  page: PageSession,
  selector: string,
  until: number,
  then?: string,
): Promise<'present' | { read: unknown } | 'timed-out' | { invalid: string }> {
  for (;;) {
    const left = until - Date.now();
    if (left <= 0) return 'timed-out';
    let found: 'present' | { read: unknown } | 'missing' | { invalid: string };
    const slice = Math.min(SELECTOR_SLICE_MS, left);
    const watch = inPageCall(pageWatch, selector, slice);
    const look = page.evaluate<'present' | { read: unknown } | 'missing' | { invalid: string }>(
      then ? `${watch}.then((found) => (found === 'present' ? { read: ${then} } : found))` : watch,
    );
    look.catch(() => undefined);
    try {
      // The page could have replaced its timers: a look is not waited for much past its slice.
      found = await Promise.race([look, sleep(slice + 100).then(() => 'missing' as const)]);
    } catch (err) {
      // The page navigated (or reloaded) under the look: look again in the new document.
      if (!/context was destroyed|Cannot find context|Inspected target navigated/i.test((err as Error).message)) throw err;
      await sleep(Math.min(50, Math.max(0, until - Date.now())));
      continue;
    }
    if (found !== 'missing') return found;
  }
}
