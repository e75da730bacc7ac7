/**
 * One capture on a prepared page: emulation (viewport, scale, user agent, language, time
 * zone, geolocation, JavaScript), request control (headers, cookies, egress policy),
 * navigation, waiting, scrolling, injection, then the image (or PDF, or HTML).
 *
 * Everything goes through CDP on the page's flat session; the page lives in its own
 * browser context, which the caller disposes afterwards, so nothing set here outlives the
 * capture.
 */
import { serviceError } from '../shared/errors';
import { OPTION_DEFAULTS, type SnapOptions } from '../shared/screenshot-options';
import { type CdpConnection, CdpError } from './cdp';
import type { EgressPolicy } from './egress';
// BEGIN page blocking and consent (blocking.ts, consent.ts)
import { PageBlocker, injectCosmetics, wantsBlocking } from './blocking';
import { ConsentHandler } from './consent';
// END page blocking and consent
import { type ChangeReading, runActions } from './actions';

export const DEFAULTS = OPTION_DEFAULTS;

/** How long scrolling for lazy content may take (spec, Limits: incremental_scroll). */
const SCROLL_BUDGET_MS = 10_000;

export interface CaptureOutput {
  /** The image or PDF; absent for html_only. */
  image?: Buffer;
  contentType?: string;
  /** A raster for the thumbnail when the main output is a PDF. */
  thumbnailSource?: Buffer;
  html?: string;
  /** Texts read by multi_step_actions `change` steps (change detection compares them). */
  changes?: ChangeReading[];
}

type Params = Record<string, unknown>;

interface EvalResult<T> {
  result: { value?: T; type: string; subtype?: string };
  exceptionDetails?: { text: string; exception?: { description?: string } };
}

export class PageSession {
  constructor(
    readonly cdp: CdpConnection,
    readonly sessionId: string,
    /** The page's own browser context (permissions are granted per context). */
    readonly contextId: string,
    /** The page's main frame (the same across its navigations). */
    readonly mainFrameId: string,
  ) {}

  send<T = Params>(method: string, params: Params = {}): Promise<T> {
    return this.cdp.send<T>(method, params, this.sessionId);
  }

  /** Evaluates an expression in the page and returns its value (awaiting promises). */
  async evaluate<T>(expression: string, awaitPromise = true): Promise<T> {
    const r = await this.send<EvalResult<T>>('Runtime.evaluate', { expression, returnByValue: true, awaitPromise, userGesture: true });
    if (r.exceptionDetails) throw new Error(r.exceptionDetails.exception?.description ?? r.exceptionDetails.text);
    return r.result.value as T;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function jsString(s: string): string {
  return JSON.stringify(s);
}

/**
 * What a capture with default options needs, set on every prepared page while the browser is
 * idle (BrowserSlot), so such a capture sends two commands fewer on its own path. Both stay
 * in force across navigations.
 */
export async function presetPage(cdp: CdpConnection, sessionId: string, userAgent: string): Promise<void> {
  await Promise.all([
    cdp.send(
      'Emulation.setDeviceMetricsOverride',
      { width: DEFAULTS.page_width, height: DEFAULTS.page_height, deviceScaleFactor: DEFAULTS.scale_factor, mobile: false },
      sessionId,
    ),
    cdp.send('Emulation.setUserAgentOverride', { userAgent }, sessionId),
  ]);
}

/** Applies everything that must be in place before the first request (beyond presetPage). */
async function prepare(page: PageSession, o: SnapOptions, userAgent: string): Promise<void> {
  const width = o.page_width ?? DEFAULTS.page_width;
  const height = o.page_height ?? DEFAULTS.page_height;
  const scale = o.scale_factor ?? DEFAULTS.scale_factor;
  const steps: Array<Promise<unknown>> = [];
  if (width !== DEFAULTS.page_width || height !== DEFAULTS.page_height || scale !== DEFAULTS.scale_factor) {
    steps.push(page.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: scale, mobile: false }));
  }
  if (o.user_agent || o.accept_language) {
    steps.push(page.send('Emulation.setUserAgentOverride', { userAgent: o.user_agent ?? userAgent, ...(o.accept_language ? { acceptLanguage: o.accept_language } : {}) }));
  }
  if (o.time_zone) steps.push(page.send('Emulation.setTimezoneOverride', { timezoneId: o.time_zone }));
  if (o.latitude !== undefined || o.longitude !== undefined) {
    steps.push(page.cdp.send('Browser.grantPermissions', { permissions: ['geolocation'], browserContextId: page.contextId }));
    steps.push(page.send('Emulation.setGeolocationOverride', { latitude: o.latitude ?? 0, longitude: o.longitude ?? 0, accuracy: o.accuracy ?? 100 }));
  }
  if (o.disable_js) steps.push(page.send('Emulation.setScriptExecutionDisabled', { value: true }));
  if (o.headers?.length || o.cookies?.length) {
    steps.push(page.send('Network.enable'));
    if (o.headers?.length) steps.push(page.send('Network.setExtraHTTPHeaders', { headers: Object.fromEntries(o.headers.map((h) => [h.key, h.value])) }));
    if (o.cookies?.length) {
      const target = new URL(o.url);
      steps.push(
        page.send('Network.setCookies', {
          cookies: o.cookies.map((c) => ({
            name: c.key,
            value: c.value,
            domain: c.domain ?? target.hostname,
            path: c.path ?? '/',
            ...(c.secure !== undefined ? { secure: c.secure } : {}),
            ...(c.httpOnly !== undefined ? { httpOnly: c.httpOnly } : {}),
          })),
        }),
      );
    }
  }
  await Promise.all(steps);
}

