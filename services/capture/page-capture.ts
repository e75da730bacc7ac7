/**
 * One capture on a prepared page: emulation (viewport, scale, user agent, language, time
 * zone, geolocation, JavaScript), request control (headers, cookies, the request guard),
 * navigation, waiting, scrolling, injection, then the image (or PDF, or HTML).
 *
 * Everything goes through CDP on the page's flat session; the page lives in its own
 * browser context, which the caller disposes afterwards, so nothing set here outlives the
 * capture.
 */
import { serviceError } from '../shared/errors';
import type { SnapOptions } from '../shared/screenshot-options';
import type { EgressPolicy } from '../shared/egress';
import type { GatewayCapture } from './gateway';
import { type BlockerSource, injectCosmetics, wantsBlocking } from './blocking';
import { ConsentHandler } from './consent';
import { type ChangeReading, runActions } from './actions';
import { type PageReading, READ_PAGE } from './page-reading';
import { documentHeight, loadWholePage, maxCaptureHeight, wantsWholePage } from './full-page';
import { DEFAULTS, type PageSession, browserGone, deviceMetrics, insertStyle, quote, sameViewport, sleep, viewportOf, waitForSelector } from './page-session';
import { type RequestGuard, admitUrl, guardRequests, urlNotAllowed } from './request-guard';

export interface CaptureOutput {
  /** The image or PDF; absent for html_only. */
  image?: Buffer;
  contentType?: string;
  /** A raster for the thumbnail when the main output is a PDF. */
  thumbnailSource?: Buffer;
  html?: string;
  /** Texts read by multi_step_actions `change` steps (change detection compares them). */
  changes?: ChangeReading[];
  /** Bytes the capture sent and received through its egress gateway (set by the engine). */
  egressBytes?: number;
  /** The page's address, title, text and links, when the context asked (`read`, page-reading.ts). */
  reading?: PageReading;
}

type Params = Record<string, unknown>;

/** Applies everything that must be in place before the first request (beyond presetPage). */
async function prepare(page: PageSession, o: SnapOptions, userAgent: string): Promise<void> {
  const steps: Array<Promise<unknown>> = [];
  const viewport = viewportOf(o);
  if (!sameViewport(viewport, page.viewport)) steps.push(page.send('Emulation.setDeviceMetricsOverride', deviceMetrics(viewport)));
  if (o.user_agent || o.accept_language) {
    steps.push(
      page.send('Emulation.setUserAgentOverride', {
        userAgent: o.user_agent ?? userAgent,
        ...(o.accept_language ? { acceptLanguage: o.accept_language } : {}),
      }),
    );
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

async function navigate(page: PageSession, url: string, deadline: number, guard: RequestGuard): Promise<void> {
  const loaded = page.cdp.waitFor('Page.loadEventFired', page.sessionId, Math.max(1, deadline - Date.now()));
  loaded.catch(() => undefined);
  const nav = await page.send<{ errorText?: string }>('Page.navigate', { url });
  const refused = guard.refusedNavigation(url);
  if (refused) throw urlNotAllowed(`The page may not be captured: ${refused}`);
  if (nav.errorText) {
    throw serviceError('page_load_failed', `The page could not be loaded (${nav.errorText}); check that ${url} is reachable from the internet.`);
  }
  try {
    await loaded;
  } catch {
    // A page whose load event never comes (a stalled sub-resource) is still captured as it
    // is when the time budget runs out; the overall capture timeout decides otherwise.
  }
  const after = guard.refusedNavigation();
  if (after) throw urlNotAllowed(`The page may not be captured: ${after}`);
}

/**
 * Moves the pointer off the page, below and to the right of the viewport. Chromium's headless
 * shell starts every page with the pointer at (0, 0), so whatever sits in the top-left corner
 * would be captured in its :hover state; a person's browser has no pointer over a page it has
 * just opened. Below and right, not above: leaving through the top edge is what "exit intent"
 * pop-ups wait for.
 *
 * Sent once the new document is parsed (DOMContentLoaded; at the load event if that never came):
 * sent earlier, even right after Page.navigate answers or the frame commits, the new document
 * does not always get it. Awaited only with the output: its answer waits for the renderer's
 * next frame (about 10 ms), and the moves and clicks of later steps come after it on the same
 * session anyway. Sent at the load event, that frame fell in the image's turn; sent at
 * DOMContentLoaded, it is drawn while the page's images still load (docs/benchmark.md).
 */
function parkPointer(page: PageSession, o: SnapOptions): Promise<unknown> {
  const { width, height } = viewportOf(o);
  const parked = page.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x: width + 10, y: height + 10 });
  // Awaited later, or not at all when a step fails first.
  parked.catch(() => undefined);
  return parked;
}

