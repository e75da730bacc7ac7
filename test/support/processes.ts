/** Runs the service as separate OS processes, as production does (one per service set). */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
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
  stop(): Promise<void>;
}

/** Starts `node dist/bin/serve.js` with the given environment and waits for `ready` in its output. */
export async function startServeProcess(env: Record<string, string>, ready: RegExp, timeoutMs = 20_000): Promise<ServiceProcess> {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'bin', 'serve.js')], {
    env: { ...process.env, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => (out += d));
  child.stderr?.on('data', (d) => (out += d));
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
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