/**
 * Pauses every request of the page at the Fetch stage and lets through only what the
 * egress policy allows. Remembers a refused main-document load so the caller can answer
 * url_not_allowed rather than page_load_failed.
 */
async function guardRequests(
  page: PageSession,
  policy: EgressPolicy,
  blocking: { blocker: PageBlocker; o: SnapOptions } | null = null,
): Promise<{ refusedNavigation(): string | null; stop(): void }> {
  let refused: string | null = null;
  // BEGIN page blocking: the main frame's URL tells first from third parties.
  let pageUrl = blocking?.o.url ?? '';
  // END page blocking
  const off = page.cdp.on('Fetch.requestPaused', (params, sessionId) => {
    if (sessionId !== page.sessionId) return;
    const { requestId, request, resourceType, frameId } = params as { requestId: string; request: { url: string }; resourceType: string; frameId?: string };
    const isMainFrame = resourceType === 'Document' && frameId === page.mainFrameId;
    // BEGIN page blocking: no_ads, no_tracking, disable_third_party_js first, then the egress policy.
    if (blocking) {
      if (isMainFrame) pageUrl = request.url;
      if (blocking.blocker.decide({ url: request.url, pageUrl, resourceType, isMainFrame }, blocking.o).block) {
        void page.send('Fetch.failRequest', { requestId, errorReason: 'BlockedByClient' }).catch(() => undefined);
        return;
      }
      if (policy.allowPrivateNetworks) {
        void page.send('Fetch.continueRequest', { requestId }).catch(() => undefined);
        return;
      }
    }
    // END page blocking
    void policy.check(request.url).then(
      (verdict) => {
        if (verdict.allowed) return page.send('Fetch.continueRequest', { requestId }).catch(() => undefined);
        // The page itself (or a redirect of it) refused: the capture is answered url_not_allowed.
        // A frame of the page is only left empty, like any other refused sub-request.
        if (isMainFrame && refused === null) refused = `${request.url} ${verdict.reason}`;
        return page.send('Fetch.failRequest', { requestId, errorReason: 'AccessDenied' }).catch(() => undefined);
      },
      () => page.send('Fetch.failRequest', { requestId, errorReason: 'AccessDenied' }).catch(() => undefined),
    );
  });
  await page.send('Fetch.enable', { patterns: [{ urlPattern: '*', requestStage: 'Request' }] });
  return { refusedNavigation: () => refused, stop: off };
}

async function navigate(page: PageSession, url: string, deadline: number, refusedNavigation: () => string | null): Promise<void> {
  const loaded = page.cdp.waitFor('Page.loadEventFired', page.sessionId, Math.max(1, deadline - Date.now()));
  loaded.catch(() => undefined);
  const nav = await page.send<{ errorText?: string }>('Page.navigate', { url });
  const refused = refusedNavigation();
  if (refused) throw serviceError('url_not_allowed', `The page may not be captured: ${refused}. Private and internal addresses are refused.`);
  if (nav.errorText) {
    throw serviceError('page_load_failed', `The page could not be loaded (${nav.errorText}); check that ${url} is reachable from the internet.`);
  }
  try {
    await loaded;
  } catch {
    // A page whose load event never comes (a stalled sub-resource) is still captured as it
    // is when the time budget runs out; the overall capture timeout decides otherwise.
  }
  const after = refusedNavigation();
  if (after) throw serviceError('url_not_allowed', `The page may not be captured: ${after}. Private and internal addresses are refused.`);
}

/**
 * Moves the pointer off the page, below and to the right of the viewport. Chromium's headless
 * shell starts every page with the pointer at (0, 0), so whatever sits in the top-left corner
 * would be captured in its :hover state; a person's browser has no pointer over a page it has
 * just opened. Below and right, not above: leaving through the top edge is what "exit intent"
 * pop-ups wait for.
 */
