/**
 * Full-page captures: what has to happen before the image for it to be the whole page as a
 * person scrolling it would see it (DESIGN.md section 4), and how tall that image may be.
 *
 * `fullpage` grows the viewport to the document's height, so that whatever a viewport
 * triggers (lazy images and frames, IntersectionObserver loaders, resize handlers) starts
 * at once, waits for it on the page's own signals (its requests, its images), puts the
 * viewport back and measures the document again, and repeats while it grew. Lazy images
 * and frames are also started directly, since an element sized in viewport units above
 * them grows with the viewport and keeps them out of it.
 *
 * Once loaded, and just before the image, the page is made to show what a person scrolling
 * sees where the renderer would draw otherwise: sections with `content-visibility: auto` drawn, a body that scrolls
 * itself drawn whole, elements fixed in the lower half of the viewport at the bottom of the
 * page (drawAsScrolled). A full-page PDF, printed on one sheet as tall as the page, is given
 * the screen's layout where printing at the sheet's size would change it (viewport units).
 *
 * `fullpage_advanced` and `incremental_scroll` first scroll through the page a viewport at
 * a time (loaders driven by scroll events, infinite scroll up to the maximum height), then
 * go back to the top, so that sticky and fixed headers are where they are at the top.
 */
import type { SnapOptions } from '../../shared/screenshot-options';
import { DEFAULTS, type PageSession, deviceMetrics, inPageCall, sleep, viewportOf } from './page-session';
import { mobileMetrics } from './emulation';
import { printsOnPaper } from './pdf';

/**
 * The tallest full-page image, in CSS pixels; a longer page is cut there. Below every
 * encoder's limit at scale_factor 1 (WebP 16 383 pixels a side, JPEG 65 535), and about
 * a second of rasterising and encoding at the default width.
 */
export const MAX_FULLPAGE_HEIGHT = 16_000;
/**
 * The most pixels a full-page image may have: the maximum height at the widest viewport
 * (7 680), or at 1 920 CSS px and scale_factor 2. Past it the renderer needs gigabytes and
 * tens of seconds, and the thumbnail's decoder refuses the image.
 */
const MAX_IMAGE_PIXELS = MAX_FULLPAGE_HEIGHT * 7_680;
/** WebP cannot be taller than this many pixels. */
const WEBP_MAX_SIDE = 16_383;

/** How long one round may wait for what growing the viewport started loading. */
const SETTLE_CAP_MS = 1_500;
/** Rounds of growing the viewport while the document keeps growing (an endless page). */
const MAX_GROW_ROUNDS = 4;
/** How long scrolling may take, as the spec bounds incremental_scroll. */
const SCROLL_BUDGET_MS = 10_000;
/** At the bottom while scrolling: how long to wait for what it started (the next page of an infinite scroll). */
const BOTTOM_SETTLE_CAP_MS = 1_500;
/**
 * Time at each scroll position when the page listens for scroll events: scroll handlers
 * are commonly throttled to about 100-125 ms (lazysizes: 125), and a position they never
 * see is never loaded. Without scroll listeners a rendering update is enough.
 */
const SCROLL_HANDLER_DWELL_MS = 150;
/** incremental_scroll scrolls slowly on purpose (content that animates in as it is scrolled to). */
const INCREMENTAL_DWELL_MS = 400;
/** A rendering update that has not come after this long is not waited for any longer. */
const FRAME_CAP_MS = 100;

/**
 * How tall (CSS px) a full-page capture, or an element's box, may be for these options:
 * MAX_FULLPAGE_HEIGHT, less where the image would have more than MAX_IMAGE_PIXELS pixels
 * or be taller than WebP allows; never less than the viewport.
 */
export function maxCaptureHeight(o: SnapOptions): number {
  const format = o.image_format ?? DEFAULTS.image_format;
  const { width, height, scale } = viewportOf(o);
  let max = MAX_FULLPAGE_HEIGHT;
  if (format !== 'pdf') max = Math.min(max, MAX_IMAGE_PIXELS / (width * scale * scale));
  if (format === 'webp') max = Math.min(max, WEBP_MAX_SIDE / scale);
  return Math.max(height, Math.floor(max));
}

/** The work a capture's options ask for before the image (fullpage, fullpage_advanced, incremental_scroll, a PDF on paper). */
export function wantsWholePage(o: SnapOptions): boolean {
  return Boolean(o.fullpage || o.fullpage_advanced || o.incremental_scroll || printsOnPaper(o));
}

