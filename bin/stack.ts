/**
 * `npm run stack`: the full stack on this machine as separate processes (ops/stack.ts).
 *
 *   npm run stack                  start it in the background; returns once /health is 200
 *   npm run stack -- stop          stop it; no process is left behind
 *   npm run stack -- status        what runs, with process ids
 *   npm run stack -- admin ARGS    the admin CLI against the stack's database (accounts create ...)
 *   npm run stack -- run           in the foreground, until Ctrl-C (status, admin and stop work with it too)
 *
 * Settings (environment): STACK_DIR (data/stack), STACK_PORT (3000), STACK_MYSQL_URL,
 * STACK_REDIS_URL, STACK_NATS_URL, STACK_CAPTURE_INSTANCES (2), STACK_SCHEDULERS (2),
 * STACK_GRID_NODES (2), STACK_CAPTURE_SESSIONS (2); any other variable of the service
 * (ALLOW_PRIVATE_NETWORKS, EGRESS_ALLOW_ADDRESSES, SERVICE_AI_*, LOG_LEVEL, GRID_CDP, ...) is passed
 * to every service process. A setting that cannot be used is refused before anything starts (exit 2).
 *
 * stack.json (mode 0600: it holds the run's SECRETS_KEY and DATABASE_URL) names the running
 * supervisor; one whose supervisor died without stopping (SIGKILL, the OOM killer) is cleared
 * by the next `stop` or start, which drop the run's database it names.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { STACK_DEFAULTS, Stack, type StackOptions, dropStackDatabase, stackDatabaseName } from '../ops/stack';
import { writeStateFile } from '../ops/state-file';

const ROOT = path.resolve(__dirname, '..', '..');
const DIR = path.resolve(process.env.STACK_DIR ?? path.join(ROOT, 'data', 'stack'));
const STATE = path.join(DIR, 'stack.json');
const SUPERVISOR_LOG = path.join(DIR, 'supervisor.log');

interface State {
  pid: number;
  url: string;
  ready: boolean;
  /** The run's database URL, from the moment it is made (dropped by whoever finds the supervisor gone). */
  database?: string;
  env?: Record<string, string>;
  processes?: Record<string, number>;
  grid?: { url: string; pids: number[] };
  error?: string;
}

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) fail(`${name} must be a whole number of at least 1, got "${raw}"`, 2);
  return Number(raw);
}

/** Prints the message and exits: 2 for a setting that cannot be used (as the service's and the admin CLI's configuration errors), else 1. */
function fail(message: string, code = 1): never {
  console.error(message);
  process.exit(code);
}

/** The stack's settings from the environment; exits 2 with the first that cannot be used. */
function options(): StackOptions {
  const port = process.env.STACK_PORT ?? String(STACK_DEFAULTS.port);
  if (!/^\d+$/.test(port) || Number(port) > 65535) fail(`STACK_PORT must be a port number, got "${port}"`, 2);
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

/**
 * What a supervisor that died without stopping the stack (SIGKILL, the OOM killer) left: its
 * state file, and its run's database (its services and Grid stop themselves). Drops the
 * database the state file names, only if it is one the stack made (snapstack_…), removes the
 * file, and says so in one line. Exits 1, keeping the file, if the database cannot be dropped.
 */
async function clearStale(state: State): Promise<void> {
  const url = state.database ?? state.env?.DATABASE_URL;
  const name = url ? stackDatabaseName(url) : null;
  let dropped = 'no database to drop';
  if (url && name) {
    try {
      await dropStackDatabase(url);
      dropped = `dropped its database ${name}`;
    } catch (err) {
      fail(
        `The stack's supervisor (pid ${state.pid}) is gone, and its database ${name} could not be dropped: ${(err as Error).message}; run npm run stack -- stop again once MariaDB answers (${STATE} is kept)`,
      );
    }
  } else if (url) {
    dropped = 'its database is not one the stack made, so it is left';
  }
  fs.rmSync(STATE, { force: true });
  console.log(`The stack's supervisor (pid ${state.pid}) had gone without stopping it: ${dropped}, removed ${STATE}.`);
}

/**
 * The supervisor: runs the stack until SIGTERM or SIGINT, keeping stack.json up to date.
 * `foreground` (npm run stack -- run): its output is the terminal's, and a stack that does
 * not start is said there (the background supervisor leaves it in stack.json for `start`).
 */
async function supervise(foreground: boolean): Promise<void> {
  const write = (s: State) => writeStateFile(STATE, s);
  const opts = options();
  fs.mkdirSync(DIR, { recursive: true, mode: 0o700 });
  let stack: Stack | null = null;
  let database: string | undefined;
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await stack?.stop();
    // Stopped while it started: the run's database, if made, goes (what else started stops itself with this process).
    if (!stack && database) await dropStackDatabase(database).catch((err) => opts.log(`[stack] its database was not dropped: ${err.message}`));
    fs.rmSync(STATE, { force: true });
    process.exit(0);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const starting = (): State => ({ pid: process.pid, url: `http://127.0.0.1:${opts.port}`, ready: false, database });
  write(starting());
  try {
    stack = await Stack.start({
      ...opts,
      onDatabase: (url) => {
        database = url;
        write(starting());
      },
    });
  } catch (err) {
    // Stack.start stopped what it had started and dropped its database.
    if (foreground) {
      fs.rmSync(STATE, { force: true });
      fail(`The stack did not start: ${(err as Error).message}`);
    }
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
      database: s.databaseUrl,
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

/** Refuses to start a second stack over the same STACK_DIR; clears what a dead supervisor left. */
async function notRunning(): Promise<void> {
  const state = readState();
  if (state && alive(state.pid)) fail(`The stack already runs (supervisor pid ${state.pid}, ${state.url}); stop it with: npm run stack -- stop`);
  if (state && !state.error) await clearStale(state);
}

async function start(): Promise<void> {
  // Checked here, where the operator reads it, not in the detached supervisor.
  options();
  await notRunning();
  fs.mkdirSync(DIR, { recursive: true, mode: 0o700 });
  fs.rmSync(STATE, { force: true });
  const out = fs.openSync(SUPERVISOR_LOG, 'a');
  // The log is appended to run after run: a failure shows this run's part only.
  const logFrom = fs.fstatSync(out).size;
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
        `The stack did not start: ${s?.error ?? 'the supervisor exited'}\n--- ${SUPERVISOR_LOG} (this run) ---\n${logSince(logFrom).slice(-4000).trimEnd()}`,
      );
    }
    await sleep(500);
  }
  fail(`The stack did not get ready within 240 s; see ${SUPERVISOR_LOG}`);
}

function logSince(offset: number): string {
  const text = fs.readFileSync(SUPERVISOR_LOG);
  return text.subarray(Math.min(offset, text.length)).toString('utf8');
}

async function stop(): Promise<void> {
  const state = readState();
  if (state && !alive(state.pid) && !state.error) return clearStale(state);
  if (!state || !alive(state.pid)) {
    // None, or a supervisor's whose stack did not start (it stopped what it had started).
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
      return supervise(false);
    case 'run':
      // The background supervisor's work in this process: stack.json included, for status, admin and stop.
      options();
      await notRunning();
      return supervise(true);
    default:
      fail(`Unknown command "${command}": use start (default), stop, status, admin ... or run`);
  }
}

main().catch((err) => fail(`stack: ${err instanceof Error ? err.message : err}`));
