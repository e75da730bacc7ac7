/**
 * The comparison of a visual `change` step (docs/decisions/2026-11-28-visual-change-detection.md):
 * two captures of a configuration, decoded to RGBA by sharp whatever their formats (PNG, JPEG,
 * WebP), cut to the step's region, and compared by pixelmatch over their common area (top
 * left aligned; a page that grew or shrank is reported as a size change). A pixel differs when
 * its perceptual colour distance (OKLab HyAB) is over `tolerance`, anti-aliased pixels aside;
 * the areas of `ignore_selectors` in either capture are masked. The changed pixels are grouped
 * into boxes: the image is cut in cells of BOX_CELL pixels, cells holding a changed pixel are
 * joined with their 8 neighbours, and each group's bounds (in pixels of the new capture's
 * compared area) is one box. The diff image (changed pixels red over the new capture, faded)
 * is encoded only when asked (an alert).
 *
 * Cost (bench/visual-diff.ts): decoding is most of it, so a capture's compared area is decoded
 * once (decodeArea: a selector's region alone) and can be given back to the next comparison
 * (`decoded`, kept by VisualRasterCache in the capture process); the masks are counted from
 * their rectangles and drawn for the rows pixelmatch reads only.
 */
import pixelmatch from 'pixelmatch';
import sharp from 'sharp';
import type { Rect } from './change-alerts';

/** Side of the cells changed pixels are grouped by, in image pixels. */
export const BOX_CELL = 16;
/** Rows either side of the differing band that pixelmatch also reads (its anti-aliasing check looks 2 pixels away). */
const BAND_MARGIN = 3;
/** Most boxes an alert lists (the largest ones). */
export const MAX_BOXES = 50;

/** One capture as compared: its image (any format sharp reads) and the areas the page reported. */
export interface VisualCapture {
  image: Buffer;
  /** The compared region (null: the whole image), CSS pixels. */
  region: Rect | null;
  /** Masked areas, CSS pixels. */
  masks: Rect[];
  /** The image's width in CSS pixels (0: the image's own pixels are CSS pixels). */
  frameWidth: number;
  /** Its compared area already decoded (decodeArea, kept from an earlier comparison): not decoded again. */
  decoded?: DecodedArea;
}

/**
 * The compared area of one capture (its region, or the whole image) decoded to RGBA: what a
 * comparison needs of it, and all it needs, so the capture job can keep the baseline's and
 * decode only the new capture (VisualRasterCache).
 */
export interface DecodedArea {
  /** width x height RGBA pixels. */
  data: Buffer;
  width: number;
  height: number;
  /** Where the area starts in the image, image pixels (masks are measured from the image's corner). */
  x: number;
  y: number;
  /** Image pixels per CSS pixel. */
  scale: number;
}

export interface Size {
  width: number;
  height: number;
}

export interface VisualComparison {
  /** Pixels that differ, and those compared (the common area less the masked pixels). */
  changedPixels: number;
  comparedPixels: number;
  /** changedPixels as a percentage of comparedPixels, rounded to 3 decimals. */
  changedPercent: number;
  /** Boxes around the changed areas, in pixels of the compared area of the new capture, largest first. */
  boxes: Rect[];
  /** The compared areas' sizes (before and after); they differ when the page or region changed size. */
  before: Size;
  after: Size;
  sizeChanged: boolean;
  /** The diff image as PNG (the compared common area). */
  diffPng(): Promise<Buffer>;
  /** The new capture's compared area, decoded (null when it was not: the same bytes as before without a decoded area). */
  decodedAfter: DecodedArea | null;
  /** The earlier capture's, likewise. */
  decodedBefore: DecodedArea | null;
}

const EMPTY_AREA = (scale: number): DecodedArea => ({ data: Buffer.alloc(0), width: 0, height: 0, x: 0, y: 0, scale });

