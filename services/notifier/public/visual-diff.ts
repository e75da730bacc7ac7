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
}

interface Raster {
  data: Buffer;
  width: number;
  height: number;
  /** Image pixels per CSS pixel. */
  scale: number;
}

async function decode(c: VisualCapture): Promise<Raster> {
  const { data, info } = await sharp(c.image, { ignoreIcc: true, sequentialRead: true }).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const scale = c.frameWidth > 0 ? info.width / c.frameWidth : 1;
  return { data, width: info.width, height: info.height, scale };
}

/** A rectangle in image pixels, inside width x height (null when nothing of it is). */
function pixelRect(r: Rect, scale: number, dx: number, dy: number, width: number, height: number): { x0: number; y0: number; x1: number; y1: number } | null {
  const x0 = Math.max(0, Math.floor(r.x * scale) - dx);
  const y0 = Math.max(0, Math.floor(r.y * scale) - dy);
  const x1 = Math.min(width, Math.ceil((r.x + r.width) * scale) - dx);
  const y1 = Math.min(height, Math.ceil((r.y + r.height) * scale) - dy);
  return x1 > x0 && y1 > y0 ? { x0, y0, x1, y1 } : null;
}

/** The area compared of one capture: its region (or all of it), as an origin and size in its pixels. */
function areaOf(raster: Raster, region: Rect | null): { x: number; y: number; width: number; height: number } {
  if (!region) return { x: 0, y: 0, width: raster.width, height: raster.height };
  const p = pixelRect(region, raster.scale, 0, 0, raster.width, raster.height);
  return p ? { x: p.x0, y: p.y0, width: p.x1 - p.x0, height: p.y1 - p.y0 } : { x: 0, y: 0, width: 0, height: 0 };
}

/** The w x h area at (x, y) of a raster, as its own RGBA buffer (the raster itself when it is all of it). */
function cut(r: Raster, x: number, y: number, w: number, h: number): Buffer {
  if (x === 0 && w === r.width) return r.data.subarray(y * r.width * 4, (y + h) * r.width * 4);
  const out = Buffer.allocUnsafe(w * h * 4);
  for (let row = 0; row < h; row++) {
    const from = ((y + row) * r.width + x) * 4;
    r.data.copy(out, row * w * 4, from, from + w * 4);
  }
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

/** Compares the new capture (`after`) with the one before it; `tolerance` is pixelmatch's threshold (0 to 1). */
export async function compareCaptures(before: VisualCapture, after: VisualCapture, tolerance: number): Promise<VisualComparison> {
  // The same bytes and region: the same pixels, nothing to decode (a still page; Chromium
  // encodes the same picture the same way).
  if (before.image.equals(after.image) && JSON.stringify(before.region) === JSON.stringify(after.region)) {
    const same = await sharp(after.image).metadata();
    const area = areaOf(
      { data: Buffer.alloc(0), width: same.width ?? 0, height: same.height ?? 0, scale: after.frameWidth > 0 ? (same.width ?? 0) / after.frameWidth : 1 },
      after.region,
    );
    const size = { width: area.width, height: area.height };
    return {
      changedPixels: 0,
      comparedPixels: area.width * area.height,
      changedPercent: 0,
      boxes: [],
      before: size,
      after: size,
      sizeChanged: false,
      diffPng: async () => (await compareDecoded(before, after, tolerance)).diffPng(),
    };
  }
  return compareDecoded(before, after, tolerance);
}

async function compareDecoded(before: VisualCapture, after: VisualCapture, tolerance: number): Promise<VisualComparison> {
  const [a, b] = await Promise.all([decode(before), decode(after)]);
  const areaA = areaOf(a, before.region);
  const areaB = areaOf(b, after.region);
  const width = Math.min(areaA.width, areaB.width);
  const height = Math.min(areaA.height, areaB.height);
  const sizes = { before: { width: areaA.width, height: areaA.height }, after: { width: areaB.width, height: areaB.height } };
  const sizeChanged = areaA.width !== areaB.width || areaA.height !== areaB.height;
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
    };
  }
  const imgNew = cut(b, areaB.x, areaB.y, width, height);
  const imgOld = cut(a, areaA.x, areaA.y, width, height);
  // The masks of both captures, as one: masked in either, compared in neither.
  let ignoreMask: Uint8Array | undefined;
  let masked = 0;
  const masks = [...before.masks.map((m) => [m, a, areaA] as const), ...after.masks.map((m) => [m, b, areaB] as const)];
  if (masks.length) {
    ignoreMask = new Uint8Array(width * height);
    for (const [m, r, area] of masks) {
      const p = pixelRect(m, r.scale, area.x, area.y, width, height);
      if (p) for (let y = p.y0; y < p.y1; y++) ignoreMask.fill(1, y * width + p.x0, y * width + p.x1);
    }
    for (let i = 0; i < ignoreMask.length; i++) masked += ignoreMask[i] as number;
  }
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
  // Only the changed pixels are drawn (a mask, 5x cheaper than pixelmatch's whole diff image);
  // the diff image is drawn from it and the new capture when an alert asks for it.
  const output = Buffer.alloc(bandHeight * row);
  const changedPixels =
    bandHeight > 0
      ? pixelmatch(imgNew.subarray(top * row, bottom * row), imgOld.subarray(top * row, bottom * row), output, width, bandHeight, {
          threshold: tolerance,
          diffMask: true,
          ...(ignoreMask ? { ignoreMask: ignoreMask.subarray(top * width, bottom * width) } : {}),
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
      return drawDiff(imgNew, mask, ignoreMask, width, height);
    },
  };
}
