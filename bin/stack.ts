/**
 * `npm run stack`: the full stack on this machine as separate processes (ops/stack.ts).
 *
 *   npm run stack                  start it in the background; returns once /health is 200
 *   npm run stack -- stop          stop it; no process is left behind
 *   npm run stack -- status        what runs, with process ids
 *   npm run stack -- admin ARGS    the admin CLI against the stack's database (accounts create ...)
 *   npm run stack -- run           in the foreground, until Ctrl-C
 *
 * Settings (environment): STACK_DIR (data/stack), STACK_PORT (3000), STACK_MYSQL_URL,
 * STACK_REDIS_URL, STACK_NATS_URL, STACK_CAPTURE_INSTANCES (2), STACK_SCHEDULERS (2),
 * STACK_GRID_NODES (2), STACK_CAPTURE_SESSIONS (2); any other variable of the service
 * (ALLOW_PRIVATE_NETWORKS, EGRESS_ALLOW_ADDRESSES, SERVICE_AI_*, LOG_LEVEL, GRID_CDP, ...) is passed
 * to every service process.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { STACK_DEFAULTS, Stack, type StackOptions } from '../ops/stack';
import { writeStateFile } from '../ops/state-file';

const ROOT = path.resolve(__dirname, '..', '..');
const DIR = path.resolve(process.env.STACK_DIR ?? path.join(ROOT, 'data', 'stack'));
const STATE = path.join(DIR, 'stack.json');
const SUPERVISOR_LOG = path.join(DIR, 'supervisor.log');

interface State {
  pid: number;
  url: string;
  ready: boolean;
  env?: Record<string, string>;
  processes?: Record<string, number>;
  grid?: { url: string; pids: number[] };
  error?: string;
}

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) fail(`${name} must be a whole number of at least 1, got "${raw}"`);
  return Number(raw);
}

function fail(message: string): never {
  console.error(message);
  process.exit(1);
}

function options(): StackOptions {
  const port = process.env.STACK_PORT ?? String(STACK_DEFAULTS.port);
  if (!/^\d+$/.test(port) || Number(port) > 65535) fail(`STACK_PORT must be a port number, got "${port}"`);
  return {
    ...STACK_DEFAULTS,
    dir: DIR,
    port: Number(port),
    mysqlUrl: process.env.STACK_MYSQL_URL ?? STACK_DEFAULTS.mysqlUrl,
    redisUrl: process.env.STACK_REDIS_URL ?? STACK_DEFAULTS.redisUrl,
    natsUrl: process.env.STACK_NATS_URL ?? STACK_DEFAULTS.natsUrl,
    captureInstances: positive('STACK_CAPTURE_INSTANCES', STACK_DEFAULTS.captureInstances),
    schedulerInstances: positive('STACK_SCHEDULERS', STACK_DEFAULTS.schedulerInstances),
    gridNodes: positive('STACK_GRID_NODES', STACK_DEFAULTS.gridNodes),
    sessionsPerCapture: positive('STACK_CAPTURE_SESSIONS', STACK_DEFAULTS.sessionsPerCapture),
    log: (line) => console.log(`${new Date().toISOString()} ${line}`),
  };
}

function readState(): State | null {
  try {
    return JSON.parse(fs.readFileSync(STATE, 'utf8')) as State;
  } catch {
    return null;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The processes of a process group still running (not zombies), from /proc. */
function groupMembers(pgid: number): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] !== 'Z' && Number(fields[2]) === pgid) found.push(Number(entry));
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The supervisor: runs the stack until SIGTERM or SIGINT, keeping stack.json up to date. */
async function supervise(): Promise<void> {
  const write = (s: State) => writeStateFile(STATE, s);
  const opts = options();
  let stack: Stack | null = null;
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await stack?.stop();
    fs.rmSync(STATE, { force: true });
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  write({ pid: process.pid, url: `http://127.0.0.1:${opts.port}`, ready: false });
  try {
    stack = await Stack.start(opts);
  } catch (err) {
    write({ pid: process.pid, url: '', ready: false, error: (err as Error).message });
    process.exit(1);
  }
  const s = stack;
  const snapshot = () => {
    if (stopping) return;
    write({
      pid: process.pid,
      url: s.url,
      ready: true,
      env: {
        DATABASE_URL: s.databaseUrl,
        REDIS_URL: opts.redisUrl,
        REDIS_PREFIX: s.redisPrefix,
        TRANSPORTER: opts.natsUrl,
        NAMESPACE: s.namespace,
        SECRETS_KEY: s.secretsKey,
      },
      processes: Object.fromEntries([...s.instances.values()].map((i) => [i.name, i.child.pid as number])),
      grid: { url: s.gridUrl ?? '', pids: s.gridPids },
    });
  };
  snapshot();
  // Restarted processes get new ids; keep the file true for `status` and `stop`.
  setInterval(snapshot, 1_000);
}

