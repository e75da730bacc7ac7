/**
 * Frames of another site in a full-page image (an embedded video or post far down an
 * article). Blink stops rendering a cross-origin frame while it is outside the viewport
 * (render throttling: no flag turns it off), and Page.captureScreenshot with
 * captureBeyondViewport draws such a frame blank below the first screen, loaded or not. So
 * each is scrolled into view in turn, where it renders, its box is captured there, and laid
 * over the full-page image where it sits in the page: what a person scrolling to it sees.
 * Pages without such frames cost one look at the page.
 */
import sharp from 'sharp';
import { type PageSession, inPageCall } from './page-session';

/** The most frames drawn this way in one image (each costs a scroll, a few frames and a screenshot). */
export const MAX_FRAMES = 10;
/** Time kept for the rest of the capture. */
const SAFETY_MS = 1_500;

/** A box in the document, CSS px. */
export interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/**
 * In the page: the visible frames of another origin (their document out of reach) that lie
 * wholly within the image's height and outside the viewport as it is now, at most `most`.
 */
function framesOutOfView(imageHeight: number, most: number): Box[] {
  const out: Box[] = [];
  for (const frame of Array.from(document.querySelectorAll('iframe, frame'))) {
    let crossOrigin = false;
    try {
      crossOrigin = (frame as HTMLIFrameElement).contentDocument === null;
    } catch {
      crossOrigin = true;
    }
    if (!crossOrigin) continue;
    const r = frame.getBoundingClientRect();
    if (r.width < 1 || r.height < 1 || getComputedStyle(frame).visibility === 'hidden') continue;
    const box = { x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height };
    const inView = r.bottom > 0 && r.top < window.innerHeight;
    const fits = box.x >= 0 && box.x + box.width <= window.innerWidth && box.y >= 0 && box.y + box.height <= imageHeight && box.height <= window.innerHeight;
    if (inView || !fits) continue;
    out.push(box);
    if (out.length >= most) break;
  }
  return out;
}

/** In the page: scrolls the box to the middle of the viewport, then waits for three frames (the frame's own rendering resumes). */
function scrollToAndRender(top: number, height: number): Promise<boolean> {
  // Instant: a page's own `scroll-behavior: smooth` (Bootstrap's default) would still be on its way when the frame is taken.
  window.scrollTo({ top: Math.max(0, top - (window.innerHeight - height) / 2), left: 0, behavior: 'instant' });
  return new Promise((resolve) => {
    let n = 0;
    const tick = () => (++n >= 3 ? resolve(true) : requestAnimationFrame(tick));
    requestAnimationFrame(tick);
  });
}

/**
 * The full-page image with each frame of another site out of the first viewport drawn in
 * (null when there was none). `image` was taken of `clip` at `scale` device pixels per CSS px,
 * zoomed by `zoom` (a mobile preset's zoomed-out page, page-capture.ts).
 */
export async function drawFramesOutOfView(
  page: PageSession,
  shot: { image: Buffer; contentType: string },
  clip: Box,
  scale: number,
  encode: (img: sharp.Sharp) => sharp.Sharp,
  deadline: number,
  zoom = 1,
): Promise<Buffer | null> {
  const frames = await page.evaluate<Box[]>(inPageCall(framesOutOfView, clip.y + clip.height, MAX_FRAMES), false);
  if (!frames.length) return null;
  const patches: sharp.OverlayOptions[] = [];
  try {
    for (const f of frames) {
      if (deadline - Date.now() < SAFETY_MS) break;
      await page.evaluate<boolean>(inPageCall(scrollToAndRender, f.y, f.height), true);
      const input = await page.sendForData('Page.captureScreenshot', {
        format: 'png',
        clip: { x: f.x, y: f.y, width: f.width, height: f.height, scale: zoom },
        captureBeyondViewport: true,
      });
      patches.push({ input, left: Math.round((f.x - clip.x) * scale * zoom), top: Math.round((f.y - clip.y) * scale * zoom) });
    }
  } finally {
    await page.evaluate("window.scrollTo({ top: 0, left: 0, behavior: 'instant' })", false).catch(() => undefined);
  }
  if (!patches.length) return null;
  return encode(sharp(shot.image, { limitInputPixels: false }).composite(patches)).toBuffer();
}
