/**
 * `npm run bench`, third part: the full stack as separate processes (ops/stack.ts), issue 15.
 *
 *   1. Spreading out. For each layout (capture instances x Grid nodes) of 1x1, 2x1, 1x2 and
 *      2x2, with the same browser sessions in all (TOTAL_SESSIONS: CAPTURE_SESSIONS = 4 /
 *      capture instances), a stack of its own (one scheduler), warm-up captures, then
 *      BENCH_STACK_CAPTURES GET /snap of the bench's simple page (wait=0, ttl=0: each a fresh
 *      capture) at concurrency 4, in 4 blocks per layout alternated between the layouts' stacks
 *      (all up at once, so drift in the machine's speed falls on each alike). Reported: captures per second, p50/p95, CPU per capture
 *      (the stack's own processes, counted from /proc/<pid>/stat, and the whole machine, from
 *      /proc/stat), and the ratios to 1x1. On two cores this is the cost of spreading out
 *      (more processes, more NATS hops, more JVMs), not a speed-up.
 *   2. The scheduler round. A stack with three scheduler instances (SCHEDULER_TICK_SECONDS=1)
 *      and one capture instance with one browser session, kept busy by a page that answers only
 *      after 90 s (so captures do not flood the machine: what is measured is the firing).
 *      BENCH_STACK_CONFIGS scheduled configurations are written straight into the database
 *      (copies of one made through the API) and made due at one instant by a single UPDATE.
 *      Measured: the time from that instant until every configuration has its job, jobs per
 *      second, each scheduler's CPU, and that each configuration fired exactly once (the run
 *      fails if one fired twice or not at all).
 *
 *   3. A capture instance killed under a burst (issue 47). A stack as `npm run stack` runs it
 *      (two capture instances with two browser sessions each, two Grid nodes, the supervisor
 *      on), an account allowed 64 captures at once: KILL_BURST GET /snap of the bench's heavy
 *      page at once, then capture-1 SIGKILLed KILL_AFTER_MS later. Reported: the answers by
 *      status, when the last came, the account's usage against the 200s, each snap's job (one
 *      each, the taken-again ones in two attempts), and the same burst with no kill beside it.
 *
 * Results go to stdout and, when every part and layout ran, into docs/benchmark.md (its "stack" results);
 * progress to stderr. Every process started is stopped at the end, on failure and on
 * SIGINT/SIGTERM too (each stack drops its database).
 *
 * Environment:
 *   BENCH_STACK_CAPTURES  measured captures per layout (default 80)
 *   BENCH_STACK_WARMUP    warm-up captures per worker before measuring (default 3)
 *   BENCH_STACK_LAYOUTS   e.g. "1x1,2x2" (default 1x1,2x1,1x2,2x2)
 *   BENCH_STACK_CONFIGS   scheduled configurations in the round (default 10000)
 *   BENCH_STACK_PARTS     "spread", "scheduler", "kill" or any of them (default all three)
 *   STACK_MYSQL_URL, STACK_REDIS_URL, STACK_NATS_URL  as for `npm run stack`
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import knex from 'knex';
import { STACK_DEFAULTS, Stack } from '../ops/stack';
import { TICK_BATCH } from '../services/scheduler/schedule-runner';
import { FORMAT, QUALITY, VIEWPORT, envPositiveInt, envSubset, loadNote, publishResults, snapQuery, stopOnSignals } from './run';
import { createBenchAccount, waitForBrowsers as waitForStackBrowsers } from './deployments';
import { type PageServer, startPageServer } from './pages';
import { childrenOf, machineCpuMs, processes } from './procs';

const CONCURRENCY = 4;
const TOTAL_SESSIONS = 4;
const SCHEDULERS = 3;
const ALL_LAYOUTS = ['1x1', '2x1', '1x2', '2x2'] as const;
const ALL_PARTS = ['spread', 'scheduler', 'kill'] as const;
/** Part 3: the burst, and how long after it capture-1 is killed. */
const KILL_BURST = 40;
const KILL_AFTER_MS = 1_500;

const progress = (msg: string) => process.stderr.write(`[bench:stack] ${msg}\n`);

const CAPTURES = envPositiveInt('BENCH_STACK_CAPTURES', 80);
/** Blocks each layout's captures are split into, alternated between layouts. */
const BLOCKS = 4;
const WARMUP_PER_WORKER = envPositiveInt('BENCH_STACK_WARMUP', 3);
const LAYOUTS = envSubset('BENCH_STACK_LAYOUTS', ALL_LAYOUTS);
const CONFIGS = envPositiveInt('BENCH_STACK_CONFIGS', 10_000);
const PARTS = envSubset('BENCH_STACK_PARTS', ALL_PARTS);
const FULL_RUN = LAYOUTS.length === ALL_LAYOUTS.length && PARTS.length === ALL_PARTS.length;

// ------------------------------------------------------------------------------------------
// CPU: the whole machine (/proc/stat) and processes (/proc/<pid>/stat)
// ------------------------------------------------------------------------------------------

/** The shared servers every stack uses (and, on this machine, other people's tests too). */
const BACKING = ['mariadbd', 'mysqld', 'nats-server', 'redis-server'];

interface CpuSample {
  at: number;
  machineMs: number;
  /** CPU of each stack process and everything under it (its children, browsers included), by top pid. */
  trees: Map<number, number>;
  backingMs: number;
}