/**
 * Loads what the options ask for: scrolls through the page (fullpage_advanced,
 * incremental_scroll), then loads everything down to the maximum height (fullpage,
 * fullpage_advanced). Leaves the page at its top, at its own viewport.
 */
export async function loadWholePage(page: PageSession, o: SnapOptions, deadline: number): Promise<void> {
  const net = NetworkWatch.start(page);
  try {
    // With page scripts off there is nothing to wait a frame for (no loader runs, and
    // Chromium loads lazy images at once), and the page's timers would never fire.
    const scripts = !o.disable_js;
    if (o.fullpage_advanced || o.incremental_scroll) await scrollThrough(page, net, o, scripts, deadline);
    // A PDF on paper prints the whole document: its lazy content is loaded as a full page's.
    if (o.fullpage || o.fullpage_advanced || printsOnPaper(o)) await growUntilLoaded(page, net, o, scripts, deadline);
  } finally {
    net.stop();
  }
}

/**
 * An element just scrolled into view for its capture (selectors): waits, as a full page's
 * rounds do, for what coming into view started (an observer's lazy images, a widget's
 * content), at most SETTLE_CAP_MS and within the deadline. What still loads then is taken as it is.
 */
export async function loadInView(page: PageSession, o: SnapOptions, deadline: number): Promise<void> {
  const net = NetworkWatch.start(page);
  try {
    await settle(page, net, !o.disable_js, Math.min(deadline, Date.now() + SETTLE_CAP_MS));
  } finally {
    net.stop();
  }
}

// ---------------------------------------------------------------------------------------
// Functions run inside the page (serialised with toString, so they use nothing from here).

/** The document's height (CSS px). */
export function documentHeight(): number {
  return Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0);
}

/**
 * The document's height (CSS px) and the visual viewport's zoom: below 1 where a mobile device
 * preset shows a page laid out wider than its screen (one without a meta viewport is laid out
 * 980 px wide) zoomed out to the screen's width, as a phone does.
 */
export function documentExtent(): { height: number; zoom: number } {
  const height = Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0);
  return { height, zoom: window.visualViewport ? window.visualViewport.scale : 1 };
}

/**
 * Starts every lazy image and frame loading, goes to the top of the page, and says how
 * tall the document is. The loading attribute is put back at once: the page's DOM stays
 * as it was (html_only shows it), and a load once started goes on.
 */
function startLazyLoads(): number {
  document.querySelectorAll<HTMLImageElement | HTMLIFrameElement>('img[loading=lazy], iframe[loading=lazy]').forEach((el) => {
    el.loading = 'eager';
    el.loading = 'lazy';
  });
  window.scrollTo({ top: 0, left: 0, behavior: 'instant' });
  return Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0);
}

/** Images of the document still loading. */
function imagesLoading(): number {
  let n = 0;
  for (let i = 0; i < document.images.length; i++) if (!document.images[i]?.complete) n++;
  return n;
}

/**
 * Just before the image of the whole page (everything loaded, the viewport back, wait waited),
 * what that image would otherwise show unlike a person scrolling it:
 * - sections with `content-visibility: auto` away from the viewport are skipped by the
 *   renderer (drawn blank below the first screens): they are made visible;
 * - a body that is itself the element that scrolls keeps the document a screen tall, its
 *   content drawn clipped at its box: it overflows instead;
 * - elements fixed in the lower half of the viewport (a bottom bar, a chat launcher) are
 *   drawn there, over the content of the first screen, and not at the bottom of the page,
 *   where a person who scrolled to the end sees them: they are moved down by the page's
 *   height less the viewport's (at most `max`, the tallest the image may be), with the
 *   `translate` property (added to their own), which leaves the layout as it is. Fixed elements that reach into
 *   the upper half (headers, sidebars, overlays) stay where the first screen has them, and
 *   so do those with a fixed element inside (which is moved on its own);
 * - elements sticky to the bottom, stuck over the first screen, are put at their place;
 * - backgrounds fixed to the screen, painted on the first screen only, scroll with their
 *   element (background-attachment), or are made as tall as the page (a fixed layer behind
 *   the content over the whole screen).
 * - for an element cut out of the page (`element`, a selector), the elements that scroll around
 *   it (a box with a scroll bar, a carousel's track, an app's own panel) show it: one that
 *   scrolls vertically and is shorter than it is drawn whole, as the body is; the others are
 *   scrolled so it is in their view (the least that does, its start where it is larger than
 *   their box). Left at their own scroll position, they clip it, and the box read is where it
 *   would be if nothing did.
 * Through a stylesheet of our own in document.adoptedStyleSheets, with structural selectors:
 * the page's DOM (and its HTML, for html_only) stays as the page made it. Says how many
 * elements of each it changed.
 *
 * `onSheet`: the page is to be printed on one sheet as tall as it (a full-page PDF). Printing lays
 * the page out at the sheet's size: viewport units (vh, svh, dvh, lvh) and what is sized on the
 * viewport (a root 100% high, a sidebar fixed from top to bottom) take the sheet's height, so a
 * full-screen header filled the whole sheet, and fixed elements are placed on the sheet (a bar
 * fixed to the bottom at its bottom already, where the move above put it a second time, off the
 * sheet). So fixed elements are not moved here; instead, when the page is taller than the
 * viewport, it answers the sheet's height and `atSheet`, to call with the page laid out at that
 * height (as printing lays it out): each value below that is not the one the screen gave gets
 * the screen's, then each fixed element is moved from where the sheet puts it to where the image
 * has it. Both are no change on the screen, so the page keeps the height measured there.
 */
