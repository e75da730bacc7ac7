/**
 * `npm run bench`: how far GET /snap is from what the browser itself needs.
 *
 * One run starts a standalone Selenium Grid (grid/grid.js), a local page server in a process of
 * its own, as a target site is (bench/pages.ts), and then:
 *
 *   (a) the floor, first and alone: N WebDriver sessions on that Grid (N = concurrency, opened
 *       exactly like the capture service opens its own: launchSession), each with one target
 *       in its own browser context, attached over the browser-level CDP socket (by GRID_CDP) in
 *       flat mode, with the same viewport. One iteration = Page.navigate, wait for
 *       Page.loadEventFired, the row's complete work (below), Page.captureScreenshot (same
 *       format and quality as /snap). The same tab is reused.
 *   (c) the isolated floor: raw CDP doing exactly the browser work DESIGN.md section 4
 *       requires of every capture, and nothing of ours, on as many Grid sessions as the
 *       service gets (4). Each capture takes an idle browser whose page is ready: a fresh
 *       browser context and window (created, attached, Page.enable, viewport) prepared in the
 *       background after that browser's previous capture, once its used context was disposed.
 *       Then the same navigate, load event, complete work and screenshot as (a). It shows what
 *       isolation itself costs, and so how close any implementation of the design can come to
 *       (a) on this machine.
 *   (b) GET /snap end to end over HTTP against the real system started in this process
 *       (startSystem: SQLite in a temp DATA_DIR, the same Grid, 4 capture sessions), with
 *       wait=0 and ttl=0 (always a fresh capture) and the row's options, timed until the whole
 *       body is read.
 *   (d) the same GET /snap on a second system beside it with EGRESS_GATEWAY=off, at
 *       concurrency 1 and 4: what the egress gateway costs (BENCH_GATEWAY_COMPARE=0 skips it).
 *
 * (b), (c) and (d) are up at once and each cell runs in alternating blocks (isolated, snap,
 * no gateway, then no gateway, snap, isolated, …: runAlternated; at concurrency 1 a block is
 * one capture), so that drift in the machine's speed, large on a shared virtual machine,
 * falls on every side alike and their ratios compare like with like.
 *
 * The rows (ROWS): simple and heavy (a viewport capture); script (content that arrives by script
 * after load: /snap with wait_for, the floors wait until the selector matches); long (10 000 px,
 * ten lazy images: /snap with fullpage, the floors grow the viewport to the document's height by
 * device metrics, wait until every image has loaded, measure again and capture the full height);
 * and long with fullpage_advanced (/snap only, against the long page's floors, at concurrency 1).
 *
 * For each row and concurrency (1, 2, 4): warm-up iterations (not counted), then a fixed number
 * of iterations spread over `concurrency` workers (for (b)-(d), in blocks per side). Reported: p50 and p95 latency, captures per
 * second (completed captures / wall time of the cell) and CPU time per capture (the whole
 * machine's, from /proc/stat, and this process's share), side by side, with the ratios and a
 * verdict per target (TARGETS: against the isolated floor, DESIGN.md section 4 and issue 11),
 * each p50 ratio with its 95% bootstrap interval (stats.ts), and any cell in which a capture
 * stalled. The table goes to stdout and, for a full run, into docs/benchmark.md (its "snap" results);
 * progress goes to stderr.
 *
 * Environment (a run with fewer pages or concurrencies prints its table but leaves
 * docs/benchmark.md alone):
 *   BENCH_ITERATIONS  measured iterations per cell: one number for every concurrency, or one
 *                     per concurrency as "100,40,60" (the default: the p50 at concurrency 1,
 *                     which the tightest target is set on, from 100 samples a side).
 *   BENCH_WARMUP      warm-up iterations per worker before each cell (default 2).
 *   BENCH_PAGES       the pages to run, e.g. "long,script" (default all: simple,heavy,script,long;
 *                     long brings its fullpage_advanced row).
 *   BENCH_CONCURRENCY the concurrencies to run, e.g. "1" (default 1,2,4).
 *   BENCH_GATEWAY_COMPARE  0: no (d).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { withTimeout } from '../services/capture/browsers/browser-slot';
import { loadConfig, type Config } from '../services/shared/config';
import { type System, startSystem, stopSystem } from '../runtime/system';
import { BENCH_GRID_SESSION_TIMEOUT_S, type FloorTab, IsolatedPool, type Work, benchAccount, floorCapture, openFloorTab, snapOnce } from './floor';
import { FORMAT, QUALITY, VIEWPORT, envSubset, publishResults, snapQuery, stopOnSignals } from './run';
import { type PageServer, SCRIPT_SELECTOR, startPageServerProcess } from './pages';
import { machineCpuMs } from './procs';
import { STALL_FACTOR, medianRatioInterval, percentile, stalledCapture } from './stats';

const ROOT = path.resolve(__dirname, '..', '..');

const ALL_CONCURRENCY = [1, 2, 4] as const;
const PAGE_NAMES = ['simple', 'heavy', 'script', 'long'] as const;
type PageName = (typeof PAGE_NAMES)[number];

/** A row of the tables: a page, the /snap options that capture it, and the floors' same complete work. */
interface Row {
  name: string;
  /** As the tables show it: the page and what captures it. */
  label: string;
  page: PageName;
  work: Work;
  /** /snap parameters beyond the common ones. */
  snap: Record<string, string>;
  /** Measured at these concurrencies (of those the run takes). */
  concurrency: readonly number[];
  /** The row whose floors this one is compared with: itself, or (for a /snap-only row) the one with the same page. */
  floorRow: string;
}

