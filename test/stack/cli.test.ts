/**
 * `npm run stack` as an operator uses it (node dist/bin/stack.js): started in the background,
 * a capture through it with curl's request, /metrics moving, and stopped by `stop` (SIGTERM
 * to the supervisor) or by SIGTERM to the stack's whole process group. Either way no
 * process is left: every service process, Grid process, ChromeDriver and browser inherits
 * the marker the test starts it with, and is counted by process id. `run` in the foreground
 * is the same stack to `status`, `admin` and `stop`. Before starting anything it refuses a
 * setting it cannot use, and clears what a supervisor that died without stopping left (its
 * state file and its run's database).
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import knex from 'knex';
import { writeStateFile } from '../../ops/state-file';
import { MYSQL_ADMIN_URL, NATS_URL, REDIS_URL, TEST_DEFAULTS, freePort, tempDir, uniqueName } from '../support/backends';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { request } from '../support/http';
import { processesLeft, processesMarked } from '../support/processes';
import { parsePrometheus } from '../support/prometheus';
import { until } from '../support/wait';

const run = promisify(execFile);
const STACK_JS = path.resolve(__dirname, '..', '..', 'bin', 'stack.js');

async function databases(): Promise<string[]> {
  const db = knex({ client: 'mysql2', connection: MYSQL_ADMIN_URL });
  try {
    const [rows] = (await db.raw('SHOW DATABASES')) as [Array<{ Database: string }>];
    return rows.map((r) => r.Database);
  } finally {
    await db.destroy();
  }
}

describe('npm run stack (the operator command)', function () {
  this.timeout(240_000);
  let fx: FixtureServer;
  before(async () => {
    fx = await startFixtures();
  });
  after(async () => fx?.stop());

  async function stackEnv(extra: Record<string, string> = {}): Promise<{ env: Record<string, string>; mark: string; dir: string }> {
    const dir = tempDir('snapstack-cli-');
    const mark = uniqueName('m');
    const admin = new URL(MYSQL_ADMIN_URL);
    admin.pathname = '/';
    const env: Record<string, string> = {
      ...(process.env as Record<string, string>),
      ...TEST_DEFAULTS,
      STACK_DIR: dir,
      STACK_PORT: String(await freePort()),
      STACK_MYSQL_URL: admin.toString(),
      STACK_REDIS_URL: REDIS_URL,
      STACK_NATS_URL: NATS_URL,
      ALLOW_PRIVATE_NETWORKS: 'true',
      LOG_LEVEL: 'info',
      SNAP_TEST_MARK: mark,
      ...extra,
    };
    return { env, mark, dir };
  }

  async function startStack(): Promise<{ env: Record<string, string>; mark: string; dir: string; url: string; supervisor: number; stdout: string }> {
    const { env, mark, dir } = await stackEnv();
    const { stdout } = await run(process.execPath, [STACK_JS], { env });
    const url = /Stack ready: (http:\/\/\S+) /.exec(stdout)?.[1];
    expect(url, stdout).to.be.a('string');
    const state = JSON.parse(fs.readFileSync(path.join(dir, 'stack.json'), 'utf8')) as { pid: number };
    return { env, mark, dir, url: url as string, supervisor: state.pid, stdout };
  }

  it('starts in the background, captures, counts in /metrics, and `stop` leaves nothing behind', async () => {
    const s = await startStack();
    try {
      const status = JSON.parse((await run(process.execPath, [STACK_JS, 'status'], { env: s.env })).stdout) as { processes: Record<string, number> };
      expect(Object.keys(status.processes).sort()).to.deep.equal([
        'ai',
        'api',
        'billing',
        'capture-1',
        'capture-2',
        'notifier',
        'proxy',
        'scheduler-1',
        'scheduler-2',
      ]);
      const { stdout } = await run(process.execPath, [STACK_JS, 'admin', 'accounts', 'create', '--plan', 'paid', '--json'], { env: s.env });
      const token = (JSON.parse(stdout) as { access_token: string }).access_token;
      const metric = async () =>
        parsePrometheus((await request(s.url, 'GET', '/metrics')).raw.toString()).value('snap_captures_total', { kind: 'snap', outcome: 'success' }) ?? 0;
      const before = await metric();
      const shot = await fetch(`${s.url}/snap?access_token=${token}&url=${encodeURIComponent(`${fx.origin}/plain`)}`);
      expect(shot.status).to.equal(200);
      expect(shot.headers.get('content-type')).to.match(/^image\//);
      expect(await metric()).to.equal(before + 1);
    } finally {
      const { stdout } = await run(process.execPath, [STACK_JS, 'stop'], { env: s.env });
      expect(stdout).to.include('Stack stopped.');
    }
    expect(await processesLeft(s.mark, [], 60_000)).to.deep.equal([]);
    expect(fs.existsSync(path.join(s.dir, 'stack.json'))).to.equal(false);
    const dbName = /database (snapstack_\w+)/.exec(fs.readFileSync(path.join(s.dir, 'supervisor.log'), 'utf8'))?.[1];
    expect(dbName).to.be.a('string');
    expect(await databases()).not.to.include(dbName);
    fs.rmSync(s.dir, { recursive: true, force: true });
  });

  it('leaves nothing behind when SIGTERM reaches its whole process group', async () => {
    const s = await startStack();
    expect(processesMarked('SNAP_TEST_MARK', s.mark).length, 'service processes, Grid, drivers and browsers').to.be.greaterThan(12);
    process.kill(-s.supervisor, 'SIGTERM');
    expect(await processesLeft(s.mark, [], 60_000)).to.deep.equal([]);
    fs.rmSync(s.dir, { recursive: true, force: true });
  });

  it('`run` in the foreground is the same stack to status, admin and stop, and leaves nothing behind', async () => {
    const { env, mark, dir } = await stackEnv({ STACK_CAPTURE_INSTANCES: '1', STACK_SCHEDULERS: '1', STACK_GRID_NODES: '1', STACK_CAPTURE_SESSIONS: '1' });
    const child = spawn(process.execPath, [STACK_JS, 'run'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      await until('the stack is ready', async () => /\[stack\] ready: /.test(out) || child.exitCode !== null, 180_000);
      expect(out).to.match(/\[stack\] ready: /);
      const { stdout: statusOut } = await run(process.execPath, [STACK_JS, 'status'], { env });
      expect(statusOut).not.to.include('not running');
      const status = JSON.parse(statusOut) as { supervisor: number; ready: boolean; processes: Record<string, number> };
      expect(status.supervisor).to.equal(child.pid);
      expect(status.ready).to.equal(true);
      expect(Object.keys(status.processes).sort()).to.deep.equal(['ai', 'api', 'billing', 'capture-1', 'notifier', 'proxy', 'scheduler-1']);
      expect(fs.statSync(path.join(dir, 'stack.json')).mode & 0o777).to.equal(0o600);
      const { stdout } = await run(process.execPath, [STACK_JS, 'admin', 'accounts', 'create', '--plan', 'paid', '--json'], { env });
      expect((JSON.parse(stdout) as { access_token: string }).access_token).to.be.a('string');
      expect((await run(process.execPath, [STACK_JS, 'stop'], { env })).stdout).to.include('Stack stopped.');
      expect(await exited).to.equal(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await exited;
      }
    }
    expect(await processesLeft(mark, [], 60_000)).to.deep.equal([]);
    expect(fs.existsSync(path.join(dir, 'stack.json'))).to.equal(false);
    const dbName = /database (snapstack_\w+)/.exec(out)?.[1];
    expect(dbName).to.be.a('string');
    expect(await databases()).not.to.include(dbName);
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('npm run stack before it starts anything', function () {
  this.timeout(30_000);
  const dirs: string[] = [];
  const dir = () => {
    const d = tempDir('snapstack-cli-');
    dirs.push(d);
    return d;
  };
  after(() => {
    for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
  });
  /** The stack's command in the foreground; an unreachable MariaDB, so that nothing it might start by mistake gets far. */
  const stackCommand = (args: string[], env: Record<string, string>) =>
    spawnSync(process.execPath, [STACK_JS, ...args], {
      env: { ...(process.env as Record<string, string>), STACK_MYSQL_URL: 'mysql://root@127.0.0.1:1/', STACK_PORT: '1', ...env },
      encoding: 'utf8',
      timeout: 25_000,
    });

  it('refuses a setting it cannot use with that message alone and exit 2, starting nothing', () => {
    const cases: Array<[string, string, string]> = [
      ['STACK_CAPTURE_INSTANCES', '0', 'STACK_CAPTURE_INSTANCES must be a whole number of at least 1, got "0"'],
      ['STACK_GRID_NODES', 'two', 'STACK_GRID_NODES must be a whole number of at least 1, got "two"'],
      ['STACK_PORT', '70000', 'STACK_PORT must be a port number, got "70000"'],
    ];
    for (const command of [[], ['run']]) {
      for (const [name, value, message] of cases) {
        const d = dir();
        const res = stackCommand(command, { STACK_DIR: d, [name]: value });
        const what = `${command.join(' ') || 'start'} with ${name}=${value}`;
        expect(res.stderr, what).to.equal(`${message}\n`);
        expect(res.stdout, what).to.equal('');
        expect(res.status, what).to.equal(2);
        expect(fs.readdirSync(d), `${what}: no supervisor, no log`).to.deep.equal([]);
      }
    }
  });

  /** stack.json as a supervisor SIGKILLed while its stack ran left it: its pid gone, its run's database there. */
  async function deadSupervisor(database: string, state: (url: string, pid: number) => object): Promise<{ dir: string; file: string; pid: number }> {
    const admin = knex({ client: 'mysql2', connection: MYSQL_ADMIN_URL });
    try {
      await admin.raw(`CREATE DATABASE \`${database}\``);
    } finally {
      await admin.destroy();
    }
    const url = new URL(MYSQL_ADMIN_URL);
    url.pathname = `/${database}`;
    const { pid } = spawnSync(process.execPath, ['-e', '']);
    const d = dir();
    const file = path.join(d, 'stack.json');
    writeStateFile(file, state(url.toString(), pid as number));
    return { dir: d, file, pid: pid as number };
  }
  const dropDatabase = async (name: string) => {
    const admin = knex({ client: 'mysql2', connection: MYSQL_ADMIN_URL });
    try {
      await admin.raw(`DROP DATABASE IF EXISTS \`${name}\``);
    } finally {
      await admin.destroy();
    }
  };

  it("`stop` after its supervisor was SIGKILLed drops the run's database and removes stack.json, saying so in one line", async () => {
    const ready = uniqueName('snapstack_');
    const starting = uniqueName('snapstack_');
    try {
      for (const [name, state] of [
        [ready, (url: string, pid: number) => ({ pid, url: 'http://127.0.0.1:1', ready: true, database: url, env: { DATABASE_URL: url, SECRETS_KEY: 'k' } })],
        // Killed while it started: the database made, no env yet.
        [starting, (url: string, pid: number) => ({ pid, url: 'http://127.0.0.1:1', ready: false, database: url })],
      ] as const) {
        const s = await deadSupervisor(name, state);
        const res = stackCommand(['stop'], { STACK_DIR: s.dir });
        expect(res.stderr).to.equal('');
        expect(res.stdout).to.equal(`The stack's supervisor (pid ${s.pid}) had gone without stopping it: dropped its database ${name}, removed ${s.file}.\n`);
        expect(res.status).to.equal(0);
        expect(fs.existsSync(s.file)).to.equal(false);
        expect(await databases()).not.to.include(name);
        expect(stackCommand(['stop'], { STACK_DIR: s.dir }).stdout).to.equal('The stack is not running.\n');
      }
    } finally {
      await dropDatabase(ready);
      await dropDatabase(starting);
    }
  });

  it('drops no database the stack did not make, whatever stack.json names', async () => {
    const other = uniqueName('snaptest_');
    try {
      const s = await deadSupervisor(other, (url, pid) => ({ pid, url: 'http://127.0.0.1:1', ready: true, env: { DATABASE_URL: url } }));
      const res = stackCommand(['stop'], { STACK_DIR: s.dir });
      expect(res.stdout).to.equal(
        `The stack's supervisor (pid ${s.pid}) had gone without stopping it: its database is not one the stack made, so it is left, removed ${s.file}.\n`,
      );
      expect(res.status).to.equal(0);
      expect(await databases()).to.include(other);
    } finally {
      await dropDatabase(other);
    }
  });

  it("a start finding a dead supervisor's stack.json clears it first, and starts nothing while its database cannot be dropped", () => {
    const { pid } = spawnSync(process.execPath, ['-e', '']);
    const d = dir();
    const file = path.join(d, 'stack.json');
    const state = { pid, url: 'http://127.0.0.1:1', ready: true, database: 'mysql://root@127.0.0.1:1/snapstack_gone1' };
    writeStateFile(file, state);
    for (const command of [[], ['run']]) {
      const res = stackCommand(command, { STACK_DIR: d });
      expect(res.stderr).to.match(
        new RegExp(`^The stack's supervisor \\(pid ${pid}\\) is gone, and its database snapstack_gone1 could not be dropped: .*\\(${file} is kept\\)\n$`),
      );
      expect(res.stdout).to.equal('');
      expect(res.status).to.equal(1);
      expect(JSON.parse(fs.readFileSync(file, 'utf8'))).to.deep.equal(state);
      expect(fs.readdirSync(d), 'no supervisor, no log').to.deep.equal(['stack.json']);
    }
  });
});
