/**
 * Several instances over real NATS and MariaDB: two schedulers claim each due slot once,
 * and a job whose capture process is killed mid-capture is finished exactly once by another.
 */
import { expect } from 'chai';
import knex, { type Knex } from 'knex';
import { call } from '../../services/shared/contracts';
import { knexConfig } from '../../services/shared/database';
import { NATS_URL, backendConfig, uniqueName } from '../support/backends';
import { startCaptureCluster } from '../support/capture-cluster';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { sharedGrid } from '../support/grid';
import { request } from '../support/http';
import { type RunningSystem, runSystem } from '../support/system';
import { until } from '../support/wait';

describe('jobs and schedules across instances (MariaDB + Redis + NATS)', function () {
  this.timeout(180_000);
  let fx: FixtureServer;
  before(async () => {
    fx = await startFixtures();
  });
  after(async () => fx?.stop());

  it('two scheduler instances start each due capture exactly once', async () => {
    const grid = await sharedGrid();
    const b = await backendConfig('mysql', { TRANSPORTER: NATS_URL, NAMESPACE: uniqueName('ns'), SELENIUM_URL: grid.url, ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1' });
    let clock = Date.now();
    const now = () => clock;
    const systems: RunningSystem[] = [];
    const db: Knex = knex(knexConfig(b.config.database));
    try {
      systems.push(await runSystem({ ...b.config, services: ['billing', 'capture'] }));
      systems.push(await runSystem({ ...b.config, migrateOnStart: false, services: ['scheduler'] }, { scheduler: { now, autoTick: false } }));
      systems.push(await runSystem({ ...b.config, migrateOnStart: false, services: ['scheduler'] }, { scheduler: { now, autoTick: false } }));
      const [, a, c] = systems as [RunningSystem, RunningSystem, RunningSystem];
      await a.broker.waitForServices(['capture', 'billing', 'scheduler']);
      const { account_id } = await call(a.broker, 'billing.createAccount', { plan: 'paid' });
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) {
        const options = { url: `${fx.origin}/plain?cluster=${i}`, wait: 0, scheduled_screenshot: true, scheduled_every: 1, scheduled_interval: 'minutes' as const };
        const v = await call(a.broker, 'scheduler.create', { accountId: account_id, input: { given: options, options }, jobId: `seed${i}` });
        ids.push(v.ids.screenshot_config_id);
      }
      clock += 61_000;
      // Both instances tick at the same time, several rounds: every due slot is claimed once.
      const tickOf = (s: RunningSystem) => s.scheduler!.tick();
      const rounds = await Promise.all([tickOf(a), tickOf(c), tickOf(a), tickOf(c), tickOf(a), tickOf(c)]);
      const started = rounds.flat();
      // Which instance claims them is a race (a tick claims every due row it can lock);
      // what must hold is that none is claimed twice.
      expect(started.map((s) => s.configId).sort()).to.deep.equal([...ids].sort());
      const jobs = await db('jobs').where({ kind: 'scheduled' }).select('config_id');
      expect(jobs.map((j) => j.config_id).sort()).to.deep.equal([...ids].sort());
      // And the captures run: every job completes.
      await until('scheduled jobs to complete', async () => {
        const open = await db('jobs').where({ kind: 'scheduled' }).whereNot({ status: 'completed' }).count({ n: '*' });
        return Number(open[0]?.n) === 0;
      });
    } finally {
      for (const s of systems.reverse()) await s.stop();
      await db.destroy();
      await b.cleanup();
    }
  });

  it('finishes a job exactly once, and charges it once, when its capture process is killed mid-capture', async () => {
    const cluster = await startCaptureCluster({ CAPTURE_SESSIONS: '1', CAPTURE_JOB_LEASE_MS: '3000' });
    const { db, front } = cluster;
    try {
      const first = await cluster.startCapture();
      await front.broker.waitForServices(['capture']);
      const { access_token } = await front.account('paid');
      const created = await request<Record<string, string>>(front.base, 'POST', '/screenshot_configs', {
        json: { access_token, url: `${fx.origin}/very-slow`, wait: 0 },
      });
      expect(created.status).to.equal(200);
      const jobId = created.body.job_id as string;
      await until('the first process to claim the job', async () => (await db('jobs').where({ id: jobId }).first())?.status === 'running');
      first.child.kill('SIGKILL');
      await new Promise((r) => first.child.once('exit', r));

      await cluster.startCapture();
      await until('the job to complete', async () => (await db('jobs').where({ id: jobId }).first())?.status === 'completed', 90_000);
      const job = await db('jobs').where({ id: jobId }).first();
      expect(Number(job.attempts)).to.equal(2);
      expect(await db('screenshots').where({ job_id: jobId }).count({ n: '*' })).to.deep.equal([{ n: 1 }]);
      const limits = await request<{ results: Record<string, number> }>(front.base, 'GET', `/account_limits?access_token=${access_token}`);
      expect(limits.body.results.screenshot_current_month_usage).to.equal(1);
      // Until the registry drops the killed node, a call may land on it: 503, retry.
      let status = await request<Record<string, unknown>>(front.base, 'GET', `/jobs/${jobId}?access_token=${access_token}`);
      for (let i = 0; i < 60 && status.status === 503; i++) {
        expect(status.body.error_code).to.equal('capacity_exhausted');
        await new Promise((r) => setTimeout(r, 500));
        status = await request<Record<string, unknown>>(front.base, 'GET', `/jobs/${jobId}?access_token=${access_token}`);
      }
      expect(status.body).to.include({ success: true, status: 'completed' });
    } finally {
      await cluster.stop();
    }
  });
});