const ROWS: readonly Row[] = [
  { name: 'simple', label: 'simple', page: 'simple', work: { kind: 'viewport' }, snap: {}, concurrency: ALL_CONCURRENCY, floorRow: 'simple' },
  { name: 'heavy', label: 'heavy', page: 'heavy', work: { kind: 'viewport' }, snap: {}, concurrency: ALL_CONCURRENCY, floorRow: 'heavy' },
  {
    name: 'script',
    label: 'script (wait_for)',
    page: 'script',
    work: { kind: 'wait_for', selector: SCRIPT_SELECTOR },
    snap: { wait_for: SCRIPT_SELECTOR },
    concurrency: ALL_CONCURRENCY,
    floorRow: 'script',
  },
  {
    name: 'long',
    label: 'long (fullpage)',
    page: 'long',
    work: { kind: 'fullpage' },
    snap: { fullpage: 'true' },
    concurrency: ALL_CONCURRENCY,
    floorRow: 'long',
  },
  // The same complete capture, reached by scrolling through the page: its floor is fullpage's.
  {
    name: 'long_advanced',
    label: 'long (fullpage_advanced)',
    page: 'long',
    work: { kind: 'fullpage' },
    snap: { fullpage_advanced: 'true' },
    concurrency: [1],
    floorRow: 'long',
  },
];

/**
 * Against the isolated floor (DESIGN.md section 4: the browser work isolation requires and
 * nothing else). Every page: /snap p50 at concurrency 1 and throughput at concurrency 4. Issue 11:
 * fullpage and fullpage_advanced on the long page, p50 at concurrency 1.
 */
const TARGETS = { p50AtC1: 1.1, throughputAtC4: 0.9, fullpageP50: 1.3, fullpageAdvancedP50: 2 };
/** Browser sessions of the system under test (CAPTURE_SESSIONS), and of the isolated floor. */
const SNAP_SESSIONS = 4;

interface Grid {
  url: string;
  stop(): Promise<void>;
}

const gridModule = require(path.join(ROOT, 'grid', 'grid.js')) as {
  startGrid(opts: { mode: 'standalone' | 'hub'; maxSessions: number; port: number; sessionTimeout?: number; log?: (m: string) => void }): Promise<Grid>;
};

/** The browser the Grid's node starts (the node stereotype's binary). */
const BROWSER_BIN =
  process.env.CHROME_BIN || (require(path.join(ROOT, 'scripts', 'ensure-system-deps.js')) as { DEFAULT_CHROME_BIN: string }).DEFAULT_CHROME_BIN;

const progress = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

// ------------------------------------------------------------------------------------------
// settings
// ------------------------------------------------------------------------------------------

function positiveInt(name: string, raw: string): number {
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < 1) throw new Error(`${name} must be positive integers, got "${raw}"`);
  return Number(raw);
}

function iterationCounts(): Record<number, number> {
  const raw = process.env.BENCH_ITERATIONS?.trim();
  const defaults = [100, 40, 60];
  let counts = defaults;
  if (raw) {
    const parts = raw.split(',').map((p) => positiveInt('BENCH_ITERATIONS', p));
    if (parts.length === 1) counts = ALL_CONCURRENCY.map(() => parts[0]!);
    else if (parts.length === ALL_CONCURRENCY.length) counts = parts;
    else throw new Error(`BENCH_ITERATIONS takes one number or ${ALL_CONCURRENCY.length} (one per concurrency ${ALL_CONCURRENCY.join(',')}), got "${raw}"`);
  }
  return Object.fromEntries(ALL_CONCURRENCY.map((c, i) => [c, counts[i]!]));
}

const ITERATIONS = iterationCounts();
const WARMUP_PER_WORKER = process.env.BENCH_WARMUP?.trim() ? positiveInt('BENCH_WARMUP', process.env.BENCH_WARMUP) : 2;
const PAGES = envSubset('BENCH_PAGES', PAGE_NAMES);
const CONCURRENCY = envSubset('BENCH_CONCURRENCY', ALL_CONCURRENCY);
/** The rows this run measures, and whether it is the full bench (the only one written to docs/benchmark.md). */
const RUN_ROWS = ROWS.filter((r) => PAGES.includes(r.page));
const FULL_RUN = PAGES.length === PAGE_NAMES.length && CONCURRENCY.length === ALL_CONCURRENCY.length;
const measuredAt = (row: Row) => row.concurrency.filter((c) => CONCURRENCY.includes(c as (typeof ALL_CONCURRENCY)[number]));

