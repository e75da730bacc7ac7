/**
 * `npm run stack` as an operator uses it (node dist/bin/stack.js): started in the background,
 * a capture through it with curl's request, /metrics moving, and stopped by `stop` (SIGTERM
 * to the supervisor) or by SIGTERM to the stack's whole process group. Either way no
 * process is left: every service process, Grid process, ChromeDriver and browser inherits
 * the marker the test starts it with, and is counted by process id.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import knex from 'knex';
import { MYSQL_ADMIN_URL, NATS_URL, REDIS_URL, TEST_DEFAULTS, freePort, tempDir, uniqueName } from '../support/backends';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { request } from '../support/http';
import { processesLeft, processesMarked } from '../support/processes';
import { parsePrometheus } from '../support/prometheus';

const run = promisify(execFile);
const STACK_JS = path.resolve(__dirname, '..', '..', 'bin', 'stack.js');

describe('npm run stack (the operator command)', function () {
  this.timeout(240_000);
  let fx: FixtureServer;
  before(async () => {
    fx = await startFixtures();
  });
  after(async () => fx?.stop());

  async function startStack(): Promise<{ env: Record<string, string>; mark: string; dir: string; url: string; supervisor: number; stdout: string }> {
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
    };
    const { stdout } = await run(process.execPath, [STACK_JS], { env });
    const url = /Stack ready: (http:\/\/\S+) /.exec(stdout)?.[1];
    expect(url, stdout).to.be.a('string');
    const state = JSON.parse(fs.readFileSync(path.join(dir, 'stack.json'), 'utf8')) as { pid: number };
    return { env, mark, dir, url: url as string, supervisor: state.pid, stdout };
  }

  async function databases(): Promise<string[]> {
    const db = knex({ client: 'mysql2', connection: MYSQL_ADMIN_URL });
    try {
      const [rows] = (await db.raw('SHOW DATABASES')) as [Array<{ Database: string }>];
      return rows.map((r) => r.Database);
    } finally {
      await db.destroy();
    }
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
});
