import { expect } from 'chai';
import {
  type Block,
  STALL_FACTOR,
  addedCpuPerCapture,
  cpuRatioInterval,
  medianRatioInterval,
  percentile,
  stalledCapture,
  throughputRatioInterval,
} from '../../bench/stats';

/** Capture-like times: a deterministic spread around `median` (log-normal-ish, p95 about 1.3x the p50). */
function times(n: number, median: number, seed: number): number[] {
  let a = seed;
  const rand = () => {
    a = (a * 1103515245 + 12345) % 2147483648;
    return a / 2147483648;
  };
  return Array.from({ length: n }, () => {
    // Sum of uniforms: roughly normal, mean 0, sd 1.
    const z = Array.from({ length: 12 }, rand).reduce((x, y) => x + y, 0) - 6;
    return median * Math.exp(0.16 * z);
  });
}

const p50 = (xs: number[]) =>
  percentile(
    [...xs].sort((x, y) => x - y),
    0.5,
  );

/** The interval holds the measured ratio and, the two sides being alike, 1; at least `minWidth` wide and at most 0.2. */
function expectHoldsAndStraddlesOne(interval: { low: number; high: number }, measured: number, minWidth: number): void {
  expect(interval.low).to.be.at.most(measured);
  expect(interval.high).to.be.at.least(measured);
  expect(interval.low).to.be.below(1);
  expect(interval.high).to.be.above(1);
  expect(interval.high - interval.low).to.be.within(minWidth, 0.2);
}

