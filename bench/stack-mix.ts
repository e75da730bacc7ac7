/**
 * `npm run bench`: the mixed workload on the full stack against the embedded default on the
 * same machine (issue 46). Alone: `node scripts/ensure-setup.js && node dist/bench/stack-mix.js`.
 *
 * Two deployments up at once, each as processes of its own:
 *
 *   embedded  the embedded default as `npm start` runs it: one `node dist/bin/serve.js` with
 *             every service, SQLite, in-process counts, a local ChromeDriver per browser,
 *             CAPTURE_SESSIONS=4;
 *   stack     the full stack as `npm run stack` runs it (ops/stack.ts, STACK_DEFAULTS): api,
 *             billing, proxy, ai, notifier, two schedulers and two capture instances with two
 *             browser sessions each, over this machine's NATS, MariaDB and Redis, on a
 *             Selenium Grid hub with two Chrome nodes (CDP by GRID_CDP, direct unless the
 *             environment says relay; the report says which route the sessions took).
 *
 * Both capture the mix (bench/sites.ts: the pages, site names and /snap options mix.ts uses,
 * driven by the same driveMix) at concurrency 4, wait=0 and ttl=0, through their egress
 * gateways asking the bench's DNS server (EGRESS_DNS_SERVERS), LOG_LEVEL=info for both (the
 * stack needs it to see its processes start; the same for the embedded one). After warm-up
 * captures, ROUNDS rounds of one block each, the order reversed every other round, so drift
 * in the machine's speed falls on both alike.
 *
 * CPU, read from /proc at the start of each block and 1 s after its last answer (so work a
 * capture leaves behind, such as disposing its context or a batched write, is its own): each
 * process tree, by group (the embedded process, its ChromeDrivers and browsers; the stack's
 * api, capture, billing, scheduler and the others, its Grid JVMs, ChromeDrivers and browsers;
 * the NATS, MariaDB and Redis servers, which other work on the machine may use too), and the
 * whole machine (/proc/stat). A deployment's machine CPU per capture is the machine's during
 * its blocks less the other deployment's (idle) processes meanwhile; its ratio, stack over
 * embedded, is the target (at most 1.15x), with a 95% bootstrap interval over the rounds.
 *
 * The crossings: after the measured rounds, TAP captures more on the stack with a NATS
 * subscriber on the stack's namespace (MOL-<ns>.>) counting every Moleculer packet (requests
 * by action, events by name, responses, heartbeats), and MariaDB's and Redis's own counters
 * (Questions; total_commands_processed) before and after; not in the measured blocks, so the
 * extra delivery to the subscriber costs them nothing.
 *
 * Environment (any set makes a reduced run: it prints its report and leaves docs/benchmark.md alone):
 *   BENCH_STACKMIX_CAPTURES  measured captures per deployment (default 192)
 *   BENCH_STACKMIX_ROUNDS    rounds of one block per deployment (default 8)
 *   BENCH_STACKMIX_WARMUP    warm-up captures per deployment (default 8)
 *   BENCH_STACKMIX_TAP       captures counted with the NATS subscriber (default 40)
 *   STACK_MYSQL_URL, STACK_REDIS_URL, STACK_NATS_URL  as for `npm run stack`
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import Redis from 'ioredis';
import knex from 'knex';
import { connect } from 'nats';
import { STACK_DEFAULTS, Stack } from '../ops/stack';
import { type EmbeddedProcess, createBenchAccount, startEmbeddedProcess, waitForBrowsers } from './deployments';
import { snapOnce } from './floor';
import { startPageServerProcess } from './pages';
import { childrenOf, machineCpuMs, processes } from './procs';
import { envPositiveInt, loadNote, publishResults, runBench, snapQuery } from './run';
import { MIX_SNAP_OPTIONS, MIX_WEIGHTS, type MixCursor, type MixItem, driveMix, mixSequence, mixUrl, startSitesDns } from './sites';
import { type Block, cpuRatioInterval, medianRatioInterval, percentile, stalledCapture, throughputRatioInterval } from './stats';

const progress = (msg: string) => process.stderr.write(`[stackmix] ${msg}\n`);

const CONCURRENCY = 4;
const SESSIONS = 4;
const SITES = 1000;
/** After a block's last answer, how long its CPU window stays open. */
const SETTLE_MS = 1_000;
/** Issue 46: the full stack's CPU per capture at most this many times the embedded default's. */
export const STACK_CPU_TARGET = 1.15;