// ------------------------------------------------------------------------------------------
// measuring
// ------------------------------------------------------------------------------------------

interface CellResult {
  samples: number[];
  wallMs: number;
  /** CPU time of the whole machine (every process: browsers, Grid, this process) per operation, ms. */
  machineCpuMs: number;
  /** CPU time of this process (for /snap: the whole service) per operation, ms. */
  selfCpuMs: number;
  /** Mean size of the images produced, bytes (a sanity check that both sides do the same work). */
  meanBytes: number;
}

interface Stats {
  p50: number;
  p95: number;
  /** Every sample, ms (for the interval of a p50 ratio and the stall check). */
  samples: number[];
  perSecond: number;
  meanBytes: number;
  machineCpuMs: number;
  selfCpuMs: number;
}

function selfCpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function stats(r: CellResult): Stats {
  const sorted = [...r.samples].sort((a, b) => a - b);
  return {
    p50: percentile(sorted, 0.5),
    p95: percentile(sorted, 0.95),
    samples: r.samples,
    perSecond: (r.samples.length / r.wallMs) * 1000,
    meanBytes: r.meanBytes,
    machineCpuMs: r.machineCpuMs,
    selfCpuMs: r.selfCpuMs,
  };
}

/**
 * Runs `iterations` operations over `workers` concurrent workers (worker w always uses its own
 * resource w), and times each one and the whole.
 */
async function runCell(workers: number, iterations: number, op: (worker: number) => Promise<number>): Promise<CellResult> {
  let started = 0;
  let bytes = 0;
  const samples: number[] = [];
  const machine0 = machineCpuMs();
  const self0 = selfCpuMs();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (started < iterations) {
        started++;
        const s = performance.now();
        bytes += await op(w);
        samples.push(performance.now() - s);
      }
    }),
  );
  const wallMs = performance.now() - t0;
  const n = Math.max(1, samples.length);
  return {
    samples,
    wallMs,
    meanBytes: samples.length ? bytes / samples.length : 0,
    machineCpuMs: (machineCpuMs() - machine0) / n,
    selfCpuMs: (selfCpuMs() - self0) / n,
  };
}

async function measure(label: string, workers: number, op: (worker: number) => Promise<number>): Promise<Stats> {
  await runCell(workers, WARMUP_PER_WORKER * workers, op);
  const result = await runCell(workers, ITERATIONS[workers]!, op);
  const s = stats(result);
  progress(
    `${label}: p50 ${s.p50.toFixed(0)} ms, p95 ${s.p95.toFixed(0)} ms, ${s.perSecond.toFixed(2)} captures/s (${result.samples.length} ` +
      `in ${(result.wallMs / 1000).toFixed(1)} s), ` +
      `CPU per capture ${s.machineCpuMs.toFixed(0)} ms (this process ${s.selfCpuMs.toFixed(0)} ms)`,
  );
  return s;
}

// ------------------------------------------------------------------------------------------
// (a) the floor: raw CDP in the same Grid sessions
// ------------------------------------------------------------------------------------------

/** By row name, then concurrency. */
type Results = Record<string, Record<number, Stats>>;

const emptyResults = (rows: readonly Row[]): Results => Object.fromEntries(rows.map((r) => [r.name, {}]));

interface FloorInfo {
  chromium: string;
  domNodes: Record<string, number>;
}

/** The isolated floor's browsers, kept open from the floor's phase to the alternated one. */
interface IsolatedFloor {
  pool: IsolatedPool;
  close(): Promise<void>;
}

async function runFloor(
  config: Readonly<Config>,
  pages: PageServer,
  open: Set<FloorTab>,
): Promise<{ results: Results; isolated: IsolatedFloor; info: FloorInfo }> {
  // Rows measured only on /snap share their page's floors.
  const floorRows = RUN_ROWS.filter((r) => r.floorRow === r.name);
  const results = emptyResults(floorRows);
  // The isolated floor's browsers stay open (idle) while the plain floor runs; it is measured later, alternated with /snap.
  progress(`isolated floor: opening ${SNAP_SESSIONS} Grid sessions`);
  const isolatedTabs = await Promise.all(
    Array.from({ length: SNAP_SESSIONS }, async (_, i) => {
      const tab = await withTimeout(openFloorTab(config, 100 + i), 120_000, 'opening a Grid session');
      open.add(tab);
      return tab;
    }),
  );
  const isolatedPool = new IsolatedPool(isolatedTabs.map((t) => t.slot));
  const info: FloorInfo = { chromium: 'unknown', domNodes: {} };
  for (const c of CONCURRENCY) {
    progress(`floor: opening ${c} Grid session(s)`);
    const tabs = await Promise.all(
      Array.from({ length: c }, async (_, i) => {
        const tab = await withTimeout(openFloorTab(config, i + 1), 120_000, 'opening a Grid session');
        open.add(tab);
        return tab;
      }),
    );
    try {
      if (info.chromium === 'unknown') {
        const version = await tabs[0]!.slot.cdp.send<{ product: string }>('Browser.getVersion');
        info.chromium = version.product;
      }
      for (const row of floorRows.filter((r) => measuredAt(r).includes(c))) {
        const url = pages.origin + pages.pages[row.page];
        results[row.name]![c] = await measure(`floor  ${row.name.padEnd(6)} c=${c}`, c, (w) => floorCapture(tabs[w]!, url, row.work, true));
        if (info.domNodes[row.page] === undefined) {
          const r = await tabs[0]!.slot.cdp.send<{ result: { value: number } }>(
            'Runtime.evaluate',
            { expression: 'document.getElementsByTagName("*").length', returnByValue: true },
            tabs[0]!.sessionId,
          );
          info.domNodes[row.page] = r.result.value;
        }
      }
    } finally {
      await Promise.all(
        tabs.map(async (t) => {
          open.delete(t);
          await t.slot.quit();
        }),
      );
    }
  }
  return {
    results,
    info,
    isolated: {
      pool: isolatedPool,
      async close() {
        await isolatedPool.close();
        await Promise.all(
          isolatedTabs.map(async (t) => {
            open.delete(t);
            await t.slot.quit();
          }),
        );
      },
    },
  };
}

