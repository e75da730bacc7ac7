/**
 * The full stack on one machine as separate processes, as an operator runs it: a Selenium
 * Grid hub with Chrome nodes (grid/grid.js), and one `node dist/bin/serve.js` per service
 * instance (api, billing, two schedulers, two capture instances each with its gateway, ai,
 * proxy, notifier) over this machine's NATS, MariaDB and Redis, with a fresh database, Redis
 * key prefix and Moleculer namespace per run.
 *
 * It is also the supervisor: a service process that dies (crash, OOM killer, SIGKILL) is
 * started again, as systemd or Kubernetes would, so the faults tests can kill any piece and
 * watch the system recover. Stopping goes front to back (api first, Grid last) and leaves no
 * process behind: each service stops its browsers, the Grid's process groups are killed.
 *
 * Used by `npm run stack` (bin/stack.ts) and by the end-to-end tests (test/stack).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { Socket } from 'node:net';
import path from 'node:path';
import knex from 'knex';
import { KNEX_LOG } from '../services/shared/database';

const ROOT = path.resolve(__dirname, '..', '..');

interface Grid {
  url: string;
  /** Process group leaders: the hub, then node 1, node 2, ... */
  pids: number[];
  stop(): Promise<void>;
}
const gridModule = require(path.join(ROOT, 'grid', 'grid.js')) as {
  startGrid(o: { mode: 'hub'; nodes: number; maxSessions: number; port: number; sessionTimeout?: number; log?: (m: string) => void }): Promise<Grid>;
};

export interface StackOptions {
  /** Where the stack keeps its logs, images and state (made if missing). */
  dir: string;
  /** The api's port (0: any free one). */
  port: number;
  /** A MariaDB/MySQL URL whose user may create databases; the stack makes its own database there. */
  mysqlUrl: string;
  redisUrl: string;
  natsUrl: string;
  captureInstances: number;
  schedulerInstances: number;
  gridNodes: number;
  /** Browser sessions each capture instance keeps (CAPTURE_SESSIONS). */
  sessionsPerCapture: number;
  /** Extra environment for every service process (EGRESS_ALLOW_ADDRESSES, SERVICE_AI_*, ...). */
  env: Record<string, string>;
  /** Starts a service process again when it dies on its own (default true). */
  restart: boolean;
  log: (line: string) => void;
  /** Told the run's database URL as soon as the database is made, before anything else starts (a supervisor records it, to drop it should it die). */
  onDatabase?: (databaseUrl: string) => void;
}

export const STACK_DEFAULTS: Omit<StackOptions, 'dir' | 'log'> = {
  port: 3000,
  mysqlUrl: 'mysql://root@127.0.0.1:3306/',
  redisUrl: 'redis://127.0.0.1:6379',
  natsUrl: 'nats://127.0.0.1:4222',
  captureInstances: 2,
  schedulerInstances: 2,
  gridNodes: 2,
  sessionsPerCapture: 2,
  env: {},
  restart: true,
};

/** One service process the stack runs (and restarts). */
export interface ServiceInstance {
  name: string;
  services: string;
  child: ChildProcess;
  /** How many times it has been started (1 at first; +1 per restart). */
  generation: number;
  logFile: string;
}

export class Stack {
  readonly instances = new Map<string, ServiceInstance>();
  private stopping: Promise<void> | null = null;
  private readonly restartTimers = new Set<NodeJS.Timeout>();

  private constructor(
    readonly options: StackOptions,
    readonly runId: string,
    readonly databaseUrl: string,
    readonly redisPrefix: string,
    readonly namespace: string,
    readonly secretsKey: string,
    private grid: Grid | null,
  ) {}

  /** The api's address, e.g. http://127.0.0.1:3000. */
  get url(): string {
    return `http://127.0.0.1:${this.options.port}`;
  }

  get gridUrl(): string | null {
    return this.grid?.url ?? null;
  }

