/**
 * `npm run bench`, last part: fair sharing under load (issue 31). Alone:
 * `node scripts/ensure-setup.js && node dist/bench/fairness.js`.
 *
 * Two accounts on the default `paid` plan (1 capture at once, 8 waiting). Account A bursts:
 * BENCH_FAIR_BURST GET /snap of the bench's heavy page sent at once. Account B, meanwhile,
 * sends one capture of the simple page at a time, for as long as any of A's is unanswered. B
 * alone (BENCH_FAIR_ALONE captures, one at a time, nothing else running) comes before each
 * burst; BENCH_FAIR_ROUNDS rounds of both, so the machine's drift falls on both alike. On:
 *
 *   1. the embedded default: one process as `npm start` runs it (SQLite, counts in the
 *      process, a local ChromeDriver, CAPTURE_SESSIONS=2);
 *   2. the full stack with two capture instances (ops/stack.ts as `npm run stack` runs it:
 *      two capture processes with two browser sessions each on two Grid nodes, MariaDB,
 *      Redis, NATS).
 *
 * Both with RATE_LIMIT_MAX=0 (the request rate is a limit of its own; the bench sends far
 * more than a person would) and ALLOW_PRIVATE_NETWORKS=true (the pages are on 127.0.0.1).
 *
 * Verdicts, for each: B's p95 during A's bursts at most 2x its p95 alone; none of B's
 * refused; each of A's answered 200 or 429 concurrency_limit_reached with Retry-After (no
 * other answer, none lost); each account charged exactly its captures done (the month's
 * usage, from /account_limits), nothing for a refusal.
 *
 * Results go to stdout and, on a run of both parts with the default sizes, to
 * docs/benchmark.md (its "fairness" results); progress to stderr. Everything started is stopped at the end,
 * on failure and on SIGINT/SIGTERM too.
 *
 * Environment:
 *   BENCH_FAIR_BURST   A's captures per burst (default 200)
 *   BENCH_FAIR_ROUNDS  rounds of B alone then A's burst (default 6)
 *   BENCH_FAIR_ALONE   B's captures alone per round (default 15)
 *   BENCH_FAIR_PARTS   "embedded", "stack" or both (default embedded,stack)
 *   STACK_MYSQL_URL, STACK_REDIS_URL, STACK_NATS_URL  as for `npm run stack`
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { STACK_DEFAULTS, Stack } from '../ops/stack';
import { loadConfig } from '../services/shared/config';
import { call } from '../services/shared/contracts';
import { startSystem, stopSystem } from '../runtime/system';
import { type PageServer, startPageServerProcess } from './pages';
import { envPositiveInt, envSubset, publishResults, snapQuery, stopOnSignals } from './run';
import { percentile } from './stats';

const ROOT = path.resolve(__dirname, '..', '..');
const ALL_PARTS = ['embedded', 'stack'] as const;
type Part = (typeof ALL_PARTS)[number];

const BURST = envPositiveInt('BENCH_FAIR_BURST', 200);
const ROUNDS = envPositiveInt('BENCH_FAIR_ROUNDS', 6);
const ALONE = envPositiveInt('BENCH_FAIR_ALONE', 15);
const PARTS = envSubset('BENCH_FAIR_PARTS', ALL_PARTS);
const FULL_RUN = PARTS.length === ALL_PARTS.length && !['BENCH_FAIR_BURST', 'BENCH_FAIR_ROUNDS', 'BENCH_FAIR_ALONE'].some((v) => process.env[v]?.trim());
/** The target: B's p95 during A's bursts at most this many times its p95 alone. */
const P95_LIMIT = 2;

const progress = (msg: string) => process.stderr.write(`[bench:fairness] ${msg}\n`);
const SETTINGS = { ALLOW_PRIVATE_NETWORKS: 'true', RATE_LIMIT_MAX: '0' };

/** One answer of GET /snap. */
interface Answer {
  status: number;
  ms: number;
  errorCode: string | null;
  retryAfter: number | null;
}

