/**
 * The time to a clear answer for pages that fail or never finish (issue 41), on the embedded
 * default (one process, SQLite, a local ChromeDriver and Chromium's headless shell), each
 * against its target:
 *
 *   dialog           what alert(), confirm() and prompt() while loading add to a capture: the
 *                    p50 of a page that opens all three, less the p50 of the same page without
 *                    them (alternated, ROUNDS each). Target: under 100 ms.
 *   crash            a page whose renderer runs out of memory (the renderers' JavaScript heap
 *                    capped at 64 MB, so it does in a fraction of a second): time from the
 *                    request to the 422 page_crashed answer. Target: within 5 s.
 *   never-ending     a body that streams for good: time to the 200 taken as drawn at
 *                    navigation_timeout (BOUND_MS here, wait=0). Target: within the bound and 1 s.
 *   no answer        a server that accepts and never answers: time to the 422 page_load_failed.
 *                    Target: within the bound and 1 s.
 *
 * Every request's answer is checked (status and error code): a wrong one stops the run. The
 * report goes to stdout and, with the default number of rounds, into docs/benchmark.md.
 *
 *   node dist/bench/failures.js      (BENCH_FAILURE_ROUNDS, default 15)
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { call } from '../services/shared/contracts';
import { startSystem } from '../runtime/system';
import { backendConfig } from '../test/support/backends';
import { publishResults } from './run';

const FULL_ROUNDS = 15;
const ROUNDS = Number(process.env.BENCH_FAILURE_ROUNDS ?? FULL_ROUNDS);
/** navigation_timeout of the never-ending and silent pages. */
const BOUND_MS = 3000;
const SLACK_MS = 1000;
const TARGETS = { dialog: 100, crash: 5000, bound: BOUND_MS + SLACK_MS };

const page = (script: string) =>
  `<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body><h1>A page</h1><p>Some text.</p>${script}</body></html>`;