/**
 * CPU so far of each of `roots` with all its descendants: their own time, plus the time of
 * descendants that exited and were waited for (counted in their parent's cutime/cstime). A
 * renderer started and ended per capture is counted once its browser reaps it.
 */
function cpuSample(roots: number[]): CpuSample {
  const procs = processes();
  const children = childrenOf(procs);
  const trees = new Map<number, number>();
  for (const root of roots) {
    let sum = 0;
    const stack = [root];
    while (stack.length) {
      const pid = stack.pop()!;
      const p = procs.get(pid);
      if (!p) continue;
      sum += p.ownMs + p.childrenMs;
      stack.push(...(children.get(pid) ?? []));
    }
    trees.set(root, sum);
  }
  let backingMs = 0;
  for (const p of procs.values()) if (BACKING.includes(p.comm)) backingMs += p.ownMs;
  return { at: performance.now(), machineMs: machineCpuMs(), trees, backingMs };
}

const treeDelta = (a: CpuSample, b: CpuSample, pids: number[]) =>
  pids.reduce((s, pid) => s + Math.max(0, (b.trees.get(pid) ?? 0) - (a.trees.get(pid) ?? 0)), 0);

// ------------------------------------------------------------------------------------------
// stacks
// ------------------------------------------------------------------------------------------

/** Stacks running now, stopped by cleanup whatever happens. */
const running = new Set<Stack>();