function drawAsScrolled(
  max: number,
  element: string | null,
  onSheet: boolean,
): { skipped: number; fixed: number; stuck: number; bodyScrolls: boolean } | { sheet: number; atSheet: () => number } | null {
  // The element's place in its tree: from the root in the document; in a shadow tree from its
  // top (an element with no parent element there).
  const pathOf = (el: Element): string => {
    const parts: string[] = [];
    let e: Element | null = el;
    for (; e && e !== document.documentElement; e = e.parentElement) {
      let i = 1;
      for (let s = e.previousElementSibling; s; s = s.previousElementSibling) i++;
      parts.unshift(`*:nth-child(${i})`);
    }
    if (e) return parts.length ? `:root > ${parts.join(' > ')}` : ':root';
    parts[0] += ':not(* > *)';
    return parts.join(' > ');
  };
  // A computed translate's lengths ('none', '-50%', '10px 20px 0px', 'calc(...) 5px'), split at the spaces between them.
  const splitTranslate = (t: string): string[] => {
    if (t === 'none') return [];
    const parts: string[] = [];
    let depth = 0;
    let part = '';
    for (const ch of t) {
      if (ch === '(') depth++;
      else if (ch === ')') depth--;
      if (ch === ' ' && depth === 0) {
        if (part) parts.push(part);
        part = '';
      } else part += ch;
    }
    if (part) parts.push(part);
    return parts;
  };
  // A stylesheet applies within its own tree: the document and each shadow root get one of ours.
  const sheets = new Map<Document | ShadowRoot, CSSStyleSheet>();
  const rule = (el: Element, declarations: string): void => {
    const root = el.getRootNode() as Document | ShadowRoot;
    let sheet = sheets.get(root);
    if (!sheet) {
      sheet = new CSSStyleSheet();
      sheets.set(root, sheet);
      root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
    }
    sheet.insertRule(`${pathOf(el)}{${declarations}}`, sheet.cssRules.length);
  };
  const target = element === null ? null : document.querySelector(element);
  if (target) {
    const clips = (v: string): boolean => !['visible', 'clip'].includes(v);
    const scrollers: Element[] = [];
    for (let e = target.parentElement; e && e !== document.body && e !== document.documentElement; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (clips(s.overflowY) || clips(s.overflowX)) scrollers.push(e);
    }
    // Drawn whole first (the innermost one's height can change what overflows the outer ones);
    // the body is looked at below, with them drawn. Only what a person can scroll: a box cut
    // short on purpose (overflow: hidden, a "read more" fold) stays cut.
    const tall = target.getBoundingClientRect().height;
    const open = scrollers.filter((e) => ['auto', 'scroll'].includes(getComputedStyle(e).overflowY) && tall > e.clientHeight + 1);
    for (const e of open) rule(e, 'overflow-y:visible !important;overflow-x:clip !important');
    // Innermost first: scrolling an outer one moves the inner one with the element. Instant, past a smooth scroll-behavior.
    for (const e of scrollers) {
      if (open.includes(e)) continue;
      const r = target.getBoundingClientRect();
      const b = e.getBoundingClientRect();
      const top = b.top + e.clientTop;
      const left = b.left + e.clientLeft;
      const by = (start: number, end: number, from: number, size: number): number =>
        end - start > size || start < from ? start - from : end > from + size ? end - from - size : 0;
      const dy = by(r.top, r.bottom, top, e.clientHeight);
      const dx = by(r.left, r.right, left, e.clientWidth);
      if (dx || dy) e.scrollBy({ top: dy, left: dx, behavior: 'instant' });
    }
  }
  const skipped: Element[] = [];
  const fixed: Element[] = [];
  const stuck: Element[] = [];
  // Backgrounds fixed to the screen (background-attachment: fixed: a page's backdrop, a parallax
  // strip) are painted where the first screen has them: below it, white. Scrolled with their
  // element instead, as phones draw them.
  const backdrops: Element[] = [];
  // The body (or the root) as the element that scrolls (html,body{height:100%} with an overflow:
  // overflow-x:hidden alone makes overflow-y auto): the document is the viewport's height and
  // the rest is inside that box, which the image of the page draws clipped at the first screen.
  // (The root's own overflow is the viewport's, which the image goes beyond.)
  const body = document.body;
  const bodyScrolls = Boolean(body && body.scrollHeight > body.clientHeight + 1 && !['visible', 'clip'].includes(getComputedStyle(body).overflowY));
  // The body's elements, then those of each open shadow root found among them (a widget's
  // launcher or consent bar is often drawn in one).
  const shadows: ShadowRoot[] = [];
  // Every element looked at, with the root and the body: what a sheet may lay out otherwise.
  const elements: Element[] = [document.documentElement, ...(document.body ? [document.body] : [])];
  const look = (all: ArrayLike<Element>): void => {
    for (let i = 0; i < all.length; i++) {
      const el = all[i] as Element;
      elements.push(el);
      const style = getComputedStyle(el);
      if (style.backgroundAttachment.includes('fixed')) backdrops.push(el);
      if (style.getPropertyValue('content-visibility') === 'auto') skipped.push(el);
      else if (style.position === 'fixed') fixed.push(el);
      else if (style.position === 'sticky' && style.bottom !== 'auto' && style.top === 'auto') stuck.push(el);
      if (el.shadowRoot) shadows.push(el.shadowRoot);
    }
  };
  for (const el of [document.documentElement, document.body]) if (el && getComputedStyle(el).backgroundAttachment.includes('fixed')) backdrops.push(el);
  if (document.body) look(document.body.getElementsByTagName('*'));
  for (let i = 0; i < shadows.length; i++) look((shadows[i] as ShadowRoot).querySelectorAll('*'));
  const done = { skipped: skipped.length, fixed: 0, stuck: 0, bodyScrolls };
  // Drawn whole, overflowing its box down the document, which grows with it; its height stays, so
  // what is sized in percents of it (a full-screen hero) stays a screen tall. What overflows
  // sideways stays cut, as it was.
  if (bodyScrolls) rule(document.documentElement, 'overflow-y:visible !important;overflow-x:clip !important');
  if (bodyScrolls && document.body) rule(document.body, 'overflow-y:visible !important;overflow-x:clip !important');
  for (const el of skipped) rule(el, 'content-visibility:visible !important');
  for (const el of backdrops) rule(el, 'background-attachment:scroll !important');
  // Measured with the skipped sections drawn (they may be taller than their placeholder size).
  const viewport = window.innerHeight;
  const bottom = Math.min(max, Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0));
  if (bottom <= viewport) return onSheet ? null : done;
  // On a sheet: each fixed element's place in the image (the top of its box), for atSheet to move it there.
  const places: Array<{ el: Element; top: number }> = [];
  for (const el of fixed) {
    const r = el.getBoundingClientRect();
    // A layer behind the content over the whole screen (a backdrop's gradient, image or video):
    // behind every screen as the page is scrolled, so as tall as the page.
    if (r.top <= 0 && r.left <= 0 && r.bottom >= viewport - 1 && r.right >= window.innerWidth - 1 && Number.parseInt(getComputedStyle(el).zIndex, 10) < 0) {
      rule(el, `bottom:auto !important;height:${bottom}px !important;max-height:none !important`);
      done.fixed++;
      continue;
    }
    // In the lower half of the viewport (a bar, a launcher, a toast): as on the last screen. What reaches
    // into the upper half (a header, a sidebar, an overlay, a dialog) stays as on the first. So does one
    // with a fixed element inside: translated, it would hold that one (a transform makes a containing
    // block), which is looked at on its own.
    if (r.width < 1 || r.height < 1 || fixed.some((f) => f !== el && el.contains(f))) continue;
    const low = r.top >= viewport / 2 && r.bottom <= viewport + 1;
    if (onSheet) places.push({ el, top: low ? r.top + bottom - viewport : r.top });
    if (!low || onSheet) continue;
    // Added to its own translate (a bar centred with left:50% and translate:-50%, as Tailwind v4 writes it), which stays.
    const [x = '0px', y = '0px', z = ''] = splitTranslate(getComputedStyle(el).translate);
    rule(el, `translate:${x} calc(${y} + ${bottom - viewport}px) ${z} !important`);
    done.fixed++;
  }
  // Sticky to the bottom (a call-to-action bar at the end of the document): stuck to the bottom
  // of the first screen, over its content, and gone from its place. Put at its place, where a
  // person who scrolled there sees it, unless it sticks within an element that scrolls (drawn
  // as at that element's scroll position).
  const scrollsInside = (el: Element): boolean => {
    for (let e = el.parentElement; e && e !== document.body && e !== document.documentElement; e = e.parentElement) {
      const s = getComputedStyle(e);
      if (!['visible', 'clip'].includes(s.overflowY) || !['visible', 'clip'].includes(s.overflowX)) return true;
    }
    return false;
  };
  for (const el of stuck) {
    const r = el.getBoundingClientRect();
    if (r.width < 1 || r.height < 1 || r.top < viewport / 2 || r.bottom > viewport + 1 || scrollsInside(el)) continue;
    rule(el, 'position:relative !important;bottom:auto !important');
    done.stuck++;
  }
  if (!onSheet) return done;
  // What a taller viewport changes of the layout (vertical sizes, insets, font sizes), as getComputedStyle gives them on the screen.
  const SIZES = ['height', 'min-height', 'max-height', 'top', 'bottom', 'margin-top', 'margin-bottom', 'padding-top', 'padding-bottom', 'font-size'];
  const onScreen = elements.map((el) => {
    const style = getComputedStyle(el);
    return SIZES.map((name) => style.getPropertyValue(name));
  });
  const atSheet = (): number => {
    const frozen: Array<[Element, string]> = [];
    elements.forEach((el, i) => {
      const style = getComputedStyle(el);
      const declarations: string[] = [];
      SIZES.forEach((name, j) => {
        const value = (onScreen[i] as string[])[j] as string;
        if (style.getPropertyValue(name) === value) return;
        // Left as they are: an inset left auto (a bar fixed by its bottom goes to the sheet's, as it
        // should), and the automatic height of an element in the flow, which follows its content
        // (given its screen sizes here) and must go on following it.
        const specified = String(el.computedStyleMap().get(name));
        if (specified === 'auto' && (name !== 'height' || !['absolute', 'fixed'].includes(style.position))) return;
        declarations.push(`${name}:${value} !important`);
      });
      if (declarations.length) frozen.push([el, declarations.join(';')]);
    });
    for (const [el, declarations] of frozen) rule(el, declarations);
    // Fixed elements: where the sheet puts them (laid out with the values above) to where the image has them.
    let moved = 0;
    for (const { el, top } of places) {
      const shift = top - el.getBoundingClientRect().top;
      if (Math.abs(shift) < 0.5) continue;
      const [x = '0px', y = '0px', z = ''] = splitTranslate(getComputedStyle(el).translate);
      rule(el, `translate:${x} calc(${y} + ${shift}px) ${z} !important`);
      moved++;
    }
    return frozen.length + moved;
  };
  return { sheet: bottom, atSheet };
}

