/**
 * That the picture shows what the page draws: its web fonts loaded, and a screenshot that
 * came back as one colour while the page has visible content taken again once the page has
 * painted (docs/decisions/2026-11-28-nothing-blank-by-accident.md).
 */
import { imageSize } from 'image-size';
import sharp from 'sharp';
import { type PageSession, inPageCall, sleep } from './page-session';

/** The longest a capture waits for the page's web fonts and the images in view. */
export const DRAWING_MS = 3_000;
/** Time kept for the screenshot itself when the deadline is near. */
const SAFETY_MS = 1_000;
/** How often a one-colour picture of a page with content is taken again, a frame apart. */
export const REPAINT_TRIES = 3;
/**
 * The most bytes a picture of one colour takes in each format as Chromium encodes it: a fixed
 * part (headers, tables) and a part per pixel, each rounded up from what Chromium 156 writes
 * for a page of one colour, the same at every quality, colour and scale factor (JPEG, 4:2:0:
 * 1 152 bytes at 320x200, 6 762 at 1280x800; PNG with optimize_for_speed, the larger of
 * PNG's two: 1 747 and 18 180; WebP: 688 and 2 390). A picture larger than FLAT_MARGIN times
 * its format's bound cannot be of one colour and is not decoded; a format not listed always is.
 */
const FLAT_BYTES: Readonly<Record<string, { fixed: number; perPixel: number }>> = {
  jpeg: { fixed: 800, perPixel: 0.006 },
  png: { fixed: 700, perPixel: 0.018 },
  webp: { fixed: 700, perPixel: 0.0025 },
};
const FLAT_MARGIN = 1.5;

/** Whether a picture of this format, size and length in bytes can be of one colour at all. */
export function mayBeOneColour(format: string | undefined, width: number, height: number, bytes: number): boolean {
  const bound = format ? FLAT_BYTES[format] : undefined;
  return !bound || bytes <= FLAT_MARGIN * (bound.fixed + bound.perPixel * width * height);
}
/** Channel values of one colour differ by no more than this (JPEG noise). */
const FLAT_TOLERANCE = 2;

/**
 * In the page: resolves once no font face of the page is loading any more (loaded or failed)
 * and, with `lazyImages`, every loading="lazy" image in view has loaded or failed. Not
 * document.fonts.ready: that also waits for the document to finish loading, which a page
 * taken as drawn at navigation_timeout never does. Lazy images in view: the browser starts one
 * only once layout shows it in view (a gallery's first row at the bottom of the screen), so the
 * load event does not wait for it, and it would be taken as its empty box. Other images are
 * the load event's (or, with wait_until=domcontentloaded, not waited for, as asked). With
 * `now`: answers at once whether they have settled already.
 */
function drawingSettled(lazyImages: boolean, now = false): Promise<boolean> | boolean {
  const loading = () => {
    let any = false;
    document.fonts.forEach((face) => {
      any ||= face.status === 'loading';
    });
    return any;
  };
  const inView = Array.from(document.images).filter((img) => {
    if (!lazyImages || img.complete || img.loading !== 'lazy') return false;
    const r = img.getBoundingClientRect();
    return r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0 && r.top < window.innerHeight && r.left < window.innerWidth;
  });
  if (now) return !loading() && inView.length === 0;
  const fonts = loading()
    ? new Promise((resolve) => {
        const check = () => {
          if (!loading()) resolve(true);
        };
        document.fonts.addEventListener('loadingdone', check);
        document.fonts.addEventListener('loadingerror', check);
      })
    : Promise.resolve(true);
  const images = inView.map(
    (img) =>
      new Promise((resolve) => {
        img.addEventListener('load', resolve, { once: true });
        img.addEventListener('error', resolve, { once: true });
      }),
  );
  return Promise.all([fonts, ...images]).then(() => true);
}

/**
 * Waits, at most DRAWING_MS and within the deadline, for the fonts the page uses and (with
 * `lazyImages`: the page's load finished, as wait_until asked) the lazy images in view to have
 * loaded (or failed). `then`: an expression evaluated in the page in the same call once they have,
 * whose value is answered (a read the capture needs anyway, without a round trip of its own);
 * undefined when the fonts did not settle in time (the caller reads it on its own then).
 */
export async function settleDrawing<T = unknown>(page: PageSession, deadline: number, lazyImages: boolean, then?: string): Promise<T | undefined> {
  const ms = Math.min(DRAWING_MS, deadline - Date.now() - SAFETY_MS);
  if (ms <= 0) return undefined;
  const settled = inPageCall(drawingSettled, lazyImages);
  const ready = page.evaluate<T>(then ? `${settled}.then(() => ${then})` : settled, true);
  ready.catch(() => undefined);
  return Promise.race([ready, sleep(ms).then(() => undefined)]).catch(() => undefined);
}

/**
 * In the page, at once: `then`'s value when the fonts and (with `lazyImages`) the lazy images
 * in view have settled already, else undefined (the caller then waits with settleDrawing).
 * For a step that ends in the page just before the drawing is waited for (wait_for), so the
 * common case costs no round trip of its own.
 */
