/**
 * Records the series the capture instances' autoscaler reads, from the service under load,
 * for test/deploy/autoscaling.test.ts. Alone: `node scripts/ensure-setup.js && node
 * dist/bench/demand-record.js` (about three minutes); it rewrites
 * test/deploy/capture-demand.recorded.json.
 *
 * The embedded default with 4 browser sessions (a capture instance of the large overlay)
 * serves GET /snap of the bench's simple and heavy pages to a changing number of callers,
 * each sending its next capture as soon as its last one is answered: 2 callers (quiet),
 * 28 (a burst), 14 (steady), then none (drain). Every second it reads /metrics and records
 * what the KEDA query of components/autoscaling/capture-scaledobject.yaml computes from it:
 * browsers busy + captures waiting for one + jobs queued (research left out). The test plays
 * one recorded second as one of KEDA's polls (15 s), so a phase of N samples stands for N
 * polls: quiet 8 (2 min), burst 16 (4 min), steady 100 (25 min), drain 60 (15 min).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../services/shared/config';
import { call } from '../services/shared/contracts';
import { startSystem, stopSystem } from '../runtime/system';
import { parsePrometheus } from '../test/support/prometheus';
import { startPageServerProcess } from './pages';
import { snapQuery, stopOnSignals } from './run';

const OUT = path.resolve(__dirname, '..', '..', 'test', 'deploy', 'capture-demand.recorded.json');
const PHASES = [
  { name: 'quiet', samples: 8, callers: 2 },
  { name: 'burst', samples: 16, callers: 28 },
  { name: 'steady', samples: 100, callers: 14 },
  { name: 'drain', samples: 60, callers: 0 },
] as const;
const METRICS_TOKEN = 'demand-record-metrics';

const progress = (msg: string) => process.stderr.write(`[demand] ${msg}\n`);

/** The scaler's query on one scrape: busy + waiting + queued jobs other than research. */
export function captureDemand(text: string): number {
  const metrics = parsePrometheus(text);
  const sum = (name: string, keep: (labels: Record<string, string>) => boolean = () => true) =>
    metrics
      .all(name)
      .filter((s) => keep(s.labels))
      .reduce((n, s) => n + s.value, 0);
  return sum('snap_browser_slots_busy') + sum('snap_capture_queue_depth') + sum('snap_jobs', (l) => l.state === 'queued' && l.kind !== 'research');
}

async function main(): Promise<void> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'snap-demand-'));
  const config = loadConfig({
    DATA_DIR: dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    ALLOW_PRIVATE_NETWORKS: 'true',
    RATE_LIMIT_MAX: '0',
    CAPTURE_SESSIONS: '4',
    CAPTURE_QUEUE_MAX: '100',
    CAPTURE_QUEUE_TIMEOUT_MS: '120000',
    METRICS_TOKEN,
  });
  const pages = await startPageServerProcess();
  const system = await startSystem(config).catch(async (err) => {
    await pages.stop();
    throw err;
  });
  let stopped = false;
  const cleanup = async () => {
    stopped = true;
    await stopSystem(system).catch(() => undefined);
    await pages.stop().catch(() => undefined);
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  const unhook = stopOnSignals(cleanup, progress);
  try {
    const base = `http://127.0.0.1:${system.api?.port()}`;
    // Callers of different accounts on the paid plan (one capture at once each): the demand is the service's, not one account's.
    const tokens: string[] = [];
    for (let i = 0; i < 30; i++) tokens.push((await call(system.broker, 'billing.createAccount', { plan: 'paid', addons: {} })).access_token);
    let wanted = 0;
    let answered = 0;
    let failed = 0;
    const caller = async (n: number) => {
      for (let i = 0; !stopped && n < wanted; i++) {
        const page = (n + i) % 3 === 0 ? 'heavy' : 'simple';
        const res = await fetch(`${base}/snap?${snapQuery(tokens[n] as string, `${pages.origin}${pages.pages[page]}?c=${n}-${i}`)}`);
        await res.arrayBuffer();
        if (res.status === 200) answered++;
        else failed++;
      }
    };
    const running = new Set<number>();
    const setCallers = (count: number) => {
      wanted = count;
      for (let n = 0; n < count; n++) {
        if (running.has(n)) continue;
        running.add(n);
        void caller(n).finally(() => running.delete(n));
      }
    };
    const samples: number[] = [];
    const phases: Record<string, { from: number; to: number; callers: number }> = {};
    for (const phase of PHASES) {
      progress(`${phase.name}: ${phase.callers} callers for ${phase.samples} s`);
      phases[phase.name] = { from: samples.length, to: samples.length + phase.samples, callers: phase.callers };
      setCallers(phase.callers);
      for (let i = 0; i < phase.samples; i++) {
        const tick = new Promise((r) => setTimeout(r, 1_000));
        const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
        samples.push(captureDemand(await res.text()));
        await tick;
      }
    }
    const record = {
      what: 'Captures in flight as the capture ScaledObject reads them (busy + waiting + queued jobs), one sample a second from bench/demand-record.ts',
      machine: `${os.cpus().length} cores, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
      sessions: 4,
      sampleSeconds: 1,
      phases,
      answered,
      failed,
      samples,
    };
    fs.writeFileSync(OUT, `${JSON.stringify(record, null, 2)}\n`);
    progress(`${answered} captures answered 200, ${failed} otherwise; peak ${Math.max(...samples)}; written to ${path.relative(process.cwd(), OUT)}`);
  } finally {
    unhook();
    await cleanup();
  }
}

if (require.main === module) {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
