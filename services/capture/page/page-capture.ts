/**
 * One capture on a prepared page: emulation (viewport, scale, user agent, language, time
 * zone, geolocation, JavaScript), request control (headers, cookies, the request guard),
 * navigation, waiting, scrolling, injection, then the image (or PDF, or HTML).
 *
 * Everything goes through CDP on the page's flat session; the page lives in its own
 * browser context, which the caller disposes afterwards, so nothing set here outlives the
 * capture.
 */
import { failureOf, serviceError } from '../../shared/errors';
import { type SnapOptions, encoderOptionProblem, geolocationProblem } from '../../shared/screenshot-options';
import type { EgressPolicy } from '../../shared/egress';
import type { GatewayCapture, GatewayFailure } from './gateway';
import { type BlockerSource, injectCosmetics, wantsBlocking } from './blocking';
import sharp from 'sharp';
import { ConsentHandler } from './consent';
import { drawFramesOutOfView } from './cross-site-frames';
import type { PageWatch, WaitUntil } from './page-watch';
import { ifDrawingSettled, settleDrawing, untilPainted } from './painting';
import { type ChangeReading, runActions } from './actions';
import { CdpError } from './cdp';
import { type PageReading, READ_PAGE } from './page-reading';
import { NetworkWatch, documentHeight, drawWholePage, loadInView, loadWholePage, maxCaptureHeight, wantsWholePage } from './full-page';
import { printPdf, printsOnPaper, refuseStrayPdfOptions } from './pdf';
import {
  DEFAULTS,
  type PageSession,
  browserGone,
  deviceMetrics,
  inPageCall,
  insertStyle,
  quote,
  sameViewport,
  sleep,
  viewportOf,
  waitForSelector,
} from './page-session';
import { type RequestGuard, admitUrl, guardRequests, urlNotAllowed } from './request-guard';
import { emulate, mobileMetrics, userAgentParams, withDevice } from './emulation';
import { type OverlayEntry, checkSelectors, clearOverlays, wantsOverlays, withChatBlocking } from './overlays';
import { OUTCOME_IN_PAGE, type PageOutcome, checkRules, hasRules, outcomeOf, statusRuleBefore } from './capture-rules';
import { type DocumentObserver, type PageMetadata, networkCommand, observeDocument, readText, wantsText } from './page-text';
import { measureVisual } from './visual-regions';

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
  /** Every navigation reached wait_until's moment (false: the page was taken as drawn at navigation_timeout). */
  loadFinished?: boolean;
  /** The main document's final HTTP status (null: not known) and the address the page ended on (capture-rules.ts). */
  statusCode?: number | null;
  finalUrl?: string;
  /** What hide_selectors, remove_selectors, block_chats and block_overlays hid or removed, when any was asked (overlays.ts). */
  overlays?: OverlayEntry[];
  /** The page's main content as Markdown, when markdown=true asked (page-text.ts). */
  markdown?: string;
  /** The page's metadata, when metadata=true asked (page-text.ts). */
  metadata?: PageMetadata;
}

type Params = Record<string, unknown>;