// ------------------------------------------------------------------------------------------
// (b) GET /snap end to end
// ------------------------------------------------------------------------------------------

/** A bench account on a system, and the /snap URL of each row for it. */
async function snapTarget(system: System, pages: PageServer): Promise<(row: Row) => string> {
  // The bench's one account may use every browser it measures (its plan's limits never hold it).
  const { accessToken, base } = await benchAccount(system);
  return (row) => `${base}/snap?${snapQuery(accessToken, pages.origin + pages.pages[row.page], row.snap)}`;
}

/**
 * Blocks each side of an alternated cell is split into (the order reverses every round). At
 * concurrency 1 every capture is a block of its own: the sides take turns capture by capture,
 * so drift at any pace falls on them alike. At higher concurrency a block must hold at least
 * one capture per worker, and its wall time is what the throughput is made of.
 */
const BLOCKS = 6;
const blocksAt = (c: number) => (c === 1 ? ITERATIONS[1]! : BLOCKS);

/** One cell's blocks put together: every sample, the wall time and CPU summed over the blocks. */
function mergeBlocks(blocks: CellResult[]): CellResult {
  const n = (b: CellResult) => Math.max(1, b.samples.length);
  const total = blocks.reduce((a, b) => a + n(b), 0);
  const mean = (f: (b: CellResult) => number) => blocks.reduce((a, b) => a + f(b) * n(b), 0) / total;
  return {
    samples: blocks.flatMap((b) => b.samples),
    wallMs: blocks.reduce((a, b) => a + b.wallMs, 0),
    meanBytes: mean((b) => b.meanBytes),
    machineCpuMs: mean((b) => b.machineCpuMs),
    selfCpuMs: mean((b) => b.selfCpuMs),
  };
}

/** What the alternated phase measures: the isolated floor, /snap, and /snap without the gateway (when compared). */
interface Alternated {
  isolated: Results;
  snap: Results;
  none: Results | null;
}

/**
 * (b) and (c), and (d) when `off` is given: the isolated floor, GET /snap on the system, and
 * GET /snap on a second system without the egress gateway, all up at once on the same Grid.
 * Each cell runs in blocks per side (blocksAt: one capture each at concurrency 1, BLOCKS above),
 * alternating, every other round in the reverse order (isolated, snap, none, none, snap,
 * isolated, …), so drift in the machine's speed (it is large on a shared virtual machine) falls
 * on every side alike and the ratios compare like with like.
 */
async function runAlternated(isolatedPool: IsolatedPool, system: System, off: System | null, pages: PageServer): Promise<Alternated> {
  const out: Alternated = {
    isolated: emptyResults(RUN_ROWS.filter((r) => r.floorRow === r.name)),
    snap: emptyResults(RUN_ROWS),
    none: off ? emptyResults(RUN_ROWS) : null,
  };
  const snapUrl = await snapTarget(system, pages);
  const noneUrl = off ? await snapTarget(off, pages) : null;
  for (const c of CONCURRENCY) {
    // Sockets for every /snap side; each side runs alone, so c of them are in use at once.
    const agent = new http.Agent({ keepAlive: true, maxSockets: 2 * c });
    try {
      for (const row of RUN_ROWS.filter((r) => measuredAt(r).includes(c))) {
        const url = pages.origin + pages.pages[row.page];
        type Side = { name: string; results: Results; key: string; op: () => Promise<number>; blocks: CellResult[] };
        const sides: Side[] = [];
        // A row measured only on /snap (fullpage_advanced) is compared with its page's isolated floor, measured in that page's row.
        if (row.floorRow === row.name)
          sides.push({ name: 'isolated', results: out.isolated, key: row.name, op: () => isolatedPool.capture(url, row.work), blocks: [] });
        const snapAt = snapUrl(row);
        sides.push({ name: 'snap', results: out.snap, key: row.name, op: () => snapOnce(agent, snapAt), blocks: [] });
        // The gateway's cost is measured where its targets are: concurrency 1 and 4.
        if (noneUrl && out.none && c !== 2) {
          const noneAt = noneUrl(row);
          sides.push({ name: 'no gateway', results: out.none, key: row.name, op: () => snapOnce(agent, noneAt), blocks: [] });
        }
        const blocks = blocksAt(c);
        const perBlock = Math.max(c, Math.round(ITERATIONS[c]! / blocks));
        for (const side of sides) await runCell(c, WARMUP_PER_WORKER * c, side.op);
        // Every other round in the reverse order (A B C, C B A, …): a drift that is linear over
        // the cell then falls on every side alike, and no side always runs first after another's turn.
        for (let b = 0; b < blocks; b++) {
          for (const side of b % 2 ? [...sides].reverse() : sides) side.blocks.push(await runCell(c, perBlock, side.op));
        }
        for (const side of sides) {
          const merged = mergeBlocks(side.blocks);
          const st = stats(merged);
          side.results[side.key]![c] = st;
          progress(
            `${side.name.padEnd(10)} ${row.name.padEnd(6)} c=${c}: p50 ${ms(st.p50)} ms, p95 ${ms(st.p95)} ms, ${rate(st.perSecond)} captures/s ` +
              `(${merged.samples.length}), ` +
              `CPU per capture ${ms(st.machineCpuMs)} ms (this process ${ms(st.selfCpuMs)} ms)`,
          );
        }
      }
    } finally {
      agent.destroy();
    }
  }
  return out;
}