const CAPTURES = envPositiveInt('BENCH_STACKMIX_CAPTURES', 192);
const ROUNDS = envPositiveInt('BENCH_STACKMIX_ROUNDS', 8);
const WARMUP = envPositiveInt('BENCH_STACKMIX_WARMUP', 8);
const TAP = envPositiveInt('BENCH_STACKMIX_TAP', 40);
const FULL_RUN = ['BENCH_STACKMIX_CAPTURES', 'BENCH_STACKMIX_ROUNDS', 'BENCH_STACKMIX_WARMUP', 'BENCH_STACKMIX_TAP'].every((k) => !process.env[k]?.trim());

const SIDES = ['embedded', 'stack'] as const;
type Side = (typeof SIDES)[number];

/** Process groups, each of one deployment (or of the bench, the same for both). */
const GROUPS = {
  embedded: ['embedded process', 'ChromeDrivers', 'browsers'],
  stack: [
    'api',
    'capture',
    'billing',
    'scheduler',
    'proxy, ai, notifier',
    'Grid hub JVM',
    'Grid node JVMs',
    'ChromeDrivers',
    'browsers',
    'NATS server',
    'MariaDB',
    'Redis',
  ],
  bench: ['bench client and DNS', 'page server'],
} as const;
const key = (owner: string, group: string) => `${owner}:${group}`;

/** Whose processes are which: a root's whole tree goes to its group, but a ChromeDriver and what runs under it to that deployment's drivers and browsers. */
interface Root {
  pid: number;
  owner: Side | 'bench';
  group: string;
}

const BACKING: Record<string, string> = { 'nats-server': 'NATS server', mariadbd: 'MariaDB', mysqld: 'MariaDB', 'redis-server': 'Redis' };

/** CPU so far (ms) of every group: own time plus reaped children's, each process once. */
function groupCpu(roots: readonly Root[]): Map<string, number> {
  const procs = processes();
  const children = childrenOf(procs);
  const out = new Map<string, number>();
  const add = (k: string, ms: number) => out.set(k, (out.get(k) ?? 0) + ms);
  const seen = new Set<number>();
  for (const root of roots) {
    const stack: Array<[number, boolean]> = [[root.pid, false]];
    while (stack.length) {
      const [pid, underDriver] = stack.pop()!;
      const p = procs.get(pid);
      if (!p || seen.has(pid)) continue;
      seen.add(pid);
      const driver = p.comm === 'chromedriver';
      const group = root.owner === 'bench' ? root.group : driver ? 'ChromeDrivers' : underDriver ? 'browsers' : root.group;
      add(key(root.owner, group), p.ownMs + p.childrenMs);
      for (const c of children.get(pid) ?? []) stack.push([c, underDriver || driver]);
    }
  }
  for (const p of procs.values()) if (BACKING[p.comm]) add(key('stack', BACKING[p.comm]!), p.ownMs);
  return out;
}

const delta = (a: Map<string, number>, b: Map<string, number>) => new Map([...b].map(([k, v]) => [k, Math.max(0, v - (a.get(k) ?? 0))]));
const sumOf = (m: Map<string, number>, owner: string) => [...m].filter(([k]) => k.startsWith(`${owner}:`)).reduce((s, [, v]) => s + v, 0);

interface SideRun {
  side: Side;
  url: string;
  token: string;
  agent: http.Agent;
  cursor: MixCursor;
  samples: number[];
  bytes: number;
  /** Per block: wall time, and (as machineCpuMs) the machine's CPU less the other deployment's processes. */
  blocks: Block[];
  /** The same blocks with the machine's CPU as it was. */
  rawBlocks: Block[];
  /** The same blocks with its own processes' CPU. */
  ownBlocks: Block[];
  /** CPU by group (both deployments' and the bench's) over its blocks' windows. */
  groups: Map<string, number>;
  /** Its blocks' windows in all, ms (each block and the settling after it). */
  windowMs: number;
}