describe('bench statistics', () => {
  it('percentile is the nearest rank', () => {
    const sorted = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100];
    expect(percentile(sorted, 0.5)).to.equal(50);
    expect(percentile(sorted, 0.95)).to.equal(100);
    expect(percentile(sorted, 0.1)).to.equal(10);
    expect(percentile([], 0.5)).to.be.NaN;
  });

  it('the interval of a p50 ratio holds the measured ratio and, for the same distribution, 1', () => {
    const base = times(100, 400, 1);
    const over = times(100, 400, 2);
    // About ±5% with 100 samples of this spread: neither a point nor everything.
    expectHoldsAndStraddlesOne(medianRatioInterval(base, over), p50(over) / p50(base), 0.03);
  });

  it('narrows with more samples, and keeps a real 30% gap clear of 1.1', () => {
    const small = medianRatioInterval(times(25, 400, 3), times(25, 400, 4));
    const large = medianRatioInterval(times(400, 400, 3), times(400, 400, 4));
    expect(large.high - large.low).to.be.below((small.high - small.low) * 0.7);
    const slower = medianRatioInterval(times(200, 400, 5), times(200, 520, 6));
    expect(slower.low).to.be.above(1.1);
    expect(slower.high).to.be.below(1.5);
  });

  it('gives the same interval for the same samples (a report can be checked again)', () => {
    const base = times(60, 300, 7);
    const over = times(60, 320, 8);
    expect(medianRatioInterval(base, over)).to.deep.equal(medianRatioInterval(base, over));
    expect(medianRatioInterval([], over).low).to.be.NaN;
  });

  it('flags a cell whose slowest capture took more than STALL_FACTOR times its p50', () => {
    const cell = times(60, 400, 9);
    expect(stalledCapture(cell)).to.equal(null);
    const stalled = [...cell.slice(1), 40_000];
    expect(stalledCapture(stalled)).to.equal(40_000);
    // Just under the factor is a slow capture, not a stall.
    const slow = [...cell.slice(1), (STALL_FACTOR - 0.5) * p50(cell)];
    expect(stalledCapture(slow)).to.equal(null);
    expect(stalledCapture([5])).to.equal(null);
  });
  /** Blocks of 16 captures at `perSecond`, each block's time spread by about ±8% (deterministic). */
  const blocksAt = (n: number, perSecond: number, seed: number): Block[] =>
    times(n, 1, seed).map((f) => ({ captures: 16, ms: (16 / perSecond) * 1000 * Math.sqrt(f) }));
  const rateOf = (blocks: Block[]) => blocks.reduce((a, b) => a + b.captures, 0) / blocks.reduce((a, b) => a + b.ms, 0);

  it('the interval of a throughput ratio holds the measured ratio and, for the same rate, 1', () => {
    const base = blocksAt(10, 7, 11);
    const over = blocksAt(10, 7, 12);
    const interval = throughputRatioInterval(base, over);
    expectHoldsAndStraddlesOne(interval, rateOf(over) / rateOf(base), 0.02);
    expect(throughputRatioInterval(base, over)).to.deep.equal(interval);
    expect(throughputRatioInterval([], over).low).to.be.NaN;
  });

  it('pairs the blocks by round: drift that moves both sides of a round leaves the interval narrow, and a real 15% gap stays clear of 0.9', () => {
    // Every round's blocks slowed by the same factor on both sides (the machine got busier, then quieter).
    const drift = [1, 1.3, 0.8, 1.5, 1, 0.7, 1.2, 1.4, 0.9, 1.1];
    const base = drift.map((d) => ({ captures: 16, ms: 2000 * d }));
    const over = drift.map((d, i) => ({ captures: 16, ms: 2000 * d * (i % 2 ? 1.16 : 1.19) }));
    const { low, high } = throughputRatioInterval(base, over);
    expect(high).to.be.below(0.9);
    expect(low).to.be.above(0.8);
    // Resampled unpaired, the same drift would have spread it far wider.
    expect(high - low).to.be.below(0.03);
  });

  it('the CPU one side adds per capture: the measured difference inside its interval, 0 inside it for alike sides, a real 20 ms gap clear of 5', () => {
    const cpu = (n: number, msPerCapture: number, seed: number): Block[] =>
      times(n, 1, seed).map((f) => ({ captures: 4, ms: 1000, machineCpuMs: 4 * msPerCapture * f }));
    const base = cpu(40, 300, 21);
    const alike = cpu(40, 300, 22);
    const same = addedCpuPerCapture(base, alike);
    expect(same.low).to.be.at.most(same.added);
    expect(same.high).to.be.at.least(same.added);
    expect(same.low).to.be.below(0);
    expect(same.high).to.be.above(0);
    const over = base.map((b) => ({ ...b, machineCpuMs: (b.machineCpuMs as number) + 4 * 20 }));
    const gap = addedCpuPerCapture(base, over);
    expect(gap.added).to.be.closeTo(20, 1e-9);
    expect(gap.low).to.be.above(5);
    expect(addedCpuPerCapture([], over).added).to.be.NaN;
  });

  it('the ratio of CPU per capture: the measured ratio inside its interval, 1 inside it for alike sides, a real 30% gap clear of 1.15', () => {
    const cpu = (n: number, msPerCapture: number, seed: number): Block[] =>
      times(n, 1, seed).map((f) => ({ captures: 4, ms: 1000, machineCpuMs: 4 * msPerCapture * f }));
    const base = cpu(40, 300, 31);
    const same = cpuRatioInterval(base, cpu(40, 300, 32));
    expect(same.low).to.be.at.most(same.ratio);
    expect(same.high).to.be.at.least(same.ratio);
    expect(same.low).to.be.below(1);
    expect(same.high).to.be.above(1);
    // Drift that moved a whole round moves both sides' blocks of it: the paired interval stays narrow.
    const over = base.map((b) => ({ ...b, machineCpuMs: (b.machineCpuMs as number) * 1.3 }));
    const gap = cpuRatioInterval(base, over);
    expect(gap.ratio).to.be.closeTo(1.3, 1e-9);
    expect(gap.low).to.be.above(1.15);
    expect(gap.high - gap.low).to.be.below(0.01);
    expect(cpuRatioInterval([], over).ratio).to.be.NaN;
  });
});