/** The pages, and a second server that never answers. */
async function servePages(): Promise<{ origin: string; silent: string; stop(): Promise<void> }> {
  const open = new Set<http.ServerResponse>();
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    switch (req.url) {
      case '/plain':
        res.end(page(''));
        return;
      case '/dialog':
        res.end(page("<script>alert('a'); confirm('b'); prompt('c');</script>"));
        return;
      case '/oom':
        res.end(page('<script>const a = []; for (;;) a.push(new Array(1e6).fill(1.5));</script>'));
        return;
      default:
        // /never-ending: the document starts and never ends.
        open.add(res);
        res.on('close', () => open.delete(res));
        res.write(page('').replace('</body></html>', ''));
    }
  });
  const silent = http.createServer(() => undefined);
  await Promise.all([server, silent].map((s) => new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve))));
  const origin = (s: http.Server) => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
  return {
    origin: origin(server),
    silent: origin(silent),
    stop: async () => {
      for (const res of open) res.destroy();
      await Promise.all(
        [server, silent].map(
          (s) =>
            new Promise<void>((resolve) => {
              s.closeAllConnections();
              s.close(() => resolve());
            }),
        ),
      );
    },
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface Row {
  pattern: string;
  measured: string;
  ms: number;
  target: string;
  met: boolean;
}

async function main(): Promise<void> {
  const pages = await servePages();
  const b = await backendConfig('sqlite', {
    ALLOW_PRIVATE_NETWORKS: 'true',
    CAPTURE_SESSIONS: '1',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_MAX: '1000000',
    CHROME_EXTRA_ARGS: '--js-flags=--max-old-space-size=64',
  });
  const system = await startSystem(b.config);
  const rows: Row[] = [];
  try {
    const { access_token } = await call(system.broker, 'billing.createAccount', { plan: 'free', addons: {} });
    await call(system.broker, 'billing.upsertPlan', { name: 'free', paid: false, screenshot_limit: 1_000_000, max_concurrent: 1, max_queued: 4 });
    const base = `http://127.0.0.1:${system.api?.port()}/snap?`;
    /** One snap, its answer checked; ms until the whole body is read. */
    const snap = async (url: string, expected: number, code: string | null, extra: Record<string, string> = {}) => {
      const query = new URLSearchParams({ access_token, url, ttl: '0', wait: '0', page_width: '800', page_height: '600', ...extra });
      const t = process.hrtime.bigint();
      const res = await fetch(base + query);
      const body = Buffer.from(await res.arrayBuffer());
      const ms = Number(process.hrtime.bigint() - t) / 1e6;
      const said = res.headers.get('content-type')?.includes('json') ? (JSON.parse(body.toString()) as { error_code?: string }) : null;
      if (res.status !== expected || (code && said?.error_code !== code)) {
        throw new Error(`${url} answered ${res.status} ${said?.error_code ?? ''}, expected ${expected} ${code ?? ''}`);
      }
      return ms;
    };
    // Warm-up: the browser's first pages are slower.
    for (let i = 0; i < 3; i++) await snap(`${pages.origin}/plain`, 200, null);
    const plain: number[] = [];
    const dialog: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      plain.push(await snap(`${pages.origin}/plain`, 200, null));
      dialog.push(await snap(`${pages.origin}/dialog`, 200, null));
    }
    const added = median(dialog) - median(plain);
    rows.push({
      pattern: 'alert, confirm and prompt while loading',
      measured: `p50 added to the same page without them (${median(dialog).toFixed(0)} against ${median(plain).toFixed(0)} ms)`,
      ms: added,
      target: `under ${TARGETS.dialog} ms`,
      met: added < TARGETS.dialog,
    });
    const few = Math.max(1, Math.ceil(ROUNDS / 5));
    const timesOf = async (n: number, fn: () => Promise<number>) => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push(await fn());
      return out;
    };
    const crash = median(await timesOf(few, () => snap(`${pages.origin}/oom`, 422, 'page_crashed')));
    rows.push({
      pattern: 'renderer out of memory',
      measured: 'request to 422 page_crashed, p50',
      ms: crash,
      target: `within ${TARGETS.crash} ms`,
      met: crash <= TARGETS.crash,
    });
    const bound = { navigation_timeout: String(BOUND_MS) };
    const endless = median(await timesOf(few, () => snap(`${pages.origin}/never-ending`, 200, null, bound)));
    rows.push({
      pattern: 'a body that never ends',
      measured: `request to the 200 taken as drawn (navigation_timeout=${BOUND_MS}), p50`,
      ms: endless,
      target: `within ${TARGETS.bound} ms`,
      met: endless <= TARGETS.bound,
    });
    const silent = median(await timesOf(few, () => snap(`${pages.silent}/`, 422, 'page_load_failed', bound)));
    rows.push({
      pattern: 'a server that never answers',
      measured: `request to 422 page_load_failed (navigation_timeout=${BOUND_MS}), p50`,
      ms: silent,
      target: `within ${TARGETS.bound} ms`,
      met: silent <= TARGETS.bound,
    });
  } finally {
    await system.broker.stop();
    await b.cleanup();
    await pages.stop();
  }
  const cpus = os.cpus();
  const text = [
    '## Real-page failures: time to a clear answer',
    '',
    `Run ${new Date().toISOString()} on ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${cpus.length} cores, Node ${process.version}; the embedded default ` +
      `with one browser, 800x600 JPEG, wait=0, ${ROUNDS} rounds of the dialog pair and ${Math.max(1, Math.ceil(ROUNDS / 5))} of each other pattern; ` +
      `load average (1 min) at the end ${os.loadavg()[0]!.toFixed(2)}.`,
    '',
    '| pattern | measured | ms | target | verdict |',
    '|---|---|---:|---|---|',
    ...rows.map((r) => `| ${r.pattern} | ${r.measured} | ${r.ms.toFixed(0)} | ${r.target} | ${r.met ? '**MET**' : '**NOT MET**'} |`),
  ].join('\n');
  publishResults('failures', text, ROUNDS === FULL_ROUNDS, (msg) => console.error(`[failures] ${msg}`));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