function snap(agent: http.Agent, url: string): Promise<Answer> {
  const t = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, timeout: 180_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('error', reject);
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        let errorCode: string | null = null;
        if (status !== 200) {
          try {
            errorCode = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error_code?: string }).error_code ?? null;
          } catch {
            errorCode = 'not json';
          }
        }
        const retryAfter = res.headers['retry-after'] === undefined ? null : Number(res.headers['retry-after']);
        resolve({ status, ms: performance.now() - t, errorCode, retryAfter });
      });
    });
    req.on('timeout', () => req.destroy(new Error('/snap request timed out')));
    req.on('error', reject);
  });
}

/** A deployment under test: where its api is, two accounts on it, and how to stop it. */
interface Deployment {
  label: string;
  base: string;
  accounts: { a: string; b: string };
  stop(failed: boolean): Promise<void>;
}

/** The month's screenshots the account was charged (GET /account_limits). */
async function charged(base: string, token: string): Promise<number> {
  const res = await fetch(`${base}/account_limits?access_token=${token}`);
  const body = (await res.json()) as { results: { screenshot_current_month_usage: number } };
  return body.results.screenshot_current_month_usage;
}

async function embedded(): Promise<Deployment> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'snap-bench-fair-'));
  progress('embedded: starting the system as npm start does (SQLite, local ChromeDriver, 2 browser sessions)');
  const system = await startSystem(loadConfig({ ...SETTINGS, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'warn' }));
  const account = async () => (await call(system.broker, 'billing.createAccount', { plan: 'paid', addons: {} })).access_token;
  return {
    label: 'embedded default (2 browsers)',
    base: `http://127.0.0.1:${system.api?.port()}`,
    accounts: { a: await account(), b: await account() },
    stop: async () => {
      await stopSystem(system);
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function fullStack(): Promise<Deployment> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snap-bench-fair-stack-'));
  progress(`stack: starting the full stack (2 capture instances x 2 sessions, 2 Grid nodes) in ${dir}`);
  const stack = await Stack.start({
    ...STACK_DEFAULTS,
    mysqlUrl: process.env.STACK_MYSQL_URL || STACK_DEFAULTS.mysqlUrl,
    redisUrl: process.env.STACK_REDIS_URL || STACK_DEFAULTS.redisUrl,
    natsUrl: process.env.STACK_NATS_URL || STACK_DEFAULTS.natsUrl,
    captureInstances: 2,
    sessionsPerCapture: 2,
    gridNodes: 2,
    schedulerInstances: 1,
    dir,
    port: 0,
    restart: false,
    // Stack.start waits for each broker's "started" line (info).
    env: { ...SETTINGS, LOG_LEVEL: 'info' },
    log: (line) => {
      if (line.startsWith('[stack]')) progress(`stack: ${line}`);
    },
  });
  const account = () => {
    const res = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'bin', 'admin.js'), 'accounts', 'create', '--plan', 'paid', '--json'], {
      env: { ...stack.serviceEnv(), LOG_LEVEL: 'warn' },
      encoding: 'utf8',
    });
    if (res.status !== 0) throw new Error(`admin accounts create failed (${res.status}): ${res.stderr}`);
    return (JSON.parse(res.stdout) as { access_token: string }).access_token;
  };
  // Until both capture instances have their browsers, a request balanced to one still starting waits.
  for (let i = 0; ; i++) {
    const p = (await (await fetch(`${stack.url}/pressure`)).json()) as { pressure: { max_concurrent: number; nodes: number } };
    if (p.pressure.nodes === 2 && p.pressure.max_concurrent === 4) break;
    if (i > 240) throw new Error(`the stack's browsers did not all start: ${JSON.stringify(p)}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  return {
    label: 'full stack (2 capture instances x 2 browsers)',
    base: stack.url,
    accounts: { a: account(), b: account() },
    stop: async (failed) => {
      await stack.stop();
      if (failed) progress(`stack: logs kept in ${dir}/logs`);
      else fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

interface PartResult {
  label: string;
  alone: number[];
  loaded: number[];
  bRefused: Answer[];
  aDone: number;
  aRefused: number;
  aRefusedWithoutRetryAfter: number;
  aOther: Answer[];
  aLost: number;
  charged: { a: number; b: number };
  expected: { a: number; b: number };
  seconds: number;
}

async function measure(dep: Deployment, pages: PageServer): Promise<PartResult> {
  const t0 = performance.now();
  const url = (token: string, page: 'simple' | 'heavy', n: string) => `${dep.base}/snap?${snapQuery(token, `${pages.origin}${pages.pages[page]}?n=${n}`)}`;
  const bAgent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const aAgent = new http.Agent({ keepAlive: true, maxSockets: BURST + 8 });
  const r: PartResult = {
    label: dep.label,
    alone: [],
    loaded: [],
    bRefused: [],
    aDone: 0,
    aRefused: 0,
    aRefusedWithoutRetryAfter: 0,
    aOther: [],
    aLost: 0,
    charged: { a: 0, b: 0 },
    expected: { a: 0, b: 0 },
    seconds: 0,
  };
  let bDone = 0;
  const bOnce = async (n: string): Promise<Answer> => {
    const answer = await snap(bAgent, url(dep.accounts.b, 'simple', n));
    if (answer.status === 200) bDone++;
    else r.bRefused.push(answer);
    return answer;
  };
  try {
    // Warm-up: every browser has served both pages.
    for (let i = 0; i < 4; i++) await bOnce(`warm${i}`);
    for (const a of await Promise.all([1, 2].map((i) => snap(aAgent, url(dep.accounts.a, 'heavy', `warm${i}`))))) if (a.status === 200) r.aDone++;
    for (let round = 1; round <= ROUNDS; round++) {
      for (let i = 0; i < ALONE; i++) {
        const answer = await bOnce(`alone${round}.${i}`);
        if (answer.status === 200) r.alone.push(answer.ms);
      }
      let pending = BURST;
      const burst = Array.from({ length: BURST }, (_, i) =>
        snap(aAgent, url(dep.accounts.a, 'heavy', `burst${round}.${i}`))
          .then(
            (answer) => {
              if (answer.status === 200) r.aDone++;
              else if (answer.status === 429 && answer.errorCode === 'concurrency_limit_reached') {
                r.aRefused++;
                if (!(answer.retryAfter !== null && answer.retryAfter >= 1)) r.aRefusedWithoutRetryAfter++;
              } else r.aOther.push(answer);
            },
            () => {
              r.aLost++;
            },
          )
          .finally(() => {
            pending--;
          }),
      );
      // B starts once A's burst has arrived, and goes on while any of it is unanswered.
      await new Promise((res) => setTimeout(res, 200));
      let n = 0;
      while (pending > 0) {
        const answer = await bOnce(`load${round}.${n++}`);
        if (answer.status === 200) r.loaded.push(answer.ms);
      }
      await Promise.all(burst);
      progress(
        `${dep.label}: round ${round}/${ROUNDS}: B alone p95 ${p95(r.alone).toFixed(0)} ms, during bursts p95 ${p95(r.loaded).toFixed(0)} ms; A ` +
          `done ${r.aDone}, refused ${r.aRefused}`,
      );
    }
    r.expected = { a: r.aDone, b: bDone };
    r.charged = { a: await charged(dep.base, dep.accounts.a), b: await charged(dep.base, dep.accounts.b) };
  } finally {
    aAgent.destroy();
    bAgent.destroy();
  }
  r.seconds = (performance.now() - t0) / 1000;
  return r;
}

const sorted = (xs: number[]) => [...xs].sort((x, y) => x - y);
const p95 = (xs: number[]) => percentile(sorted(xs), 0.95);
const p50 = (xs: number[]) => percentile(sorted(xs), 0.5);

/** The verdicts of one part: [what, met, the figures]. */
function verdicts(r: PartResult): Array<[string, boolean, string]> {
  const ratio = p95(r.loaded) / p95(r.alone);
  return [
    [
      `B's p95 during A's bursts at most ${P95_LIMIT}x its p95 alone`,
      ratio <= P95_LIMIT,
      `${ratio.toFixed(2)}x (${p95(r.loaded).toFixed(0)} / ${p95(r.alone).toFixed(0)} ms)`,
    ],
    [
      "none of B's captures refused",
      r.bRefused.length === 0,
      r.bRefused.length ? `${r.bRefused.length} refused: ${[...new Set(r.bRefused.map((a) => `${a.status} ${a.errorCode}`))].join(', ')}` : '0 refused',
    ],
    [
      "each of A's captures done or refused with 429 concurrency_limit_reached and Retry-After, none lost",
      r.aOther.length === 0 && r.aLost === 0 && r.aRefusedWithoutRetryAfter === 0,
      `${r.aDone} done, ${r.aRefused} refused (${r.aRefusedWithoutRetryAfter} without Retry-After), ${r.aOther.length} ` +
        `other${r.aOther.length ? ` (${[...new Set(r.aOther.map((a) => `${a.status} ${a.errorCode}`))].join(', ')})` : ''}, ${r.aLost} lost`,
    ],
    [
      'each account charged exactly its captures done (nothing for a refusal)',
      r.charged.a === r.expected.a && r.charged.b === r.expected.b,
      `A ${r.charged.a} of ${r.expected.a} done, B ${r.charged.b} of ${r.expected.b}`,
    ],
  ];
}

function report(results: PartResult[], loads: number[], totalSeconds: number): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const lines = [
    '# Fair sharing under load (bench/fairness.ts)',
    '',
    `Run ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${os.cpus().length} cores (${cpu}), ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ` +
      `Node ${process.versions.node}; ` +
      `load average ${loads.map((l) => l.toFixed(1)).join(' → ')}; ${totalSeconds.toFixed(0)} s in all.`,
    '',
    `Two accounts on the default \`paid\` plan (1 capture at once, 8 waiting). In each of ${ROUNDS} rounds: B alone, ${ALONE} captures of the simple page ` +
      `one at a time; ` +
      `then A sends ${BURST} GET /snap of the heavy page at once, and B goes on one capture at a time until every one of A's is answered. Latencies are ` +
      `whole requests (ms).`,
    '',
    "| deployment | B alone: n, p50, p95 | B during A's bursts: n, p50, p95 | p95 ratio | B refused | A: done / 429 with Retry-After / other / lost | " +
      'charged A, B (captures done) |',
    '|---|---|---|---:|---:|---|---|',
  ];
  for (const r of results) {
    lines.push(
      `| ${r.label} | ${r.alone.length}, ${p50(r.alone).toFixed(0)}, ${p95(r.alone).toFixed(0)} ` +
        `| ${r.loaded.length}, ${p50(r.loaded).toFixed(0)}, ${p95(r.loaded).toFixed(0)} | ` +
        `${(p95(r.loaded) / p95(r.alone)).toFixed(2)}x | ${r.bRefused.length} | ${r.aDone} / ${r.aRefused - r.aRefusedWithoutRetryAfter} ` +
        `/ ${r.aOther.length + r.aRefusedWithoutRetryAfter} / ${r.aLost} | ` +
        `${r.charged.a} (${r.expected.a}), ${r.charged.b} (${r.expected.b}) |`,
    );
  }
  lines.push('', 'Verdicts:', '');
  for (const r of results) {
    for (const [what, met, figures] of verdicts(r)) lines.push(`- ${r.label}: ${what}: **${met ? 'MET' : 'NOT MET'}** (${figures}).`);
  }
  return lines.join('\n');
}