/**
 * Resolves after the next rendering update, or after capMs if none comes. An observer of
 * our own signals it: the first notification of a new IntersectionObserver is delivered
 * after the update's intersection steps, behind those of the page's observers (created
 * before it), and after that update's scroll events and animation-frame callbacks. One
 * frame, where two animation frames would be two.
 */
function afterRenderingUpdate(capMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const io = new IntersectionObserver(() => {
      io.disconnect();
      resolve(true);
    });
    io.observe(document.documentElement);
    setTimeout(() => {
      io.disconnect();
      resolve(false);
    }, capMs);
  });
}

/**
 * In the page, a step of the scroll pass: a viewport down, never past `max` (answers whether
 * this is the bottom, of the document or of what may be captured, or the page does not scroll
 * at all), or, with `toTop`, back to the top. A page that locked its scrolling while it was scrolled (a
 * slide-in or a modal opened on scroll, with the common helper: the body fixed at
 * `top: -scrollY`) can no longer be scrolled, and keeps its content shifted up by where it was:
 * the pass stalled there for its whole budget, and the page was drawn that far too high (a
 * viewport blank). Such a lock is released first, through a stylesheet of our own (the DOM
 * stays as the page made it), and the reader's place restored, as the helper does on unlock.
 */
function scrollStep(max: number, toTop = false): boolean {
  let offset = 0;
  const locked = [document.documentElement, document.body].filter((el): el is HTMLElement => {
    if (!el) return false;
    const style = getComputedStyle(el);
    if (style.position !== 'fixed' || !(Number.parseFloat(style.top) < 0)) return false;
    offset = Math.max(offset, -Number.parseFloat(style.top));
    return true;
  });
  if (locked.length) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(locked.map((el) => `${el === document.body ? 'body' : ':root'}{position:static !important;top:auto !important}`).join(''));
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    window.scrollTo({ top: offset, left: 0, behavior: 'instant' });
  }
  if (toTop) {
    window.scrollTo({ top: 0, left: 0, behavior: 'instant' });
    return true;
  }
  const bottom = Math.min(max, Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0));
  const before = window.scrollY;
  window.scrollTo({ top: Math.min(before + window.innerHeight, bottom - window.innerHeight), left: 0, behavior: 'instant' });
  return window.scrollY === before || window.scrollY + window.innerHeight >= bottom - 1;
}

