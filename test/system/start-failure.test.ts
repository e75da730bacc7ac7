/**
 * `node dist/bin/serve.js` that cannot start (its port is taken): it exits 1 with one fatal
 * line on stderr that names the node it would have been, as its other lines would name it
 * (NODE_ID, or Moleculer's default: the host name and the process id), in either LOG_FORMAT.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import knex from 'knex';
import { knexConfig } from '../../services/shared/database';
import { tempDir } from '../support/backends';

const SERVE = path.resolve(__dirname, '..', '..', 'bin', 'serve.js');

/** Runs serve.js to its end: its exit code, its process id and what it wrote on stderr. */
function serve(env: Record<string, string>): Promise<{ status: number | null; pid: number; stderr: string }> {
  const child = spawn(process.execPath, [SERVE], { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((resolve) => child.once('close', (status) => resolve({ status, pid: child.pid as number, stderr })));
}

describe('serve.js that cannot start names its node on the fatal line', function () {
  this.timeout(60_000);
  let taken: net.Server;
  let env: Record<string, string>;

  before(async () => {
    taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    env = { DATA_DIR: tempDir(), HOST: '127.0.0.1', PORT: String(port), SERVICES: 'api,billing', NODE_ID: '' };
  });
  after(async () => {
    await new Promise<void>((resolve) => taken.close(() => resolve()));
    fs.rmSync(env.DATA_DIR as string, { recursive: true, force: true });
  });

  it('LOG_FORMAT=text: "FATAL <host>-<pid>/SERVE: Failed to start: listen EADDRINUSE …"', async () => {
    const r = await serve({ ...env, LOG_FORMAT: 'text' });
    expect(r.status, r.stderr).to.equal(1);
    const node = `${os.hostname().toLowerCase()}-${r.pid}`;
    expect(r.stderr).to.match(new RegExp(`^\\[[^\\]]+\\] FATAL ${node}/SERVE: Failed to start: listen EADDRINUSE`, 'm'));
    expect(r.stderr).not.to.include('undefined');
  });

  it('LOG_FORMAT=json with NODE_ID: the line carries that node', async () => {
    const r = await serve({ ...env, LOG_FORMAT: 'json', NODE_ID: 'api-7' });
    expect(r.status, r.stderr).to.equal(1);
    const line = JSON.parse(r.stderr.trim().split('\n').at(-1) as string) as Record<string, unknown>;
    expect(line).to.include({ level: 'fatal', node: 'api-7', module: 'serve' });
    expect(line.msg).to.match(/^Failed to start: listen EADDRINUSE/);
  });
});

describe('serve.js on a database that has not run its migrations', function () {
  this.timeout(60_000);

  it('without MIGRATE_ON_START, refuses to start, naming the migration not run and saying to run npm run migrate', async () => {
    const dataDir = tempDir();
    try {
      const database = { client: 'better-sqlite3' as const, filename: path.join(dataDir, 'snapservice.sqlite') };
      // As the release before left it: every migration but this release's last.
      const db = knex(knexConfig(database));
      await db.migrate.latest();
      const [done] = (await db.migrate.list()) as [Array<{ name: string }>];
      const last = done.at(-1)?.name as string;
      await db.migrate.down();
      await db.destroy();
      const env = (dir: string) => ({ DATA_DIR: dir, HOST: '127.0.0.1', PORT: '0', SERVICES: 'api,billing', MIGRATE_ON_START: 'false', LOG_FORMAT: 'json' });
      const r = await serve(env(dataDir));
      expect(r.status, r.stderr).to.equal(1);
      expect(r.stderr).to.include(`the database has not run 1 migration of this release (${last})`).and.include('run `npm run migrate`');
      // On an empty database it refuses too, and writes nothing: making Knex's tables is the migrator's, under its lock.
      const empty = tempDir();
      try {
        const none = await serve({ ...env(empty) });
        expect(none.status, none.stderr).to.equal(1);
        expect(none.stderr).to.match(/the database has not run \d+ migrations of this release/);
        const opened = knex(knexConfig({ client: 'better-sqlite3', filename: path.join(empty, 'snapservice.sqlite') }));
        expect(await opened.schema.hasTable('knex_migrations')).to.equal(false);
        await opened.destroy();
      } finally {
        fs.rmSync(empty, { recursive: true, force: true });
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('serve.js signalled while its start never ends', function () {
  this.timeout(60_000);
  let child: ReturnType<typeof spawn> | null = null;
  // Killed here too: a timed-out test never reaches its own finally.
  afterEach(() => child?.kill('SIGKILL'));

  it('exits (143) within 30 s of a SIGTERM when the transporter it waits for never answers', async () => {
    // A port nothing listens on: the NATS transporter tries again and again, and the start never ends.
    const closed = net.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as net.AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const dataDir = tempDir();
    child = spawn(process.execPath, [SERVE], {
      env: { ...process.env, DATA_DIR: dataDir, HOST: '127.0.0.1', PORT: '0', SERVICES: 'api,billing', TRANSPORTER: `nats://127.0.0.1:${port}` },
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      // Its first log line comes from the broker it starts, after its signal handlers are set
      // (a fixed wait could signal a process still loading its modules, on a busy machine).
      const running = child;
      await new Promise<void>((resolve) => running.stdout?.once('data', () => resolve()));
      running.stdout?.resume();
      await new Promise((r) => setTimeout(r, 1_000));
      const started = child;
      expect(started.exitCode, 'still starting').to.equal(null);
      const signalled = Date.now();
      started.kill('SIGTERM');
      const code = await new Promise<number | null>((resolve) => started.once('exit', (c) => resolve(c)));
      expect(code).to.equal(143);
      expect(Date.now() - signalled).to.be.below(35_000);
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
