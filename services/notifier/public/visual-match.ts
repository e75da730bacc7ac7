/**
 * The CPU-bound part of a visual comparison (visual-diff.ts), run off the event loop: pixelmatch
 * over the band of rows that differ, the grouping of its changed pixels into boxes, and the diff
 * image's pixels. Over a tall page that changes everywhere (1920x16000 of noise) they take about
 * 19 s of CPU; on the event loop of the process that also answers /snap (the embedded default)
 * every other account's requests waited for them. Here they run in a worker thread of a pool of
 * one (Piscina, a maintained worker pool: a queue, a thread started on demand and ended when
 * idle), so the event loop stays free; the CPU is still spent, a comparison at a time.
 */
import path from 'node:path';
import pixelmatch from 'pixelmatch';
import { Piscina } from 'piscina';
import type { Rect } from './change-alerts';

/** Side of the cells changed pixels are grouped by, in image pixels. */
export const BOX_CELL = 16;
/** Most boxes an alert lists (the largest ones). */
export const MAX_BOXES = 50;
/** A pool's thread with no comparison for this long ends (a capture process compares now and then). */
const IDLE_MS = 30_000;

/** pixelmatch over one band of rows: the new and old pixels (RGBA, `width` x `height`), its threshold, the pixels to ignore. */
export interface MatchTask {
  imgNew: Uint8Array;
  imgOld: Uint8Array;
  width: number;
  height: number;
  threshold: number;
  ignoreMask?: Uint8Array;
}

/** Its changed pixels, pixelmatch's diff mask (changed pixels opaque red) and their boxes (in the band's rows). */
export interface MatchResult {
  changedPixels: number;
  output: Uint8Array;
  boxes: Rect[];
}

/** The diff image's pixels: the new capture, the diff mask, the pixels masked. */
export interface DrawTask {
  imgNew: Uint8Array;
  mask: Uint8Array;
  ignoreMask?: Uint8Array;
  width: number;
  height: number;
}

export function matchBand(t: MatchTask): MatchResult {
  const output = new Uint8Array(t.width * t.height * 4);
  const changedPixels = pixelmatch(t.imgNew, t.imgOld, output, t.width, t.height, {
    threshold: t.threshold,
    diffMask: true,
    ...(t.ignoreMask ? { ignoreMask: t.ignoreMask } : {}),
  });
  return { changedPixels, output, boxes: changedPixels > 0 ? changedBoxes(output, t.width, t.height) : [] };
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

/** The diff image's pixels (RGBA): the new capture faded to a quarter of its contrast over white, changed pixels red, masked ones light grey. */
export function diffPixels(t: DrawTask): Uint8Array {
  const { imgNew, mask, ignoreMask, width, height } = t;
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
  return out;
}

/** The work each task names, as the worker runs it (visual-match-worker.ts). */
export const TASKS = { match: matchBand, draw: diffPixels };
type Tasks = typeof TASKS;

let pool: Piscina | null = null;

/**
 * Runs a task in the pool's thread (started on demand), never on the event loop. Its pixel
 * arrays are moved to the thread, not copied: each must own its whole ArrayBuffer (ownPixels),
 * since a view is sent with all of the memory behind it (a band of rows of a decoded capture
 * would send the whole capture), and a moved buffer is gone from this thread.
 */
export function offThread<K extends keyof Tasks>(name: K, task: Parameters<Tasks[K]>[0]): Promise<ReturnType<Tasks[K]>> {
  pool ??= new Piscina({ filename: path.join(__dirname, 'visual-match-worker.js'), minThreads: 0, maxThreads: 1, idleTimeout: IDLE_MS });
  const transferList = Object.values(task)
    .filter((v): v is Uint8Array => v instanceof Uint8Array)
    .map((v) => v.buffer as ArrayBuffer);
  return pool.run(task, { name, transferList });
}

/** A copy of `pixels` that owns its ArrayBuffer, to be moved to the pool's thread (offThread). */
export function ownPixels(pixels: Uint8Array): Uint8Array {
  return new Uint8Array(pixels);
}

/** Ends the pool's thread (a stopping process); the next task starts another. */
export async function closeOffThread(): Promise<void> {
  const running = pool;
  pool = null;
  await running?.destroy();
}