/** Whether the page has more below the viewport, above `max` (an infinite scroll that loaded its next part). */
function moreBelow(max: number): boolean {
  const bottom = Math.min(max, Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0));
  return window.scrollY + window.innerHeight < bottom - 1;
}

// ---------------------------------------------------------------------------------------

/** Requests that need not end for the page to be complete (streams, pushes, pings). */
const NEVER_AWAITED = new Set(['Media', 'EventSource', 'WebSocket', 'Ping', 'Prefetch', 'CSPViolationReport', 'Manifest']);

/**
 * The page's requests in flight, as CDP's Network domain reports them from now on (the full
 * page's loading, and wait_until=networkidle: page-capture.ts).
 */
export class NetworkWatch {
  private readonly inFlight = new Set<string>();
  /** When the last request in flight ended (epoch ms; the watch's start while none was). */
  private idleSince = Date.now();
  private waiters: Array<() => void> = [];
  private readonly off: Array<() => void>;

  /**
   * Not waited for: the page's session takes commands in order, so whatever the next
   * command starts is reported (the answer itself took 20-30 ms on a long page). A failure
   * shows in the commands after it.
   */
  static start(page: PageSession): NetworkWatch {
    const watch = new NetworkWatch(page);
    // Without buffers: nothing here reads a response body, which Chromium would otherwise keep a copy of.
    page.send('Network.enable', { maxTotalBufferSize: 0, maxResourceBufferSize: 0 }).catch(() => undefined);
    return watch;
  }