/** Applies everything that must be in place before the first request (beyond presetPage). */
async function prepare(page: PageSession, o: SnapOptions, userAgent: string): Promise<void> {
  const steps: Array<Promise<unknown>> = [];
  const viewport = viewportOf(o);
  // A mobile device preset is set whatever the page was prepared with (prepared pages are never mobile).
  const mobile = mobileMetrics(o, viewport.width, viewport.height);
  if (!sameViewport(viewport, page.viewport) || mobile.mobile) {
    steps.push(page.send('Emulation.setDeviceMetricsOverride', { ...deviceMetrics(viewport), ...mobile }));
  }
  if (o.user_agent || o.accept_language) {
    steps.push(
      page.send('Emulation.setUserAgentOverride', {
        userAgent: o.user_agent ?? userAgent,
        ...(o.accept_language ? { acceptLanguage: o.accept_language } : {}),
        ...userAgentParams(o),
      }),
    );
  }
  // dark_mode, reduced_motion, media_type and a device's touch (emulation.ts).
  steps.push(...emulate(page, o));
  // metadata=true: the main document's status, headers and redirects (page-text.ts).
  const network = networkCommand(page, o);
  if (network) steps.push(network);
  if (o.time_zone) steps.push(page.send('Emulation.setTimezoneOverride', { timezoneId: o.time_zone }));
  // Both coordinates or none (refused before: refuseIncompleteGeolocation).
  if (o.latitude !== undefined && o.longitude !== undefined) {
    steps.push(page.cdp.send('Browser.grantPermissions', { permissions: ['geolocation'], browserContextId: page.contextId }));
    steps.push(page.send('Emulation.setGeolocationOverride', { latitude: o.latitude, longitude: o.longitude, accuracy: o.accuracy ?? 100 }));
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

/** How one navigation is bounded: the moment it waits for, until when, and what it watches. */
export interface NavigationBound {
  until: WaitUntil;
  /** navigation_timeout, ms. */
  ms: number;
  /** The capture's own deadline (epoch ms): the bound never outlasts it. */
  deadline: number;
  watch: PageWatch;
  guard: RequestGuard;
  /** The capture's use of its egress gateway: what the gateway could not reach (null: no gateway). */
  gateway: GatewayCapture | null;
  /** The page's requests in flight, for networkidle's 500 ms without one (null for the other moments). */
  network: NetworkWatch | null;
}

const MOMENT_WORDS: Record<WaitUntil, string> = {
  load: 'its load event',
  domcontentloaded: 'its DOMContentLoaded event',
  networkidle: 'its load event and 500 ms without a request (streams aside)',
};

/** networkidle: how long the page must go without a request in flight once loaded. */
const NETWORK_QUIET_MS = 500;

/**
 * The gateway's failure the main frame's document is the answer to, if any since the first
 * `since` failures: for plain HTTP the gateway answers a page it could not reach with an error
 * response (proxy-chain's 502, 504 or 59x, a line of text), which the browser commits as the
 * page. Asked of the browser only when the gateway failed a request since the navigation.
 */
async function failedDocument(page: PageSession, gateway: GatewayCapture | null, since: number): Promise<GatewayFailure | null> {
  if (!gateway || gateway.failures.length <= since) return null;
  const { frameTree } = await page.send<{ frameTree: { frame: { url: string } } }>('Page.getFrameTree');
  const failed = gateway.failureOf(frameTree.frame.url, since);
  const upstream = failed ? null : gateway.upstreamFailure(since);
  if (!upstream) return failed;
  // The upstream proxy could not be connected to, for a request the gateway cannot name: the
  // document is its error answer when it has the gateway's own status (proxy-chain's 590-599).
  const status = await page.evaluate<number>("performance.getEntriesByType('navigation')[0]?.responseStatus ?? 0", false);
  return status >= 590 && status <= 599 ? { url: frameTree.frame.url, reason: upstream.reason } : null;
}

/**
 * Navigates and waits for the moment wait_until names, at most navigation_timeout. A page
 * that has drawn something by then is captured as it is (false: the load did not finish); one
 * whose server has not answered, that the gateway could not reach, or that has drawn nothing,
 * fails with page_load_failed. Returns whether the moment was reached.
 */
async function navigate(page: PageSession, url: string, bound: NavigationBound): Promise<boolean> {
  const { watch, guard, until, gateway } = bound;
  // When the capture's own deadline comes first, the capture runs out of time: the engine's
  // answer (504, naming what was pending) is the one given from the deadline on, so this
  // bound ends just after it, never on the same tick.
  const boundAt = Date.now() + bound.ms;
  const by = boundAt < bound.deadline ? boundAt : bound.deadline + 250;
  const seconds = `${Math.round(bound.ms / 100) / 10} s`;
  watch.step = `waiting for the server of ${url} to answer`;
  const left = watch.documents;
  const failedBefore = gateway?.failures.length ?? 0;
  guard.beforeNavigation();
  watch.expectNavigation();
  const sent = page.send<{ errorText?: string; loaderId?: string }>('Page.navigate', { url });
  sent.catch(() => undefined);
  const nav = await Promise.race([sent, sleep(by - Date.now()).then(() => null)]);
  const refused = guard.refusedNavigation(url, Boolean(nav?.errorText));
  if (refused) throw urlNotAllowed(`The page may not be captured: ${refused}`);
  if (nav === null) {
    throw serviceError(
      'page_load_failed',
      `The server of ${url} sent no answer within ${seconds} (navigation_timeout); check that it is up and reachable from the internet.`,
    );
  }
  if (nav.errorText) {
    // A tunnel the gateway could not open (https) fails the navigation: the gateway knows why.
    const cause = gateway?.failureOf(url, failedBefore);
    // The server answered, with nothing the browser shows as a page: a file it would download
    // (a PDF, Content-Disposition: attachment) or an empty answer (204). Not a reachability problem.
    if (!cause && nav.errorText === 'net::ERR_ABORTED') {
      throw serviceError(
        'page_load_failed',
        `${url} answered with no page to show (${nav.errorText}): a file to download (a PDF, an attachment) or an empty answer (204); capture the address of a web page.`,
      );
    }
    const what = cause ? `: ${cause.reason} (${nav.errorText})` : ` (${nav.errorText})`;
    throw serviceError('page_load_failed', `The page could not be loaded${what}; check that ${url} is reachable from the internet.`);
  }
  // A navigation within the document (a #fragment) starts none: nothing more to wait for.
  if (!nav.loaderId) return true;
  watch.step = `waiting for ${MOMENT_WORDS[until]} (wait_until=${until})`;
  let reached = await watch.until(until, by, left);
  // networkidle: then 500 ms without a request, an open EventSource or WebSocket aside (NetworkWatch).
  if (reached && until === 'networkidle' && bound.network) reached = await bound.network.quietFor(NETWORK_QUIET_MS, by);
  const after = guard.refusedNavigation();
  if (after) throw urlNotAllowed(`The page may not be captured: ${after}`);
  // The gateway's error response is no page of the site's: the page could not be loaded, as over https.
  const failed = await failedDocument(page, gateway, failedBefore);
  if (failed)
    throw serviceError('page_load_failed', `The page could not be loaded: ${failed.reason}; check that ${failed.url} is reachable from the internet.`);
  if (reached || watch.painted) return reached;
  const moved = watch.documents > 2 ? `; it navigated itself ${watch.documents - 1} times meanwhile` : '';
  throw serviceError(
    'page_load_failed',
    `The page drew nothing within ${seconds} (navigation_timeout) and never reached ${MOMENT_WORDS[until]}${moved}; raise navigation_timeout, ` +
      'or check the page in a browser.',
  );
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

/**
 * wait_for: the element must show up within the time budget. `then`: an expression evaluated
 * in the page once it has, in the same call, whose value is answered (undefined without one).
 */
async function waitFor(page: PageSession, selector: string, deadline: number, then?: string): Promise<unknown> {
  const found = then === undefined ? await waitForSelector(page, selector, deadline) : await waitForSelector(page, selector, deadline, then);
  if (found === 'timed-out')
    throw serviceError('selector_not_found', `wait_for: no element matches ${quote(selector)} on the page (waited until the time budget ran out).`);
  if (typeof found === 'object' && 'invalid' in found)
    throw serviceError('invalid_parameter', `wait_for: ${quote(selector)} is not a valid CSS selector (${found.invalid.split('\n')[0]}).`);
  return typeof found === 'object' ? found.read : undefined;
}

/**
 * Whether wait_for is the last step in the page before the wait for its fonts and lazy images
 * (no injection, action, scrolling, wait, fail-on rule or overlay clearing between): the
 * drawing is then looked at in wait_for's own call, and waited for apart only when unsettled.
 * These are the steps capturePage runs between the two: a step added there is added here too.
 */
function drawingReadAtWaitFor(o: SnapOptions, blocking: boolean): boolean {
  return (
    Boolean(o.wait_for) &&
    !blocking &&
    !o.css_inject &&
    !o.js_inject &&
    !o.multi_step_actions?.length &&
    !wantsWholePage(o) &&
    !(o.wait ?? DEFAULTS.wait) &&
    !hasRules(o) &&
    !o.html_only &&
    !wantsOverlays(o)
  );
}

/** Whether the lazy images in view are waited for: only once the page's load finished, as wait_until asked. */
const waitsForLazyImages = (o: SnapOptions, loadFinished: boolean) => loadFinished && (o.wait_until ?? DEFAULTS.wait_until) !== 'domcontentloaded';

async function inject(page: PageSession, o: SnapOptions): Promise<void> {
  if (o.css_inject) {
    await page.run(insertStyle, o.css_inject, 'data-injected', 'css_inject');
  }
  if (o.js_inject && !o.disable_js) {
    try {
      await page.evaluateAsVisitor(o.js_inject, true);
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
  /** The image's CSS px per CSS px of the page: below 1 for a full page zoomed out as a phone shows it (documentExtent); 1 when absent. */
  zoom?: number;
  /**
   * An element's, read where it was scrolled into view: whether no scroll shows it whole, and
   * uncovered: larger than the viewport, or with something fixed or sticky to the screen (a
   * header) over its edges once scrolled there (almost as tall as the viewport).
   */
  larger?: boolean;
  /** An element's: whether scrolling it into view moved it (so what it loads on sight may have started). */
  moved?: boolean;
}

/**
 * Runs in the page: the box of the element matching `selector` in the document, or null. `scroll`:
 * scrolled into the middle of the viewport first (instant: a page's own `scroll-behavior:
 * smooth`, Bootstrap's default, would leave it on its way, the box read mid-scroll).
 */
function readElementBox(selector: string, scroll: boolean): Box | null {
  const el = document.querySelector(selector);
  if (!el) return null;
  const was = el.getBoundingClientRect();
  if (scroll) el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
  const r = el.getBoundingClientRect();
  const box = { x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height, moved: r.top !== was.top || r.left !== was.left };
  let larger = r.height > window.innerHeight || r.width > window.innerWidth;
  // Something fixed or sticky drawn over the element's top or bottom row where it now is (a
  // header, a bar): what hides it there is on the element's picture. A hit on the element, on
  // what is inside it or on what holds it (the element lets the pointer through) hides nothing.
  // Up to what holds the element too: inside a sticky header or a fixed dialog, a neighbour is no cover.
  const fixedOrSticky = (e: Element | null): boolean => {
    for (; e && !e.contains(el); e = e.parentElement) if (['fixed', 'sticky'].includes(getComputedStyle(e).position)) return true;
    return false;
  };
  if (scroll && !larger) {
    const ys = [Math.max(r.top, 0) + 1, Math.min(r.bottom, window.innerHeight) - 1];
    const xs = [r.left + 1, (r.left + r.right) / 2, r.right - 1].map((x) => Math.min(Math.max(x, 0), window.innerWidth - 1));
    larger = ys.some((y) =>
      xs.some((x) => {
        const hit = document.elementFromPoint(x, y);
        return hit !== null && !el.contains(hit) && !hit.contains(el) && fixedOrSticky(hit);
      }),
    );
  }
  return { ...box, larger };
}

/**
 * The element's box in the document. `scroll` brings it into view first (for the pointer,
 * and where the element is captured as it is seen); a full-page capture leaves the page at
 * its top and cuts the element out of the whole page, drawn as scrolled (`whole`: its options;
 * drawWholePage, in the same call, which also has what scrolls around the element show it).
 */
async function elementBox(page: PageSession, selector: string, scroll: boolean, whole?: SnapOptions): Promise<Box> {
  const read = inPageCall(readElementBox, selector, scroll);
  const box = whole ? await drawWholePage<Box | null>(page, whole, read, selector) : await page.evaluate<Box | null>(read, false);
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
  refuseStrayEncoderOption(o);
  if (format === 'pdf') {
    const { width, height } = viewportOf(o);
    const whole = o.fullpage || o.fullpage_advanced ? Math.max(height, await page.run(documentHeight)) : height;
    const sheetHeight = Math.min(whole, maxCaptureHeight(o));
    // One sheet as tall as the page: a page taller than the maximum is cut there, not continued on more sheets.
    const cut = whole > sheetHeight && !printsOnPaper(o) && o.pdf_page_ranges === undefined;
    const [pdf, raster] = await Promise.all([
      printPdf(page, cut ? { ...o, pdf_page_ranges: '1' } : o, { width: width / 96, height: sheetHeight / 96 }),
      page.sendForData('Page.captureScreenshot', { format: 'jpeg', quality: 80 }),
    ]);
    return { image: pdf, contentType: 'application/pdf', thumbnailSource: raster };
  }
  refuseStrayPdfOptions(o);
  const params: Params = {
    format,
    ...(format === 'jpeg' ? { quality: o.quality ?? DEFAULTS.quality } : {}),
    ...(format === 'png' ? { optimizeForSpeed: o.optimize_for_speed ?? DEFAULTS.optimize_for_speed } : {}),
  };
  if (clip)
    Object.assign(params, { clip: { x: clip.x, y: clip.y, width: clip.width, height: clip.height, scale: clip.zoom ?? 1 }, captureBeyondViewport: true });
  return { image: await page.sendForData('Page.captureScreenshot', params), contentType: `image/${format}` };
}

/**
 * The page's own background, as the browser draws it beyond the document's edges (html's
 * background colour, else body's, over white), as [r, g, b]. Runs in the page: read through
 * a canvas, which takes any CSS colour and says whether it drew anything.
 */
function pageBackground(): number[] {
  const c = document.createElement('canvas').getContext('2d') as CanvasRenderingContext2D;
  for (const el of [document.documentElement, document.body]) {
    if (!el) continue;
    c.clearRect(0, 0, 1, 1);
    c.fillStyle = getComputedStyle(el).backgroundColor;
    c.fillRect(0, 0, 1, 1);
    // A transparent background draws nothing: the next element's shows through.
    if (c.getImageData(0, 0, 1, 1).data[3] === 0) continue;
    c.globalCompositeOperation = 'destination-over';
    c.fillStyle = '#fff';
    c.fillRect(0, 0, 1, 1);
    return [...c.getImageData(0, 0, 1, 1).data.slice(0, 3)];
  }
  return [255, 255, 255];
}

/**
 * An element's picture, its box partly or wholly beyond the page's left edge (a negative x:
 * `left: -100px`, a carousel's track moved by translateX) as beyond its top: the part on the
 * page drawn where it sits in the box, the rest the page's background. Chromium draws a clip
 * above the page's top so (the page's background there), but not one left of it: it drew
 * nothing, or the part on the page at the box's left.
 */
async function beyondLeftEdge(page: PageSession, o: SnapOptions, clip: Box): Promise<{ image: Buffer; contentType: string }> {
  refuseStrayEncoderOption(o);
  const scale = viewportOf(o).scale;
  const onPage = clip.width + clip.x;
  const [r = 255, g = 255, b = 255] = await page.run(pageBackground);
  const background = { r, g, b, alpha: 1 };
  const format = o.image_format ?? DEFAULTS.image_format;
  if (onPage < 1) {
    const blank = sharp({ create: { width: Math.round(clip.width * scale), height: Math.round(clip.height * scale), channels: 3, background } });
    return { image: await encodeAs(blank, o).toBuffer(), contentType: `image/${format}` };
  }
  const part = await screenshot(page, o, { ...clip, x: 0, width: onPage });
  const img = sharp(part.image);
  const { width = 0 } = await img.metadata();
  const left = Math.max(0, Math.round(clip.width * scale) - width);
  return { image: await encodeAs(img.extend({ left, background }), o).toBuffer(), contentType: part.contentType };
}

/** Geolocation in part (a configuration stored before it was refused): never a position at 0 or an accuracy ignored. */
function refuseIncompleteGeolocation(o: SnapOptions): void {
  const problem = geolocationProblem(o as Record<string, unknown>);
  if (problem) throw serviceError('invalid_parameter', problem.note, { param: problem.param });
}

/** optimize_for_speed with a format it does not change (a configuration's PATCH can leave one so). */
function refuseStrayEncoderOption(o: SnapOptions): void {
  const problem = encoderOptionProblem(o as Record<string, unknown>, o.image_format ?? DEFAULTS.image_format);
  if (problem) throw serviceError('invalid_parameter', problem.note, { param: problem.param });
}

/** Encodes an image as the capture's format asks (after frames were drawn into a full page). */
function encodeAs(img: sharp.Sharp, o: SnapOptions): sharp.Sharp {
  const format = o.image_format ?? DEFAULTS.image_format;
  // Fast as Chrome's optimizeForSpeed is: the lowest zlib level, no adaptive filtering.
  if (format === 'png') return img.png((o.optimize_for_speed ?? DEFAULTS.optimize_for_speed) ? { compressionLevel: 1, adaptiveFiltering: false } : {});
  if (format === 'webp') return img.webp();
  return img.jpeg({ quality: o.quality ?? DEFAULTS.quality });
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
  /** Dialogs, popups, the renderer's crash and the page's loading (the engine starts it). */
  watch: PageWatch;
}

/**
 * The transient failures of a browser under a capture, not the page's doing: its screenshot
 * call answered "Internal error" (seen about once in 70 captures under steady load), or the tab
 * went away under a command. The engine takes the capture again, once, on a fresh context.
 */
export class BrowserHiccup extends Error {
  constructor(
    readonly kind: 'screenshot_failed' | 'target_closed',
    override readonly cause: Error,
  ) {
    super(`the browser failed under the capture (${kind}): ${cause.message}`);
  }
}

/**
 * A CDP error that is the browser's transient failure (BrowserHiccup's kind), or null. "Not
 * attached to an active page": the page's document was being replaced under the screenshot (a
 * page that reloads itself without end, `<meta http-equiv=refresh content=0>`); it was a 500,
 * and the browser was thrown away for it.
 */
export function hiccupOf(err: unknown): BrowserHiccup | null {
  if (browserGone(err)) return new BrowserHiccup('target_closed', err as Error);
  if (
    err instanceof CdpError &&
    /^Page\.(captureScreenshot|printToPDF)$/.test(err.method) &&
    /Internal error|Unable to capture|Not attached to an active page/i.test(err.message)
  ) {
    return new BrowserHiccup('screenshot_failed', err);
  }
  return null;
}

/** Runs the capture; throws domain errors (selector_not_found, page_load_failed, ...), or BrowserHiccup. */
export async function capturePage(ctx: CaptureContext, asked: SnapOptions): Promise<CaptureOutput> {
  const { page, policy, deadline, watch } = ctx;
  // A device preset's viewport, scale factor and user agent, where the options give none (emulation.ts).
  const o = withDevice(asked);
  // A /snap_html document is answered by the guard at its own address, never fetched.
  const inline = o.html_content !== undefined ? { url: o.url, html: o.html_content } : null;
  if (!inline) await admitUrl(policy, o.url, 'url: ', ctx.gateway ?? null);

  // hide_selectors and remove_selectors are checked before the page loads (an invalid one is refused).
  await checkSelectors(page, o);
  refuseIncompleteGeolocation(o);
  // The page's out-of-process frames attached as they start: not awaited before navigating.
  // The browser takes a session's commands in order and sets auto-attach as it takes the
  // command, so a frame of the page, which comes only once the document arrives, is attached;
  // the answer (a round trip of 1-5 ms at the start of every capture) is awaited once the page
  // has loaded, so a failure still fails the capture.
  const framesAttached = watch.attachFrames();
  framesAttached.catch(() => undefined);
  await prepare(page, o, ctx.userAgent);
  // Requests are paused for the egress policy or for blocking; autoconsent is installed
  // before navigating.
  const blocker = wantsBlocking(o) ? await ctx.blocker() : null;
  const decider = withChatBlocking(blocker, o);
  const guard = await guardRequests(page, policy, decider ? { blocker: decider, o } : null, ctx.gateway ?? null, inline);
  const consent = o.no_cookie_banners ? await ConsentHandler.attach(page, watch, { scriptsDisabled: o.disable_js }) : null;
  const bound: NavigationBound = {
    until: o.wait_until ?? DEFAULTS.wait_until,
    ms: o.navigation_timeout ?? DEFAULTS.navigation_timeout,
    deadline,
    watch,
    guard,
    gateway: ctx.gateway ?? null,
    // Watched from before the first request, so the page's requests in flight are all known.
    network: (o.wait_until ?? DEFAULTS.wait_until) === 'networkidle' ? NetworkWatch.start(page) : null,
  };
  // metadata=true: follows the main document's requests (Network was enabled in prepare) from the first one.
  const observed: DocumentObserver | null = o.metadata ? observeDocument(page) : null;
  try {
    // The pointer is parked as soon as the page's document is parsed (DOMContentLoaded), so the
    // frame the move asks for is drawn while the page's images still load, not in the image's turn.
    let parked: Promise<unknown> | null = null;
    const offParsed = page.cdp.on('Page.domContentEventFired', (_params, sessionId) => {
      if (sessionId === page.sessionId) parked ??= parkPointer(page, o);
    });
    let loadFinished: boolean;
    try {
      loadFinished = await navigate(page, o.url, bound);
    } finally {
      offParsed();
    }
    await framesAttached;
    parked ??= parkPointer(page, o);
    if (consent) {
      watch.step = 'dismissing the cookie banner (no_cookie_banners)';
      await consent.settle(deadline, o.wait ?? DEFAULTS.wait);
    }
    // The page's final status and address with the drawing, when it had settled by then (drawingReadAtWaitFor).
    let drawnAtWaitFor: unknown;
    let changes: ChangeReading[] | undefined;
    try {
      if (o.wait_for) {
        watch.step = `waiting for an element matching ${quote(o.wait_for)} (wait_for)`;
        const then = drawingReadAtWaitFor(o, Boolean(blocker)) ? ifDrawingSettled(waitsForLazyImages(o, loadFinished), OUTCOME_IN_PAGE) : undefined;
        drawnAtWaitFor = await waitFor(page, o.wait_for, deadline, then);
      }
      watch.step = "running the page's injections (css_inject, js_inject)";
      if (blocker) await injectCosmetics(page, blocker, o);
      await inject(page, o);
      // multi_step_actions: after the injections, before scrolling and the global wait. A
      // step's navigation passes the same egress policy as the main URL.
      if (o.multi_step_actions?.length) {
        watch.step = 'running multi_step_actions';
        const done = await runActions(page, o.multi_step_actions, deadline, {
          refusedNavigation: guard.refusedNavigation,
          async navigate(url) {
            await admitUrl(policy, url, '', ctx.gateway ?? null);
            loadFinished = (await navigate(page, url, bound)) && loadFinished;
            watch.step = 'running multi_step_actions';
          },
        });
        changes = done.changes;
      }
    } catch (err) {
      // An element not found or a step failed on an error page fail_on_status lists: that rule's answer.
      const code = failureOf(err).code;
      if (code === 'selector_not_found' || code === 'action_failed') throw (await statusRuleBefore(page, o, watch.step)) ?? err;
      throw err;
    }
    if (wantsWholePage(o)) {
      watch.step = 'loading the whole page (fullpage)';
      await loadWholePage(page, o, deadline);
    }
    const wait = o.wait ?? DEFAULTS.wait;
    watch.step = `waiting the ${wait} ms of wait`;
    if (wait > 0) await sleep(Math.min(wait, Math.max(0, deadline - Date.now())));
    // The page may have navigated itself since it loaded (a meta refresh, a script): what the
    // egress policy refused then is answered as a refused page, never captured as an error page.
    const refused = guard.refusedNavigation();
    if (refused) throw urlNotAllowed(`The page may not be captured: ${refused}`);
    // The fail-on rules, and with them the page's final status and address, before any image is
    // made. Without rules (and with an image to take) the status and address are read in the
    // same call as the wait for the page's web fonts and images in view, below: one round trip fewer.
    const ruled = hasRules(o) || Boolean(o.html_only);
    if (ruled) watch.step = hasRules(o) ? 'checking the fail-on rules' : "reading the page's final status and address";
    let outcome: PageOutcome | null = ruled ? await checkRules(page, o) : null;
    // press_escape, hide_selectors, remove_selectors, block_chats, block_overlays: last, so a modal that opened late is cleared too.
    let overlays: OverlayEntry[] | undefined;
    if (wantsOverlays(o)) {
      watch.step = 'clearing what covers the page (press_escape, hide_selectors, remove_selectors, block_chats, block_overlays)';
      overlays = await clearOverlays(page, o);
    }

    if (o.html_only) {
      watch.step = 'reading the HTML';
      await parked;
      const html = o.selectors
        ? await page.evaluate<string | null>(`(() => { const el = document.querySelector(${quote(o.selectors)}); return el ? el.outerHTML : null; })()`, false)
        : await page.evaluate<string>(
            "(document.doctype ? new XMLSerializer().serializeToString(document.doctype) + '\\n' : '') + document.documentElement.outerHTML",
            false,
          );
      if (html === null) throw serviceError('selector_not_found', `selectors: no element matches ${quote(o.selectors ?? '')} on the page.`);
      const { statusCode, finalUrl } = outcome as PageOutcome;
      const text = await readText(page, o, observed, statusCode);
      return { html, loadFinished, statusCode, finalUrl, ...(changes ? { changes } : {}), ...(overlays ? { overlays } : {}), ...text };
    }

    // Web fonts still loading would leave their text invisible (font-display: block); a lazy
    // image in view that started after the load event would be taken as its empty box.
    watch.step = "waiting for the page's web fonts and the lazy images in view";
    const read = drawnAtWaitFor ?? (await settleDrawing(page, deadline, waitsForLazyImages(o, loadFinished), outcome ? undefined : OUTCOME_IN_PAGE));
    if (!outcome && read !== undefined) outcome = outcomeOf(read);
    if (!outcome) {
      watch.step = "reading the page's final status and address";
      outcome = await checkRules(page, o);
    }
    const { statusCode, finalUrl } = outcome;
    // Full-page images and element boxes are cut at the maximum height, never refused.
    const fullpage = Boolean(o.fullpage || o.fullpage_advanced);
    let clip: Box | null = null;
    if (o.selectors) {
      const scrolls = !fullpage || Boolean(o.hover_on_selected);
      clip = await elementBox(page, o.selectors, scrolls, fullpage ? o : undefined);
      if (scrolls && clip.moved) {
        // Scrolled into view: what that started (an observer's lazy images) loads before it is measured again and taken.
        watch.step = 'waiting for what the element loads in view';
        await loadInView(page, o, deadline);
        clip = await elementBox(page, o.selectors, true);
      }
      if (o.hover_on_selected) {
        await hover(page, clip);
        clip = await elementBox(page, o.selectors, true);
      } else if (!fullpage && clip.larger) {
        // Larger than the screen (a long article, a form), or under a header fixed or sticky to the
        // screen once scrolled to (as tall as the screen less the header): no scroll shows it
        // whole, and what is fixed or sticky would be drawn across it. Cut out of the page drawn
        // whole from its top instead, as with fullpage (scrolled to first, so what it loads on
        // sight has loaded); what scrolls around it shows it (drawAsScrolled).
        await page.evaluate("window.scrollTo({ top: 0, left: 0, behavior: 'instant' })", false);
        clip = await elementBox(page, o.selectors, false, o);
      }
      clip.height = Math.min(clip.height, maxCaptureHeight(o));
    } else if (fullpage) {
      const { width, height } = viewportOf(o);
      // A mobile preset shows a page laid out wider than its screen zoomed out (a page without a
      // meta viewport is laid out 980 px wide): the image is that whole width at the screen's.
      const extent = await drawWholePage(page, o);
      const zoom = extent.zoom > 0 && extent.zoom < 1 ? extent.zoom : 1;
      clip = { x: 0, y: 0, width: width / zoom, height: Math.min(Math.max(height / zoom, extent.height), maxCaptureHeight(o) / zoom), zoom };
    }
    watch.step = 'taking the screenshot';
    const take = () => (clip && clip.x < 0 && (o.image_format ?? DEFAULTS.image_format) !== 'pdf' ? beyondLeftEdge(page, o, clip) : screenshot(page, o, clip));
    const [, first] = await Promise.all([parked, take()]);
    // A picture of one colour where the page has visible content was taken before the page painted it.
    const shot = await untilPainted(page, first, take, deadline);
    if (fullpage && !o.selectors && clip && shot.contentType.startsWith('image/')) {
      watch.step = 'drawing the frames of other sites below the first screen';
      const drawn = await drawFramesOutOfView(page, shot, clip, viewportOf(o).scale, (img) => encodeAs(img, o), deadline, clip.zoom);
      if (drawn) shot.image = drawn;
    }
    // Visual change steps: the region and masks as the image shows them (visual-regions.ts).
    await measureVisual(page, changes, clip, viewportOf(o).width);
    const reading = ctx.read ? await page.evaluate<PageReading>(READ_PAGE, false) : undefined;
    // markdown, metadata: read from the page as it was captured (page-text.ts); nothing is sent when neither is asked for.
    if (wantsText(o)) watch.step = "reading the page's text and metadata (markdown, metadata)";
    const text = await readText(page, o, observed, statusCode);
    return {
      ...shot,
      loadFinished,
      statusCode,
      finalUrl,
      ...(changes ? { changes } : {}),
      ...(reading ? { reading } : {}),
      ...(overlays ? { overlays } : {}),
      ...text,
    };
  } catch (err) {
    throw hiccupOf(err) ?? err;
  } finally {
    guard.stop();
    consent?.stop();
    observed?.stop();
    bound.network?.stop();
  }
}

/** A capture that also reads the page once captured: the engine's runPage for domain research. */
export function readingCapture(ctx: CaptureContext, o: SnapOptions): Promise<CaptureOutput> {
  return capturePage({ ...ctx, read: true }, o);
}