/**
 * Decodes the compared area of a capture: with a region, only the region's pixels are written
 * out (sharp cuts it before the raw output, so a small region of a long page costs a fraction
 * of the whole image's decoding and memory).
 */
export async function decodeArea(c: VisualCapture): Promise<DecodedArea> {
  const input = () => sharp(c.image, { ignoreIcc: true, sequentialRead: true, limitInputPixels: false });
  if (!c.region) {
    const { data, info } = await input().ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height, x: 0, y: 0, scale: c.frameWidth > 0 ? info.width / c.frameWidth : 1 };
  }
  const meta = await sharp(c.image).metadata();
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  const scale = c.frameWidth > 0 ? width / c.frameWidth : 1;
  const p = pixelRect(c.region, scale, 0, 0, width, height);
  if (!p) return EMPTY_AREA(scale);
  const { data, info } = await input()
    .extract({ left: p.x0, top: p.y0, width: p.x1 - p.x0, height: p.y1 - p.y0 })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height, x: p.x0, y: p.y0, scale };
}

/** A rectangle in image pixels, inside width x height (null when nothing of it is). */
function pixelRect(r: Rect, scale: number, dx: number, dy: number, width: number, height: number): { x0: number; y0: number; x1: number; y1: number } | null {
  const x0 = Math.max(0, Math.floor(r.x * scale) - dx);
  const y0 = Math.max(0, Math.floor(r.y * scale) - dy);
  const x1 = Math.min(width, Math.ceil((r.x + r.width) * scale) - dx);
  const y1 = Math.min(height, Math.ceil((r.y + r.height) * scale) - dy);
  return x1 > x0 && y1 > y0 ? { x0, y0, x1, y1 } : null;
}

/** The w x h area at the top left of a decoded area, as its own RGBA buffer (its buffer itself when it is all of its rows). */
function cut(r: DecodedArea, w: number, h: number): Buffer {
  if (w === r.width) return r.data.subarray(0, h * r.width * 4);
  const out = Buffer.allocUnsafe(w * h * 4);
  for (let row = 0; row < h; row++) r.data.copy(out, row * w * 4, row * r.width * 4, row * r.width * 4 + w * 4);
  return out;
}

/** pixelmatch's mark of a changed pixel in its diff mask (opaque red), as one 32-bit word. */
const CHANGED = new Uint32Array(new Uint8Array([255, 0, 0, 255]).buffer)[0] as number;

/** One 32-bit word per pixel of an RGBA buffer. */
const words = (rgba: Uint8Array) => new Uint32Array(rgba.buffer, rgba.byteOffset, rgba.byteLength >> 2);

/** Groups changed pixels (opaque red in pixelmatch's diff mask) into boxes (see the header). */
export function changedBoxes(diff: Uint8Array, width: number, height: number, cell = BOX_CELL): Rect[] {
  const cols = Math.ceil(width / cell);
  const rows = Math.ceil(height / cell);
  const marked = new Uint8Array(cols * rows);
  const px = words(diff);
  // The mask is zero but where pixels changed: a byte search (memchr) skips the rest at once.
  const bytes = Buffer.from(diff.buffer, diff.byteOffset, width * height * 4);
  for (let at = bytes.indexOf(255); at !== -1; at = bytes.indexOf(255, at)) {
    const i = at >> 2;
    at = (i + 1) << 2;
    if (px[i] !== CHANGED) continue;
    marked[((((i / width) | 0) / cell) | 0) * cols + (((i % width) / cell) | 0)] = 1;
  }
  const boxes: Rect[] = [];
  const stack: number[] = [];
  for (let start = 0; start < marked.length; start++) {
    if (marked[start] !== 1) continue;
    marked[start] = 2;
    stack.push(start);
    let cx0 = cols;
    let cy0 = rows;
    let cx1 = 0;
    let cy1 = 0;
    while (stack.length) {
      const c = stack.pop() as number;
      const cx = c % cols;
      const cy = (c / cols) | 0;
      cx0 = Math.min(cx0, cx);
      cy0 = Math.min(cy0, cy);
      cx1 = Math.max(cx1, cx);
      cy1 = Math.max(cy1, cy);
      for (let ny = Math.max(0, cy - 1); ny <= Math.min(rows - 1, cy + 1); ny++) {
        for (let nx = Math.max(0, cx - 1); nx <= Math.min(cols - 1, cx + 1); nx++) {
          const n = ny * cols + nx;
          if (marked[n] === 1) {
            marked[n] = 2;
            stack.push(n);
          }
        }
      }
    }
    // The bounds of the changed pixels inside the group's cells.
    boxes.push(tighten(diff, width, height, cx0 * cell, cy0 * cell, Math.min(width, (cx1 + 1) * cell), Math.min(height, (cy1 + 1) * cell)));
  }
  boxes.sort((a, b) => b.width * b.height - a.width * a.height);
  return boxes.slice(0, MAX_BOXES);
}