  private constructor(page: PageSession) {
    const own =
      (fn: (p: { requestId: string; type?: string }) => void) =>
      (params: Record<string, unknown>, sessionId: string | undefined): void => {
        if (sessionId === page.sessionId) fn(params as { requestId: string; type?: string });
      };
    this.off = [
      page.cdp.on(
        'Network.requestWillBeSent',
        own((p) => {
          if (!NEVER_AWAITED.has(p.type ?? '')) this.inFlight.add(p.requestId);
        }),
      ),
      page.cdp.on(
        'Network.loadingFinished',
        own((p) => this.ended(p.requestId)),
      ),
      page.cdp.on(
        'Network.loadingFailed',
        own((p) => this.ended(p.requestId)),
      ),
    ];
  }

  get idle(): boolean {
    return this.inFlight.size === 0;
  }

  /** Resolves when no request is in flight, or at `until` (epoch ms). */
  quiet(until: number): Promise<void> {
    if (this.idle) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, until - Date.now()));
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /**
   * Resolves true once no request has been in flight for `ms` on end, counted from now at the
   * earliest; false at `until` (epoch ms). Streams (NEVER_AWAITED) are left aside: an open
   * EventSource or WebSocket never ends.
   */
  async quietFor(ms: number, until: number): Promise<boolean> {
    const from = Date.now();
    for (;;) {
      await this.quiet(until);
      if (!this.idle) return false;
      const quietAt = Math.max(this.idleSince, from) + ms;
      if (quietAt > until) {
        await sleep(until - Date.now());
        return false;
      }
      await sleep(quietAt - Date.now());
      if (this.idle && Math.max(this.idleSince, from) + ms <= Date.now()) return true;
    }
  }

  stop(): void {
    for (const off of this.off) off();
    for (const wake of this.waiters.splice(0)) wake();
  }

  private ended(requestId: string): void {
    if (this.inFlight.delete(requestId) && this.inFlight.size === 0) {
      this.idleSince = Date.now();
      for (const wake of this.waiters.splice(0)) wake();
    }
  }
}