// ------------------------------------------------------------------------------------------
// report
// ------------------------------------------------------------------------------------------

const ms = (v: number) => v.toFixed(0);
const rate = (v: number) => v.toFixed(2);
const ratio = (v: number) => `${v.toFixed(2)}x`;

/**
 * A target and its honest verdict: met, missed (where), or not measured in this run. The verdict
 * is the measured ratio's; `interval`, where given, adds how firm that ratio is (its 95%
 * bootstrap interval), so a verdict decided by the noise reads as such.
 */
function verdict(
  label: string,
  rows: readonly Row[],
  value: (row: Row) => number | undefined,
  met: (r: number) => boolean,
  interval?: (row: Row) => { low: number; high: number } | undefined,
): string {
  const found = rows.map((row) => ({ row, r: value(row) }));
  const measured = found.filter((x): x is { row: Row; r: number } => x.r !== undefined);
  const missed = measured.filter((x) => !met(x.r));
  const word = measured.length === 0 ? 'NOT MEASURED in this run' : missed.length ? 'NOT MET' : measured.length < found.length ? 'MET where measured' : 'MET';
  const shown = (row: Row, r: number) => {
    const i = interval?.(row);
    return i ? `${ratio(r)} [${ratio(i.low)}–${ratio(i.high)}]` : ratio(r);
  };
  return `- ${label}: **${word}** (${found.map((x) => `${x.row.label} ${x.r === undefined ? 'not measured' : shown(x.row, x.r)}`).join(', ')}).`;
}

function targetLines(isolated: Results, snap: Results): string[] {
  const at = (row: Row, c: number) => ({ i: isolated[row.floorRow]?.[c], s: snap[row.name]?.[c] });
  const p50AtC1 = (row: Row) => {
    const { i, s } = at(row, 1);
    return i && s ? s.p50 / i.p50 : undefined;
  };
  const p50Interval = (row: Row) => {
    const { i, s } = at(row, 1);
    return i && s ? medianRatioInterval(i.samples, s.samples) : undefined;
  };
  const throughputAtC4 = (row: Row) => {
    const { i, s } = at(row, 4);
    return i && s ? s.perSecond / i.perSecond : undefined;
  };
  const pageRows = ROWS.filter((r) => r.floorRow === r.name);
  const named = (name: string) => ROWS.filter((r) => r.name === name);
  return [
    verdict(
      `/snap p50 at concurrency 1 at most ${TARGETS.p50AtC1}x the isolated floor, every page (DESIGN.md section 4)`,
      pageRows,
      p50AtC1,
      (r) => r <= TARGETS.p50AtC1,
      p50Interval,
    ),
    verdict(
      `/snap throughput at concurrency 4 at least ${TARGETS.throughputAtC4}x the isolated floor, every page (DESIGN.md section 4)`,
      pageRows,
      throughputAtC4,
      (r) => r >= TARGETS.throughputAtC4,
    ),
    verdict(
      `fullpage on the long page: p50 at most ${TARGETS.fullpageP50}x the isolated floor (issue 11)`,
      named('long'),
      p50AtC1,
      (r) => r <= TARGETS.fullpageP50,
      p50Interval,
    ),
    verdict(
      `fullpage_advanced on the long page: p50 at most ${TARGETS.fullpageAdvancedP50}x the isolated floor's complete full-page capture (issue 11)`,
      named('long_advanced'),
      p50AtC1,
      (r) => r <= TARGETS.fullpageAdvancedP50,
      p50Interval,
    ),
  ];
}