async function startStack(
  label: string,
  o: {
    captureInstances: number;
    gridNodes: number;
    schedulerInstances: number;
    sessionsPerCapture: number;
    env: Record<string, string>;
    /** Start a service process that dies again, as `npm run stack` does (default: a death fails the bench). */
    restart?: boolean;
  },
): Promise<Stack> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snap-bench-stack-'));
  progress(
    `${label}: starting a stack (${o.captureInstances} capture x ${o.sessionsPerCapture} sessions, ${o.gridNodes} Grid node(s), ${o.schedulerInstances} ` +
      `scheduler(s)) in ${dir}`,
  );
  const t = performance.now();
  const stack = await Stack.start({
    ...STACK_DEFAULTS,
    mysqlUrl: process.env.STACK_MYSQL_URL || STACK_DEFAULTS.mysqlUrl,
    redisUrl: process.env.STACK_REDIS_URL || STACK_DEFAULTS.redisUrl,
    natsUrl: process.env.STACK_NATS_URL || STACK_DEFAULTS.natsUrl,
    ...o,
    dir,
    port: 0,
    // A process that dies fails the bench instead of being started again unnoticed (but where a death is what is measured).
    restart: o.restart ?? false,
    env: {
      // The bench's pages are on 127.0.0.1.
      ALLOW_PRIVATE_NETWORKS: 'true',
      // The bench sends far more than a person would; the per-account request rate is not what it measures.
      RATE_LIMIT_MAX: '0',
      // Stack.start waits for each broker's "started" line (info).
      LOG_LEVEL: 'info',
      ...o.env,
    },
    log: (line) => {
      if (line.startsWith('[stack]')) progress(`${label}: ${line}`);
    },
  });
  running.add(stack);
  progress(`${label}: ready in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  return stack;
}

const stopping = new Map<Stack, Promise<void>>();

/** Stops a stack (once, however often called) and removes its directory, or keeps its logs after a failure. */
function stopStack(stack: Stack, failed: boolean): Promise<void> {
  let done = stopping.get(stack);
  if (!done) {
    done = (async () => {
      await stack.stop();
      running.delete(stack);
      if (failed) progress(`logs kept in ${stack.options.dir}/logs`);
      else fs.rmSync(stack.options.dir, { recursive: true, force: true });
    })();
    stopping.set(stack, done);
  }
  return done;
}

/** Set on SIGINT/SIGTERM: no new request is sent, so the stacks' api processes can stop at once. */
const aborted = new AbortController();
/** HTTP agents in use, destroyed on a signal. */
const agents = new Set<http.Agent>();

/** Fails if a service process of the stack has exited (the stack does not restart them here). */
function checkAlive(stack: Stack): void {
  const dead = [...stack.instances.values()].filter((i) => i.child.exitCode !== null || i.child.signalCode !== null);
  if (dead.length)
    throw new Error(
      `stack processes exited during the run: ${dead.map((i) => `${i.name} (${i.child.signalCode ?? i.child.exitCode}, ${i.logFile})`).join(', ')}`,
    );
}

/** An account that may use every browser of the stack at once (its plan's limits never hold the bench). */
const createAccount = (stack: Stack) => createBenchAccount(stack.serviceEnv());

/** Waits until the cluster's live browser sessions are `sessions` (GET /pressure: max_concurrent). */
const waitForBrowsers = (stack: Stack, sessions: number) => waitForStackBrowsers(stack.url, sessions);

/** Browser sessions on each Grid node now (the hub's /status). */
async function sessionsPerNode(stack: Stack): Promise<number[]> {
  const res = await fetch(`${stack.gridUrl}/status`);
  const body = (await res.json()) as { value?: { nodes?: Array<{ uri?: string; slots?: Array<{ session?: unknown }> }> } };
  return (body.value?.nodes ?? [])
    .slice()
    .sort((a, b) => String(a.uri).localeCompare(String(b.uri)))
    .map((n) => (n.slots ?? []).filter((s) => s.session).length);
}

// ------------------------------------------------------------------------------------------
// 1. spreading out
// ------------------------------------------------------------------------------------------

function snapOnce(agent: http.Agent, url: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, timeout: 120_000, signal: aborted.signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('error', reject);
      res.on('end', () => {
        if (res.statusCode !== 200 || res.headers['content-type'] !== `image/${FORMAT}`) {
          reject(new Error(`/snap answered ${res.statusCode} ${res.headers['content-type']}: ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`));
        } else if (res.headers['x-cache'] !== 'MISS') {
          reject(new Error(`/snap answered X-Cache ${res.headers['x-cache']}; every capture must be fresh`));
        } else resolve();
      });
    });
    req.on('timeout', () => req.destroy(new Error('/snap request timed out')));
    req.on('error', reject);
  });
}

/** `count` operations over `workers` concurrent workers; each one's latency, ms. */
async function runWorkers(workers: number, count: number, op: () => Promise<void>): Promise<number[]> {
  let started = 0;
  const samples: number[] = [];
  await Promise.all(
    Array.from({ length: workers }, async () => {
      while (started < count) {
        if (aborted.signal.aborted) throw new Error('stopped by a signal');
        started++;
        const s = performance.now();
        await op();
        samples.push(performance.now() - s);
      }
    }),
  );
  return samples;
}

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

interface LayoutResult {
  layout: string;
  captureInstances: number;
  gridNodes: number;
  sessionsPerCapture: number;
  processes: number;
  perNode: number[];
  startSeconds: number;
  p50: number;
  p95: number;
  perSecond: number;
  /** CPU per capture, ms: the stack's service processes, its Grid (JVMs, ChromeDrivers, browsers), the shared servers, the machine. */
  servicesCpuMs: number;
  gridCpuMs: number;
  backingCpuMs: number;
  machineCpuMs: number;
  /** Load average (1 min) at the start of each block. */
  loads: number[];
}

/** A layout's stack, up for the whole of part 1, and what its blocks measured so far. */
interface OpenLayout {
  layout: string;
  captureInstances: number;
  gridNodes: number;
  sessionsPerCapture: number;
  stack: Stack;
  agent: http.Agent;
  url: string;
  startSeconds: number;
  perNode: number[];
  samples: number[];
  wallMs: number;
  servicesMs: number;
  gridMs: number;
  backingMs: number;
  machineMs: number;
  loads: number[];
}

/** Starts a layout's stack, waits for all its browser sessions, makes an account and warms it up. */
async function openLayout(layout: string, pages: PageServer, open: OpenLayout[]): Promise<void> {
  const [captureInstances, gridNodes] = layout.split('x').map(Number) as [number, number];
  const sessionsPerCapture = TOTAL_SESSIONS / captureInstances;
  const t = performance.now();
  const stack = await startStack(layout, { captureInstances, gridNodes, schedulerInstances: 1, sessionsPerCapture, env: {} });
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  agents.add(agent);
  const l: OpenLayout = {
    layout,
    captureInstances,
    gridNodes,
    sessionsPerCapture,
    stack,
    agent,
    url: '',
    startSeconds: 0,
    perNode: [],
    samples: [],
    wallMs: 0,
    servicesMs: 0,
    gridMs: 0,
    backingMs: 0,
    machineMs: 0,
    loads: [],
  };
  open.push(l);
  await waitForBrowsers(stack, TOTAL_SESSIONS);
  l.startSeconds = (performance.now() - t) / 1000;
  const { access_token } = createAccount(stack);
  l.url = `${stack.url}/snap?${snapQuery(access_token, pages.origin + pages.pages.simple)}`;
  await runWorkers(CONCURRENCY, WARMUP_PER_WORKER * CONCURRENCY, () => snapOnce(agent, l.url));
  l.perNode = await sessionsPerNode(stack);
}

/** One measured block of `count` captures on a layout (after one warm-up capture per worker, not counted). */
async function measureBlock(l: OpenLayout, count: number): Promise<void> {
  await runWorkers(CONCURRENCY, CONCURRENCY, () => snapOnce(l.agent, l.url));
  const servicePids = [...l.stack.instances.values()].map((i) => i.child.pid as number);
  const roots = [...servicePids, ...l.stack.gridPids];
  l.loads.push(os.loadavg()[0]!);
  const a = cpuSample(roots);
  const samples = await runWorkers(CONCURRENCY, count, () => snapOnce(l.agent, l.url));
  const b = cpuSample(roots);
  checkAlive(l.stack);
  l.samples.push(...samples);
  l.wallMs += b.at - a.at;
  l.servicesMs += treeDelta(a, b, servicePids);
  l.gridMs += treeDelta(a, b, l.stack.gridPids);
  l.backingMs += b.backingMs - a.backingMs;
  l.machineMs += b.machineMs - a.machineMs;
}

function layoutResult(l: OpenLayout): LayoutResult {
  const n = l.samples.length;
  const sorted = [...l.samples].sort((p, q) => p - q);
  return {
    layout: l.layout,
    captureInstances: l.captureInstances,
    gridNodes: l.gridNodes,
    sessionsPerCapture: l.sessionsPerCapture,
    processes: l.stack.instances.size + l.stack.gridPids.length,
    perNode: l.perNode,
    startSeconds: l.startSeconds,
    p50: percentile(sorted, 0.5),
    p95: percentile(sorted, 0.95),
    perSecond: (n / l.wallMs) * 1000,
    servicesCpuMs: l.servicesMs / n,
    gridCpuMs: l.gridMs / n,
    backingCpuMs: l.backingMs / n,
    machineCpuMs: l.machineMs / n,
    loads: l.loads,
  };
}

/**
 * Part 1: every layout's stack up at once (idle but for the one measured), measured in
 * BLOCKS blocks each, alternating (1x1, 2x1, 1x2, 2x2, 1x1, ...), so that drift in the
 * machine's speed (large on a shared virtual machine) falls on every layout alike.
 */
async function runSpread(pages: PageServer): Promise<LayoutResult[]> {
  const open: OpenLayout[] = [];
  let failed = true;
  try {
    for (const layout of LAYOUTS) await openLayout(layout, pages, open);
    const perBlock = Math.max(CONCURRENCY, Math.round(CAPTURES / BLOCKS));
    for (let b = 0; b < BLOCKS; b++) {
      for (const l of open) await measureBlock(l, perBlock);
      progress(`block ${b + 1} of ${BLOCKS} measured on ${open.map((l) => l.layout).join(', ')}`);
    }
    const results = open.map(layoutResult);
    for (const r of results) {
      progress(
        `${r.layout}: ${r.perSecond.toFixed(2)} captures/s, p50 ${r.p50.toFixed(0)} ms, p95 ${r.p95.toFixed(0)} ms; CPU per capture: ` +
          `stack ${(r.servicesCpuMs + r.gridCpuMs).toFixed(0)} ms ` +
          `(services ${r.servicesCpuMs.toFixed(0)}, Grid and browsers ${r.gridCpuMs.toFixed(0)}), MariaDB+NATS+Redis ${r.backingCpuMs.toFixed(0)} ms, ` +
          `machine ${r.machineCpuMs.toFixed(0)} ms; sessions per node ${r.perNode.join('+')}`,
      );
    }
    failed = false;
    return results;
  } finally {
    for (const l of open) {
      l.agent.destroy();
      agents.delete(l.agent);
    }
    await Promise.all(open.map((l) => stopStack(l.stack, failed)));
  }
}

// ------------------------------------------------------------------------------------------
// 2. the scheduler round
// ------------------------------------------------------------------------------------------

/** A page that does not answer until released (or after holdMs): it keeps the one capture session busy without using CPU. */
async function startHoldServer(holdMs: number): Promise<{ url: string; release(): void; stop(): Promise<void> }> {
  const held = new Set<http.ServerResponse>();
  const answer = (res: http.ServerResponse) => {
    if (!held.delete(res)) return;
    res.writeHead(200, { 'content-type': 'text/html', 'cache-control': 'no-store' }).end('<!DOCTYPE html><title>held</title><p>held');
  };
  const server = http.createServer((_req, res) => {
    held.add(res);
    setTimeout(() => answer(res), holdMs).unref();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const release = () => {
    for (const res of [...held]) answer(res);
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/held`,
    release,
    stop: async () => {
      release();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

interface RoundResult {
  configs: number;
  insertSeconds: number;
  updateMs: number;
  firstJobMs: number;
  lastJobMs: number;
  observedMs: number;
  jobsPerSecond: number;
  /** Jobs recorded in each second after the instant. */
  perSecond: number[];
  schedulerCpuMs: number[];
  captureCpuMs: number;
  backingCpuMs: number;
  machineCpuMs: number;
  load: number;
  startSeconds: number;
}

async function runSchedulerRound(): Promise<RoundResult> {
  const hold = await startHoldServer(90_000);
  const t = performance.now();
  const stack = await startStack('scheduler round', {
    captureInstances: 1,
    gridNodes: 1,
    schedulerInstances: SCHEDULERS,
    sessionsPerCapture: 1,
    env: { SCHEDULER_TICK_SECONDS: '1' },
  });
  const startSeconds = (performance.now() - t) / 1000;
  let failed = true;
  const db = knex({ client: 'mysql2', connection: stack.databaseUrl, pool: { min: 0, max: 2 } });
  try {
    const { access_token } = createAccount(stack);
    // One configuration through the API: its row holds what the scheduler needs (capture_options as the api validated them).
    // Its first capture (now) holds the one capture session on the held page for the whole round.
    const created = await fetch(`${stack.url}/screenshot_configs`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ access_token, url: hold.url, wait: 0, scheduled_screenshot: true, scheduled_every: 1, scheduled_interval: 'days' }),
    });
    const createdBody = (await created.json()) as { screenshot_configuration_id?: string };
    if (created.status !== 200 || !createdBody.screenshot_configuration_id)
      throw new Error(`creating a configuration answered ${created.status}: ${JSON.stringify(createdBody)}`);
    const template = await db('screenshot_configs').where({ id: createdBody.screenshot_configuration_id }).first();

    // The copies, not due yet (a month ahead) while they are written.
    const insertStart = performance.now();
    const later = Date.now() + 30 * 86_400_000;
    const ids = Array.from({ length: CONFIGS }, (_, i) => `sbench${String(i).padStart(6, '0')}`);
    const rows = ids.map((id) => ({ ...template, id, last_job_id: null, next_run_at_ms: later, schedule_anchor_ms: later, created_at_ms: Date.now() }));
    await db.batchInsert('screenshot_configs', rows, 1000);
    const insertSeconds = (performance.now() - insertStart) / 1000;
    progress(`scheduler round: ${CONFIGS} configurations written in ${insertSeconds.toFixed(1)} s`);

    // All due at one instant: one UPDATE (one transaction) sets their next run to it.
    const servicePids = [...stack.instances.values()].map((i) => i.child.pid as number);
    const schedulerPids = [...stack.instances.values()].filter((i) => i.name.startsWith('scheduler')).map((i) => i.child.pid as number);
    const capturePid = stack.instance('capture-1').child.pid as number;
    const load = os.loadavg()[0]!;
    const a = cpuSample([...servicePids, ...stack.gridPids]);
    const instant = Date.now();
    await db('screenshot_configs').where('id', 'like', 'sbench%').update({ next_run_at_ms: instant, schedule_anchor_ms: instant });
    const updateMs = Date.now() - instant;
    progress(`scheduler round: all due at ${new Date(instant).toISOString()} (the UPDATE took ${updateMs} ms); waiting for ${CONFIGS} jobs`);

    const scheduledJobs = async () => Number(((await db('jobs').where({ kind: 'scheduled' }).count({ n: '*' }).first()) as { n: number | string }).n);
    const deadline = Date.now() + Math.max(180_000, (CONFIGS / 20) * 1000);
    let lastReport = Date.now();
    for (;;) {
      if (aborted.signal.aborted) throw new Error('stopped by a signal');
      const seen = await scheduledJobs();
      if (seen >= CONFIGS) break;
      if (Date.now() > deadline) throw new Error(`only ${seen} of ${CONFIGS} scheduled jobs after ${((Date.now() - instant) / 1000).toFixed(0)} s`);
      if (Date.now() - lastReport > 10_000) {
        progress(`scheduler round: ${seen} jobs after ${((Date.now() - instant) / 1000).toFixed(0)} s`);
        lastReport = Date.now();
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const observedMs = Date.now() - instant;
    const b = cpuSample([...servicePids, ...stack.gridPids]);
    checkAlive(stack);

    // A double firing would show within a few ticks: wait for some, then count jobs per configuration.
    await new Promise((r) => setTimeout(r, 4_000));
    const perConfig = (await db('jobs').where({ kind: 'scheduled' }).groupBy('config_id').select('config_id').count({ n: '*' })) as Array<{
      config_id: string;
      n: number | string;
    }>;
    const twice = perConfig.filter((r) => Number(r.n) !== 1);
    const strangers = perConfig.filter((r) => !r.config_id.startsWith('sbench'));
    if (twice.length || strangers.length || perConfig.length !== CONFIGS) {
      throw new Error(
        `NOT exactly once: ${perConfig.length} configurations with scheduled jobs (of ${CONFIGS}); ${twice.length} with more than one ` +
          `(e.g. ${twice
            .slice(0, 5)
            .map((r) => `${r.config_id}: ${r.n}`)
            .join(', ')}); ${strangers.length} jobs of other configurations`,
      );
    }
    const notMoved = Number(
      (
        (await db('screenshot_configs').where('id', 'like', 'sbench%').where('next_run_at_ms', '<=', Date.now()).count({ n: '*' }).first()) as {
          n: number | string;
        }
      ).n,
    );
    if (notMoved) throw new Error(`${notMoved} configurations fired but still due`);

    const jobs = (
      (await db('jobs').where({ kind: 'scheduled' }).select('config_id', 'created_at_ms')) as Array<{ config_id: string; created_at_ms: number | string }>
    ).map((r) => ({
      config: r.config_id,
      ms: Number(r.created_at_ms) - instant,
    }));
    const times = jobs.map((j) => j.ms).sort((x, y) => x - y);
    const perSecond: number[] = [];
    for (const ms of times) {
      const s = Math.max(0, Math.floor(ms / 1000));
      while (perSecond.length <= s) perSecond.push(0);
      perSecond[s]!++;
    }
    const lastJobMs = times[times.length - 1]!;
    const r: RoundResult = {
      configs: CONFIGS,
      insertSeconds,
      updateMs,
      firstJobMs: times[0]!,
      lastJobMs,
      observedMs,
      jobsPerSecond: CONFIGS / (lastJobMs / 1000),
      perSecond,
      schedulerCpuMs: schedulerPids.map((pid) => treeDelta(a, b, [pid])),
      captureCpuMs: treeDelta(a, b, [capturePid]),
      backingCpuMs: b.backingMs - a.backingMs,
      machineCpuMs: b.machineMs - a.machineMs,
      load,
      startSeconds,
    };
    progress(
      `scheduler round: every one of ${CONFIGS} configurations fired exactly once; first job after ${r.firstJobMs} ms, last after ${r.lastJobMs} ms ` +
        `(${r.jobsPerSecond.toFixed(0)} jobs/s); scheduler CPU ${r.schedulerCpuMs.map((c) => (c / 1000).toFixed(1)).join(' / ')} s, ` +
        `capture ${(r.captureCpuMs / 1000).toFixed(1)} s, ` +
        `MariaDB+NATS+Redis ${(r.backingCpuMs / 1000).toFixed(1)} s, machine ${(r.machineCpuMs / 1000).toFixed(1)} s`,
    );
    failed = false;
    return r;
  } finally {
    await db.destroy();
    // The held capture finishes at once, so the capture instance stops without waiting for it.
    hold.release();
    await stopStack(stack, failed);
    await hold.stop();
  }
}

// ------------------------------------------------------------------------------------------
// report
// ------------------------------------------------------------------------------------------

const x = (v: number) => `${v.toFixed(2)}x`;

function spreadReport(results: LayoutResult[]): string[] {
  if (!results.length) return [];
  const base = results.find((r) => r.layout === '1x1');
  const lines = [
    '## Spreading out: capture instances x Grid nodes',
    '',
    `Each layout is a stack of its own (ops/stack.ts: separate processes over NATS, MariaDB, Redis; one scheduler), with ${TOTAL_SESSIONS} browser ` +
      `sessions in all ` +
      `(CAPTURE_SESSIONS = ${TOTAL_SESSIONS} / capture instances; each Grid node offers every session, and the hub spreads them over its nodes). ` +
      `All the layouts' stacks are up at once, idle but for the one measured. After ${WARMUP_PER_WORKER * CONCURRENCY} warm-up captures each, ` +
      `${CAPTURES} GET /snap of the bench's simple page (wait=0, ttl=0: each a fresh capture; ` +
      `${VIEWPORT.width}x${VIEWPORT.height} ${FORMAT} quality ${QUALITY}) at concurrency ${CONCURRENCY}, timed until the body is read, in ${BLOCKS} blocks ` +
      `per layout ` +
      `alternated between layouts (each block after ${CONCURRENCY} more warm-up captures), so drift in the machine's speed falls on every layout alike; ` +
      "captures/s = captures / the blocks' summed wall time. " +
      "CPU per capture: the stack's own processes over the measured window (service processes; the Grid's JVMs, ChromeDrivers and browsers, " +
      'each process tree from /proc/<pid>/stat, renderers counted once their browser reaps them), the shared MariaDB, NATS and Redis servers (other work on ' +
      'the machine uses them too), ' +
      "and the whole machine (/proc/stat: everything running, other people's work included).",
    '',
    '**On two cores this shows what spreading out costs, not a speed-up**: the browsers already use both cores at 1x1, so more capture ' +
      'instances and Grid nodes can only add processes (a JVM per node, a Node.js process per capture instance), NATS hops and Grid routing on the same ' +
      'two cores. ' +
      'More instances and nodes pay off on more machines; these numbers show what each one adds per capture.',
    '',
    '| layout (capture x nodes) | CAPTURE_SESSIONS | sessions per node | processes (services + Grid) | captures/s | ratio to 1x1 | p50 ms | p95 ms | stack ' +
      'CPU ms per capture (services + Grid and browsers) | ratio to 1x1 | MariaDB+NATS+Redis CPU ms per capture | machine CPU ms per capture | load (1 min) ' +
      'at the start of each block |',
    '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  ];
  for (const r of results) {
    const stackCpu = r.servicesCpuMs + r.gridCpuMs;
    const baseCpu = base ? base.servicesCpuMs + base.gridCpuMs : Number.NaN;
    lines.push(
      `| ${r.layout} | ${r.sessionsPerCapture} | ${r.perNode.join(' + ')} | ${r.processes} | ${r.perSecond.toFixed(2)} ` +
        `| ${base ? x(r.perSecond / base.perSecond) : '–'} | ` +
        `${r.p50.toFixed(0)} | ${r.p95.toFixed(0)} | ${stackCpu.toFixed(0)} (${r.servicesCpuMs.toFixed(0)} + ${r.gridCpuMs.toFixed(0)}) ` +
        `| ${base ? x(stackCpu / baseCpu) : '–'} | ` +
        `${r.backingCpuMs.toFixed(0)} | ${r.machineCpuMs.toFixed(0)} | ${r.loads.map((v) => v.toFixed(1)).join(', ')} |`,
    );
  }
  if (base && results.length > 1) {
    const others = results.filter((r) => r !== base);
    const dev = (f: (r: LayoutResult) => number) => Math.max(...others.map((r) => Math.abs(f(r) / f(base) - 1))) * 100;
    const rateDev = dev((r) => r.perSecond);
    const cpuDev = dev((r) => r.servicesCpuMs + r.gridCpuMs);
    lines.push(
      '',
      `The other layouts differ from 1x1 by at most ${rateDev.toFixed(0)}% in captures/s and ${cpuDev.toFixed(0)}% in the stack's CPU per capture` +
        `${Math.max(rateDev, cpuDev) <= 5 ? ": on this machine the cost of spreading out is within the run's noise" : ''}.`,
    );
  }
  lines.push('', `Stack start-up until every browser session was live: ${results.map((r) => `${r.layout} ${r.startSeconds.toFixed(0)} s`).join(', ')}.`, '');
  return lines;
}

function roundReport(r: RoundResult | null): string[] {
  if (!r) return [];
  const total = r.schedulerCpuMs.reduce((a, b) => a + b, 0);
  const lines = [
    '## The scheduler round: configurations due at once',
    '',
    `A stack with ${SCHEDULERS} scheduler instances (SCHEDULER_TICK_SECONDS=1) and one capture instance with one browser session, kept busy by a page that ` +
      `answers only after 90 s ` +
      `(so the captures do not take the machine: what is measured is the firing). ${r.configs} scheduled configurations (daily), copies of one created ` +
      `through the API, ` +
      `were written straight into screenshot_configs (${r.insertSeconds.toFixed(1)} s) a month ahead, then made due at one instant by one UPDATE ` +
      `(${r.updateMs} ms). ` +
      "Measured from that instant: each job's created_at_ms (written by capture.enqueue), and the count of scheduled jobs polled every 100 ms. " +
      'Then, after 4 s more, the jobs per configuration: each configuration fired exactly once (the bench fails otherwise) and none is still due.',
    '',
    '| configurations | schedulers | first job after | last job after (round time) | jobs/s | seen complete by polling after | CPU of each scheduler over ' +
      'the round | capture instance CPU | MariaDB+NATS+Redis CPU | machine CPU | load (1 min) at start |',
    '|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|',
    `| ${r.configs} | ${SCHEDULERS} | ${(r.firstJobMs / 1000).toFixed(2)} s | ${(r.lastJobMs / 1000).toFixed(1)} s | ${r.jobsPerSecond.toFixed(0)} ` +
      `| ${(r.observedMs / 1000).toFixed(1)} s | ` +
      `${r.schedulerCpuMs.map((c) => `${(c / 1000).toFixed(1)} s (${((c / total) * 100).toFixed(0)}%)`).join(' / ')} ` +
      `| ${(r.captureCpuMs / 1000).toFixed(1)} s | ` +
      `${(r.backingCpuMs / 1000).toFixed(1)} s | ${(r.machineCpuMs / 1000).toFixed(1)} s | ${r.load.toFixed(2)} |`,
    '',
    `Jobs recorded per second after the instant: ${r.perSecond.join(', ')}.`,
    '',
    `Exactly once: **MET** (${r.configs} configurations, one scheduled job each).`,
    '',
    `**Where the time goes.** Each scheduler instance runs one tick at a time, once a second here; a tick claims due configurations in batches ` +
      `of ${TICK_BATCH} ` +
      '(a transaction: a locking SELECT ... SKIP LOCKED and one UPDATE per row, which also marks its job pending) and hands each batch to capture at once ' +
      '(capture.enqueue: a NATS request and an INSERT per job), then claims the next batch, until none is due (services/scheduler/schedule-runner.ts). ' +
      `So the round is bounded by that work, shared by ${SCHEDULERS} schedulers, and by MariaDB: over the round the schedulers ` +
      `used ${r.schedulerCpuMs.map((c) => `${(c / 1000).toFixed(1)} s`).join(' / ')} of CPU, ` +
      `the capture instance ${(r.captureCpuMs / 1000).toFixed(1)} s and MariaDB, NATS and Redis ${(r.backingCpuMs / 1000).toFixed(1)} s (the ` +
      `machine ${(r.machineCpuMs / 1000).toFixed(1)} s in ${(r.lastJobMs / 1000).toFixed(1)} s on 2 cores). ` +
      'Before the batches were claimed in a loop, a tick took one batch of 50, which capped three schedulers at 150 a second (66 s for 10 000).',
    '',
  ];
  return lines;
}

// ------------------------------------------------------------------------------------------
// 3. a capture instance killed under a burst
// ------------------------------------------------------------------------------------------

interface BurstResult {
  killed: boolean;
  statuses: Map<number, number>;
  lastAnswerSeconds: number;
  usage: number;
  jobs: number;
  takenAgain: number;
  screenshots: number;
}

/** One burst of KILL_BURST snaps of the heavy page at once (capture-1 SIGKILLed KILL_AFTER_MS in, with `kill`). */
async function burst(stack: Stack, pages: PageServer, kill: boolean): Promise<BurstResult> {
  const { account_id, access_token } = createAccount(stack);
  const agent = new http.Agent({ keepAlive: true, maxSockets: KILL_BURST });
  agents.add(agent);
  const statuses = new Map<number, number>();
  const t = performance.now();
  let last = 0;
  const one = (n: number) =>
    new Promise<void>((resolve) => {
      const url = `${stack.url}/snap?${snapQuery(access_token, `${pages.origin}${pages.pages.heavy}?burst=${n}`)}`;
      const req = http.get(url, { agent, timeout: 180_000, signal: aborted.signal }, (res) => {
        res.resume();
        res.on('end', () => {
          statuses.set(res.statusCode ?? 0, (statuses.get(res.statusCode ?? 0) ?? 0) + 1);
          last = performance.now() - t;
          resolve();
        });
      });
      req.on('error', () => {
        statuses.set(0, (statuses.get(0) ?? 0) + 1);
        resolve();
      });
    });
  const answers = Promise.all(Array.from({ length: KILL_BURST }, (_, n) => one(n)));
  if (kill) {
    await new Promise((r) => setTimeout(r, KILL_AFTER_MS));
    const generation = stack.instances.get('capture-1')?.generation ?? 0;
    stack.kill('capture-1');
    progress(`kill: capture-1 SIGKILLed ${KILL_AFTER_MS} ms into the burst`);
    await answers;
    await stack.restarted('capture-1', generation);
  } else await answers;
  agent.destroy();
  agents.delete(agent);
  const db = knex({ client: 'mysql2', connection: stack.serviceEnv().DATABASE_URL });
  try {
    const jobs = (await db('jobs').where({ account_id, kind: 'snap' }).select('attempts')) as Array<{ attempts: number }>;
    const [{ n }] = (await db('screenshots').where({ account_id }).count({ n: '*' })) as Array<{ n: number | string }>;
    const limits = (await (await fetch(`${stack.url}/account_limits?access_token=${access_token}`)).json()) as {
      results?: { screenshot_current_month_usage?: number };
    };
    return {
      killed: kill,
      statuses,
      lastAnswerSeconds: last / 1000,
      usage: limits.results?.screenshot_current_month_usage ?? -1,
      jobs: jobs.length,
      takenAgain: jobs.filter((j) => Number(j.attempts) > 1).length,
      screenshots: Number(n),
    };
  } finally {
    await db.destroy();
  }
}

async function runKill(pages: PageServer): Promise<BurstResult[]> {
  // Each instance lets the whole burst wait: what is measured is what a death loses, not the queue's limit.
  const stack = await startStack('kill', {
    captureInstances: 2,
    gridNodes: 2,
    schedulerInstances: 1,
    sessionsPerCapture: 2,
    env: { CAPTURE_QUEUE_MAX: String(KILL_BURST) },
    restart: true,
  });
  let failed = true;
  try {
    await waitForBrowsers(stack, 4);
    const calm = await burst(stack, pages, false);
    const killed = await burst(stack, pages, true);
    failed = false;
    return [calm, killed];
  } finally {
    await stopStack(stack, failed);
  }
}

function killReport(results: BurstResult[]): string[] {
  if (!results.length) return [];
  const statusText = (r: BurstResult) => [...r.statuses.entries()].map(([s, n]) => `${n} x ${s === 0 ? 'no answer' : s}`).join(', ');
  const killed = results.find((r) => r.killed);
  const met = killed
    ? (killed.statuses.get(200) ?? 0) === KILL_BURST && killed.usage === KILL_BURST && killed.jobs === KILL_BURST && killed.screenshots === KILL_BURST
    : false;
  return [
    '',
    '## A capture instance killed under a burst',
    '',
    `Two capture instances with two browser sessions each on two Grid nodes, the supervisor on, each letting ${KILL_BURST} captures wait ` +
      `(CAPTURE_QUEUE_MAX). ${KILL_BURST} GET /snap of the heavy page at once from one account (64 at once allowed); with the kill, capture-1 SIGKILLed ` +
      `${KILL_AFTER_MS} ms into the burst.`,
    '',
    '| burst | answers | last answer, s | usage | jobs | taken again | screenshots |',
    '|---|---|---:|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${r.killed ? 'capture-1 killed' : 'no kill'} | ${statusText(r)} | ${r.lastAnswerSeconds.toFixed(1)} | ${r.usage} | ${r.jobs} | ${r.takenAgain} | ${r.screenshots} |`,
    ),
    '',
    `Target: with the kill, every snap answered 200, charged once, one job and one screenshot each (issue 47): ${met ? '**MET**' : '**NOT MET**'}.`,
  ];
}

function report(layouts: LayoutResult[], round: RoundResult | null, kills: BurstResult[], totalSeconds: number, loads: number[]): string {
  const cpus = os.cpus();
  const lines = [
    '# Benchmark: the full stack as separate processes',
    '',
    `Run ${new Date().toISOString()} (${totalSeconds.toFixed(0)} s in ` +
      `all)${FULL_RUN ? '' : `, reduced: layouts ${LAYOUTS.join(',')}, parts ${PARTS.join(',')}`}. ` +
      `Machine: ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${cpus.length} cores (a shared virtual machine), ${(os.totalmem() / 1024 ** 3).toFixed(1)} ` +
      `GiB RAM, ` +
      `${os.type()} ${os.release()}, Node ${process.version}. ${loadNote(loads[0]!, loads[loads.length - 1]!, 'these are noisy figures')}`,
    '',
  ];
  return [...lines, ...spreadReport(layouts), ...roundReport(round), ...killReport(kills)].join('\n');
}

// ------------------------------------------------------------------------------------------
// main
// ------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const t0 = performance.now();
  let pages: PageServer | null = null;
  let cleaning: Promise<void> | null = null;
  const cleanup = () => {
    cleaning ??= (async () => {
      for (const agent of agents) agent.destroy();
      await Promise.all([...running].map((s) => stopStack(s, true).catch((err: Error) => progress(`cleanup: ${err.message}`))));
      await pages?.stop().catch(() => undefined);
    })();
    return cleaning;
  };
  const removeSignalHandlers = stopOnSignals(cleanup, progress, () => aborted.abort());
  const loads = [os.loadavg()[0]!];
  if (loads[0]! > os.cpus().length / 2)
    progress(`warning: load average ${loads[0]!.toFixed(2)} on ${os.cpus().length} cores; other work will skew the numbers`);
  try {
    const layouts: LayoutResult[] = [];
    if (PARTS.includes('spread')) {
      pages = await startPageServer();
      layouts.push(...(await runSpread(pages)));
      await pages.stop();
      pages = null;
    }
    const round = PARTS.includes('scheduler') ? await runSchedulerRound() : null;
    let kills: BurstResult[] = [];
    if (PARTS.includes('kill')) {
      pages = await startPageServer();
      kills = await runKill(pages);
      await pages.stop();
      pages = null;
    }
    loads.push(os.loadavg()[0]!);
    const text = report(layouts, round, kills, (performance.now() - t0) / 1000, loads);
    publishResults('stack', text, FULL_RUN, progress);
  } finally {
    await cleanup();
    removeSignalHandlers();
  }
}

main().catch((err: Error) => {
  process.stderr.write(`[bench:stack] FAILED: ${err.stack ?? err.message}\n`);
  process.exitCode = 1;
  setTimeout(() => process.exit(1), 10_000).unref();
});