/** Lets the page render once (see afterRenderingUpdate); a page whose scripts are off is not asked. */
async function renderingUpdate(page: PageSession, scripts: boolean): Promise<void> {
  if (!scripts) return;
  // The page could have replaced its timers; the answer is not waited for longer than the cap.
  await Promise.race([page.evaluate(inPageCall(afterRenderingUpdate, FRAME_CAP_MS), true), sleep(2 * FRAME_CAP_MS)]);
}

/**
 * Waits until what the page started loading has loaded: after a rendering update (so
 * observers have run and started their loads), no request in flight and no image still
 * loading. At most until `until`; what is still loading then is captured as it is.
 */
async function settle(page: PageSession, net: NetworkWatch, scripts: boolean, until: number): Promise<void> {
  for (;;) {
    await renderingUpdate(page, scripts);
    if (net.idle && (await page.run(imagesLoading)) === 0) return;
    if (Date.now() >= until) return;
    // Images that started before the watch began are not among its requests: they are looked at again shortly.
    await (net.idle ? sleep(Math.min(25, until - Date.now())) : net.quiet(until));
  }
}

/**
 * fullpage: grows the viewport to the document's height (at most the maximum), waits for
 * what that started, puts the viewport back and measures again; once more while the
 * document grew. The viewport is put back every round because elements sized in viewport
 * units grow with it: measured at the grown viewport, a page with a full-screen header
 * would seem to grow for ever, and captured there, the header would be as tall as the page.
 */
async function growUntilLoaded(page: PageSession, net: NetworkWatch, o: SnapOptions, scripts: boolean, deadline: number): Promise<void> {
  const viewport = viewportOf(o).height;
  const max = maxCaptureHeight(o);
  let height = await page.run(startLazyLoads);
  for (let round = 1; ; round++) {
    const grown = Math.min(height, max);
    if (grown > viewport) await layOutAt(page, o, grown);
    await settle(page, net, scripts, Math.min(deadline, Date.now() + SETTLE_CAP_MS));
    if (grown > viewport) await layOutAt(page, o);
    // Lazy elements the page added meanwhile (an observer's next part) are started too.
    const now = await page.run(startLazyLoads);
    if (now <= height || height >= max || round >= MAX_GROW_ROUNDS || Date.now() >= deadline) break;
    height = now;
  }
}

/**
 * Lays the page out `height` CSS px tall, or at the options' viewport again without `height`.
 * Grown for the page only: its layout viewport (innerHeight, vh, what observers see) takes the
 * height while the browser's visible size stays the viewport's, so the browser does not
 * rasterise the whole page for the frames waited on. The image is made after the viewport is
 * put back (captureBeyondViewport rasterises it then), so a raster of the grown page would be
 * thrown away: measured on the bench's long page, about 140 ms of browser CPU and 70 ms per
 * capture. A mobile device preset stays mobile (its layout width, its zoom to the screen), as
 * prepare() set it: deviceMetrics alone is a desktop viewport, which laid a page without a meta
 * viewport out at the phone's width and captured only its left part.
 */
function layOutAt(page: PageSession, o: SnapOptions, height?: number): Promise<unknown> {
  const own = viewportOf(o);
  const mobile = mobileMetrics(o, own.width, own.height);
  return page.send(
    'Emulation.setDeviceMetricsOverride',
    height === undefined ? { ...deviceMetrics(own), ...mobile } : { ...deviceMetrics({ ...own, height }), ...mobile, dontSetVisibleSize: true },
  );
}

