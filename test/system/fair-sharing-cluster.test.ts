/**
 * Fair sharing across capture instances (MariaDB, Redis, NATS; two capture processes with one
 * browser each): an account's limit holds over both instances, and when an instance is killed
 * with captures running and waiting, each finishes once on the other instance (a queued job
 * taken over when its lease runs out, a snap taken again by the api at once); none is charged
 * twice, and the dead instance's places in the account's counts are taken over or lapse with
 * their leases.
 */
import { expect } from 'chai';
import { RedisAccountSlots } from '../../services/capture/fairness/account-slots';
import { call } from '../../services/shared/contracts';
import { quietLog, uniqueName } from '../support/backends';
import { startCaptureCluster } from '../support/capture-cluster';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { type HttpAnswer, qs, request } from '../support/http';
import { until } from '../support/wait';

const LEASE_MS = 3_000;

describe('fair sharing across capture instances (MariaDB + Redis + NATS)', function () {
  this.timeout(240_000);
  let fx: FixtureServer;
  before(async () => {
    fx = await startFixtures();
  });
  after(async () => fx?.stop());

  it('a capture instance killed with a full queue: each waiting capture finishes once elsewhere, none charged twice', async () => {
    const cluster = await startCaptureCluster({ CAPTURE_SESSIONS: '1', CAPTURE_JOB_LEASE_MS: String(LEASE_MS) });
    const { db, front, config } = cluster;
    const slots = new RedisAccountSlots(config.redisUrl as string, config.redisPrefix, LEASE_MS, quietLog);
    try {
      const captures = await cluster.startCaptures(2);
      await call(front.broker, 'billing.upsertPlan', { name: 'pair', paid: true, screenshot_limit: 1_000, max_concurrent: 2, max_queued: 4 });
      const { account_id: accountId, access_token } = await front.account('pair');

      // Two slow captures run, one on each instance (the account's two at once)...
      const queue = async (page: string) => {
        const r = await request<Record<string, string>>(front.base, 'POST', '/screenshot_configs', {
          json: { access_token, url: `${fx.origin}${page}?n=${uniqueName('')}`, wait: 0 },
        });
        expect(r.status, JSON.stringify(r.body)).to.equal(200);
        return r.body.job_id as string;
      };
      const running = [await queue('/very-slow'), await queue('/very-slow')];
      await until('both to run', async () => (await db('jobs').whereIn('id', running).where({ status: 'running' })).length === 2);
      // ...and more wait: jobs in the table, snaps held by one instance or the other.
      const queuedJobs = [await queue('/slow'), await queue('/slow'), await queue('/slow')];
      const snaps: Array<Promise<HttpAnswer>> = [1, 2, 3].map((n) =>
        request(front.base, 'GET', `/snap?${qs({ access_token, url: `${fx.origin}/plain?snap=${n}`, wait: 0, ttl: 0 })}`),
      );
      await until('the snaps to wait on the instances', async () => (await db('jobs').where({ account_id: accountId, kind: 'snap' })).length === 3);
      expect(await slots.counts(accountId)).to.deep.equal({ running: 2, waiting: 3 });

      captures[0].child.kill('SIGKILL');
      const answers = await Promise.all(snaps);
      const jobs = [...running, ...queuedJobs];
      await until(
        'every job to finish',
        async () => (await db('jobs').whereIn('id', jobs).whereIn('status', ['completed', 'failed'])).length === jobs.length,
        120_000,
      );

      // Every job finished once, on the instance left (the killed one's running job taken over).
      const rows = await db('jobs').whereIn('id', jobs).select('id', 'status', 'attempts');
      expect(rows.map((r) => r.status)).to.deep.equal(jobs.map(() => 'completed'));
      expect(
        rows.filter((r) => Number(r.attempts) === 2),
        'the job the killed instance was running',
      ).to.have.length(1);
      const perJob = await db('screenshots').whereIn('job_id', jobs).groupBy('job_id').select('job_id').count({ n: '*' });
      expect(perJob.map((r) => Number(r.n))).to.deep.equal(jobs.map(() => 1));
      // A snap waiting on the killed instance is taken again on the other: every snap finishes.
      expect(
        answers.map((r) => r.status),
        JSON.stringify(answers.map((r) => r.body)),
      ).to.deep.equal([200, 200, 200]);
      const snapped = answers.length;
      // Charged once for each screenshot, nothing for a refusal.
      const usage = await request<{ results: { screenshot_current_month_usage: number } }>(front.base, 'GET', `/account_limits?access_token=${access_token}`);
      expect(usage.body.results.screenshot_current_month_usage).to.equal(jobs.length + snapped);
      expect(await db('screenshots').where({ account_id: accountId }).count({ n: '*' })).to.deep.equal([{ n: jobs.length + snapped }]);
      // The killed instance's places lapsed with their leases: the account's counts are empty.
      await until(
        'the counts to empty',
        async () => {
          const c = await slots.counts(accountId);
          return c.running === 0 && c.waiting === 0;
        },
        2 * LEASE_MS,
      );
    } finally {
      await slots.close();
      await cluster.stop();
    }
  });
});