async function parkPointer(page: PageSession, o: SnapOptions): Promise<void> {
  const width = o.page_width ?? DEFAULTS.page_width;
  const height = o.page_height ?? DEFAULTS.page_height;
  await page.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: width + 10, y: height + 10 });
}

async function waitForSelector(page: PageSession, selector: string, deadline: number, what: string): Promise<void> {
  const probe = `!!document.querySelector(${jsString(selector)})`;
  for (;;) {
    let found = false;
    try {
      found = await page.evaluate<boolean>(probe, false);
    } catch (err) {
      throw serviceError('invalid_parameter', `${what}: ${jsString(selector)} is not a valid CSS selector (${(err as Error).message.split('\n')[0]}).`);
    }
    if (found) return;
    if (Date.now() + 100 > deadline) throw serviceError('selector_not_found', `${what}: no element matches ${jsString(selector)} on the page (waited until the time budget ran out).`);
    await sleep(100);
  }
}

/** Scrolls down a viewport at a time to trigger lazy loading, then back to the top. */
async function scrollThrough(page: PageSession, stepDelayMs: number, deadline: number): Promise<void> {
  const until = Math.min(deadline, Date.now() + SCROLL_BUDGET_MS);
  for (;;) {
    const atEnd = await page.evaluate<boolean>(
      '(() => { window.scrollBy(0, window.innerHeight); return window.scrollY + window.innerHeight >= document.documentElement.scrollHeight - 1; })()',
      false,
    );
    if (atEnd || Date.now() + stepDelayMs >= until) break;
    await sleep(stepDelayMs);
  }
  await sleep(Math.min(stepDelayMs, Math.max(0, until - Date.now())));
  await page.evaluate('window.scrollTo(0, 0)', false);
}

async function inject(page: PageSession, o: SnapOptions): Promise<void> {
  if (o.css_inject) {
    await page.evaluate(
      `(() => { const s = document.createElement('style'); s.setAttribute('data-injected', 'css_inject'); s.textContent = ${jsString(o.css_inject)}; (document.head || document.documentElement).appendChild(s); })()`,
      false,
    );
  }
  if (o.js_inject && !o.disable_js) {
    try {
      await page.evaluate(o.js_inject, true);
    } catch (err) {
      throw serviceError('invalid_parameter', `js_inject: the script threw: ${(err as Error).message.split('\n')[0]}.`);
    }
  }
}

interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

async function elementBox(page: PageSession, selector: string): Promise<Box> {
  const box = await page.evaluate<Box | null>(
    `(() => { const el = document.querySelector(${jsString(selector)}); if (!el) return null; el.scrollIntoView({ block: 'center', inline: 'center' }); const r = el.getBoundingClientRect(); return { x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height }; })()`,
    false,
  );
  if (!box) throw serviceError('selector_not_found', `selectors: no element matches ${jsString(selector)} on the page.`);
  if (box.width < 1 || box.height < 1) throw serviceError('selector_not_found', `selectors: the element matching ${jsString(selector)} has no visible size.`);
  return box;
}

async function hover(page: PageSession, box: Box): Promise<void> {
  const { x: scrollX, y: scrollY } = await page.evaluate<{ x: number; y: number }>('({ x: window.scrollX, y: window.scrollY })', false);
  await page.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: box.x - scrollX + box.width / 2, y: box.y - scrollY + box.height / 2 });
  // Let :hover styles and transitions apply.
  await sleep(150);
}

async function screenshot(page: PageSession, o: SnapOptions, clip: Box | null): Promise<{ image: Buffer; contentType: string; thumbnailSource?: Buffer }> {
  const format = o.image_format ?? DEFAULTS.image_format;
  if (format === 'pdf') {
    const width = o.page_width ?? DEFAULTS.page_width;
    const height = o.page_height ?? DEFAULTS.page_height;
    const [pdf, raster] = await Promise.all([
      page.send<{ data: string }>('Page.printToPDF', {
        printBackground: true,
        paperWidth: width / 96,
        paperHeight: o.fullpage || o.fullpage_advanced ? Math.max(height, await contentHeight(page)) / 96 : height / 96,
        marginTop: 0,
        marginBottom: 0,
        marginLeft: 0,
        marginRight: 0,
      }),
      page.send<{ data: string }>('Page.captureScreenshot', { format: 'jpeg', quality: 80 }),
    ]);
    return { image: Buffer.from(pdf.data, 'base64'), contentType: 'application/pdf', thumbnailSource: Buffer.from(raster.data, 'base64') };
  }
  const params: Params = { format, ...(format === 'jpeg' ? { quality: o.quality ?? DEFAULTS.quality } : {}) };
  if (clip) Object.assign(params, { clip: { ...clip, scale: 1 }, captureBeyondViewport: true });
  const shot = await page.send<{ data: string }>('Page.captureScreenshot', params);
  return { image: Buffer.from(shot.data, 'base64'), contentType: `image/${format}` };
}