/**
 * Just before the image of a full page (after wait and the clearing of overlays, so a launcher
 * or bar the page added meanwhile is placed too): draws the page as a person scrolling it sees
 * it (drawAsScrolled) and measures it (documentExtent), in one call, the one that measures it
 * for the image anyway. `then`: an expression evaluated after them instead of the measure;
 * `element`: the selector of the element cut out of it, which the elements scrolling around it show.
 */
export function drawWholePage(page: PageSession, o: SnapOptions): Promise<{ height: number; zoom: number }>;
export function drawWholePage<T>(page: PageSession, o: SnapOptions, then: string, element: string): Promise<T>;
export function drawWholePage(page: PageSession, o: SnapOptions, then?: string, element?: string): Promise<unknown> {
  const measure = then ?? inPageCall(documentExtent);
  // A PDF on paper is printed as a browser prints the page: a bar fixed to the bottom of the
  // screen on every sheet (moved to the end of the document, it was on the last one only).
  if (printsOnPaper(o)) return page.evaluate(measure, false);
  if ((o.image_format ?? DEFAULTS.image_format) === 'pdf') return drawOnSheet(page, o, measure);
  return page.evaluate(`(${inPageCall(drawAsScrolled, maxCaptureHeight(o), element ?? null, false)}, ${measure})`, false);
}

/**
 * A full page printed on one sheet as tall as it: drawn as the image is (drawAsScrolled with a
 * sheet), laid out for a moment at the sheet's height, where what printing would lay out
 * otherwise is given the screen's layout (atSheet), then put back and measured. What
 * drawAsScrolled answers stays in the page between the calls (a remote object), released after.
 * About 80 ms more for 2 000 elements, 300 ms for 6 000 (measured on 2 cores).
 */
async function drawOnSheet(page: PageSession, o: SnapOptions, measure: string): Promise<unknown> {
  // None when the page is no taller than the viewport: the sheet is the viewport.
  const objectId = await page.evaluateToObject(inPageCall(drawAsScrolled, maxCaptureHeight(o), null, true));
  if (objectId) {
    const call = <T>(functionDeclaration: string): Promise<T> => page.callOn<T>(objectId, functionDeclaration);
    try {
      await layOutAt(page, o, await call<number>('function () { return this.sheet; }'));
      try {
        await call<number>('function () { return this.atSheet(); }');
      } finally {
        await layOutAt(page, o);
      }
    } finally {
      page.send('Runtime.releaseObject', { objectId }).catch(() => undefined);
    }
  }
  return page.evaluate(measure, false);
}

/** Whether the page listens for scroll events on the window or the document (CDP's getEventListeners). */
async function listensForScroll(page: PageSession): Promise<boolean> {
  const r = await page.send<{ result: { value?: boolean } }>('Runtime.evaluate', {
    expression: '[window, document, document.documentElement, document.body].some((t) => t && (getEventListeners(t).scroll || []).length > 0)',
    includeCommandLineAPI: true,
    returnByValue: true,
  });
  return r.result.value === true;
}

/**
 * fullpage_advanced, incremental_scroll: scrolls down a viewport at a time, letting the
 * page render at each position (longer where scroll handlers need it); at the bottom,
 * waits for what that started and goes on if the page grew (infinite scroll), up to the
 * maximum height; then back to the top, and the page renders there once more. All within
 * SCROLL_BUDGET_MS.
 */
async function scrollThrough(page: PageSession, net: NetworkWatch, o: SnapOptions, scripts: boolean, deadline: number): Promise<void> {
  const until = Math.min(deadline, Date.now() + SCROLL_BUDGET_MS);
  const max = maxCaptureHeight(o);
  const dwell = o.incremental_scroll ? INCREMENTAL_DWELL_MS : scripts && (await listensForScroll(page)) ? SCROLL_HANDLER_DWELL_MS : 0;
  for (;;) {
    const atBottom = await page.run(scrollStep, max);
    await renderingUpdate(page, scripts);
    if (dwell) await sleep(Math.min(dwell, until - Date.now()));
    if (Date.now() + dwell >= until) break;
    if (atBottom) {
      await settle(page, net, scripts, Math.min(until, Date.now() + BOTTOM_SETTLE_CAP_MS));
      if (!(await page.run(moreBelow, max))) break;
    }
  }
  await page.run(scrollStep, max, true);
  await renderingUpdate(page, scripts);
  if (dwell) await sleep(Math.min(dwell, until - Date.now()));
}