function report(floor: Results, isolated: Results, snap: Results, info: FloorInfo, pages: PageServer, totalSeconds: number, load: number[]): string {
  const cpus = os.cpus();
  const lines: string[] = [];
  lines.push('# Benchmark: GET /snap against the raw CDP floor', '');
  lines.push(
    `Run ${new Date().toISOString()} (${totalSeconds.toFixed(0)} s in all)` +
      `${FULL_RUN ? '' : `, reduced: pages ${PAGES.join(',')}, concurrency ${CONCURRENCY.join(',')}`}.`,
    '',
  );
  lines.push(
    `Machine: ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${cpus.length} cores, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB RAM, ` +
      `${os.type()} ${os.release()}, Node ${process.version}, ${info.chromium} (Selenium Grid standalone, ${BROWSER_BIN}). ` +
      `Load average (1 min) before the floor, before /snap and at the end: ${load.map((l) => l.toFixed(2)).join(' / ')} ` +
      '(anything else running on the machine skews the numbers).',
    '',
  );
  const pageDesc = (name: PageName) => {
    const s = pages.sizes[name]!;
    const imgs = s.images ? ` + ${s.images} images (${(s.imageBytes / 1024).toFixed(0)} KB)` : '';
    const data = s.dataBytes ? ` + ${(s.dataBytes / 1024).toFixed(1)} KB fetched by script after load` : '';
    return `${name}: ${(s.htmlBytes / 1024).toFixed(1)} KB HTML${imgs}${data}, ${info.domNodes[name] ?? '?'} DOM elements`;
  };
  lines.push(
    `Pages (local node:http server in a process of its own, no-store): ${PAGES.map(pageDesc).join('; ')}. ` +
      `Viewport ${VIEWPORT.width}x${VIEWPORT.height}, ${FORMAT} quality ${QUALITY}. ` +
      `Iterations per cell: ${CONCURRENCY.map((c) => `c=${c}: ${ITERATIONS[c]}`).join(', ')}, after ${WARMUP_PER_WORKER} warm-up iterations per worker. ` +
      'Floor = raw CDP in N Grid sessions (navigate + load event + the complete work + captureScreenshot, tab reused); ' +
      `snap = GET /snap over HTTP (wait=0, ttl=0, CAPTURE_SESSIONS=${SNAP_SESSIONS}, SQLite), timed until the body is read, alternated with the isolated ` +
      `floor (and the no-gateway system): ` +
      `capture by capture at concurrency 1, in ${BLOCKS} blocks per side above it. ` +
      `Complete work: script (wait_for=${SCRIPT_SELECTOR}): the floors wait until the selector matches; long (fullpage): the viewport grown to ` +
      "the document's height by device metrics, every image loaded, the height measured again, then one screenshot of it all; " +
      "long (fullpage_advanced): /snap only, compared with the long page's floors. " +
      'CPU per capture: busy CPU time of the whole machine (/proc/stat: browsers, Grid, this process) over the cell, divided by its captures; ' +
      "in brackets, the service's own share (this process).",
    '',
  );
  lines.push(
    '| page | concurrency | floor p50 ms | floor p95 ms | floor captures/s | snap p50 ms | snap p95 ms | snap captures/s | p50 ratio (snap/floor) | ' +
      'throughput ratio (snap/floor) | CPU ms per capture, floor / snap (service) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const row of RUN_ROWS) {
    for (const c of measuredAt(row)) {
      const f = floor[row.floorRow]?.[c];
      const s = snap[row.name]?.[c];
      if (!f || !s) continue;
      lines.push(
        `| ${row.label} | ${c} | ${ms(f.p50)} | ${ms(f.p95)} | ${rate(f.perSecond)} | ${ms(s.p50)} | ${ms(s.p95)} | ${rate(s.perSecond)} | ` +
          `${ratio(s.p50 / f.p50)} | ${ratio(s.perSecond / f.perSecond)} | ${ms(f.machineCpuMs)} / ${ms(s.machineCpuMs)} (${ms(s.selfCpuMs)}) |`,
      );
    }
  }
  lines.push('');
  lines.push(
    'Targets, against the isolated floor (below; p50 at concurrency 1, throughput at concurrency 4). In brackets beside a p50 ratio, its 95% ' +
      'bootstrap interval: ' +
      'where the ratio could have landed with other samples of the same captures.',
    '',
    ...targetLines(isolated, snap),
    '',
  );
  const firstC = (row: Row) => measuredAt(row)[0];
  const kb = (st: Stats | undefined) => (st ? `${(st.meanBytes / 1024).toFixed(1)} KB` : '–');
  lines.push(
    `Mean image size, floor / isolated floor / snap: ${RUN_ROWS.filter((r) => firstC(r) !== undefined)
      .map((r) => {
        const c = firstC(r)!;
        return `${r.label} ${kb(floor[r.floorRow]?.[c])} / ${kb(isolated[r.floorRow]?.[c])} / ${kb(snap[r.name]?.[c])}`;
      })
      .join('; ')}.`,
    '',
  );
  // The same complete work gives the same image; a much smaller one has blank areas (images not loaded).
  const differing = RUN_ROWS.filter((r) => {
    const c = firstC(r);
    const i = c === undefined ? undefined : isolated[r.floorRow]?.[c];
    const s = c === undefined ? undefined : snap[r.name]?.[c];
    return i && s && Math.abs(s.meanBytes / i.meanBytes - 1) > 0.1;
  });
  if (differing.length) {
    lines.push(
      `**Not the same work:** /snap's images differ in size by more than 10% from the isolated floor's on ${differing.map((r) => r.label).join(', ')}; ` +
        'a smaller image usually has blank areas where images did not load, so its timing is not comparable.',
      '',
    );
  }
  lines.push(
    '## What isolation itself costs',
    '',
    `Isolated floor = raw CDP doing the browser work DESIGN.md section 4 requires of every capture, on ${SNAP_SESSIONS} Grid sessions as the service has: ` +
      "a fresh browser context and window per capture, prepared in the background after the browser's previous capture (whose context is disposed first), " +
      'taken from an idle browser whose page is ready, least recently used first (as the service does); then the same navigate + load event + ' +
      'complete work + captureScreenshot as the floor. None of the service is involved. Its ratio to the floor is what the isolation the design ' +
      'requires costs ' +
      'on this machine; the ratio of /snap to it is what the service adds, and what the targets are set against.',
    '',
    '| page | concurrency | isolated p50 ms | isolated p95 ms | isolated captures/s | CPU ms per capture, floor / isolated / snap | p50 ratio ' +
      '(isolated/floor) | throughput ratio (isolated/floor) | p50 ratio (snap/isolated) | throughput ratio (snap/isolated) |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const row of RUN_ROWS) {
    for (const c of measuredAt(row)) {
      const f = floor[row.floorRow]?.[c];
      const i = isolated[row.floorRow]?.[c];
      const s = snap[row.name]?.[c];
      if (!f || !i || !s) continue;
      lines.push(
        `| ${row.label} | ${c} | ${ms(i.p50)} | ${ms(i.p95)} | ${rate(i.perSecond)} | ${ms(f.machineCpuMs)} / ${ms(i.machineCpuMs)} ` +
          `/ ${ms(s.machineCpuMs)} | ` +
          `${ratio(i.p50 / f.p50)} | ${ratio(i.perSecond / f.perSecond)} | ${ratio(s.p50 / i.p50)} | ${ratio(s.perSecond / i.perSecond)} |`,
      );
    }
  }
  lines.push('');
  return lines.join('\n');
}

