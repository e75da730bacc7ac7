/**
 * Checks of the picture itself, for the quality corpus: colours at known places, regions
 * that are not blank or not one colour, saturated colour (emoji), and text that differs from
 * the missing-glyph box ("tofu"). Each check throws an Error saying what it saw and what it
 * expected, with the place (CSS px of a picture taken at scale_factor 1).
 */
import sharp from 'sharp';
import type { Rgb } from './page';

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface Picture {
  width: number;
  height: number;
  at(x: number, y: number): Rgb;
}

export async function decodePicture(image: Buffer): Promise<Picture> {
  const { data, info } = await sharp(image, { limitInputPixels: false }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const { width, height, channels } = info;
  return {
    width,
    height,
    at(x, y) {
      if (x < 0 || y < 0 || x >= width || y >= height) throw new Error(`(${x},${y}) is outside the ${width}x${height} picture`);
      const i = (y * width + x) * channels;
      return [data[i]!, data[i + 1]!, data[i + 2]!];
    },
  };
}

export const rgb = (c: Rgb): string => `rgb(${c.join(',')})`;

const near = (a: Rgb, b: Rgb, tolerance: number) => a.every((v, i) => Math.abs(v - b[i]!) <= tolerance);

export function expectSize(p: Picture, width: number, height: number): void {
  if (p.width !== width || p.height !== height) throw new Error(`picture is ${p.width}x${p.height}, expected ${width}x${height}`);
}

/** The pixel at (x, y) is `want` (each channel within `tolerance`). */
export function expectColour(p: Picture, x: number, y: number, want: Rgb, label: string, tolerance = 10): void {
  const seen = p.at(x, y);
  if (!near(seen, want, tolerance)) throw new Error(`${label}: at (${x},${y}) saw ${rgb(seen)}, expected ${rgb(want)}`);
}

/** The pixel at (x, y) is not `unwanted`. */
export function expectNotColour(p: Picture, x: number, y: number, unwanted: Rgb, label: string, tolerance = 10): void {
  const seen = p.at(x, y);
  if (near(seen, unwanted, tolerance)) throw new Error(`${label}: at (${x},${y}) saw ${rgb(seen)}, expected anything else`);
}

/** Every pixel of the box is `want`, looked at every `step` px. */
export function expectFilled(p: Picture, b: Box, want: Rgb, label: string, step = 10, tolerance = 10): void {
  for (let y = b.y; y < b.y + b.h; y += step) {
    for (let x = b.x; x < b.x + b.w; x += step) expectColour(p, x, y, want, label, tolerance);
  }
}

/** Rows (every `step` px) of the column at x, inside [from, to), whose pixel is `colour`. */
export function rowsOf(p: Picture, x: number, colour: Rgb, from: number, to: number, step = 10, tolerance = 10): number[] {
  const rows: number[] = [];
  for (let y = from; y < Math.min(to, p.height); y += step) if (near(p.at(x, y), colour, tolerance)) rows.push(y);
  return rows;
}

/** A pixel is ink when a channel differs from the background by more than this. */
const INK = 48;

const isInk = (c: Rgb, bg: Rgb) => c.some((v, i) => Math.abs(v - bg[i]!) > INK);

/** How much of a box is ink, its bounds, and how much of the ink is saturated colour. */
export interface RegionStats {
  pixels: number;
  ink: number;
  /** Ink pixels of saturated colour (HSV saturation >= 0.45, value >= 0.3): emoji, photos; not black text or grey boxes. */
  saturated: number;
  /** Distinct colours (exact RGB). */
  colours: number;
  /** The ink's bounds (null: none). */
  bounds: Box | null;
}

export function regionStats(p: Picture, b: Box, bg: Rgb = [255, 255, 255]): RegionStats {
  let ink = 0;
  let saturated = 0;
  const colours = new Set<number>();
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -1;
  let y1 = -1;
  for (let y = b.y; y < b.y + b.h; y++) {
    for (let x = b.x; x < b.x + b.w; x++) {
      const c = p.at(x, y);
      colours.add((c[0] << 16) | (c[1] << 8) | c[2]);
      if (!isInk(c, bg)) continue;
      ink++;
      x0 = Math.min(x0, x);
      y0 = Math.min(y0, y);
      x1 = Math.max(x1, x);
      y1 = Math.max(y1, y);
      const max = Math.max(...c);
      const min = Math.min(...c);
      if (max >= 77 && (max - min) / max >= 0.45) saturated++;
    }
  }
  return {
    pixels: b.w * b.h,
    ink,
    saturated,
    colours: colours.size,
    bounds: x1 >= 0 ? { x: x0, y: y0, w: x1 - x0 + 1, h: y1 - y0 + 1 } : null,
  };
}

const where = (b: Box) => `${b.w}x${b.h} at (${b.x},${b.y})`;

/** The box is not blank: at least `minFraction` of it is ink (differs from `bg`). */
export function expectInk(p: Picture, b: Box, label: string, minFraction = 0.002, bg: Rgb = [255, 255, 255]): RegionStats {
  const s = regionStats(p, b, bg);
  if (s.ink < Math.max(1, s.pixels * minFraction)) {
    throw new Error(`${label}: the ${where(b)} box is blank (${s.ink} of ${s.pixels} pixels differ from ${rgb(bg)}; expected at least ${minFraction * 100}%)`);
  }
  return s;
}

/** The box is blank (no pixel differs from `bg`). */
export function expectBlank(p: Picture, b: Box, label: string, bg: Rgb = [255, 255, 255]): void {
  const s = regionStats(p, b, bg);
  if (s.ink > 0)
    throw new Error(`${label}: the ${where(b)} box has ${s.ink} pixels that are not ${rgb(bg)} (first in ${JSON.stringify(s.bounds)}), expected none`);
}

/** The box is not a single colour (at least `min` distinct colours). */
export function expectNotSingleColour(p: Picture, b: Box, label: string, min = 2): void {
  const s = regionStats(p, b);
  if (s.colours < min) throw new Error(`${label}: the ${where(b)} box has ${s.colours} colour(s) (${rgb(p.at(b.x, b.y))}), expected at least ${min}`);
}

/** Colour, not black and white: at least `minFraction` of the box's ink is saturated (a colour emoji, not a monochrome glyph or a box). */
export function expectSaturated(p: Picture, b: Box, label: string, minFraction = 0.3): RegionStats {
  const s = regionStats(p, b);
  if (s.ink === 0) throw new Error(`${label}: the ${where(b)} box is blank, expected a colour glyph`);
  if (s.saturated < s.ink * minFraction) {
    throw new Error(
      `${label}: ${s.saturated} of the ${s.ink} ink pixels in the ${where(b)} box are coloured (${((100 * s.saturated) / s.ink).toFixed(0)}%), expected at ` +
        `least ${minFraction * 100}% (a colour glyph, not a black one or a box)`,
    );
  }
  return s;
}

/**
 * How unlike two boxes of the same size are: of the pixels that are ink in either, the share
 * that is ink in one and not the other, or whose grey levels differ by more than INK. 0 for
 * two identical crops (two missing-glyph boxes), near 1 for two unrelated glyphs.
 */
export function unlikeness(p: Picture, a: Box, b: Box, bg: Rgb = [255, 255, 255]): number {
  let either = 0;
  let differ = 0;
  const grey = (c: Rgb) => (c[0] + c[1] + c[2]) / 3;
  for (let dy = 0; dy < Math.min(a.h, b.h); dy++) {
    for (let dx = 0; dx < Math.min(a.w, b.w); dx++) {
      const ca = p.at(a.x + dx, a.y + dy);
      const cb = p.at(b.x + dx, b.y + dy);
      const ia = isInk(ca, bg);
      const ib = isInk(cb, bg);
      if (!ia && !ib) continue;
      either++;
      if (ia !== ib || Math.abs(grey(ca) - grey(cb)) > INK) differ++;
    }
  }
  return either === 0 ? 0 : differ / either;
}

/** Boxes at least this unlike are different drawings (measured: two tofu boxes 0, two glyphs of a script 0.5 and more). */
export const UNLIKE = 0.25;

/**
 * Text of a script is drawn with real glyphs: each sample cell (one character each) has ink,
 * is unlike every missing-glyph cell (the same font size and box, characters no font has),
 * and unlike every other sample cell (missing glyphs all look alike). The missing-glyph cells
 * must look alike themselves, or they are no reference.
 */
export function expectGlyphs(p: Picture, samples: Array<{ char: string; box: Box }>, tofu: Box[], label: string): void {
  for (let i = 1; i < tofu.length; i++) {
    const u = unlikeness(p, tofu[0]!, tofu[i]!);
    if (u >= UNLIKE) throw new Error(`${label}: the missing-glyph reference cells differ from each other (${u.toFixed(2)}), so they are no reference`);
  }
  const problems: string[] = [];
  for (const [i, s] of samples.entries()) {
    const st = regionStats(p, s.box);
    if (st.ink === 0) {
      problems.push(`${s.char} is blank`);
      continue;
    }
    const asTofu = Math.min(...tofu.map((t) => unlikeness(p, s.box, t)));
    if (asTofu < UNLIKE) {
      problems.push(`${s.char} looks like the missing-glyph box (unlikeness ${asTofu.toFixed(2)})`);
      continue;
    }
    for (const other of samples.slice(0, i)) {
      const u = unlikeness(p, s.box, other.box);
      if (u < UNLIKE) problems.push(`${s.char} looks like ${other.char} (unlikeness ${u.toFixed(2)})`);
    }
  }
  if (problems.length) throw new Error(`${label}: ${problems.join('; ')}`);
}

/**
 * One glyph, in colour: the cell's ink is saturated and at most `maxWidth` px wide. A flag
 * drawn as its two regional-indicator letters, or a ZWJ sequence drawn as its parts side by
 * side, is two or more glyphs wide; drawn without a colour font, it is not coloured.
 */
export function expectOneColourGlyph(p: Picture, cell: Box, label: string, maxWidth: number): void {
  const s = expectSaturated(p, cell, label);
  const b = s.bounds!;
  if (b.w > maxWidth) throw new Error(`${label}: its ink is ${b.w} px wide, expected one glyph, at most ${maxWidth} px wide`);
}