  /** The Grid's process group leaders: [hub, node 1, node 2, ...]. */
  get gridPids(): number[] {
    return this.grid?.pids ?? [];
  }

  /** The environment every service process gets (besides SERVICES and NODE_ID). */
  serviceEnv(): Record<string, string> {
    const o = this.options;
    return {
      ...(process.env as Record<string, string>),
      PORT: String(o.port),
      BASE_URL: this.url,
      DATA_DIR: path.join(o.dir, 'data'),
      DATABASE_URL: this.databaseUrl,
      MIGRATE_ON_START: 'false',
      REDIS_URL: o.redisUrl,
      REDIS_PREFIX: this.redisPrefix,
      TRANSPORTER: o.natsUrl,
      NAMESPACE: this.namespace,
      SELENIUM_URL: this.grid?.url ?? '',
      // Its Grid's nodes run on this host: CDP goes straight to each browser's own DevTools socket, not through the
      // hub's and a node's JVMs (docs/configuration.md); GRID_CDP=relay in the environment keeps the Grid's relay.
      GRID_CDP: process.env.GRID_CDP || 'direct',
      SECRETS_KEY: this.secretsKey,
      CAPTURE_SESSIONS: String(o.sessionsPerCapture),
      ...o.env,
    };
  }

  static async start(options: StackOptions): Promise<Stack> {
    const o = options;
    fs.mkdirSync(path.join(o.dir, 'logs'), { recursive: true });
    fs.mkdirSync(path.join(o.dir, 'data'), { recursive: true });
    const runId = `${Date.now().toString(36)}${crypto.randomBytes(3).toString('hex')}`;
    const dbName = `snapstack_${runId}`;
    const admin = knex({ client: 'mysql2', connection: o.mysqlUrl, log: KNEX_LOG });
    try {
      await admin.raw(`CREATE DATABASE \`${dbName}\``);
    } finally {
      await admin.destroy();
    }
    const dbUrl = new URL(o.mysqlUrl);
    dbUrl.pathname = `/${dbName}`;
    o.onDatabase?.(dbUrl.toString());
    if (o.port === 0) o.port = await freePort();
    const stack = new Stack(o, runId, dbUrl.toString(), `stack${runId}:`, `stack${runId}`, crypto.randomBytes(32).toString('hex'), null);
    try {
      await stack.migrate();
      o.log(`[stack] database ${dbName}, Redis prefix ${stack.redisPrefix}, namespace ${stack.namespace}`);
      const slots = o.captureInstances * o.sessionsPerCapture;
      // Each node offers every capture instance's sessions, so the stack keeps working on one node.
      // The session timeout is the nodes' own (grid.js: 60 s, as a deployment's nodes have it), which the capture service's keepalive is made for.
      stack.grid = await gridModule.startGrid({ mode: 'hub', nodes: o.gridNodes, maxSessions: slots, port: 0, log: o.log });
      o.log(`[stack] Selenium Grid ${stack.grid.url} (hub + ${o.gridNodes} nodes, ${slots} sessions each)`);
      const plan: Array<[string, string]> = [
        ['billing', 'billing'],
        ['proxy', 'proxy'],
        ['ai', 'ai'],
        ['notifier', 'notifier'],
        ...Array.from({ length: o.schedulerInstances }, (_, i): [string, string] => [`scheduler-${i + 1}`, 'scheduler']),
        ...Array.from({ length: o.captureInstances }, (_, i): [string, string] => [`capture-${i + 1}`, 'capture']),
        ['api', 'api'],
      ];
      await Promise.all(plan.map(([name, services]) => stack.launch(name, services)));
      await stack.waitHealthy(120_000);
      o.log(`[stack] ready: ${stack.url}`);
      return stack;
    } catch (err) {
      await stack.stop();
      throw err;
    }
  }

