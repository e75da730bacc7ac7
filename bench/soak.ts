/**
 * `npm run bench`, the soak (issue 34): SOAK_CAPTURES GET /snap of the mixed workload
 * (bench/sites.ts) at concurrency 4 on the embedded default, as `npm start` runs it (one
 * process, SQLite, a local ChromeDriver, CAPTURE_SESSIONS at its default), the egress gateway
 * resolving the site names with the bench's DNS server.
 *
 * Sampled every SAMPLE_EVERY captures: the resident memory of the service's process (this
 * process: the system and the bench's client; the page server is a process of its own) and
 * its V8 heap, of its browsers (the ChromeDrivers under this process with their browsers and
 * renderers, from /proc), how many processes those trees hold, this process's open file
 * descriptors, and what the data directory holds. After the warm-up (SOAK_WARMUP captures),
 * each one's growth per 1000 captures (least squares over the samples). Latency: p95 of the
 * last thousand captures against the first thousand after the warm-up (a shorter run compares
 * its first and last quarters). Browser restarts: every ChromeDriver that appears under this
 * process after start-up, by reason, from the pool's warnings (a browser gone, one that
 * stopped answering, a launch that failed); the pool has no planned recycle, so a restart
 * with no warning is counted as "other".
 *
 * Environment (a run with either set prints its report but leaves docs/benchmark.md alone):
 *   SOAK_CAPTURES  captures in all (default 5000); e.g. 400 for a quick try.
 *   SOAK_WARMUP    captures before growth is measured (default 500, at most a fifth of the run).
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { type System, startSystem, stopSystem } from '../runtime/system';
import { withTimeout } from '../services/capture/browsers/browser-slot';
import { loadConfig } from '../services/shared/config';
import { benchAccount, snapOnce } from './floor';
import { SCRIPT_SELECTOR, startPageServerProcess } from './pages';
import { descendantsNamed, processes, tree, treesUse } from './procs';
import { envPositiveInt, loadNote, publishResults, runBench, snapQuery } from './run';
import { MIX_WEIGHTS, type MixItem, type MixPage, mixSequence, siteName, startSitesDns } from './sites';
import { percentile } from './stats';

const progress = (msg: string) => process.stderr.write(`[soak] ${msg}\n`);

const CONCURRENCY = 4;
const SITES = 1000;
const SAMPLE_EVERY = 50;
const CAPTURES = envPositiveInt('SOAK_CAPTURES', 5000);
const WARMUP = Math.min(envPositiveInt('SOAK_WARMUP', 500), Math.floor(CAPTURES / 5));
const FULL_RUN = !process.env.SOAK_CAPTURES?.trim() && !process.env.SOAK_WARMUP?.trim();
/** Issue 34: the last thousand captures' p95 within 10% of the first thousand's. */
const P95_DRIFT = 0.1;

const SNAP_OPTIONS: Record<MixPage, Record<string, string>> = { simple: {}, heavy: {}, script: { wait_for: SCRIPT_SELECTOR }, long: { fullpage: 'true' } };

interface Sample {
  captures: number;
  serviceRss: number;
  heapUsed: number;
  browsersRss: number;
  browserProcesses: number;
  fds: number;
  dataBytes: number;
}

function dirBytes(dir: string): number {
  let sum = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    try {
      sum += e.isDirectory() ? dirBytes(p) : fs.statSync(p).size;
    } catch {
      // removed meanwhile
    }
  }
  return sum;
}

function fdCount(): number {
  try {
    return fs.readdirSync('/proc/self/fd').length;
  } catch {
    return 0;
  }
}

/** Least-squares slope of y over x. */
function slope(xs: number[], ys: number[]): number {
  const n = xs.length;
  if (n < 2) return Number.NaN;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let num = 0;
  let den = 0;
  for (let i = 0; i < n; i++) {
    num += (xs[i]! - mx) * (ys[i]! - my);
    den += (xs[i]! - mx) ** 2;
  }
  return den ? num / den : Number.NaN;
}

/** Counts the pool's warnings about its browsers, by reason, from the service's log lines (stdout); the lines go on to stderr. */
function watchPoolWarnings(): { reasons: Map<string, number>; restore(): void } {
  const reasons = new Map<string, number>();
  const patterns: Array<[RegExp, string]> = [
    [/Browser session \d+ is gone/, 'browser gone (its CDP connection closed)'],
    [/stopped answering/, 'stopped answering'],
    [/Could not start a browser session/, 'a launch failed (retried)'],
  ];
  const original = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: unknown[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    for (const [re, reason] of patterns) if (re.test(text)) reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
    return (process.stderr.write as (...a: unknown[]) => boolean)(chunk, ...rest);
  }) as typeof process.stdout.write;
  return {
    reasons,
    restore: () => {
      process.stdout.write = original;
    },
  };
}

