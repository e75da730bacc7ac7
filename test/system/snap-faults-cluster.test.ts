/**
 * Snaps with their ttl lookup (the default ttl) through two faults of the full stack (MariaDB,
 * Redis, NATS; the api in this process, two capture processes with one browser each on the
 * shared Grid): a capture instance SIGKILLed while snaps keep arriving, whose ttl lookups meet it
 * before the api finds it gone, and NATS restarted (down 2.2 s) while snaps are captured. Every
 * snap is answered 200, each job completed with one screenshot, and the month's usage equals the
 * screenshots taken. And NATS down for longer than a snap's budget: the snap is answered 503
 * (nothing charged), and its capture, which its instance completed meanwhile, is withdrawn once
 * the instances are back, so that a retry captures it again (charged) instead of finding it
 * within ttl for free.
 */
import { expect } from 'chai';
import { call } from '../../services/shared/contracts';
import { freePort, uniqueName } from '../support/backends';
import { type CaptureCluster, startCaptureCluster } from '../support/capture-cluster';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { type HttpAnswer, qs, request } from '../support/http';
import { OwnServer } from '../support/own-server';
import { sleep, until } from '../support/wait';

/** Long enough that no lease runs out during a test: nothing here is finished by a lapse. */
const LEASE_MS = 120_000;