/** wait_for: the element must show up within the time budget. */
async function waitFor(page: PageSession, selector: string, deadline: number): Promise<void> {
  const found = await waitForSelector(page, selector, deadline);
  if (found === 'timed-out')
    throw serviceError('selector_not_found', `wait_for: no element matches ${quote(selector)} on the page (waited until the time budget ran out).`);
  if (found !== 'present')
    throw serviceError('invalid_parameter', `wait_for: ${quote(selector)} is not a valid CSS selector (${found.invalid.split('\n')[0]}).`);
}

async function inject(page: PageSession, o: SnapOptions): Promise<void> {
  if (o.css_inject) {
    await page.run(insertStyle, o.css_inject, 'data-injected', 'css_inject');
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

/**
 * The element's box in the document. `scroll` brings it into view first (for the pointer,
 * and where the element is captured as it is seen); a full-page capture leaves the page at
 * its top and cuts the element out of the whole page.
 */
async function elementBox(page: PageSession, selector: string, scroll: boolean): Promise<Box> {
  const box = await page.evaluate<Box | null>(
    `(() => { const el = document.querySelector(${quote(selector)}); if (!el) return null; ${
      scroll ? "el.scrollIntoView({ block: 'center', inline: " + "'center' }); " : ''
    }const r = el.getBoundingClientRect(); return { x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height }; })()`,
    false,
  );
  if (!box) throw serviceError('selector_not_found', `selectors: no element matches ${quote(selector)} on the page.`);
  if (box.width < 1 || box.height < 1) throw serviceError('selector_not_found', `selectors: the element matching ${quote(selector)} has no visible size.`);
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
    const { width, height } = viewportOf(o);
    const [pdf, raster] = await Promise.all([
      page.sendForData('Page.printToPDF', {
        printBackground: true,
        paperWidth: width / 96,
        paperHeight: o.fullpage || o.fullpage_advanced ? Math.min(Math.max(height, await page.run(documentHeight)), maxCaptureHeight(o)) / 96 : height / 96,
        marginTop: 0,
        marginBottom: 0,
        marginLeft: 0,
        marginRight: 0,
      }),
      page.sendForData('Page.captureScreenshot', { format: 'jpeg', quality: 80 }),
    ]);
    return { image: pdf, contentType: 'application/pdf', thumbnailSource: raster };
  }
  const params: Params = { format, ...(format === 'jpeg' ? { quality: o.quality ?? DEFAULTS.quality } : {}) };
  if (clip) Object.assign(params, { clip: { ...clip, scale: 1 }, captureBeyondViewport: true });
  return { image: await page.sendForData('Page.captureScreenshot', params), contentType: `image/${format}` };
}

export interface CaptureContext {
  page: PageSession;
  userAgent: string;
  policy: EgressPolicy;
  blocker: BlockerSource;
  /** Epoch ms by which the capture must be done. */
  deadline: number;
  /** The capture's use of its slot's egress gateway (null: the browser goes out directly). */
  gateway?: GatewayCapture | null;
  /** Also read the page once captured (domain research). */
  read?: boolean;
}

/** Runs the capture; throws domain errors (selector_not_found, page_load_failed, ...). */
export async function capturePage(ctx: CaptureContext, o: SnapOptions): Promise<CaptureOutput> {
  const { page, policy, deadline } = ctx;
  // A /snap_html document is answered by the guard at its own address, never fetched.
  const inline = o.html_content !== undefined ? { url: o.url, html: o.html_content } : null;
  if (!inline) await admitUrl(policy, o.url, 'url: ');

  await prepare(page, o, ctx.userAgent);
  // Requests are paused for the egress policy or for blocking; autoconsent is installed
  // before navigating.
  const blocker = wantsBlocking(o) ? await ctx.blocker() : null;
  const guard = await guardRequests(page, policy, blocker ? { blocker, o } : null, ctx.gateway ?? null, inline);
  const consent = o.no_cookie_banners ? await ConsentHandler.attach(page, { scriptsDisabled: o.disable_js }) : null;
  try {
    // The pointer is parked as soon as the page's document is parsed (DOMContentLoaded), so the
    // frame the move asks for is drawn while the page's images still load, not in the image's turn.
    let parked: Promise<unknown> | null = null;
    const offParsed = page.cdp.on('Page.domContentEventFired', (_params, sessionId) => {
      if (sessionId === page.sessionId) parked ??= parkPointer(page, o);
    });
    try {
      await navigate(page, o.url, deadline, guard);
    } finally {
      offParsed();
    }
    parked ??= parkPointer(page, o);
    if (consent) await consent.settle(deadline);
    if (o.wait_for) await waitFor(page, o.wait_for, deadline);
    if (blocker) await injectCosmetics(page, blocker, o);
    await inject(page, o);
    // multi_step_actions: after the injections, before scrolling and the global wait. A
    // step's navigation passes the same egress policy as the main URL.
    const changes = o.multi_step_actions?.length
      ? (
          await runActions(page, o.multi_step_actions, deadline, {
            refusedNavigation: guard.refusedNavigation,
            async navigate(url) {
              await admitUrl(policy, url);
              await navigate(page, url, deadline, guard);
            },
          })
        ).changes
      : undefined;
    if (wantsWholePage(o)) await loadWholePage(page, o, deadline);
    const wait = o.wait ?? DEFAULTS.wait;
    if (wait > 0) await sleep(Math.min(wait, Math.max(0, deadline - Date.now())));
    // The page may have navigated itself since it loaded (a meta refresh, a script): what the
    // egress policy refused then is answered as a refused page, never captured as an error page.
    const refused = guard.refusedNavigation();
    if (refused) throw urlNotAllowed(`The page may not be captured: ${refused}`);

    if (o.html_only) {
      await parked;
      const html = o.selectors
        ? await page.evaluate<string | null>(`(() => { const el = document.querySelector(${quote(o.selectors)}); return el ? el.outerHTML : null; })()`, false)
        : await page.evaluate<string>(
            "(document.doctype ? new XMLSerializer().serializeToString(document.doctype) + '\\n' : '') + document.documentElement.outerHTML",
            false,
          );
      if (html === null) throw serviceError('selector_not_found', `selectors: no element matches ${quote(o.selectors ?? '')} on the page.`);
      return { html, ...(changes ? { changes } : {}) };
    }

    // Full-page images and element boxes are cut at the maximum height, never refused.
    const fullpage = Boolean(o.fullpage || o.fullpage_advanced);
    let clip: Box | null = null;
    if (o.selectors) {
      clip = await elementBox(page, o.selectors, !fullpage || Boolean(o.hover_on_selected));
      if (o.hover_on_selected) {
        await hover(page, clip);
        clip = await elementBox(page, o.selectors, true);
      }
      clip.height = Math.min(clip.height, maxCaptureHeight(o));
    } else if (fullpage) {
      const { width, height } = viewportOf(o);
      clip = { x: 0, y: 0, width, height: Math.min(Math.max(height, await page.run(documentHeight)), maxCaptureHeight(o)) };
    }
    const [, shot] = await Promise.all([parked, screenshot(page, o, clip)]);
    const reading = ctx.read ? await page.evaluate<PageReading>(READ_PAGE, false) : undefined;
    return { ...shot, ...(changes ? { changes } : {}), ...(reading ? { reading } : {}) };
  } catch (err) {
    if (browserGone(err)) {
      throw serviceError('page_load_failed', 'The page crashed the browser tab while loading; try again, or capture a simpler page.');
    }
    throw err;
  } finally {
    guard.stop();
    consent?.stop();
  }
}

/** A capture that also reads the page once captured: the engine's runPage for domain research. */
export function readingCapture(ctx: CaptureContext, o: SnapOptions): Promise<CaptureOutput> {
  return capturePage({ ...ctx, read: true }, o);
}