function tighten(diff: Uint8Array, width: number, _height: number, x0: number, y0: number, x1: number, y1: number): Rect {
  const px = words(diff);
  let minX = x1;
  let minY = y1;
  let maxX = x0;
  let maxY = y0;
  for (let y = y0; y < y1; y++) {
    for (let x = x0; x < x1; x++) {
      if (px[y * width + x] === CHANGED) {
        if (x < minX) minX = x;
        if (x > maxX) maxX = x;
        if (y < minY) minY = y;
        if (y > maxY) maxY = y;
      }
    }
  }
  return { x: minX, y: minY, width: maxX - minX + 1, height: maxY - minY + 1 };
}

/**
 * The diff image: the new capture faded to a quarter of its contrast over white, changed pixels
 * red, masked areas light grey; as PNG.
 */
export function drawDiff(imgNew: Uint8Array, mask: Uint8Array, ignoreMask: Uint8Array | undefined, width: number, height: number): Promise<Buffer> {
  const out = Buffer.allocUnsafe(width * height * 4);
  const marks = words(mask);
  for (let i = 0, pos = 0; i < width * height; i++, pos += 4) {
    if (marks[i] === CHANGED) {
      out[pos] = 255;
      out[pos + 1] = 0;
      out[pos + 2] = 0;
    } else if (ignoreMask?.[i]) {
      out[pos] = 200;
      out[pos + 1] = 200;
      out[pos + 2] = 200;
    } else {
      // Luma, blended with white: 0.25 of the picture.
      const y = 0.299 * (imgNew[pos] as number) + 0.587 * (imgNew[pos + 1] as number) + 0.114 * (imgNew[pos + 2] as number);
      const v = 255 + (y - 255) * 0.25;
      out[pos] = v;
      out[pos + 1] = v;
      out[pos + 2] = v;
    }
    out[pos + 3] = 255;
  }
  return sharp(out, { raw: { width, height, channels: 4 } })
    .png({ compressionLevel: 3, adaptiveFiltering: false })
    .toBuffer();
}

/** The size of a capture's compared area, from its decoded area or its image's header (no decoding). */
async function areaSize(c: VisualCapture): Promise<Size> {
  if (c.decoded) return { width: c.decoded.width, height: c.decoded.height };
  const meta = await sharp(c.image).metadata();
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  if (!c.region) return { width, height };
  const p = pixelRect(c.region, c.frameWidth > 0 ? width / c.frameWidth : 1, 0, 0, width, height);
  return p ? { width: p.x1 - p.x0, height: p.y1 - p.y0 } : { width: 0, height: 0 };
}

type PixelRect = { x0: number; y0: number; x1: number; y1: number };