async function contentHeight(page: PageSession): Promise<number> {
  return page.evaluate<number>('Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0)', false);
}

export interface CaptureContext {
  page: PageSession;
  userAgent: string;
  policy: EgressPolicy;
  /** Epoch ms by which the capture must be done. */
  deadline: number;
}

/** Runs the capture; throws domain errors (selector_not_found, page_load_failed, ...). */
export async function capturePage(ctx: CaptureContext, o: SnapOptions): Promise<CaptureOutput> {
  const { page, policy, deadline } = ctx;
  const verdict = await policy.check(o.url);
  if (!verdict.allowed) throw serviceError('url_not_allowed', `url: ${o.url} ${verdict.reason}. Private and internal addresses are refused.`);

  await prepare(page, o, ctx.userAgent);
  // BEGIN page blocking and consent: requests are paused for the egress policy or for blocking;
  // autoconsent is installed before navigating.
  const blocker = wantsBlocking(o) ? await PageBlocker.shared() : null;
  const guard = policy.allowPrivateNetworks && !blocker ? null : await guardRequests(page, policy, blocker ? { blocker, o } : null);
  const consent = o.no_cookie_banners ? await ConsentHandler.attach(page, { scriptsDisabled: o.disable_js }) : null;
  // END page blocking and consent
  try {
    await navigate(page, o.url, deadline, guard ? guard.refusedNavigation : () => null);
    await parkPointer(page, o);
    if (consent) await consent.settle(deadline); // page blocking and consent
    if (o.wait_for) await waitForSelector(page, o.wait_for, deadline, 'wait_for');
    if (blocker) await injectCosmetics(page, blocker, o); // page blocking and consent
    await inject(page, o);
    // multi_step_actions: after the injections, before scrolling and the global wait. A
    // step's navigation passes the same egress policy as the main URL.
    const refusedNavigation = guard ? guard.refusedNavigation : () => null;
    const changes = o.multi_step_actions?.length
      ? (
          await runActions(page, o.multi_step_actions, deadline, {
            refusedNavigation,
            async navigate(url) {
              const v = await policy.check(url);
              if (!v.allowed) throw serviceError('url_not_allowed', `${url} ${v.reason}. Private and internal addresses are refused.`);
              await navigate(page, url, deadline, refusedNavigation);
            },
          })
        ).changes
      : undefined;
    if (o.incremental_scroll || o.fullpage_advanced) await scrollThrough(page, o.incremental_scroll ? 400 : 150, deadline);
    const wait = o.wait ?? DEFAULTS.wait;
    if (wait > 0) await sleep(Math.min(wait, Math.max(0, deadline - Date.now())));

    if (o.html_only) {
      const html = o.selectors
        ? await page.evaluate<string | null>(`(() => { const el = document.querySelector(${jsString(o.selectors)}); return el ? el.outerHTML : null; })()`, false)
        : await page.evaluate<string>(
            "(document.doctype ? new XMLSerializer().serializeToString(document.doctype) + '\\n' : '') + document.documentElement.outerHTML",
            false,
          );
      if (html === null) throw serviceError('selector_not_found', `selectors: no element matches ${jsString(o.selectors ?? '')} on the page.`);
      return { html, ...(changes ? { changes } : {}) };
    }

    let clip: Box | null = null;
    if (o.selectors) {
      clip = await elementBox(page, o.selectors);
      if (o.hover_on_selected) {
        await hover(page, clip);
        clip = await elementBox(page, o.selectors);
      }
    } else if (o.fullpage || o.fullpage_advanced) {
      const width = o.page_width ?? DEFAULTS.page_width;
      clip = { x: 0, y: 0, width, height: Math.max(o.page_height ?? DEFAULTS.page_height, await contentHeight(page)) };
    }
    return { ...(await screenshot(page, o, clip)), ...(changes ? { changes } : {}) };
  } catch (err) {
    if (err instanceof CdpError && /Target closed|Session with given id not found|connection closed/i.test(err.message)) {
      throw serviceError('page_load_failed', 'The page crashed the browser tab while loading; try again, or capture a simpler page.');
    }
    throw err;
  } finally {
    guard?.stop();
    consent?.stop(); // page blocking and consent
  }
}