const mib = (b: number) => (b / 2 ** 20).toFixed(1);

runBench('soak', async (cleanups, stopping) => {
  const t0 = performance.now();
  const load = [os.loadavg()[0]!];
  const [pages, dns] = await Promise.all([startPageServerProcess(), startSitesDns(SITES)]);
  cleanups.push(
    () => pages.stop(),
    () => dns.stop(),
  );
  const port = new URL(pages.origin).port;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'snap-soak-'));
  cleanups.push(async () => fs.rmSync(dataDir, { recursive: true, force: true }));
  const passThrough = Object.fromEntries(['CHROME_BIN', 'CHROMEDRIVER_BIN', 'CHROME_EXTRA_ARGS'].filter((k) => process.env[k]).map((k) => [k, process.env[k]]));
  const config = loadConfig({
    ...passThrough,
    DATA_DIR: dataDir,
    ALLOW_PRIVATE_NETWORKS: 'true',
    EGRESS_DNS_SERVERS: dns.address,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_MAX: '0',
  });
  const warnings = watchPoolWarnings();
  cleanups.push(async () => warnings.restore());
  progress(`starting the embedded system (SQLite, a local ChromeDriver, ${config.capture.sessions} capture sessions)`);
  const systems: System[] = [];
  cleanups.push(async () => {
    await Promise.all(systems.splice(0).map((s) => stopSystem(s)));
  });
  const system = await withTimeout(startSystem(config), 180_000, 'starting the system');
  systems.push(system);
  const { accessToken, base } = await benchAccount(system);
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  cleanups.push(async () => agent.destroy());

  const driversNow = () => descendantsNamed(processes(), process.pid, 'chromedriver');
  const initialDrivers = new Set(driversNow());
  const seenDrivers = new Set(initialDrivers);
  const driverWatch = setInterval(() => {
    for (const p of driversNow()) seenDrivers.add(p);
  }, 1_000);
  cleanups.push(async () => clearInterval(driverWatch));

  const seq = mixSequence(CAPTURES, SITES);
  const latencies: Array<{ i: number; page: MixPage; ms: number }> = [];
  const failures = new Map<string, number>();
  const samples: Sample[] = [];
  const sample = (captures: number) => {
    const drivers = driversNow();
    const procs = processes();
    const browsers = treesUse(drivers, [], procs);
    const treeSize = drivers.reduce((n, d) => n + tree(procs, d).length, 0);
    const mem = process.memoryUsage();
    samples.push({
      captures,
      serviceRss: mem.rss,
      heapUsed: mem.heapUsed,
      browsersRss: browsers.rssBytes,
      browserProcesses: treeSize,
      fds: fdCount(),
      dataBytes: dirBytes(dataDir),
    });
  };
  sample(0);
  let next = 0;
  let done = 0;
  const urlOf = (item: MixItem) => `http://${siteName(item.site)}:${port}${pages.pages[item.page]}`;
  progress(`${CAPTURES} captures at concurrency ${CONCURRENCY} (warm-up ${WARMUP})`);
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < CAPTURES && !stopping()) {
        const i = next++;
        const item = seq[i]!;
        const s = performance.now();
        try {
          await snapOnce(agent, `${base}/snap?${snapQuery(accessToken, urlOf(item), SNAP_OPTIONS[item.page])}`);
          latencies.push({ i, page: item.page, ms: performance.now() - s });
        } catch (err) {
          const key = (err as Error).message.slice(0, 120);
          failures.set(key, (failures.get(key) ?? 0) + 1);
        }
        done++;
        if (done % SAMPLE_EVERY === 0) sample(done);
        if (done % 500 === 0) progress(`${done} of ${CAPTURES} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
      }
    }),
  );
  if (done % SAMPLE_EVERY !== 0) sample(done);
  for (const p of driversNow()) seenDrivers.add(p);
  load.push(os.loadavg()[0]!);
  const seconds = (performance.now() - t0) / 1000;

  // ---- report
  const byOrder = [...latencies].sort((a, b) => a.i - b.i);
  const measured = byOrder.filter((l) => l.i >= WARMUP);
  const window = Math.min(1000, Math.floor(measured.length / 4));
  const p95 = (xs: Array<{ ms: number }>) =>
    percentile(
      xs.map((l) => l.ms).sort((a, b) => a - b),
      0.95,
    );
  const p50 = (xs: Array<{ ms: number }>) =>
    percentile(
      xs.map((l) => l.ms).sort((a, b) => a - b),
      0.5,
    );
  const first = measured.slice(0, window);
  const last = measured.slice(-window);
  const drift = p95(last) / p95(first);
  const after = samples.filter((s) => s.captures >= WARMUP);
  const growth = (f: (s: Sample) => number) =>
    slope(
      after.map((s) => s.captures),
      after.map(f),
    ) * 1000;
  const restarts = seenDrivers.size - initialDrivers.size;
  const explained = [...warnings.reasons.values()].reduce((a, b) => a + b, 0);
  const cpus = os.cpus();
  const end = samples[samples.length - 1]!;
  const start = after[0] ?? samples[0]!;
  const lines: string[] = [];
  lines.push('# Soak: the mixed workload on the embedded default (bench/soak.ts)', '');
  lines.push(
    `Run ${new Date().toISOString()} (${seconds.toFixed(0)} s in all)${FULL_RUN ? '' : `, reduced (SOAK_CAPTURES=${CAPTURES})`}. ` +
      `Machine: ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${cpus.length} cores, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB RAM, Node ${process.version}. ` +
      loadNote(load[0]!, load[load.length - 1]!),
    '',
    `${CAPTURES} GET /snap (wait=0, ttl=0) of the mix (${Object.entries(MIX_WEIGHTS)
      .map(([p, w]) => `${w} ${p}`)
      .join(
        ', ',
      )} in every ten, over ${SITES} site names) at concurrency ${CONCURRENCY}, on the embedded default: one process, SQLite, a local ChromeDriver, ` +
      `${config.capture.sessions} capture sessions, the egress gateway on. ${latencies.length} answered 200, ${CAPTURES - latencies.length} failed` +
      `${failures.size ? ` (${[...failures].map(([m, n]) => `${n}x ${m}`).join('; ')})` : ''}; ${((latencies.length / seconds) * 1).toFixed(2)} captures/s. ` +
      `Growth is measured after ${WARMUP} warm-up captures, over samples taken every ${SAMPLE_EVERY} captures (least squares).`,
    '',
    '| measure | after warm-up | at the end | growth per 1000 captures |',
    '|---|---:|---:|---:|',
    `| service process RSS (MiB) | ${mib(start.serviceRss)} | ${mib(end.serviceRss)} | ${mib(growth((s) => s.serviceRss))} |`,
    `| service V8 heap used (MiB) | ${mib(start.heapUsed)} | ${mib(end.heapUsed)} | ${mib(growth((s) => s.heapUsed))} |`,
    `| browsers' RSS, ChromeDrivers' trees (MiB) | ${mib(start.browsersRss)} | ${mib(end.browsersRss)} | ${mib(growth((s) => s.browsersRss))} |`,
    `| processes in the browsers' trees | ${start.browserProcesses} | ${end.browserProcesses} | ${growth((s) => s.browserProcesses).toFixed(1)} |`,
    `| open file descriptors (service) | ${start.fds} | ${end.fds} | ${growth((s) => s.fds).toFixed(1)} |`,
    `| data directory (MiB: the archive's images and SQLite, growing by design) | ${mib(start.dataBytes)} | ${mib(end.dataBytes)} ` +
      `| ${mib(growth((s) => s.dataBytes))} |`,
    '',
    `Latency, ms (p50 / p95): the first ${window} captures after the warm-up ${p50(first).toFixed(0)} / ${p95(first).toFixed(0)}, the ` +
      `last ${window} ${p50(last).toFixed(0)} / ${p95(last).toFixed(0)}.`,
    '',
    `Browser restarts: ${restarts}${restarts ? ` (${restartReasons(warnings.reasons, restarts, explained)})` : ''}; ` +
      'planned: none (the pool has no planned recycle; it replaces a browser only when it is lost, stops answering or breaks).',
    '',
    `- The last ${window} captures' p95 within ${P95_DRIFT * 100}% of the first ${window}'s after the warm-up: ` +
      `**${Math.abs(drift - 1) <= P95_DRIFT ? 'MET' : 'NOT MET'}** (${drift.toFixed(2)}x).`,
    `- No browser restarted for any reason: **${restarts === 0 ? 'MET' : 'NOT MET'}** (${restarts}).`,
    `- Every capture answered: **${failures.size === 0 ? 'MET' : 'NOT MET'}** (${CAPTURES - latencies.length} failed).`,
    '',
  );
  warnings.restore();
  publishResults('soak', lines.join('\n'), FULL_RUN && !stopping(), progress);
});

/** The restarts' reasons, as "reason: n, …", with those no warning explained as "other". */
function restartReasons(reasons: Map<string, number>, restarts: number, explained: number): string {
  const named = [...reasons].map(([r, n]) => `${r}: ${n}`);
  if (restarts > explained) named.push(`other (no warning): ${restarts - explained}`);
  return named.join(', ');
}
