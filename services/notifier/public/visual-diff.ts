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
 * their rectangles and drawn for the rows pixelmatch reads only. A baseline not kept decoded
 * (a restart, evicted, another instance) comes with its row prints (rowPrints, kept with the
 * baseline's record): the new capture's rows are printed the same way, and only the baseline's
 * rows whose prints differ (with their margins) are decoded.
 */
import sharp from 'sharp';
import type { Rect } from './change-alerts';
import { offThread, ownPixels } from './visual-match';

/** Rows either side of the differing band that pixelmatch also reads (its anti-aliasing check looks 2 pixels away). */
const BAND_MARGIN = 3;

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
  /** Without `decoded`: its area's row prints (rowPrints, kept from when it was decoded), so that only its rows that differ are decoded. */
  prints?: RowPrints;
}

/**
 * Fingerprints of the rows of a decoded area, two 32-bit words per row: whether a row of one
 * capture holds the same pixels as the same row of another, without the other decoded.
 */
export interface RowPrints {
  /** The area's width in pixels: prints of areas of different widths are not comparable. */
  width: number;
  /** Two words per row, rows top to bottom. */
  words: Uint32Array;
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

/** Where a capture's compared area lies in its image, read from the image's header (no decoding). */
interface AreaGeometry {
  x: number;
  y: number;
  width: number;
  height: number;
  scale: number;
}

async function areaGeometry(c: VisualCapture): Promise<AreaGeometry> {
  const meta = await sharp(c.image).metadata();
  const width = meta.width ?? 0;
  const height = meta.height ?? 0;
  const scale = c.frameWidth > 0 ? width / c.frameWidth : 1;
  if (!c.region) return { x: 0, y: 0, width, height, scale };
  const p = pixelRect(c.region, scale, 0, 0, width, height);
  return p ? { x: p.x0, y: p.y0, width: p.x1 - p.x0, height: p.y1 - p.y0, scale } : { x: 0, y: 0, width: 0, height: 0, scale };
}

/** Rows `top` to `bottom` of a capture's compared area, decoded to RGBA (sequential reading stops inflating below them). */
async function decodeRows(c: VisualCapture, g: AreaGeometry, top: number, bottom: number): Promise<Buffer> {
  const { data } = await sharp(c.image, { ignoreIcc: true, sequentialRead: true, limitInputPixels: false })
    .extract({ left: g.x, top: g.y + top, width: g.width, height: bottom - top })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true });
  return data;
}

/**
 * Decodes the compared area of a capture: with a region, only the region's pixels are written
 * out (sharp cuts it before the raw output, so a small region of a long page costs a fraction
 * of the whole image's decoding and memory).
 */
export async function decodeArea(c: VisualCapture): Promise<DecodedArea> {
  if (!c.region) {
    const { data, info } = await sharp(c.image, { ignoreIcc: true, sequentialRead: true, limitInputPixels: false })
      .ensureAlpha()
      .raw()
      .toBuffer({ resolveWithObject: true });
    return { data, width: info.width, height: info.height, x: 0, y: 0, scale: c.frameWidth > 0 ? info.width / c.frameWidth : 1 };
  }
  const g = await areaGeometry(c);
  if (g.width === 0) return EMPTY_AREA(g.scale);
  return { data: await decodeRows(c, g, 0, g.height), ...g };
}

const printed = new WeakMap<DecodedArea, RowPrints>();

/**
 * The row prints of a decoded area (computed once per area). Each row's words are read in four
 * interleaved lanes, each a chain of xor-and-multiply by an odd constant: every step is a
 * bijection of the lane's state, so a row that differs from another in one word always prints
 * differently; rows that differ in several words print the same by chance only (about one in
 * 2^32 per word of print). About 14 ms for a 1920x10000 area, a tenth of decoding it.
 */
export function rowPrints(area: DecodedArea): RowPrints {
  const known = printed.get(area);
  if (known) return known;
  const prints = { width: area.width, words: new Uint32Array(area.height * 2) };
  printRows(area, prints.words, 0, area.height);
  printed.set(area, prints);
  return prints;
}

/** Prints rows y0 to y1 of the area into `words` (see rowPrints). */
function printRows(area: DecodedArea, words: Uint32Array, y0: number, y1: number): void {
  const px = new Int32Array(area.data.buffer, area.data.byteOffset, area.width * area.height);
  const w = area.width;
  for (let y = y0; y < y1; y++) {
    let a = 0x811c9dc5 | 0;
    let b = 0x01000193 | 0;
    let c = 0x9e3779b1 | 0;
    let d = 0x85ebca6b | 0;
    const end = (y + 1) * w;
    let i = y * w;
    for (; i + 3 < end; i += 4) {
      a = Math.imul(a ^ (px[i] as number), 0x01000193);
      b = Math.imul(b ^ (px[i + 1] as number), 0x5bd1e995);
      c = Math.imul(c ^ (px[i + 2] as number), 0x01000193);
      d = Math.imul(d ^ (px[i + 3] as number), 0x5bd1e995);
    }
    for (; i < end; i++) a = Math.imul(a ^ (px[i] as number), 0x01000193);
    words[2 * y] = Math.imul(a, 31) ^ b;
    words[2 * y + 1] = Math.imul(c, 31) ^ d;
  }
}

