/**
 * The bench's statistics, kept apart from the measuring so they can be tested: percentiles,
 * how firm a ratio of two medians or of two throughputs is, and whether a cell had a capture
 * that stalled.
 */

/** Nearest-rank percentile of ascending samples (NaN when there are none). */
export function percentile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

/** A small deterministic generator (mulberry32), so a report's intervals are the same for the same samples. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The median of `n` draws with replacement from `samples`. */
function resampledMedian(samples: readonly number[], draw: () => number, scratch: number[]): number {
  for (let i = 0; i < samples.length; i++) scratch[i] = samples[Math.floor(draw() * samples.length)]!;
  scratch.sort((x, y) => x - y);
  return percentile(scratch, 0.5);
}

/** The central 95% of resampled ratios: their 2.5th and 97.5th percentiles. */
function central95(ratios: number[]): { low: number; high: number } {
  ratios.sort((x, y) => x - y);
  return { low: percentile(ratios, 0.025), high: percentile(ratios, 0.975) };
}

/**
 * A 95% interval for p50(over) / p50(base), by bootstrap: both sides resampled with replacement
 * `rounds` times, the 2.5th and 97.5th percentiles of the resampled ratios. It says how far the
 * ratio the run shows could move with other samples of the same two distributions; it does not
 * cover drift that fell on one side only.
 */
export function medianRatioInterval(base: readonly number[], over: readonly number[], rounds = 2000, seed = 1): { low: number; high: number } {
  if (base.length === 0 || over.length === 0) return { low: Number.NaN, high: Number.NaN };
  const draw = seeded(seed);
  const a: number[] = new Array(base.length);
  const b: number[] = new Array(over.length);
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) ratios.push(resampledMedian(over, draw, b) / resampledMedian(base, draw, a));
  return central95(ratios);
}

/** A block of captures run back to back: how many, how long the block took, and the whole machine's CPU meanwhile when measured. */
export interface Block {
  captures: number;
  ms: number;
  machineCpuMs?: number;
}

const rate = (blocks: readonly Block[], picks: readonly number[]): number => {
  let captures = 0;
  let ms = 0;
  for (const i of picks) {
    captures += blocks[i]!.captures;
    ms += blocks[i]!.ms;
  }
  return captures / ms;
};

/**
 * A 95% interval for the throughput ratio rate(over) / rate(base), where each side ran in
 * blocks taking turns (block i of one side beside block i of the other): the rounds are
 * resampled with replacement `rounds` times, both sides' blocks of a drawn round together,
 * so drift that fell on a round moves both. Like medianRatioInterval, it says how far the
 * ratio could move with other rounds of the same run, nothing about another machine.
 */
export function throughputRatioInterval(base: readonly Block[], over: readonly Block[], rounds = 2000, seed = 1): { low: number; high: number } {
  const n = Math.min(base.length, over.length);
  if (n === 0) return { low: Number.NaN, high: Number.NaN };
  const draw = seeded(seed);
  const picks: number[] = new Array(n);
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < n; i++) picks[i] = Math.floor(draw() * n);
    ratios.push(rate(over, picks) / rate(base, picks));
  }
  return central95(ratios);
}

const cpuPerCapture = (blocks: readonly Block[], picks: readonly number[]): number => {
  let captures = 0;
  let cpu = 0;
  for (const i of picks) {
    captures += blocks[i]!.captures;
    cpu += blocks[i]!.machineCpuMs ?? Number.NaN;
  }
  return cpu / captures;
};

/**
 * The machine's CPU per capture that `over` adds to `base` (ms: cpu(over) / captures(over) less
 * the same of base), with a 95% interval from the rounds resampled as throughputRatioInterval
 * does (both sides' blocks of a drawn round together). Every block needs its machineCpuMs.
 */
export function addedCpuPerCapture(base: readonly Block[], over: readonly Block[], rounds = 2000, seed = 1): { added: number; low: number; high: number } {
  const n = Math.min(base.length, over.length);
  if (n === 0) return { added: Number.NaN, low: Number.NaN, high: Number.NaN };
  const all = Array.from({ length: n }, (_, i) => i);
  const draw = seeded(seed);
  const picks: number[] = new Array(n);
  const diffs: number[] = [];
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < n; i++) picks[i] = Math.floor(draw() * n);
    diffs.push(cpuPerCapture(over, picks) - cpuPerCapture(base, picks));
  }
  return { added: cpuPerCapture(over, all) - cpuPerCapture(base, all), ...central95(diffs) };
}

/** How many times its cell's p50 a capture may take before the cell is reported as having stalled. */
export const STALL_FACTOR = 10;

/** The slowest capture of a cell when it took more than STALL_FACTOR times the cell's p50 (its figures then mislead), else null. */
export function stalledCapture(samples: readonly number[]): number | null {
  if (samples.length < 2) return null;
  const sorted = [...samples].sort((x, y) => x - y);
  const slowest = sorted[sorted.length - 1]!;
  return slowest > STALL_FACTOR * percentile(sorted, 0.5) ? slowest : null;
}

/**
 * The ratio of CPU per capture, over / base (each side's machineCpuMs summed over its blocks,
 * divided by its captures), with a 95% interval from the rounds resampled as
 * throughputRatioInterval does (both sides' blocks of a drawn round together).
 */
export function cpuRatioInterval(base: readonly Block[], over: readonly Block[], rounds = 2000, seed = 1): { ratio: number; low: number; high: number } {
  const n = Math.min(base.length, over.length);
  if (n === 0) return { ratio: Number.NaN, low: Number.NaN, high: Number.NaN };
  const all = Array.from({ length: n }, (_, i) => i);
  const draw = seeded(seed);
  const picks: number[] = new Array(n);
  const ratios: number[] = [];
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < n; i++) picks[i] = Math.floor(draw() * n);
    ratios.push(cpuPerCapture(over, picks) / cpuPerCapture(base, picks));
  }
  return { ratio: cpuPerCapture(over, all) / cpuPerCapture(base, all), ...central95(ratios) };
}