async function main(): Promise<void> {
  const t0 = performance.now();
  const loads = [os.loadavg()[0] as number];
  const stops: Array<(failed: boolean) => Promise<void>> = [];
  let failed = true;
  const cleanup = async () => {
    for (const stop of stops.splice(0).reverse()) await stop(failed).catch((err: Error) => progress(`cleanup: ${err.message}`));
  };
  const removeSignalHandlers = stopOnSignals(cleanup, progress);
  try {
    const pages = await startPageServerProcess();
    stops.push(() => pages.stop());
    const results: PartResult[] = [];
    const starts: Record<Part, () => Promise<Deployment>> = { embedded, stack: fullStack };
    for (const part of PARTS) {
      const dep = await starts[part]();
      stops.push((f) => dep.stop(f));
      results.push(await measure(dep, pages));
      await (stops.pop() as (f: boolean) => Promise<void>)(false);
      loads.push(os.loadavg()[0] as number);
    }
    failed = false;
    publishResults('fairness', report(results, loads, (performance.now() - t0) / 1000), FULL_RUN, progress);
  } finally {
    await cleanup();
    removeSignalHandlers();
  }
}

main().catch((err: Error) => {
  process.stderr.write(`[bench:fairness] FAILED: ${err.stack ?? err.message}\n`);
  process.exitCode = 1;
  setTimeout(() => process.exit(1), 10_000).unref();
});