/**
 * The new capture's row prints from its baseline's, where memcmp found their rows the same
 * (rows `first` to `last` differ; both areas of one width): only the rows that differ, and those
 * below the baseline's, are printed. Nothing when the baseline has no prints yet.
 */
function inheritPrints(baseline: DecodedArea, area: DecodedArea, first: number, last: number): void {
  const theirs = printed.get(baseline);
  if (!theirs || printed.has(area) || baseline.width !== area.width) return;
  const common = Math.min(baseline.height, area.height);
  const words = new Uint32Array(area.height * 2);
  words.set(theirs.words.subarray(0, common * 2));
  if (first < common) printRows(area, words, first, Math.min(common, last + 1));
  printRows(area, words, common, area.height);
  printed.set(area, { width: area.width, words });
}

/** Row prints as text (base64), to keep with a baseline's record; and back. */
export function printsToText(p: RowPrints): { width: number; rows: string } {
  return { width: p.width, rows: Buffer.from(p.words.buffer, p.words.byteOffset, p.words.byteLength).toString('base64') };
}

export function printsFromText(t: { width: number; rows: string } | undefined): RowPrints | undefined {
  if (!t || typeof t.rows !== 'string' || !Number.isInteger(t.width)) return undefined;
  const bytes = Buffer.from(t.rows, 'base64');
  if (bytes.byteLength % 8 !== 0) return undefined;
  // Copied: a Uint32Array needs an aligned buffer.
  const words = new Uint32Array(bytes.byteLength / 4);
  Buffer.from(words.buffer).set(bytes);
  return { width: t.width, words };
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

/**
 * The diff image: the new capture faded to a quarter of its contrast over white, changed pixels
 * red, masked areas light grey; as PNG. Drawn off the event loop (visual-match.ts: diffPixels).
 */
export async function drawDiff(imgNew: Uint8Array, mask: Uint8Array, ignoreMask: Uint8Array | undefined, width: number, height: number): Promise<Buffer> {
  const out = await offThread('draw', {
    imgNew: ownPixels(imgNew),
    mask: ownPixels(mask),
    ...(ignoreMask ? { ignoreMask: ownPixels(ignoreMask) } : {}),
    width,
    height,
  });
  return sharp(Buffer.from(out.buffer, out.byteOffset, out.byteLength), { raw: { width, height, channels: 4 } })
    .png({ compressionLevel: 3, adaptiveFiltering: false })
    .toBuffer();
}

/** The size of a capture's compared area, from its decoded area or its image's header (no decoding). */
async function areaSize(c: VisualCapture): Promise<Size> {
  if (c.decoded) return { width: c.decoded.width, height: c.decoded.height };
  const g = await areaGeometry(c);
  return { width: g.width, height: g.height };
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

/**
 * The earlier capture's side of a comparison: its area's geometry and the rows of it that are
 * decoded (all of them, or, from its row prints, those that differ from the new capture's).
 */
interface BeforeRows {
  area: AreaGeometry;
  /** Its decoded area when all of it was decoded (the next comparison's baseline). */
  decoded: DecodedArea | null;
  /** Rows `top` to `top + rows` of the area, cut to the common width (RGBA). */
  top: number;
  data: Buffer;
  /** The band of rows of the common area that differ, by the row prints ([first, last]; first >= height: none). */
  first?: number;
  last?: number;
}

async function compareDecoded(before: VisualCapture, after: VisualCapture, tolerance: number): Promise<VisualComparison> {
  const b = after.decoded ?? (await decodeArea(after));
  const old = (await beforeByPrints(before, b)) ?? (await beforeWhole(before));
  const a = old.area;
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
      decodedBefore: old.decoded,
    };
  }
  const imgNew = cut(b, width, height);
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
  // pixelmatch runs over the band of rows that differ (memcmp finds it, or the row prints
  // found it), with BAND_MARGIN rows either side so its anti-aliasing check sees every
  // neighbour it reads: the same count as over the whole image, without a JavaScript pass over
  // still rows.
  const row = width * 4;
  let first = old.first ?? 0;
  let last = old.last ?? height - 1;
  const imgOld = old.decoded ? cut(old.decoded, width, height) : old.data;
  if (old.first === undefined) {
    const sameRow = (y: number) => imgNew.compare(imgOld, y * row, (y + 1) * row, y * row, (y + 1) * row) === 0;
    while (first < height && sameRow(first)) first++;
    while (last > first && sameRow(last)) last--;
    if (old.decoded) inheritPrints(old.decoded, b, first, last);
  }
  const top = Math.max(0, first - BAND_MARGIN);
  const bottom = first >= height ? top : Math.min(height, last + 1 + BAND_MARGIN);
  const bandHeight = bottom - top;
  // Only the changed pixels are drawn (a mask, 5x cheaper than pixelmatch's whole diff image),
  // over the band only, and the ignore mask is made for the band only; the diff image is drawn
  // from them and the new capture when an alert asks for it.
  // pixelmatch and the grouping into boxes run off the event loop (visual-match.ts): over a
  // page that changes everywhere they take seconds, which would stall every request of the process.
  const band =
    bandHeight > 0
      ? await offThread('match', {
          // The band's rows only, copied to be moved (the decoded captures stay here: the next comparison's baseline).
          imgNew: ownPixels(imgNew.subarray(top * row, bottom * row)),
          imgOld: ownPixels(imgOld.subarray((top - old.top) * row, (bottom - old.top) * row)),
          width,
          height: bandHeight,
          threshold: tolerance,
          ...(rects.length ? { ignoreMask: ownPixels(maskRows(rects, width, top, bottom)) } : {}),
        })
      : { changedPixels: 0, output: new Uint8Array(0), boxes: [] };
  const { changedPixels, output } = band;
  const comparedPixels = width * height - masked;
  const changedPercent = comparedPixels > 0 ? Math.round((changedPixels / comparedPixels) * 100_000) / 1000 : 0;
  const boxes = band.boxes.map((b) => ({ ...b, y: b.y + top }));
  return {
    changedPixels,
    comparedPixels,
    changedPercent,
    boxes,
    ...sizes,
    sizeChanged,
    diffPng: () => {
      const mask = Buffer.alloc(width * height * 4);
      mask.set(output, top * row);
      return drawDiff(imgNew, mask, rects.length ? maskRows(rects, width, 0, height) : undefined, width, height);
    },
    decodedAfter: b,
    decodedBefore: old.decoded,
  };
}

