/**
 * Servers a suite runs on ports of its own (Redis, NATS), so that it can stop, kill and start
 * them; the machine's shared servers are never touched.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { freePort } from './backends';
import { sleep } from './wait';

/** A server binary a suite runs on a port of its own, so it can stop and start it. */
export class OwnServer {
  private child: ChildProcess | null = null;
  constructor(
    readonly name: string,
    private readonly argv: string[],
    readonly port: number,
  ) {}

  /** Starts it, unless it runs already. */
  async start(): Promise<void> {
    if (this.child && this.child.exitCode === null && this.child.signalCode === null) return;
    const child = spawn(this.argv[0]!, this.argv.slice(1), { stdio: 'ignore' });
    this.child = child;
    const end = Date.now() + 10_000;
    while (Date.now() < end) {
      if (child.exitCode !== null) throw new Error(`${this.name} exited (${child.exitCode})`);
      const up = await new Promise<boolean>((resolve) => {
        const s = net.connect(this.port, '127.0.0.1', () => {
          s.destroy();
          resolve(true);
        });
        s.on('error', () => resolve(false));
      });
      if (up) return;
      await sleep(50);
    }
    throw new Error(`${this.name} did not listen on ${this.port}`);
  }

  /** Stopped as an operator stops it (SIGTERM: Redis writes its files), or killed (SIGKILL: gone at once). */
  async stop(signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill(signal);
    await exited;
  }

  /** Stopped for `downMs`, then started again on the same port. */
  async restart(downMs: number): Promise<void> {
    await this.stop();
    await sleep(downMs);
    await this.start();
  }
}

/** A Redis server of the suite's own on a free port, keeping its data in `dir` (append-only, as production should). */
export async function ownRedis(dir: string): Promise<OwnServer> {
  const port = await freePort();
  return new OwnServer(
    'redis-server',
    ['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', ''],
    port,
  );
}