/** Pixels inside at least one of the rectangles (their union's area). */
export function unionArea(rects: PixelRect[]): number {
  const ys = [...new Set(rects.flatMap((r) => [r.y0, r.y1]))].sort((a, b) => a - b);
  let area = 0;
  for (let k = 0; k + 1 < ys.length; k++) {
    const y = ys[k] as number;
    const spans = rects.filter((r) => r.y0 <= y && r.y1 > y).sort((a, b) => a.x0 - b.x0);
    let covered = 0;
    let end = -1;
    for (const r of spans) {
      if (r.x1 <= end) continue;
      covered += r.x1 - Math.max(r.x0, end);
      end = r.x1;
    }
    area += covered * ((ys[k + 1] as number) - y);
  }
  return area;
}

/** The ignore mask (one byte per pixel, 1: masked) of rows y0 to y1 of a width-wide area. */
function maskRows(rects: PixelRect[], width: number, y0: number, y1: number): Uint8Array {
  const mask = new Uint8Array(width * (y1 - y0));
  for (const p of rects) {
    for (let y = Math.max(p.y0, y0); y < Math.min(p.y1, y1); y++) mask.fill(1, (y - y0) * width + p.x0, (y - y0) * width + p.x1);
  }
  return mask;
}

/**
 * Compares the new capture (`after`) with the one before it; `tolerance` is pixelmatch's
 * threshold (0 to 1). A capture given with its area decoded (`decoded`) is not decoded again.
 */
export async function compareCaptures(before: VisualCapture, after: VisualCapture, tolerance: number): Promise<VisualComparison> {
  // The same bytes, region and frame: the same pixels, nothing to decode (a still page; Chromium
  // encodes the same picture the same way).
  if (before.image.equals(after.image) && before.frameWidth === after.frameWidth && JSON.stringify(before.region) === JSON.stringify(after.region)) {
    const size = await areaSize(before.decoded ? before : after);
    return {
      changedPixels: 0,
      comparedPixels: size.width * size.height,
      changedPercent: 0,
      boxes: [],
      before: size,
      after: size,
      sizeChanged: false,
      diffPng: async () => (await compareDecoded(before, after, tolerance)).diffPng(),
      decodedAfter: after.decoded ?? before.decoded ?? null,
      decodedBefore: before.decoded ?? after.decoded ?? null,
    };
  }
  return compareDecoded(before, after, tolerance);
}