/** The earlier capture decoded whole (or given decoded), cut to the common width. */
async function beforeWhole(before: VisualCapture): Promise<BeforeRows> {
  const a = before.decoded ?? (await decodeArea(before));
  return { area: a, decoded: a, top: 0, data: a.data };
}

/**
 * The earlier capture's rows that differ from the new capture's by their prints, decoded with
 * BAND_MARGIN rows either side; nothing decoded when none differ. Null when its prints cannot
 * stand for its pixels (it is decoded, it has none, or they are of an area of another width or
 * height than its image's: a row print covers a whole row).
 */
async function beforeByPrints(before: VisualCapture, b: DecodedArea): Promise<BeforeRows | null> {
  if (before.decoded || !before.prints || before.prints.width !== b.width) return null;
  const area = await areaGeometry(before);
  const theirs = before.prints.words;
  if (area.width !== b.width || theirs.length / 2 !== area.height) return null;
  const ours = rowPrints(b).words;
  const height = Math.min(area.height, b.height);
  const same = (y: number) => theirs[2 * y] === ours[2 * y] && theirs[2 * y + 1] === ours[2 * y + 1];
  let first = 0;
  while (first < height && same(first)) first++;
  let last = height - 1;
  while (last > first && same(last)) last--;
  if (first >= height) return { area, decoded: null, top: 0, data: Buffer.alloc(0), first: height, last: height - 1 };
  const top = Math.max(0, first - BAND_MARGIN);
  const bottom = Math.min(height, last + 1 + BAND_MARGIN);
  return { area, decoded: null, top, data: await decodeRows(before, area, top, bottom), first, last };
}

/**
 * What the raster cache keeps of one capture: its image's bytes (to see a still page at once,
 * and not to read it from the store again) and its decoded area (null: only some of its rows
 * were decoded, by its row prints).
 */
export interface CachedRaster {
  image: Buffer;
  area: DecodedArea | null;
}

/**
 * The decoded areas of baselines, kept in the capture process between comparisons so that a
 * scheduled configuration's comparison decodes only its new capture (the baseline is usually
 * the capture before it, decoded by the last comparison). Bounded: at most `maxBytes` of
 * pixels and images, the least recently used dropped first; an area larger than the bound is
 * not kept. A miss (after a restart, or evicted) reads the baseline's image and decodes only
 * its rows that differ, by its row prints: the same result, at the cost of those rows.
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

  set(key: string, image: Buffer, area: DecodedArea | null): void {
    this.delete(key);
    const cost = image.byteLength + (area?.data.byteLength ?? 0);
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
    this.used -= e.image.byteLength + (e.area?.data.byteLength ?? 0);
  }
}