async function start(): Promise<void> {
  const state = readState();
  if (state && alive(state.pid)) fail(`The stack already runs (supervisor pid ${state.pid}, ${state.url}); stop it with: npm run stack -- stop`);
  fs.mkdirSync(DIR, { recursive: true });
  fs.rmSync(STATE, { force: true });
  const out = fs.openSync(SUPERVISOR_LOG, 'a');
  // Its own process group and session: the terminal's Ctrl-C does not reach it; stop does.
  const child = spawn(process.execPath, [__filename, 'supervise'], { detached: true, stdio: ['ignore', out, out] });
  child.unref();
  fs.closeSync(out);
  console.log(`Starting the stack (supervisor pid ${child.pid}; log: ${SUPERVISOR_LOG}, services' logs in ${path.join(DIR, 'logs')}) ...`);
  const end = Date.now() + 240_000;
  while (Date.now() < end) {
    const s = readState();
    if (s?.ready) {
      console.log(`Stack ready: ${s.url} (health: ${s.url}/health, metrics: ${s.url}/metrics)`);
      console.log('Create an account with: npm run --silent stack -- admin accounts create --plan paid --json');
      console.log('Stop it with:           npm run stack -- stop');
      return;
    }
    if (s?.error || !alive(child.pid as number)) {
      fail(
        `The stack did not start: ${s?.error ?? 'the supervisor exited'}\n--- ${SUPERVISOR_LOG} ---\n${fs.readFileSync(SUPERVISOR_LOG, 'utf8').slice(-4000)}`,
      );
    }
    await sleep(500);
  }
  fail(`The stack did not get ready within 240 s; see ${SUPERVISOR_LOG}`);
}

async function stop(): Promise<void> {
  const state = readState();
  if (!state || !alive(state.pid)) {
    fs.rmSync(STATE, { force: true });
    console.log('The stack is not running.');
    return;
  }
  process.kill(state.pid, 'SIGTERM');
  const end = Date.now() + 180_000;
  while (Date.now() < end && alive(state.pid)) await sleep(250);
  // The supervisor leads its process group: anything of the stack still there is in it.
  const left = groupMembers(state.pid);
  if (left.length) {
    console.log(`Killing what is left of the stack: ${left.join(', ')}`);
    try {
      process.kill(-state.pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
  fs.rmSync(STATE, { force: true });
  console.log('Stack stopped.');
}

function status(): void {
  const state = readState();
  if (!state || !alive(state.pid)) {
    console.log('The stack is not running.');
    return;
  }
  console.log(JSON.stringify({ supervisor: state.pid, url: state.url, ready: state.ready, processes: state.processes, grid: state.grid }, null, 2));
}

function admin(args: string[]): void {
  const state = readState();
  if (!state?.ready || !state.env) fail('The stack is not running; start it with: npm run stack');
  const res = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'bin', 'admin.js'), ...args], { env: { ...process.env, ...state.env }, stdio: 'inherit' });
  process.exit(res.status ?? 1);
}

async function main(): Promise<void> {
  const [command = 'start', ...rest] = process.argv.slice(2);
  switch (command) {
    case 'start':
      return start();
    case 'stop':
      return stop();
    case 'status':
      return status();
    case 'admin':
      return admin(rest);
    case 'supervise':
      return supervise();
    case 'run': {
      const stack = await Stack.start(options());
      const quit = () => void stack.stop().then(() => process.exit(0));
      process.once('SIGINT', quit);
      process.once('SIGTERM', quit);
      return;
    }
    default:
      fail(`Unknown command "${command}": use start (default), stop, status, admin ... or run`);
  }
}

main().catch((err) => fail(`stack: ${err instanceof Error ? err.message : err}`));
