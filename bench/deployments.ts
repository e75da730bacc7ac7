/**
 * What the benches that run the service as separate processes share: the operator CLI against
 * a deployment's database (an account on a plan whose limits never hold the bench), waiting
 * until a deployment's browser sessions are live, and the embedded default started as
 * `npm start` runs it (one `node dist/bin/serve.js`, SQLite, a local ChromeDriver).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import type { Socket } from 'node:net';
import path from 'node:path';
import { freePort } from '../ops/stack';

const ROOT = path.resolve(__dirname, '..', '..');

/** Runs the operator CLI (dist/bin/admin.js) with `env` (a deployment's); its stdout. */
export function adminCli(env: Record<string, string>, args: string[]): string {
  const res = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'bin', 'admin.js'), ...args], {
    env: { ...env, LOG_LEVEL: 'warn' },
    encoding: 'utf8',
  });
  if (res.status !== 0) throw new Error(`admin ${args.slice(0, 2).join(' ')} failed (${res.status}): ${res.stderr}`);
  return res.stdout;
}

/** An account on the `bench` plan, which may use every browser at once (its limits never hold the bench). */
export function createBenchAccount(env: Record<string, string>): { account_id: string; access_token: string } {
  adminCli(env, ['plans', 'set', 'bench', '--screenshots', '10000000', '--concurrency', '64', '--queue', '64']);
  return JSON.parse(adminCli(env, ['accounts', 'create', '--plan', 'bench', '--json'])) as { account_id: string; access_token: string };
}

/** Waits until the deployment at `url` has `sessions` live browser sessions (GET /pressure: max_concurrent). */
export async function waitForBrowsers(url: string, sessions: number, timeoutMs = 120_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  let last = '';
  while (Date.now() < end) {
    const res = await fetch(`${url}/pressure`).catch(() => null);
    if (res) {
      const body = (await res.json().catch(() => null)) as { pressure?: { max_concurrent?: number } } | null;
      last = JSON.stringify(body);
      if ((body?.pressure?.max_concurrent ?? 0) >= sessions) return;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`${url} did not have ${sessions} live browser sessions within ${timeoutMs} ms (last /pressure: ${last})`);
}

/** The embedded default running as a process of its own. */
export interface EmbeddedProcess {
  url: string;
  child: ChildProcess;
  /** Its environment (for adminCli). */
  env: Record<string, string>;
  logFile: string;
  stop(): Promise<void>;
}

/**
 * Starts `node dist/bin/serve.js` with every service in it (no SERVICES, no TRANSPORTER), its
 * SQLite database in `dir`, and `env` on top; resolves once /health answers 200. Its output
 * goes to `dir`/embedded.log; it stops itself if this process dies (STOP_ON_STDIN_END).
 */
export async function startEmbeddedProcess(dir: string, env: Record<string, string>, timeoutMs = 120_000): Promise<EmbeddedProcess> {
  const port = await freePort();
  const fullEnv: Record<string, string> = {
    ...(process.env as Record<string, string>),
    DATA_DIR: path.join(dir, 'data'),
    PORT: String(port),
    HOST: '127.0.0.1',
    STOP_ON_STDIN_END: 'true',
    ...env,
  };
  for (const k of ['SERVICES', 'TRANSPORTER', 'DATABASE_URL', 'REDIS_URL', 'SELENIUM_URL', 'NAMESPACE']) if (!(k in env)) delete fullEnv[k];
  fs.mkdirSync(fullEnv.DATA_DIR!, { recursive: true });
  const logFile = path.join(dir, 'embedded.log');
  const fd = fs.openSync(logFile, 'a');
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'bin', 'serve.js')], { env: fullEnv, stdio: ['pipe', fd, fd] });
  fs.closeSync(fd);
  child.stdin?.on('error', () => undefined);
  (child.stdin as Socket | null)?.unref();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 45_000);
      await exited;
      clearTimeout(timer);
    }
  };
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the embedded process exited while starting; see ${logFile}`);
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) }).catch(() => null);
    if (res?.status === 200) return { url, child, env: fullEnv, logFile, stop };
    await new Promise((r) => setTimeout(r, 250));
  }
  await stop();
  throw new Error(`the embedded process did not answer /health within ${timeoutMs} ms; see ${logFile}`);
}
