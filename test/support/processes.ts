/** Runs the service as separate OS processes, as production does (one per service set). */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

export { freePort } from './backends';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/** Runs a dist/ script to completion (e.g. the admin CLI) and returns its stdout. */
export function runScript(script: string, args: string[], env: Record<string, string>): string {
  const res = spawnSync(process.execPath, [path.join(ROOT, 'dist', script), ...args], { env: { ...process.env, ...env }, encoding: 'utf8' });
  if (res.status !== 0) throw new Error(`${script} ${args.join(' ')} failed (${res.status}): ${res.stderr}`);
  return res.stdout;
}

export interface ServiceProcess {
  child: ChildProcess;
  output(): string;
  /** SIGTERM (to its process group when started with `group`), SIGKILL after 10 s; resolves when it has exited. */
  stop(): Promise<void>;
}

export interface ServeOptions {
  timeoutMs?: number;
  /** Its own process group, which stop() signals as a whole, as a process supervisor does. */
  group?: boolean;
  /** Options for node before the script (`-r` a preload). */
  nodeArgs?: string[];
}

/** Starts `node dist/bin/serve.js` with the given environment and waits for `ready` in its output. */
export async function startServeProcess(env: Record<string, string>, ready: RegExp, options: ServeOptions = {}): Promise<ServiceProcess> {
  const { timeoutMs = 20_000, group = false, nodeArgs = [] } = options;
  const child = spawn(process.execPath, [...nodeArgs, path.join(ROOT, 'dist', 'bin', 'serve.js')], {
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: group,
  });
  const signal = (sig: NodeJS.Signals) => {
    try {
      if (group) process.kill(-(child.pid as number), sig);
      else child.kill(sig);
    } catch {
      // Already gone.
    }
  };
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    signal('SIGTERM');
    const timer = setTimeout(() => signal('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  };
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`process did not get ready in ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const check = () => {
      if (ready.test(out)) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout?.on('data', check);
    child.stderr?.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`process exited with ${code}:\n${out}`));
    });
  }).catch(async (err) => {
    await stop();
    throw err;
  });
  return { child, output: () => out, stop };
}

/**
 * The processes (any parent, any process group) whose environment holds `NAME=value`: a
 * service's browsers and ChromeDrivers inherit the marker its test started it with, so they
 * are found even when started during shutdown or re-parented after their parent died.
 */
export function processesMarked(name: string, value: string): number[] {
  const needle = Buffer.from(`${name}=${value}\0`);
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z') continue; // exited, not yet reaped
      if (fs.readFileSync(`/proc/${entry}/environ`).includes(needle)) found.push(Number(entry));
    } catch {
      // Ended while we looked, or not ours to read.
    }
  }
  return found;
}

/** Whether a process of that id is running (or a zombie not yet reaped). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/**
 * What is still running, after waiting up to `timeoutMs` for it to go: those of `pids`, and
 * every process carrying SNAP_TEST_MARK=`mark` (browsers and ChromeDrivers inherit it).
 */
export async function processesLeft(mark: string, pids: number[] = [], timeoutMs = 30_000): Promise<number[]> {
  const left = () => [...new Set([...pids.filter(alive), ...processesMarked('SNAP_TEST_MARK', mark)])];
  const end = Date.now() + timeoutMs;
  let now = left();
  while (now.length && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 200));
    now = left();
  }
  return now;
}
