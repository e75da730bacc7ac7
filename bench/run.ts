/**
 * What every bench script shares: the shape of its captures (viewport, format, quality, and
 * the /snap parameters that ask for them), stopping everything it started on SIGINT/SIGTERM,
 * and writing its report into docs/benchmark.md on a full run only.
 */
import fs from 'node:fs';
import path from 'node:path';

export const VIEWPORT = { width: 1280, height: 800 };
export const FORMAT = 'jpeg';
export const QUALITY = 80;

/** A positive integer from the environment variable `name`, or `fallback` when it is unset. */
export function envPositiveInt(name: string, fallback: number): number {
  const raw = process.env[name]?.trim();
  if (!raw) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return Number(raw);
}

/** The members of `all` an environment list names (all of them when it is unset). */
export function envSubset<T extends string | number>(name: string, all: readonly T[]): T[] {
  const raw = process.env[name]?.trim();
  if (!raw) return [...all];
  const names = raw.split(',').map((p) => p.trim());
  const unknown = names.filter((n) => !all.some((a) => String(a) === n));
  if (unknown.length) throw new Error(`${name} takes some of ${all.join(',')}, got "${raw}"`);
  return all.filter((a) => names.includes(String(a)));
}

/** A bench's /snap query: the page at `url`, fresh (wait 0, ttl 0), in the bench's shape, with `extra` options. */
export function snapQuery(accessToken: string, url: string, extra: Record<string, string> = {}): URLSearchParams {
  return new URLSearchParams({
    access_token: accessToken,
    url,
    wait: '0',
    ttl: '0',
    page_width: String(VIEWPORT.width),
    page_height: String(VIEWPORT.height),
    image_format: FORMAT,
    quality: String(QUALITY),
    ...extra,
  });
}

/** A load average (1 min) above this at a run's start means other work shares the machine (2 cores). */
const BUSY_LOAD = 1.5;

/**
 * A run's load averages (1 min) at its start and end, and a warning when the machine was busy
 * as the run began: other work was running then. The load at the end is the bench's own (it
 * keeps both cores busy), so it says nothing about other work.
 */
export function loadNote(start: number, end: number, what = 'the machine-wide figures are noisy'): string {
  const busy = start > BUSY_LOAD ? ` — **a busy machine: other work was running as the run began, so ${what}**` : '';
  return `Load average (1 min) at the start and at the end: ${start.toFixed(2)} / ${end.toFixed(2)}${busy}.`;
}

/**
 * On SIGINT or SIGTERM: `abort` (optional), then `cleanup`, then exit 130. Returns the
 * function that removes the handlers (call it once the script cleaned up by itself).
 */
export function stopOnSignals(cleanup: () => Promise<void>, progress: (msg: string) => void, abort?: () => void): () => void {
  const onSignal = (signal: NodeJS.Signals) => {
    progress(`${signal}: stopping everything`);
    abort?.();
    void cleanup().then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return () => {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  };
}

/**
 * A bench script's main: `body` pushes onto `cleanups` how to stop whatever it starts; they run
 * in reverse order at the end, on failure, and on SIGINT or SIGTERM (`stopping()` turns true
 * first). A failure is printed and the process exits 1 (after 10 s at most, should a start-up
 * that timed out still hold the event loop).
 */
export function runBench(tag: string, body: (cleanups: Array<() => Promise<void>>, stopping: () => boolean) => Promise<void>): void {
  const progress = (msg: string) => process.stderr.write(`[${tag}] ${msg}\n`);
  const cleanups: Array<() => Promise<void>> = [];
  let cleaning: Promise<void> | null = null;
  const cleanup = () => {
    cleaning ??= (async () => {
      for (const fn of cleanups.splice(0).reverse()) await fn().catch((err: Error) => progress(`cleanup: ${err.message}`));
    })();
    return cleaning;
  };
  let stopped = false;
  const removeSignalHandlers = stopOnSignals(cleanup, progress, () => {
    stopped = true;
  });
  const run = async () => {
    try {
      await body(cleanups, () => stopped);
    } finally {
      await cleanup();
      removeSignalHandlers();
    }
  };
  run().catch((err: Error) => {
    progress(`FAILED: ${err.stack ?? err.message}`);
    process.exitCode = 1;
    setTimeout(() => process.exit(1), 10_000).unref();
  });
}

/** The page the results go to: docs/benchmark.md, whose "Current results" hold one block per bench. */
export const BENCH_DOC = path.resolve(__dirname, '..', '..', 'docs', 'benchmark.md');

/** The benches, each with its block in docs/benchmark.md. */
export type ResultsSection =
  | 'snap'
  | 'mix'
  | 'soak'
  | 'lists'
  | 'ttl'
  | 'stack'
  | 'stackmix'
  | 'fairness'
  | 'failures'
  | 'encoder'
  | 'visual'
  | 'gateway'
  | 'guard';

/** The two lines that bound a bench's block in docs/benchmark.md. */
export function resultsMarkers(section: ResultsSection): { begin: string; end: string } {
  return { begin: `<!-- results:${section}:begin (written by npm run bench; edit the bench, not this block) -->`, end: `<!-- results:${section}:end -->` };
}

/** The heading level a report's own top heading takes in the doc (under "## Current results"). */
const REPORT_TOP_LEVEL = 3;

/** A report's Markdown with its headings moved down so that its top one is level 3. */
export function nestHeadings(report: string): string {
  const levels = [...report.matchAll(/^(#{1,6}) /gm)].map((m) => m[1]!.length);
  if (!levels.length) return report;
  const shift = REPORT_TOP_LEVEL - Math.min(...levels);
  return report.replace(/^(#{1,6}) /gm, (_m, hashes: string) => `${'#'.repeat(Math.min(6, hashes.length + shift))} `);
}

/**
 * `doc` with the block between `section`'s markers replaced by `report` (headings nested).
 * Everything outside the markers is kept byte for byte. Throws when the markers are not there
 * exactly once each, in order: a run's figures are never written to the wrong place.
 */
export function withResults(doc: string, section: ResultsSection, report: string): string {
  const { begin, end } = resultsMarkers(section);
  const at = (marker: string) => {
    const first = doc.indexOf(marker);
    if (first === -1 || doc.indexOf(marker, first + 1) !== -1) {
      throw new Error(`docs/benchmark.md must hold the line "${marker}" exactly once (found ${first === -1 ? 'none' : 'more'})`);
    }
    return first;
  };
  const from = at(begin) + begin.length;
  const to = at(end);
  if (to < from) throw new Error(`docs/benchmark.md: the end marker of "${section}" comes before its begin marker`);
  return `${doc.slice(0, from)}\n\n${nestHeadings(report.trim())}\n\n${doc.slice(to)}`;
}

/**
 * Prints the report; a full run also writes it into its block of docs/benchmark.md (`doc`),
 * so the page's current table is always the last full run's. A reduced run leaves the page as it was.
 */
export function publishResults(section: ResultsSection, text: string, fullRun: boolean, progress: (msg: string) => void, doc = BENCH_DOC): void {
  process.stdout.write(`${text}\n`);
  const shown = path.relative(process.cwd(), doc) || doc;
  if (fullRun) {
    fs.writeFileSync(doc, withResults(fs.readFileSync(doc, 'utf8'), section, text));
    progress(`written to ${shown} (its "${section}" results)`);
  } else {
    progress(`a reduced run: ${shown} left as it was`);
  }
}
