/**
 * Several instances over real NATS and MariaDB: two schedulers claim each due slot once,
 * a job whose capture process is killed mid-capture is finished exactly once by another,
 * and so is every domain of a research job whose capture process is killed mid-research.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import knex, { type Knex } from 'knex';
import { call } from '../../services/shared/contracts';
import { knexConfig } from '../../services/shared/database';
import { NATS_URL, backendConfig, uniqueName } from '../support/backends';
import { startFakeProvider } from '../support/ai-providers';
import { startCaptureCluster } from '../support/capture-cluster';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { startReceiver } from '../notifier/receivers';
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
    const b = await backendConfig('mysql', {
      TRANSPORTER: NATS_URL,
      NAMESPACE: uniqueName('ns'),
      SELENIUM_URL: grid.url,
      ALLOW_PRIVATE_NETWORKS: 'true',
      CAPTURE_SESSIONS: '1',
    });
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
        const options = {
          url: `${fx.origin}/plain?cluster=${i}`,
          wait: 0,
          scheduled_screenshot: true,
          scheduled_every: 1,
          scheduled_interval: 'minutes' as const,
        };
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

  it('finishes every domain of a research job exactly once, with exact credits and one webhook, when its capture process is killed mid-research', async () => {
    const ai = await startFakeProvider('openai');
    const receiver = await startReceiver();
    const cluster = await startCaptureCluster(
      {
        CAPTURE_SESSIONS: '1',
        CAPTURE_JOB_LEASE_MS: '3000',
        WEBHOOK_POLL_MS: '250',
        // The full stack keeps the webhook signing secret sealed under SECRETS_KEY.
        SECRETS_KEY: crypto.randomBytes(32).toString('hex'),
        SERVICE_AI_PROVIDER: 'openai',
        SERVICE_AI_BASE_URL: ai.baseUrl,
        SERVICE_AI_API_KEY: ai.key,
        SERVICE_AI_MODEL: 'gpt-4o-mini',
      },
      ['api', 'billing', 'scheduler', 'ai', 'proxy', 'notifier'],
    );
    const { db, front } = cluster;
    try {
      const first = await cluster.startCapture();
      await front.broker.waitForServices(['capture']);
      const { access_token } = await front.account('paid');
      // Three slow home pages (6 s each), one domain at a time: the kill lands in the middle.
      const created = await request<Record<string, unknown>>(front.base, 'POST', '/api/domain_research_requests', {
        headers: { authorization: `Bearer ${access_token}` },
        json: {
          domains: [1, 2, 3].map((i) => `${fx.origin}/very-slow?site=${i}`),
          structures: [{ data_type: 'string', data_field_name: 'headline', data_field_prompt_description: 'The main heading' }],
          webhook_url: `${receiver.origin}/done`,
        },
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(200);
      const researchId = String(created.body.job_id);
      const domainJobs = () => db('jobs').where({ config_id: researchId, kind: 'research' });
      await until('the first process to start a domain', async () => (await domainJobs().where({ status: 'running' })).length === 1);
      first.child.kill('SIGKILL');
      await new Promise((r) => first.child.once('exit', r));

      await cluster.startCapture();
      await until(
        'every domain to finish',
        async () => Number((await db('research_jobs').where({ id: researchId }).first())?.completed_domains) === 3,
        120_000,
      );
      const jobs = await domainJobs().select('status', 'attempts');
      expect(jobs.map((j) => j.status)).to.deep.equal(['completed', 'completed', 'completed']);
      // The domain under way when the process died was taken over: claimed twice, finished once.
      expect(jobs.map((j) => Number(j.attempts)).sort()).to.deep.equal([1, 1, 2]);
      const request_ = await db('research_jobs').where({ id: researchId }).first();
      expect([Number(request_.completed_domains), Number(request_.failed_domains), request_.finished_at_ms !== null]).to.deep.equal([3, 0, true]);
      expect((await db('research_domains').where({ research_id: researchId }).select('status')).map((d) => d.status)).to.deep.equal([
        'completed',
        'completed',
        'completed',
      ]);
      // One credit per domain, the taken-over one included, charged once.
      const limits = await request<{ results: Record<string, number> }>(front.base, 'GET', `/account_limits?access_token=${access_token}`);
      expect(limits.body.results.domain_research_current_month_usage).to.equal(3);
      // One delivery, written with the last domain, received (retries keep its webhook-id).
      expect(await db('webhook_deliveries').where({ job_id: researchId }).count({ n: '*' })).to.deep.equal([{ n: 1 }]);
      await until('the webhook', async () => receiver.received.length > 0, 30_000);
      expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).to.equal(1);
    } finally {
      await cluster.stop();
      await ai.stop();
      await receiver.stop();
    }
  });
});