// ------------------------------------------------------------------------------------------
// the crossings: NATS packets, SQL statements, Redis commands during TAP captures
// ------------------------------------------------------------------------------------------

interface Crossings {
  captures: number;
  packets: Map<string, { n: number; bytes: number }>;
  statements: number;
  redisCommands: number;
}

async function countCrossings(stack: Stack, run: () => Promise<void>): Promise<Crossings> {
  const nc = await connect({ servers: new URL(stack.options.natsUrl).host });
  const packets = new Map<string, { n: number; bytes: number }>();
  const prefix = `MOL-${stack.namespace}.`;
  const decoder = new TextDecoder();
  nc.subscribe(`${prefix}>`, {
    callback: (_err, msg) => {
      const type = msg.subject.slice(prefix.length).split('.')[0]!;
      let name = type;
      if (type === 'REQ' || type === 'EVENT' || type === 'REQB' || type === 'EVENTB') {
        try {
          const body = JSON.parse(decoder.decode(msg.data)) as { action?: string; event?: string };
          name = `${type} ${body.action ?? body.event ?? '?'}`;
        } catch {
          name = `${type} (not JSON)`;
        }
      }
      const c = packets.get(name) ?? { n: 0, bytes: 0 };
      c.n++;
      c.bytes += msg.data.length;
      packets.set(name, c);
    },
  });
  await nc.flush();
  const db = knex({ client: 'mysql2', connection: stack.options.mysqlUrl, pool: { min: 0, max: 1 } });
  const redis = new Redis(stack.options.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
  const questions = async () => Number((((await db.raw("SHOW GLOBAL STATUS LIKE 'Questions'")) as unknown[][])[0] as Array<{ Value: string }>)[0]!.Value);
  const commands = async () => Number(/total_commands_processed:(\d+)/.exec(await redis.info('stats'))?.[1] ?? Number.NaN);
  try {
    await redis.connect();
    const [q0, r0] = [await questions(), await commands()];
    await run();
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    await nc.flush();
    // Our own two counter reads are taken out (one statement each side, one INFO each side).
    const [q1, r1] = [await questions(), await commands()];
    return { captures: TAP, packets, statements: q1 - q0 - 1, redisCommands: r1 - r0 - 1 };
  } finally {
    await nc.drain().catch(() => undefined);
    await db.destroy();
    redis.disconnect();
  }
}

// ------------------------------------------------------------------------------------------
// report
// ------------------------------------------------------------------------------------------

const f0 = (v: number) => v.toFixed(0);
const f1 = (v: number) => v.toFixed(1);
const f2 = (v: number) => v.toFixed(2);
const x = (v: number) => `${v.toFixed(2)}x`;
const word = (met: boolean) => `**${met ? 'MET' : 'NOT MET'}**`;

/** The stack's browser sessions by the route of their CDP socket (snap_browser_slots_cdp over its capture instances, GRID_CDP). */
async function cdpRoutes(url: string): Promise<{ direct: number; relay: number }> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const sum = (route: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith('snap_browser_slots_cdp{') && l.includes(`route="${route}"`))
      .reduce((a, l) => a + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
  return { direct: sum('direct'), relay: sum('relay') };
}

/** How the stack's capture instances reached their browsers during the run, in a sentence. */
function cdpSentence(cdp: { direct: number; relay: number }): string {
  if (cdp.relay === 0) {
    return (
      `The capture instances speak to their browsers' own DevTools sockets (GRID_CDP=direct, the Grid's nodes on this host: ${cdp.direct} of ` +
      `${cdp.direct} sessions), as the embedded process does: the Grid's JVMs carry only the WebDriver commands that start, keep and end the sessions.`
    );
  }
  const some = cdp.direct > 0 ? ` for ${cdp.relay} of ${cdp.direct + cdp.relay} sessions (the others speak to their browsers' own DevTools sockets)` : '';
  return (
    `Every CDP message of a capture, the screenshot itself included, crosses two more processes${some}: the capture instance ` +
    "reaches its browser through the Grid (the session's se:cdp WebSocket, relayed by the hub and then the node; GRID_CDP=relay or its " +
    "fallback), where the embedded process speaks to the browser's own DevTools socket."
  );
}

function report(
  runs: Record<Side, SideRun>,
  crossings: Crossings,
  info: { seconds: number; load: number[]; layout: string; cdp: { direct: number; relay: number } },
): string {
  const cpus = os.cpus();
  const e = runs.embedded;
  const s = runs.stack;
  const n = (r: SideRun) => Math.max(1, r.samples.length);
  const wall = (r: SideRun) => r.blocks.reduce((a, b) => a + b.ms, 0);
  const cpuOf = (bs: Block[]) => bs.reduce((a, b) => a + (b.machineCpuMs ?? 0), 0);
  const sorted = (r: SideRun) => [...r.samples].sort((a, b) => a - b);
  const per = (r: SideRun) => ({
    perSecond: (n(r) / wall(r)) * 1000,
    p50: percentile(sorted(r), 0.5),
    p95: percentile(sorted(r), 0.95),
    machine: cpuOf(r.blocks) / n(r),
    raw: cpuOf(r.rawBlocks) / n(r),
    own: cpuOf(r.ownBlocks) / n(r),
    bench: sumOf(r.groups, 'bench') / n(r),
    kb: r.bytes / n(r) / 1024,
  });
  const fe = per(e);
  const fs_ = per(s);
  const mix = Object.entries(MIX_WEIGHTS)
    .map(([p, w]) => `${w} ${p}`)
    .join(', ');
  const lines: string[] = [
    '# Benchmark: the full stack against the embedded default on the mixed workload (bench/stack-mix.ts)',
    '',
    `Run ${new Date().toISOString()} (${f0(info.seconds)} s in all)${FULL_RUN ? '' : ', reduced (BENCH_STACKMIX_* set)'}. ` +
      `Machine: ${cpus[0]?.model.trim() ?? 'unknown CPU'}, ${cpus.length} cores, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB RAM, Node ${process.version}. ` +
      loadNote(info.load[0]!, info.load[info.load.length - 1]!),
    '',
    `Workload: the mix of bench/mix.ts (${mix} in every ten captures, each on the next of ${SITES} site names, the complete work: script waits for its ` +
      `cards, long is fullpage), GET /snap wait=0 ttl=0 at concurrency ${CONCURRENCY}, through each deployment's egress gateway. ` +
      `Embedded default: one \`node dist/bin/serve.js\` (every service, SQLite, a local ChromeDriver per browser, CAPTURE_SESSIONS=${SESSIONS}). ` +
      `Full stack: ${info.layout}. ` +
      `${WARMUP} warm-up captures each, then ${ROUNDS} rounds of one block of ${Math.max(CONCURRENCY, Math.round(CAPTURES / ROUNDS))} captures per ` +
      'deployment, the order reversed every other round; both up all the time.',
    '',
    "CPU: each block's window runs from its first request to 1 s after its last answer; per process group from /proc/<pid>/stat (a root's tree, " +
      "ChromeDrivers and what runs under them counted apart), the machine from /proc/stat. A deployment's machine CPU per capture is the machine's " +
      "during its blocks less the other deployment's processes meanwhile (idle, but not free: JVMs, heartbeats, scheduler ticks); the bench's client " +
      "and page server are in both. Its own processes: the embedded process with its ChromeDrivers and browsers; the stack's service processes, Grid " +
      "and browsers, and the NATS, MariaDB and Redis servers, whose CPU during the stack's blocks is counted to the stack whole (other work on the " +
      'machine may use them too).',
    '',
    '| deployment | captures/s | p50 ms | p95 ms | CPU ms per capture, its own processes | machine CPU ms per capture (less the other deployment) ' +
      '| machine CPU ms per capture, as read | bench client and page server, ms per capture |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    `| embedded default | ${f2(fe.perSecond)} | ${f0(fe.p50)} | ${f0(fe.p95)} | ${f1(fe.own)} | ${f1(fe.machine)} | ${f1(fe.raw)} | ${f1(fe.bench)} |`,
    `| full stack | ${f2(fs_.perSecond)} | ${f0(fs_.p50)} | ${f0(fs_.p95)} | ${f1(fs_.own)} | ${f1(fs_.machine)} | ${f1(fs_.raw)} | ${f1(fs_.bench)} |`,
    '',
  ];
  const own = cpuRatioInterval(e.ownBlocks, s.ownBlocks);
  const machine = cpuRatioInterval(e.blocks, s.blocks);
  const tput = throughputRatioInterval(e.blocks, s.blocks);
  const p50 = medianRatioInterval(e.samples, s.samples);
  lines.push(
    'Target (issue 46), in brackets the 95% bootstrap interval over the rounds (for p50 over the captures). Read by processes it counts what each ' +
      "deployment runs and nothing else on the machine; read by the machine it also holds whatever else ran in the deployment's turns:",
    '',
    `- The full stack's CPU per capture at most ${STACK_CPU_TARGET}x the embedded default's, by its own processes: ${word(own.ratio <= STACK_CPU_TARGET)} ` +
      `(${x(own.ratio)} [${x(own.low)}–${x(own.high)}]; ${f1(fs_.own)} / ${f1(fe.own)} ms).`,
    `- The same by the machine's CPU: ${word(machine.ratio <= STACK_CPU_TARGET)} (${x(machine.ratio)} [${x(machine.low)}–${x(machine.high)}]; ` +
      `${f1(fs_.machine)} / ${f1(fe.machine)} ms).`,
    `- Information: throughput ${x(fs_.perSecond / fe.perSecond)} [${x(tput.low)}–${x(tput.high)}] of the embedded default's ` +
      `(${f2(fs_.perSecond)} / ${f2(fe.perSecond)} captures/s); p50 ${x(fs_.p50 / fe.p50)} [${x(p50.low)}–${x(p50.high)}] (${f0(fs_.p50)} / ${f0(fe.p50)} ms).`,
  );
  for (const r of [e, s]) {
    const st = stalledCapture(r.samples);
    if (st !== null) lines.push(`- **Stalled capture** on the ${r.side}: one took ${(st / 1000).toFixed(1)} s (over 10x the p50).`);
  }
  // By group: per capture over its own blocks, and idle (ms per second) during the other deployment's.
  const g = (r: SideRun, owner: string, group: string) => (r.groups.get(key(owner, group)) ?? 0) / n(r);
  const idle = (r: SideRun, owner: string, group: string) => ((r.groups.get(key(owner, group)) ?? 0) / r.windowMs) * 1000;
  lines.push(
    '',
    "CPU by process group: ms per capture over the deployment's own blocks; beside it, ms per second while the other deployment ran (its cost " +
      'standing idle):',
    '',
    '| deployment | group | ms per capture | idle, ms per second |',
    '|---|---|---:|---:|',
  );
  for (const group of GROUPS.embedded) lines.push(`| embedded default | ${group} | ${f1(g(e, 'embedded', group))} | ${f1(idle(s, 'embedded', group))} |`);
  for (const group of GROUPS.stack) lines.push(`| full stack | ${group} | ${f1(g(s, 'stack', group))} | ${f1(idle(e, 'stack', group))} |`);
  for (const group of GROUPS.bench)
    lines.push(`| bench, in the embedded / stack blocks | ${group} | ${f1(g(e, 'bench', group))} / ${f1(g(s, 'bench', group))} | – |`);

  // The crossings.
  const c = crossings;
  const perCap = (v: number) => v / c.captures;
  const all = [...c.packets.entries()].sort((a, b) => b[1].n - a[1].n || a[0].localeCompare(b[0]));
  const total = all.reduce((a, [, v]) => a + v.n, 0);
  const bytes = all.reduce((a, [, v]) => a + v.bytes, 0);
  const services = ['api', 'capture', 'billing', 'scheduler', 'proxy, ai, notifier'].reduce((a, grp) => a + g(s, 'stack', grp), 0);
  const embeddedProcess = g(e, 'embedded', 'embedded process');
  const beyond = services - embeddedProcess;
  const nats = g(s, 'stack', 'NATS server');
  const maria = g(s, 'stack', 'MariaDB');
  const redis = g(s, 'stack', 'Redis');
  const grid = g(s, 'stack', 'Grid hub JVM') + g(s, 'stack', 'Grid node JVMs');
  const msgs = perCap(total);
  const requests = all.filter(([name]) => name.startsWith('REQ')).reduce((a, [, v]) => a + v.n, 0);
  lines.push(
    '',
    `The crossings, counted over ${c.captures} more captures on the stack (not in the blocks above): a subscriber on the stack's NATS namespace saw ` +
      `${f1(msgs)} Moleculer packets per capture (${f1(perCap(requests))} requests, ${f1(perCap(bytes) / 1024)} KB in all); MariaDB answered ` +
      `${f1(perCap(c.statements))} statements per capture and Redis ${f1(perCap(c.redisCommands))} commands (their global counters: other work on the ` +
      `machine is in them too). ${cdpSentence(info.cdp)}`,
    '',
    '| NATS packet | per capture | bytes per packet |',
    '|---|---:|---:|',
    ...all.map(([name, v]) => `| ${name} | ${f2(perCap(v.n))} | ${f0(v.bytes / v.n)} |`),
    '',
    'What each crossing costs per capture:',
    '',
    `- The Grid's CDP relay: the hub's JVM ${f1(g(s, 'stack', 'Grid hub JVM'))} ms and the nodes' ${f1(g(s, 'stack', 'Grid node JVMs'))} ms per capture ` +
      `(idle, ${f1(idle(e, 'stack', 'Grid hub JVM') + idle(e, 'stack', 'Grid node JVMs'))} ms per second together).`,
    `- Moleculer over NATS, in the services: api, capture, billing, the schedulers and the others use ${f1(services)} ms per capture against ` +
      `${f1(embeddedProcess)} ms for the embedded process doing the same work with in-process calls and SQLite: ${f1(beyond)} ms more ` +
      `(${perCap(requests) > 0 ? f1(beyond / perCap(requests)) : '–'} ms per request crossing, were it all theirs: encoding and decoding packets, ` +
      "the transporter, the MariaDB and Redis clients, nine processes' own upkeep).",
    `- The NATS server: ${f1(nats)} ms per capture, ${msgs > 0 ? f0((nats / msgs) * 1000) : '–'} µs per packet.`,
    `- MariaDB: ${f1(maria)} ms per capture${c.statements > 0 ? `, ${f0((maria / perCap(c.statements)) * 1000)} µs per statement` : ''}; ` +
      `Redis: ${f1(redis)} ms per capture${c.redisCommands > 0 ? `, ${f0((redis / perCap(c.redisCommands)) * 1000)} µs per command` : ''}.`,
    `- ChromeDrivers ${f1(g(s, 'stack', 'ChromeDrivers'))} ms against ${f1(g(e, 'embedded', 'ChromeDrivers'))} ms embedded; browsers ` +
      `${f1(g(s, 'stack', 'browsers'))} ms against ${f1(g(e, 'embedded', 'browsers'))} ms (the same browsers doing the same work: the difference is noise ` +
      'or the machine).',
  );
  const parts: Array<[string, number]> = [
    ["the Grid's JVMs", grid],
    ['the services beyond the embedded process', beyond],
    ['the NATS server', nats],
    ['MariaDB', maria],
    ['Redis', redis],
    ['ChromeDrivers', g(s, 'stack', 'ChromeDrivers') - g(e, 'embedded', 'ChromeDrivers')],
    ['browsers', g(s, 'stack', 'browsers') - g(e, 'embedded', 'browsers')],
  ];
  parts.sort((a, b) => b[1] - a[1]);
  const sign = (v: number) => `${v >= 0 ? '+' : ''}${f1(v)}`;
  lines.push(
    '',
    `**What the stack adds per capture**, largest first: ${parts.map(([what, ms]) => `${what} ${sign(ms)} ms`).join(', ')}; ` +
      `in all ${sign(fs_.own - fe.own)} ms of its own processes (the target allows ${f1((STACK_CPU_TARGET - 1) * fe.own)}), ` +
      `${sign(fs_.machine - fe.machine)} ms of the machine's.`,
    '',
    `Mean image size, embedded / stack: ${f0(fe.kb)} / ${f0(fs_.kb)} KB.`,
    '',
  );
  return lines.join('\n');
}

// ------------------------------------------------------------------------------------------
// main
// ------------------------------------------------------------------------------------------

runBench('stackmix', async (cleanups, stopping) => {
  const t0 = performance.now();
  const load = [os.loadavg()[0]!];
  if (load[0]! > os.cpus().length / 2) progress(`warning: load average ${load[0]!.toFixed(2)} on ${os.cpus().length} cores; other work will skew the numbers`);
  const before = new Set([...processes().values()].filter((p) => p.ppid === process.pid).map((p) => p.pid));
  const [pages, dns] = await Promise.all([startPageServerProcess(), startSitesDns(SITES)]);
  cleanups.push(
    () => pages.stop(),
    () => dns.stop(),
  );
  const pagePids = [...processes().values()].filter((p) => p.ppid === process.pid && !before.has(p.pid)).map((p) => p.pid);
  const port = new URL(pages.origin).port;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'snap-stackmix-'));
  let failed = true;
  cleanups.push(async () => {
    if (failed) progress(`logs kept in ${dir}`);
    else fs.rmSync(dir, { recursive: true, force: true });
  });
  const common = {
    ALLOW_PRIVATE_NETWORKS: 'true',
    RATE_LIMIT_MAX: '0',
    EGRESS_DNS_SERVERS: dns.address,
    LOG_LEVEL: 'info',
  };

  progress('starting the embedded default (one process, SQLite, local ChromeDrivers)');
  const embedded: EmbeddedProcess = await startEmbeddedProcess(path.join(dir, 'embedded'), { ...common, CAPTURE_SESSIONS: String(SESSIONS) });
  cleanups.push(() => embedded.stop());
  progress('starting the full stack (ops/stack.ts, as npm run stack)');
  const stack = await Stack.start({
    ...STACK_DEFAULTS,
    mysqlUrl: process.env.STACK_MYSQL_URL || STACK_DEFAULTS.mysqlUrl,
    redisUrl: process.env.STACK_REDIS_URL || STACK_DEFAULTS.redisUrl,
    natsUrl: process.env.STACK_NATS_URL || STACK_DEFAULTS.natsUrl,
    dir: path.join(dir, 'stack'),
    port: 0,
    restart: false,
    env: common,
    log: (line) => {
      if (line.startsWith('[stack]')) progress(line);
    },
  });
  cleanups.push(() => stack.stop());
  const o = stack.options;
  const layout =
    `ops/stack.ts with STACK_DEFAULTS: ${o.captureInstances} capture instances x ${o.sessionsPerCapture} browser sessions, ${o.schedulerInstances} ` +
    `schedulers, billing, proxy, ai, notifier and the api as ${stack.instances.size} processes, a Grid hub with ${o.gridNodes} Chrome nodes, ` +
    'NATS, MariaDB and Redis on this machine';
  await Promise.all([waitForBrowsers(embedded.url, SESSIONS), waitForBrowsers(stack.url, o.captureInstances * o.sessionsPerCapture)]);

  const groupOf = (name: string) => name.replace(/-\d+$/, '').replace(/^(proxy|ai|notifier)$/, 'proxy, ai, notifier');
  const roots = (): Root[] => [
    { pid: embedded.child.pid as number, owner: 'embedded', group: 'embedded process' },
    ...[...stack.instances.values()].map((i): Root => ({ pid: i.child.pid as number, owner: 'stack', group: groupOf(i.name) })),
    ...stack.gridPids.map((pid, i): Root => ({ pid, owner: 'stack', group: i === 0 ? 'Grid hub JVM' : 'Grid node JVMs' })),
    ...pagePids.map((pid): Root => ({ pid, owner: 'bench', group: 'page server' })),
    { pid: process.pid, owner: 'bench', group: 'bench client and DNS' },
  ];
  const checkAlive = () => {
    const dead = [...stack.instances.values()].filter((i) => i.child.exitCode !== null || i.child.signalCode !== null);
    if (embedded.child.exitCode !== null || embedded.child.signalCode !== null) throw new Error(`the embedded process exited; see ${embedded.logFile}`);
    if (dead.length) throw new Error(`stack processes exited: ${dead.map((i) => `${i.name} (${i.logFile})`).join(', ')}`);
  };

  const seq = mixSequence(SITES, SITES);
  const sideRun = (side: Side, url: string): SideRun => {
    const { access_token } = createBenchAccount(side === 'embedded' ? embedded.env : stack.serviceEnv());
    const agent = new http.Agent({ keepAlive: true, maxSockets: 2 * CONCURRENCY });
    cleanups.push(async () => agent.destroy());
    return {
      side,
      url,
      token: access_token,
      agent,
      cursor: { next: 0 },
      samples: [],
      bytes: 0,
      blocks: [],
      rawBlocks: [],
      ownBlocks: [],
      groups: new Map(),
      windowMs: 0,
    };
  };
  const runs: Record<Side, SideRun> = { embedded: sideRun('embedded', embedded.url), stack: sideRun('stack', stack.url) };
  const op = (r: SideRun) => (_w: number, item: MixItem) =>
    snapOnce(r.agent, `${r.url}/snap?${snapQuery(r.token, mixUrl(port, pages.pages, item), MIX_SNAP_OPTIONS[item.page])}`);

  progress(`warming up: ${WARMUP} captures each`);
  for (const side of SIDES) await driveMix(seq, runs[side].cursor, CONCURRENCY, WARMUP, op(runs[side]));

  const perBlock = Math.max(CONCURRENCY, Math.round(CAPTURES / ROUNDS));
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 ? [...SIDES].reverse() : SIDES) {
      if (stopping()) throw new Error('stopped by a signal');
      const r = runs[side];
      const other: Side = side === 'embedded' ? 'stack' : 'embedded';
      const rs = roots();
      const g0 = groupCpu(rs);
      const m0 = machineCpuMs();
      const t = performance.now();
      await driveMix(seq, r.cursor, CONCURRENCY, perBlock, op(r), (_item, ms, bytes) => {
        r.samples.push(ms);
        r.bytes += bytes;
      });
      const ms = performance.now() - t;
      await new Promise((res) => setTimeout(res, SETTLE_MS));
      const d = delta(g0, groupCpu(rs));
      const machine = machineCpuMs() - m0;
      r.windowMs += performance.now() - t;
      checkAlive();
      for (const [k, v] of d) r.groups.set(k, (r.groups.get(k) ?? 0) + v);
      r.rawBlocks.push({ captures: perBlock, ms, machineCpuMs: machine });
      r.blocks.push({ captures: perBlock, ms, machineCpuMs: machine - sumOf(d, other) });
      r.ownBlocks.push({ captures: perBlock, ms, machineCpuMs: sumOf(d, side) });
    }
    progress(`round ${round + 1} of ${ROUNDS}`);
  }

  progress(`counting the stack's crossings over ${TAP} captures`);
  const crossings = await countCrossings(stack, () => driveMix(seq, runs.stack.cursor, CONCURRENCY, TAP, op(runs.stack)));
  checkAlive();
  const cdp = await cdpRoutes(stack.url);
  load.push(os.loadavg()[0]!);
  failed = false;
  publishResults('stackmix', report(runs, crossings, { seconds: (performance.now() - t0) / 1000, load, layout, cdp }), FULL_RUN, progress);
});