/** What the egress gateway costs /snap: the same cells with and without it (issue 13: at most 10%). */
/**
 * The cells in which one capture took more than STALL_FACTOR times the cell's p50: their
 * throughput (and a p95 near the stall) describe that one capture, not the rest. Empty when none did.
 */
function stallReport(sides: Record<string, Results>): string {
  const stalls: string[] = [];
  for (const [side, results] of Object.entries(sides)) {
    for (const row of RUN_ROWS) {
      for (const [c, st] of Object.entries(results[row.name] ?? {})) {
        const stalled = stalledCapture(st.samples);
        if (stalled !== null)
          stalls.push(`${side}, ${row.label} at concurrency ${c}: one capture took ${(stalled / 1000).toFixed(1)} s (p50 ${ms(st.p50)} ms)`);
      }
    }
  }
  if (!stalls.length) return '';
  return ['', `**Stalled captures** (over ${STALL_FACTOR}x the cell's p50; that cell's captures per second mean little): ${stalls.join('; ')}.`, ''].join('\n');
}

function gatewayReport(withGateway: Results, direct: Results | null): string {
  if (!direct) return '';
  const lines = [
    '',
    '## What the egress gateway costs',
    '',
    `GET /snap on the system above (with the gateway) and on a second system up beside it with EGRESS_GATEWAY=off (browser contexts without a proxy, ` +
      `the policy applied by interception in the page only), ${SNAP_SESSIONS} capture sessions each, measured in the same alternated blocks as the ` +
      `isolated floor.`,
    '',
    '| page | concurrency | snap p50 ms, gateway / none | p50 ratio | snap captures/s, gateway / none | throughput ratio |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  const p50s: string[] = [];
  const rates: string[] = [];
  let p50Met = true;
  let rateMet = true;
  for (const row of RUN_ROWS) {
    for (const c of measuredAt(row)) {
      const g = withGateway[row.name]?.[c];
      const d = direct[row.name]?.[c];
      if (!g || !d) continue;
      const p50Ratio = g.p50 / d.p50;
      const rateRatio = g.perSecond / d.perSecond;
      lines.push(
        `| ${row.label} | ${c} | ${ms(g.p50)} / ${ms(d.p50)} | ${ratio(p50Ratio)} | ${rate(g.perSecond)} / ${rate(d.perSecond)} | ${ratio(rateRatio)} |`,
      );
      if (c === 1) {
        p50s.push(`${row.label} ${ratio(p50Ratio)}`);
        p50Met &&= p50Ratio <= 1.1;
      }
      if (c === 4) {
        rates.push(`${row.label} ${ratio(rateRatio)}`);
        rateMet &&= rateRatio >= 0.9;
      }
    }
  }
  lines.push(
    '',
    `- The gateway adds at most 10% to /snap's p50 at concurrency ` +
      `1: ${p50s.length ? `**${p50Met ? 'MET' : 'NOT MET'}** (${p50s.join(', ')})` : 'not measured in this run'}.`,
    `- The gateway takes at most 10% of /snap's throughput at concurrency ` +
      `4: ${rates.length ? `**${rateMet ? 'MET' : 'NOT MET'}** (${rates.join(', ')})` : 'not measured in this run'}.`,
    '',
  );
  return lines.join('\n');
}

// ------------------------------------------------------------------------------------------
// main
// ------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const t0 = performance.now();
  const cleanups: Array<() => Promise<void>> = [];
  let cleaning: Promise<void> | null = null;
  const cleanup = () => {
    cleaning ??= (async () => {
      for (const fn of cleanups.splice(0).reverse()) {
        await fn().catch((err: Error) => progress(`cleanup: ${err.message}`));
      }
    })();
    return cleaning;
  };
  const removeSignalHandlers = stopOnSignals(cleanup, progress);

  const load = [os.loadavg()[0]!];
  try {
    progress('starting the Selenium Grid and the page server');
    const [grid, pages] = await Promise.all([
      gridModule.startGrid({ mode: 'standalone', maxSessions: 3 * SNAP_SESSIONS, port: 0, sessionTimeout: BENCH_GRID_SESSION_TIMEOUT_S }),
      startPageServerProcess(),
    ]);
    cleanups.push(() => grid.stop());
    cleanups.push(() => pages.stop());

    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'snap-bench-'));
    cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
    const passThrough = Object.fromEntries(
      ['CHROME_BIN', 'CHROMEDRIVER_BIN', 'CHROME_EXTRA_ARGS', 'EGRESS_GATEWAY'].filter((k) => process.env[k]).map((k) => [k, process.env[k]]),
    );
    const env = {
      ...passThrough,
      DATA_DIR: dataDir,
      SELENIUM_URL: grid.url,
      ALLOW_PRIVATE_NETWORKS: 'true',
      CAPTURE_SESSIONS: String(SNAP_SESSIONS),
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      // The bench sends far more than a person would; the per-account request rate is not what it measures.
      RATE_LIMIT_MAX: '0',
    };
    const config = loadConfig(env);

    // (a) the warm floor; its sessions are quit before the systems start. The isolated floor's stay open.
    const openTabs = new Set<FloorTab>();
    cleanups.push(async () => {
      await Promise.all([...openTabs].map((t) => t.slot.quit()));
    });
    if (load[0]! > os.cpus().length) progress(`warning: load average ${load[0]!.toFixed(2)} on ${os.cpus().length} cores; other work will skew the numbers`);
    const { results: floor, isolated: isolatedFloor, info } = await runFloor(config, pages, openTabs);
    load.push(os.loadavg()[0]!);

    // (b) GET /snap on the real system, and (d) a second one without the egress gateway.
    progress(`starting the system (SQLite, ${SNAP_SESSIONS} capture sessions on the same Grid)`);
    const systems: System[] = [];
    cleanups.push(async () => {
      await Promise.all(systems.map((sys) => stopSystem(sys)));
    });
    const system = await withTimeout(startSystem(config), 180_000, 'starting the system');
    systems.push(system);
    let off: System | null = null;
    if (config.capture.gateway && process.env.BENCH_GATEWAY_COMPARE !== '0') {
      progress('starting a second system beside it, without the egress gateway (EGRESS_GATEWAY=off)');
      const offDir = fs.mkdtempSync(path.join(os.tmpdir(), 'snap-bench-off-'));
      cleanups.push(async () => fs.rmSync(offDir, { recursive: true, force: true }));
      off = await withTimeout(startSystem(loadConfig({ ...env, DATA_DIR: offDir, EGRESS_GATEWAY: 'off' })), 180_000, 'starting the system');
      systems.push(off);
    }
    // (c) the isolated floor, alternated with (b) and (d).
    const { isolated, snap, none } = await runAlternated(isolatedFloor.pool, system, off, pages);
    await Promise.all(systems.splice(0).map((sys) => stopSystem(sys)));
    await isolatedFloor.close();

    load.push(os.loadavg()[0]!);
    const text =
      report(floor, isolated, snap, info, pages, (performance.now() - t0) / 1000, load) +
      gatewayReport(snap, none) +
      stallReport({ floor, 'isolated floor': isolated, snap, ...(none ? { 'snap without the gateway': none } : {}) });
    publishResults('snap', text, FULL_RUN, progress);
  } finally {
    await cleanup();
    removeSignalHandlers();
  }
}

main().catch((err: Error) => {
  process.stderr.write(`[bench] FAILED: ${err.stack ?? err.message}\n`);
  process.exitCode = 1;
  // Everything was stopped; if a start-up that timed out still holds the event loop, leave anyway.
  setTimeout(() => process.exit(1), 10_000).unref();
});