  private async migrate(): Promise<void> {
    const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'db', 'migrate.js')], { env: this.serviceEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout?.on('data', (d) => (out += d));
    child.stderr?.on('data', (d) => (out += d));
    const code = await new Promise((r) => child.once('exit', r));
    if (code !== 0) throw new Error(`migrations failed: ${out}`);
  }

  /** Starts one service process (output appended to its log file) and resolves once its services have started. */
  private async launch(name: string, services: string, generation = 1): Promise<void> {
    const logFile = path.join(this.options.dir, 'logs', `${name}.log`);
    const fd = fs.openSync(logFile, 'a');
    const from = fs.fstatSync(fd).size;
    // Output straight to the file (no pipe through this process), so a service never blocks
    // or fails on a full or broken pipe whatever happens to the supervisor.
    // Its stdin is a pipe from this process (STOP_ON_STDIN_END): if the supervisor (or a test
    // running the stack) dies, even by SIGKILL, the service stops itself and its browsers.
    const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'bin', 'serve.js')], {
      env: { ...this.serviceEnv(), SERVICES: services, NODE_ID: `${name}-${this.runId}-${generation}`, STOP_ON_STDIN_END: 'true' },
      stdio: ['pipe', fd, fd],
    });
    fs.closeSync(fd);
    // The pipe must not keep this process alive, nor fail it when the child is gone.
    child.stdin?.on('error', () => undefined);
    (child.stdin as Socket | null)?.unref();
    const instance: ServiceInstance = { name, services, child, generation, logFile };
    this.instances.set(name, instance);
    child.on('exit', (code, signal) => {
      if (this.stopping || this.instances.get(name) !== instance) return;
      this.options.log(`[stack] ${name} (pid ${child.pid}) exited (${signal ?? code})${this.options.restart ? '; starting it again' : ''}`);
      if (!this.options.restart) return;
      const timer = setTimeout(() => {
        this.restartTimers.delete(timer);
        if (!this.stopping) this.launch(name, services, generation + 1).catch((err) => this.options.log(`[stack] ${name} did not start again: ${err.message}`));
      }, 500);
      this.restartTimers.add(timer);
    });
    const end = Date.now() + 120_000;
    while (Date.now() < end) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`${name} exited (${child.signalCode ?? child.exitCode}) while starting; see ${logFile}`);
      if (/Services started: /.test(readFrom(logFile, from))) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`${name} did not start within 120 s; see ${logFile}`);
  }

  /** Waits for the api's /health to answer 200. */
  async waitHealthy(timeoutMs: number): Promise<void> {
    const end = Date.now() + timeoutMs;
    let last = '';
    while (Date.now() < end) {
      try {
        const res = await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(2_000) });
        if (res.status === 200) return;
        last = `${res.status} ${await res.text()}`;
      } catch (err) {
        last = (err as Error).message;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    throw new Error(`the stack's /health did not answer 200 within ${timeoutMs} ms (last: ${last})`);
  }

  /** The running process of an instance ("capture-1", "notifier", ...). */
  instance(name: string): ServiceInstance {
    const i = this.instances.get(name);
    if (!i) throw new Error(`no instance "${name}" in this stack (${[...this.instances.keys()].join(', ')})`);
    return i;
  }

  /** Signals an instance's process (SIGKILL to simulate a crash); the supervisor starts it again. */
  kill(name: string, signal: NodeJS.Signals = 'SIGKILL'): number {
    const { child } = this.instance(name);
    child.kill(signal);
    return child.pid as number;
  }

  /** Resolves once the instance runs a generation after `generation` and its broker has started. */
  async restarted(name: string, generation: number, timeoutMs = 60_000): Promise<ServiceInstance> {
    const end = Date.now() + timeoutMs;
    while (Date.now() < end) {
      const i = this.instances.get(name);
      if (i && i.generation > generation && i.child.exitCode === null) return i;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${name} was not started again within ${timeoutMs} ms`);
  }

  /** Every process id the stack runs now: service processes, then the Grid's group leaders. */
  pids(): number[] {
    return [...[...this.instances.values()].map((i) => i.child.pid as number), ...this.gridPids];
  }

  /**
   * Stops everything: the api first (no new requests), then captures (each quits its
   * browsers), the other services, and last the Grid. `dropDatabase` removes the run's
   * database too.
   */
  stop(dropDatabase = true): Promise<void> {
    this.stopping ??= (async () => {
      for (const t of this.restartTimers) clearTimeout(t);
      const order = (prefix: string) => [...this.instances.values()].filter((i) => i.name.startsWith(prefix));
      for (const group of [order('api'), order('scheduler'), order('capture'), [...order('notifier'), ...order('ai'), ...order('proxy')], order('billing')]) {
        await Promise.all(group.map((i) => stopProcess(i.child, 45_000)));
      }
      await this.grid?.stop();
      if (dropDatabase) await dropStackDatabase(this.databaseUrl);
      this.options.log('[stack] stopped');
    })();
    return this.stopping;
  }
}

/** The database a stack's run made (`snapstack_<run id>`) named by a database URL, or null for any other. */
export function stackDatabaseName(databaseUrl: string): string | null {
  let name: string;
  try {
    name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  } catch {
    return null;
  }
  return /^snapstack_[0-9a-z]+$/.test(name) ? name : null;
}

/**
 * Drops the database of a stack's run whose supervisor died without stopping it (SIGKILL, the
 * OOM killer), on the server and as the user its URL names. Only a database the stack makes
 * (stackDatabaseName): any other URL is refused. Returns the database's name.
 */
export async function dropStackDatabase(databaseUrl: string): Promise<string> {
  const name = stackDatabaseName(databaseUrl);
  if (!name) throw new Error('not a database the stack made (snapstack_…)');
  const server = new URL(databaseUrl);
  server.pathname = '/';
  // Quiet: a connection that fails is the caller's one line to say, not knex's stack trace.
  const admin = knex({ client: 'mysql2', connection: server.toString(), log: { warn: () => undefined } });
  try {
    await admin.raw(`DROP DATABASE IF EXISTS \`${name}\``);
  } finally {
    await admin.destroy();
  }
  return name;
}

