/**
 * A ttl hit end to end: GET /snap answered from an earlier capture because of `ttl` (the
 * same URL and capture-affecting options on the same account within ttl return the stored
 * capture, spend no credit and say `X-Cache: HIT`), timed over HTTP until the whole body is
 * read, against the real system started in this process: the embedded mode (SQLite,
 * in-process counters, local disk) and the full stack's backends (MariaDB and Redis, every
 * service still in this one process, no transporter).
 *
 * One real capture of a local page (local ChromeDriver and Chromium's headless shell) makes
 * the screenshot, then REQUESTS repeats of it, one at a time on a kept-alive connection,
 * after WARMUP unmeasured ones: the image answer (the default) and the JSON record
 * (json=true). Every measured answer must be a HIT; a MISS stops the run. Rate limiting stays
 * on (a high maximum), as a request in production counts against it.
 *
 * The report goes to stdout and, with the default number of requests, into docs/benchmark.md
 * (its "ttl" results).
 *
 *   node dist/bench/ttl.js      (BENCH_TTL_REQUESTS, default 300; TEST_MYSQL_URL, TEST_REDIS_URL)
 */
import os from 'node:os';
import { call } from '../services/shared/contracts';
import { startSystem } from '../runtime/system';
import { type Backend, backendConfig } from '../test/support/backends';
import { startPageServer } from './pages';
import { publishResults } from './run';

const FULL_REQUESTS = 300;
const REQUESTS = Number(process.env.BENCH_TTL_REQUESTS ?? FULL_REQUESTS);
const WARMUP = 30;
const TARGET_MS = 20;

interface Cell {
  label: string;
  answer: string;
  bytes: number;
  p50: number;
  p95: number;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;

async function get(url: string): Promise<{ status: number; cache: string | null; bytes: number }> {
  const res = await fetch(url);
  const body = await res.arrayBuffer();
  return { status: res.status, cache: res.headers.get('x-cache'), bytes: body.byteLength };
}

async function benchBackend(label: string, backend: Backend, pageUrl: string): Promise<Cell[]> {
  const b = await backendConfig(backend, {
    ALLOW_PRIVATE_NETWORKS: 'true',
    CAPTURE_SESSIONS: '1',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_MAX: '1000000',
  });
  const system = await startSystem(b.config);
  try {
    const { access_token } = await call(system.broker, 'billing.createAccount', { plan: 'free', addons: {} });
    const base = `http://127.0.0.1:${system.api?.port()}/snap?`;
    const params = { access_token, url: pageUrl, page_width: '1280', page_height: '800', ttl: '3600' };
    const first = await get(base + new URLSearchParams(params));
    if (first.status !== 200 || first.cache !== 'MISS') throw new Error(`the first capture answered ${first.status} ${first.cache}`);
    const cells: Cell[] = [];
    for (const [answer, extra] of [
      ['image', {}],
      ['JSON record', { json: 'true' }],
    ] as const) {
      const url = base + new URLSearchParams({ ...params, ...extra });
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < WARMUP + REQUESTS; i++) {
        const t = process.hrtime.bigint();
        const r = await get(url);
        const ms = Number(process.hrtime.bigint() - t) / 1e6;
        if (r.status !== 200 || r.cache !== 'HIT') throw new Error(`a repeat answered ${r.status} ${r.cache}, not a ttl hit`);
        if (i >= WARMUP) times.push(ms);
        bytes = r.bytes;
      }
      times.sort((x, y) => x - y);
      cells.push({ label, answer, bytes, p50: quantile(times, 0.5), p95: quantile(times, 0.95) });
    }
    return cells;
  } finally {
    await system.broker.stop();
    await b.cleanup();
  }
}

async function main(): Promise<void> {
  const pages = await startPageServer();
  const cells: Cell[] = [];
  try {
    const pageUrl = pages.origin + pages.pages.simple;
    cells.push(...(await benchBackend('embedded (SQLite, in-process counters)', 'sqlite', pageUrl)));
    cells.push(...(await benchBackend('full-stack backends (MariaDB, Redis), one process', 'mysql', pageUrl)));
  } finally {
    await pages.stop();
  }
  const cpus = os.cpus();
  const missed = cells.filter((c) => c.p50 >= TARGET_MS);
  const text = [
    '## A ttl hit, end to end',
    '',
    `Run ${new Date().toISOString()} on ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${cpus.length} cores, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB RAM, ` +
      `Node ${process.version}; ` +
      `load average (1 min) at the end ${os.loadavg()[0]!.toFixed(2)}. GET /snap of a 1280x800 JPEG capture of the simple bench page, repeated with ` +
      `ttl=3600: ` +
      `${REQUESTS} requests one at a time on a kept-alive connection after ${WARMUP} warm-up ones, timed until the body is read.`,
    '',
    '| system | answer | body bytes | p50 ms | p95 ms |',
    '|---|---|---:|---:|---:|',
    ...cells.map((c) => `| ${c.label} | ${c.answer} | ${c.bytes} | ${c.p50.toFixed(1)} | ${c.p95.toFixed(1)} |`),
    '',
    `Target: a ttl hit's p50 under ${TARGET_MS} ms (issue 15): ` +
      (missed.length ? `**NOT MET** (${missed.map((c) => `${c.label}, ${c.answer}: ${c.p50.toFixed(1)} ms`).join('; ')}).` : '**MET**.'),
  ].join('\n');
  publishResults('ttl', text, REQUESTS === FULL_REQUESTS, (msg) => console.error(`[ttl] ${msg}`));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
