/**
 * A capture instance that dies takes no request with it (MariaDB, Redis, NATS; the api in this
 * process, two capture processes with two browsers each on the shared Grid): a burst of snaps
 * from one account, one instance SIGKILLed while it runs some of them and holds others waiting.
 * Every snap is answered 200, each with one job (its attempts recorded) and one screenshot,
 * usage equals the answers, and the account's counts hold nothing of the dead instance once
 * the burst is answered, long before its leases could have run out. Its Grid sessions are ended
 * by the instance left, not kept until the Grid's session timeout.
 */
import { expect } from 'chai';
import { RedisAccountSlots } from '../../services/capture/fairness/account-slots';
import { call } from '../../services/shared/contracts';
import { quietLog, uniqueName } from '../support/backends';
import { startCaptureCluster } from '../support/capture-cluster';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { sessionsOfNode } from '../support/grid';
import { type HttpAnswer, qs, request } from '../support/http';
import { until } from '../support/wait';

/** Long enough that no lease runs out during the test: what the dead instance held is given back, not lapsed. */
const LEASE_MS = 120_000;
const SNAPS = 12;

describe('a capture instance killed under a burst of snaps (MariaDB + Redis + NATS)', function () {
  this.timeout(240_000);
  let fx: FixtureServer;
  before(async () => {
    fx = await startFixtures();
  });
  after(async () => fx?.stop());

  it('answers every snap 200, once each, charged once, and leaves the account its whole concurrency', async () => {
    const cluster = await startCaptureCluster({ CAPTURE_SESSIONS: '2', CAPTURE_JOB_LEASE_MS: String(LEASE_MS) });
    const { db, front, config } = cluster;
    const slots = new RedisAccountSlots(config.redisUrl as string, config.redisPrefix, LEASE_MS, quietLog);
    try {
      const captures = await cluster.startCaptures(2);
      // A plan that lets the whole burst in: no snap is refused by its own account's limits.
      await call(front.broker, 'billing.upsertPlan', { name: 'burst', paid: true, screenshot_limit: 1_000, max_concurrent: 4, max_queued: 16 });
      const { account_id: accountId, access_token } = await front.account('burst');
      const snap = (n: number) =>
        request(front.base, 'GET', `/snap?${qs({ access_token, url: `${fx.origin}/slow?n=${n}-${uniqueName('')}`, wait: 0, ttl: 0 })}`);

      const t0 = Date.now();
      const answers: Array<Promise<HttpAnswer>> = Array.from({ length: SNAPS }, (_, n) => snap(n));
      // Each instance runs two and holds the rest waiting.
      await until('four captures to run', async () => {
        const c = await slots.counts(accountId);
        return c.running === 4 && c.waiting === SNAPS - 4;
      });
      // The browsers of the instance about to die: its Grid sessions name it (its log lines, its node id).
      const gridUrl = config.seleniumUrl as string;
      const deadNode = /"node":"([^"]+)"/.exec(captures[0].output())?.[1] ?? '';
      expect((await sessionsOfNode(gridUrl, deadNode)).length, `the Grid sessions of ${deadNode || 'the instance (no node id in its log)'}`).to.equal(2);
      captures[0].child.kill('SIGKILL');
      const killedAt = Date.now();
      // The instance left finds the dead one gone from the transporter (10 to 20 s without
      // heartbeats), waits 10 s more for it to come back, and ends its sessions, which the shared
      // Grid would otherwise keep for its 120 s session timeout.
      const sessionsEnded = until(
        "the killed instance's Grid sessions to be ended",
        async () => (await sessionsOfNode(gridUrl, deadNode)).length === 0,
        50_000,
        500,
      );
      sessionsEnded.catch(() => undefined); // awaited below
      // Found out in about two seconds (the api's ping), not the transporter's 10 to 20: its snaps are started again elsewhere.
      await until(
        'a snap of the killed instance taken again',
        async () => (await db('jobs').where({ account_id: accountId, kind: 'snap', attempts: 2 })).length > 0,
        5_000,
      );
      const foundOutMs = Date.now() - killedAt;
      const done = await Promise.all(answers);
      const took = Date.now() - t0;

      expect(
        done.map((r) => r.status),
        JSON.stringify(done.filter((r) => r.status !== 200).map((r) => r.body)),
      ).to.deep.equal(done.map(() => 200));
      // One job per snap, completed, with one screenshot; those of the dead instance in two attempts.
      const jobs = await db('jobs').where({ account_id: accountId, kind: 'snap' }).select('id', 'status', 'attempts');
      expect(jobs).to.have.length(SNAPS);
      expect(jobs.map((j) => j.status)).to.deep.equal(jobs.map(() => 'completed'));
      const again = jobs.filter((j) => Number(j.attempts) === 2);
      expect(again.length, 'snaps the killed instance held, taken again').to.be.at.least(3);
      expect(jobs.every((j) => [1, 2].includes(Number(j.attempts)))).to.equal(true);
      const perJob = await db('screenshots')
        .whereIn(
          'job_id',
          jobs.map((j) => j.id),
        )
        .groupBy('job_id')
        .select('job_id')
        .count({ n: '*' });
      expect(perJob.map((r) => Number(r.n))).to.deep.equal(jobs.map(() => 1));
      // Charged once for each answer.
      const usage = await request<{ results: { screenshot_current_month_usage: number } }>(front.base, 'GET', `/account_limits?access_token=${access_token}`);
      expect(usage.body.results.screenshot_current_month_usage).to.equal(SNAPS);
      // Nothing of the dead instance is left in the account's counts, though no lease ran out.
      expect(await slots.counts(accountId)).to.deep.equal({ running: 0, waiting: 0 });
      expect(Date.now() - killedAt).to.be.below(LEASE_MS);
      expect(foundOutMs, 'from the kill to a snap taken again').to.be.below(4_000);
      expect(took, 'the burst, answered').to.be.below(60_000);
      await sessionsEnded;
      expect(captures[1].output(), 'the instance left says it ended them').to.contain(`Ended 2 of the 2 Grid session(s) of capture instance ${deadNode}/`);

      // And the account captures again on the instance left.
      const later = await Promise.all(Array.from({ length: 4 }, (_, n) => snap(100 + n)));
      expect(later.map((r) => r.status)).to.deep.equal([200, 200, 200, 200]);
    } finally {
      await slots.close();
      await cluster.stop();
    }
  });
});