/** SIGTERM, then SIGKILL if it has not exited within `graceMs`; resolves when it has exited. */
async function stopProcess(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

function readFrom(file: string, offset: number): string {
  const fd = fs.openSync(file, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    const buf = Buffer.alloc(Math.max(0, size - offset));
    fs.readSync(fd, buf, 0, buf.length, offset);
    return buf.toString();
  } finally {
    fs.closeSync(fd);
  }
}

/** Where the kernel's ephemeral ports begin (its outgoing connections' local ports, and `listen(0)`'s). */
function ephemeralPortsStart(): number {
  try {
    const low = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 0) return low;
  } catch {
    // Not Linux: the IANA dynamic range.
  }
  return 49152;
}

const FIRST_CHOSEN_PORT = 10_000;

/**
 * A TCP port free right now, on every address (as the api binds it), for a server started
 * later. Taken below the ephemeral range: a port from `listen(0)` can meanwhile become the
 * local port of any outgoing connection (to MariaDB, NATS, the Grid) or of another
 * `listen(0)`, and the server that wanted it then fails with EADDRINUSE.
 */
export async function freePort(): Promise<number> {
  const net = await import('node:net');
  const end = ephemeralPortsStart();
  const free = (port: number) =>
    new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.once('error', () => resolve(false));
      srv.listen(port, () => srv.close(() => resolve(true)));
    });
  for (let attempt = 0; end > FIRST_CHOSEN_PORT && attempt < 100; attempt++) {
    const port = FIRST_CHOSEN_PORT + crypto.randomInt(end - FIRST_CHOSEN_PORT);
    if (await free(port)) return port;
  }
  // No room below the ephemeral range: any port the kernel gives.
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, () => {
      const { port } = srv.address() as import('node:net').AddressInfo;
      srv.close(() => resolve(port));
    });
  });
}