export function ifDrawingSettled(lazyImages: boolean, then: string): string {
  return `(${inPageCall(drawingSettled, lazyImages, true)} ? ${then} : undefined)`;
}

/** The side of the blocks the first look at a picture averages (a JPEG decodes at that scale). */
const GLANCE_BLOCK = 8;
/** What averaging and the colour conversion of a scaled JPEG decode may add to a range. */
const GLANCE_ROUNDING = 2;

/**
 * Whether an image is of one colour (within FLAT_TOLERANCE); decoded only when it is small
 * enough in bytes to be one (mayBeOneColour: a sparse page, a few lines of text on white, is
 * already too large, 0.015 bytes per pixel as a 1280x800 JPEG). A first look at an eighth of
 * it (its blocks averaged, each within its pixels' range: a JPEG decodes at that scale
 * directly, about 4 ms for 1280x800) tells most pictures with content at once: averages that
 * differ by more than the tolerance (and rounding) come from pixels that do. Only a picture
 * that still looks flat is read in full, by sharp's stats() (each channel's range), off the
 * event loop: a full-page picture of a page drawn in one colour is up to 7680x16000, and a
 * JavaScript pass over its 368 MB of pixels held the process for about a second, every
 * account's requests waiting (stats() costs more CPU at small sizes, about 40 ms at 1280x800,
 * but only on libuv's threads).
 */
export async function isOneColour(image: Buffer): Promise<boolean> {
  const { format, width, height } = headerOf(image) ?? (await sharp(image).metadata());
  if (!width || !height || !mayBeOneColour(format, width, height, image.length)) return false;
  const glance = await sharp(image)
    .resize({ width: Math.ceil(width / GLANCE_BLOCK), height: Math.ceil(height / GLANCE_BLOCK), fit: 'fill', kernel: 'nearest' })
    .removeAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  if (widestRange(glance.data, glance.info.channels) > FLAT_TOLERANCE + GLANCE_ROUNDING) return false;
  // stats() reads the input as it is (alpha included, whatever removeAlpha says): the colour channels only.
  const { channels } = await sharp(image).stats();
  return channels.slice(0, channels.length >= 3 ? 3 : 1).every((c) => c.max - c.min <= FLAT_TOLERANCE);
}

/**
 * A picture's format (as sharp names it) and size, read from its header in JavaScript by
 * image-size: about 3 µs of CPU, where sharp's metadata() takes about 230 µs and a hop to
 * libuv's threads. Null for what image-size cannot read (sharp is asked then).
 */
function headerOf(image: Buffer): { format: string; width: number; height: number } | null {
  try {
    const { type, width, height } = imageSize(image);
    return type ? { format: type === 'jpg' ? 'jpeg' : type, width, height } : null;
  } catch {
    return null;
  }
}

/** The largest difference between two values of one channel of interleaved pixels. */
function widestRange(data: Buffer, channels: number): number {
  let widest = 0;
  for (let c = 0; c < channels; c++) {
    let lo = 255;
    let hi = 0;
    for (let i = c; i < data.length; i += channels) {
      const v = data[i] as number;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    widest = Math.max(widest, hi - lo);
  }
  return widest;
}

/** In the page: it has something a person would see (text, an image, a canvas, a video, a frame, a form control). */
const HAS_VISIBLE_CONTENT = `(() => {
  const body = document.body;
  if (!body) return false;
  if (body.innerText.trim() !== '') return true;
  for (const el of document.querySelectorAll('img, svg, canvas, video, iframe, input, button, select, textarea')) {
    const r = el.getBoundingClientRect();
    if (r.width > 0 && r.height > 0 && r.bottom > 0 && r.right > 0) return true;
  }
  return false;
})()`;

/** In the page: resolves after the next two frames (the first may be the one already under way). */
const TWO_FRAMES = 'new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => resolve(true))))';

/**
 * The screenshot, taken again after a frame (at most REPAINT_TRIES times, within the
 * deadline) while it is of one colour and the page has visible content. A page that is of
 * one colour by design (nothing visible, or text in its background's colour) costs one look
 * at the page, and then the tries.
 */
export async function untilPainted<T extends { image: Buffer; contentType: string }>(
  page: PageSession,
  first: T,
  again: () => Promise<T>,
  deadline: number,
): Promise<T> {
  if (!first.contentType.startsWith('image/')) return first;
  let shot = first;
  for (let tries = 0; tries < REPAINT_TRIES && deadline - Date.now() > SAFETY_MS; tries++) {
    if (!(await isOneColour(shot.image))) return shot;
    if (tries === 0 && !(await page.evaluate<boolean>(HAS_VISIBLE_CONTENT, false))) return shot;
    const frames = page.evaluate<boolean>(TWO_FRAMES, true);
    frames.catch(() => undefined);
    await Promise.race([frames, sleep(250)]);
    shot = await again();
  }
  return shot;
}