async function compareDecoded(before: VisualCapture, after: VisualCapture, tolerance: number): Promise<VisualComparison> {
  const [a, b] = await Promise.all([before.decoded ?? decodeArea(before), after.decoded ?? decodeArea(after)]);
  const width = Math.min(a.width, b.width);
  const height = Math.min(a.height, b.height);
  const sizes = { before: { width: a.width, height: a.height }, after: { width: b.width, height: b.height } };
  const sizeChanged = a.width !== b.width || a.height !== b.height;
  if (width === 0 || height === 0) {
    const empty = Buffer.alloc(4);
    return {
      changedPixels: 0,
      comparedPixels: 0,
      changedPercent: 0,
      boxes: [],
      ...sizes,
      sizeChanged,
      diffPng: () =>
        sharp(empty, { raw: { width: 1, height: 1, channels: 4 } })
          .png()
          .toBuffer(),
      decodedAfter: b,
      decodedBefore: a,
    };
  }
  const imgNew = cut(b, width, height);
  const imgOld = cut(a, width, height);
  // The masks of both captures, as one: masked in either, compared in neither (pixels of the common area).
  const rects: PixelRect[] = [];
  for (const [masks, area] of [
    [before.masks, a],
    [after.masks, b],
  ] as const) {
    for (const m of masks) {
      const p = pixelRect(m, area.scale, area.x, area.y, width, height);
      if (p) rects.push(p);
    }
  }
  const masked = unionArea(rects);
  // pixelmatch runs over the band of rows where the bytes differ (memcmp finds it), with
  // BAND_MARGIN rows either side so its anti-aliasing check sees every neighbour it reads:
  // the same count as over the whole image, without a JavaScript pass over still rows.
  const row = width * 4;
  const sameRow = (y: number) => imgNew.compare(imgOld, y * row, (y + 1) * row, y * row, (y + 1) * row) === 0;
  let first = 0;
  while (first < height && sameRow(first)) first++;
  let last = height - 1;
  while (last > first && sameRow(last)) last--;
  const top = Math.max(0, first - BAND_MARGIN);
  const bottom = first >= height ? top : Math.min(height, last + 1 + BAND_MARGIN);
  const bandHeight = bottom - top;
  // Only the changed pixels are drawn (a mask, 5x cheaper than pixelmatch's whole diff image),
  // over the band only, and the ignore mask is made for the band only; the diff image is drawn
  // from them and the new capture when an alert asks for it.
  const output = Buffer.alloc(bandHeight * row);
  const changedPixels =
    bandHeight > 0
      ? pixelmatch(imgNew.subarray(top * row, bottom * row), imgOld.subarray(top * row, bottom * row), output, width, bandHeight, {
          threshold: tolerance,
          diffMask: true,
          ...(rects.length ? { ignoreMask: maskRows(rects, width, top, bottom) } : {}),
        })
      : 0;
  const comparedPixels = width * height - masked;
  const changedPercent = comparedPixels > 0 ? Math.round((changedPixels / comparedPixels) * 100_000) / 1000 : 0;
  const boxes = changedPixels > 0 ? changedBoxes(output, width, bandHeight).map((b) => ({ ...b, y: b.y + top })) : [];
  return {
    changedPixels,
    comparedPixels,
    changedPercent,
    boxes,
    ...sizes,
    sizeChanged,
    diffPng: () => {
      const mask = Buffer.alloc(width * height * 4);
      output.copy(mask, top * row);
      return drawDiff(imgNew, mask, rects.length ? maskRows(rects, width, 0, height) : undefined, width, height);
    },
    decodedAfter: b,
    decodedBefore: a,
  };
}

/** What the raster cache keeps of one capture: its image's bytes (to see a still page at once) and its decoded area. */
export interface CachedRaster {
  image: Buffer;
  area: DecodedArea;
}

/**
 * The decoded areas of baselines, kept in the capture process between comparisons so that a
 * scheduled configuration's comparison decodes only its new capture (the baseline is usually
 * the capture before it, decoded by the last comparison). Bounded: at most `maxBytes` of
 * pixels and images, the least recently used dropped first; an area larger than the bound is
 * not kept. A miss (after a restart, or evicted) reads and decodes the baseline as before: the
 * same result, at the cost of a second decoding.
 */
export class VisualRasterCache {
  private readonly entries = new Map<string, CachedRaster>();
  private used = 0;

  constructor(readonly maxBytes: number) {}

  /** The key of a capture's area: its image, region and frame (what decodeArea depends on). */
  static key(imageName: string, region: Rect | null, frameWidth: number): string {
    return `${imageName}\n${frameWidth}\n${region ? `${region.x},${region.y},${region.width},${region.height}` : ''}`;
  }

  get bytes(): number {
    return this.used;
  }

  get size(): number {
    return this.entries.size;
  }

  get(key: string): CachedRaster | undefined {
    const hit = this.entries.get(key);
    if (hit) {
      // The most recently used last.
      this.entries.delete(key);
      this.entries.set(key, hit);
    }
    return hit;
  }

  set(key: string, image: Buffer, area: DecodedArea): void {
    this.delete(key);
    const cost = image.byteLength + area.data.byteLength;
    if (cost > this.maxBytes) return;
    this.entries.set(key, { image, area });
    this.used += cost;
    for (const [k] of this.entries) {
      if (this.used <= this.maxBytes) break;
      this.delete(k);
    }
  }

  delete(key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    this.entries.delete(key);
    this.used -= e.image.byteLength + e.area.data.byteLength;
  }
}