describe('snaps through a capture instance killed and NATS restarted (MariaDB + Redis + NATS)', function () {
  this.timeout(240_000);
  let fx: FixtureServer;
  before(async () => {
    fx = await startFixtures();
  });
  after(async () => fx?.stop());

  /** An account whose plan lets every snap of a test in; its snap of a page (the default ttl: a lookup first). */
  async function burstAccount(cluster: CaptureCluster) {
    const { front } = cluster;
    await call(front.broker, 'billing.upsertPlan', { name: 'burst', paid: true, screenshot_limit: 1_000, max_concurrent: 4, max_queued: 16 });
    const { account_id: accountId, access_token } = await front.account('burst');
    const snap = (page: string) => request(front.base, 'GET', `/snap?${qs({ access_token, url: `${fx.origin}${page}?n=${uniqueName('')}`, wait: 0 })}`);
    return { accountId, access_token, snap };
  }

  /** Every snap job of the account completed with one screenshot, and the month's usage equals them. */
  async function expectLedgerExact(cluster: CaptureCluster, accountId: string, access_token: string, snaps: number): Promise<void> {
    const { db, front } = cluster;
    const jobs = await db('jobs').where({ account_id: accountId, kind: 'snap' }).select('id', 'status', 'error_code', 'note');
    expect(jobs).to.have.length(snaps);
    expect(
      jobs.filter((j) => j.status !== 'completed'),
      'jobs not completed',
    ).to.deep.equal([]);
    const perJob = await db('screenshots').where({ account_id: accountId }).groupBy('job_id').select('job_id').count({ n: '*' });
    expect(perJob.map((r) => Number(r.n))).to.deep.equal(jobs.map(() => 1));
    const usage = await request<{ results: { screenshot_current_month_usage: number } }>(front.base, 'GET', `/account_limits?access_token=${access_token}`);
    expect(usage.body.results.screenshot_current_month_usage, 'usage equals the screenshots taken').to.equal(snaps);
  }

  const failures = (answers: HttpAnswer[]) => JSON.stringify(answers.filter((r) => r.status !== 200).map((r) => [r.status, r.body]));

  it('a capture instance killed: the ttl lookups that meet it before it is found gone are taken again on the other, and every snap is answered 200', async () => {
    const cluster = await startCaptureCluster({ CAPTURE_SESSIONS: '1', CAPTURE_JOB_LEASE_MS: String(LEASE_MS) });
    try {
      const captures = await cluster.startCaptures(2);
      const { accountId, access_token, snap } = await burstAccount(cluster);
      // Two slow captures keep the browser of each instance busy (the api pings both while they run).
      const running = ['/very-slow', '/very-slow'].map(snap);
      await until('two captures to run', async () => (await cluster.db('jobs').where({ account_id: accountId, status: 'running' })).length === 2);
      captures[0]!.child.kill('SIGKILL');
      // In the two seconds before the api finds the instance gone, each new snap's lookup is
      // balanced over both instances: about half of them go to the dead one.
      const arriving: Array<Promise<HttpAnswer>> = [];
      for (let n = 0; n < 8; n++) {
        arriving.push(snap('/plain'));
        await sleep(200);
      }
      const answers = await Promise.all([...running, ...arriving]);
      expect(
        answers.map((r) => r.status),
        failures(answers),
      ).to.deep.equal(answers.map(() => 200));
      await expectLedgerExact(cluster, accountId, access_token, answers.length);
    } finally {
      await cluster.stop();
    }
  });

  it('NATS restarted (down 2.2 s) while snaps are captured: each is answered 200 once the instances are back, charged once, and recorded once', async () => {
    const natsPort = await freePort();
    const nats = new OwnServer('nats-server', ['nats-server', '-a', '127.0.0.1', '-p', String(natsPort)], natsPort);
    await nats.start();
    let cluster: CaptureCluster | null = null;
    try {
      cluster = await startCaptureCluster({ TRANSPORTER: `nats://127.0.0.1:${natsPort}`, CAPTURE_SESSIONS: '1', CAPTURE_JOB_LEASE_MS: String(LEASE_MS) });
      await cluster.startCaptures(2);
      const { accountId, access_token, snap } = await burstAccount(cluster);
      const db = cluster.db;
      const t0 = Date.now();
      const answers = Promise.all(['/very-slow', '/very-slow'].map(snap));
      await until('both captures to run', async () => (await db('jobs').where({ account_id: accountId, status: 'running' })).length === 2);
      await nats.restart(2_200);
      const done = await answers;
      expect(
        done.map((r) => r.status),
        failures(done),
      ).to.deep.equal([200, 200]);
      expect(Date.now() - t0, 'answered once the instances are back, not at the end of the budget').to.be.below(40_000);
      // The credits are settled after the answers (commit asked again while billing is rediscovered).
      await until('the credits to be settled', async () => {
        const usage = await request<{ results?: { screenshot_current_month_usage: number } }>(
          cluster!.front.base,
          'GET',
          `/account_limits?access_token=${access_token}`,
        );
        return usage.body.results?.screenshot_current_month_usage === 2;
      });
      await expectLedgerExact(cluster, accountId, access_token, 2);
    } finally {
      await cluster?.stop();
      await nats.stop();
    }
  });

  it("NATS down for longer than a snap's budget: answered 503, not charged, and the capture completed meanwhile is withdrawn, not served by ttl", async () => {
    const natsPort = await freePort();
    const nats = new OwnServer('nats-server', ['nats-server', '-a', '127.0.0.1', '-p', String(natsPort)], natsPort);
    await nats.start();
    let cluster: CaptureCluster | null = null;
    try {
      // A budget of 12 s: the capture (6 s) completes on its instance while NATS is down, its answer lost.
      cluster = await startCaptureCluster({
        TRANSPORTER: `nats://127.0.0.1:${natsPort}`,
        CAPTURE_SESSIONS: '1',
        CAPTURE_JOB_LEASE_MS: String(LEASE_MS),
        CAPTURE_QUEUE_TIMEOUT_MS: '3000',
        CAPTURE_TIMEOUT_MS: '9000',
      });
      await cluster.startCaptures(1);
      const { front, db } = cluster;
      const { accountId, access_token } = await burstAccount(cluster);
      const url = `${fx.origin}/very-slow?n=${uniqueName('')}`;
      const snapOf = () => request(front.base, 'GET', `/snap?${qs({ access_token, url, wait: 0 })}`);
      const usage = async () =>
        (await request<{ results?: { screenshot_current_month_usage: number } }>(front.base, 'GET', `/account_limits?access_token=${access_token}`)).body
          .results?.screenshot_current_month_usage;
      const answer = snapOf();
      await until('the capture to run', async () => (await db('jobs').where({ account_id: accountId, status: 'running' })).length === 1);
      await nats.stop();
      await until(
        'the capture to complete on its instance',
        async () => (await db('jobs').where({ account_id: accountId, status: 'completed' })).length === 1,
        20_000,
      );
      const given = await answer;
      expect(given.status, JSON.stringify(given.body)).to.equal(503);
      expect((given.body as { note: string }).note).to.match(/within its time budget; nothing was charged/);
      await nats.start();
      // The api's give-up reaches an instance once they are back: the job fails as it was answered, its screenshot withdrawn.
      await until('the job to fail as it was answered', async () => (await db('jobs').where({ account_id: accountId, status: 'failed' })).length === 1, 40_000);
      expect(await db('screenshots').where({ account_id: accountId }).count({ n: '*' }).first()).to.deep.include({ n: 0 });
      await until('the api to answer again', async () => (await usage()) !== undefined, 30_000);
      expect(await usage(), 'nothing charged').to.equal(0);
      // The same snap again is captured, and charged, not found within ttl for free.
      const again = await snapOf();
      expect(again.status, JSON.stringify(again.body)).to.equal(200);
      expect(again.headers.get('x-cache')).to.equal('MISS');
      await until('the retry to be charged', async () => (await usage()) === 1);
      expect(await db('screenshots').where({ account_id: accountId }).count({ n: '*' }).first()).to.deep.include({ n: 1 });
    } finally {
      await cluster?.stop();
      await nats.stop();
    }
  });
});
