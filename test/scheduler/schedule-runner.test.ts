/**
 * ScheduleRunner on a real database (SQLite and MariaDB), with capture.enqueue stubbed
 * (sinon): what a tick claims, what a failed hand-over leaves, and two runners ticking at
 * once on MariaDB (row locks, SKIP LOCKED). Where a test needs capture's jobs (a slot skipped
 * while the previous scheduled job waits), the stub records them with capture's own queue
 * (JobQueue), and a worker's claim is the queue's real claim.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import sinon from 'sinon';
import { MemoryAccountSlots } from '../../services/capture/fairness/account-slots';
import { ClassTurns } from '../../services/capture/fairness/fair-queue';
import { type ClaimTurns, JOB_KINDS, JobQueue } from '../../services/capture/jobs/jobs';
import { ScheduleRunner, TICK_BATCH } from '../../services/scheduler/schedule-runner';
import type { ParamsOf } from '../../services/shared/contracts';
import { acquireDatabase, migrateLatest, releaseDatabase } from '../../services/shared/database';
import { type Backend, backendConfig } from '../support/backends';
import { until } from '../support/wait';

const MINUTE = 60_000;
const T0 = Date.UTC(2026, 10, 23, 12, 0, 0);

type Enqueue = sinon.SinonStub<[ParamsOf<'capture.enqueue'>], Promise<unknown>>;

for (const backend of ['sqlite', 'mysql'] as Backend[]) {
  describe(`ScheduleRunner (${backend}, capture.enqueue stubbed)`, function () {
    this.timeout(60_000);
    let db: Knex;
    let cleanup: () => Promise<void>;
    let database: Parameters<typeof acquireDatabase>[0];
    let clock: number;
    let infos: string[];
    const log = { warn: () => undefined, info: (msg: string) => void infos.push(msg) };
    type Withdraw = sinon.SinonStub<[ParamsOf<'capture.deleteForConfig'>], Promise<unknown>>;
    const runner = (enqueue: Enqueue, withdraw: Withdraw = sinon.stub<[ParamsOf<'capture.deleteForConfig'>], Promise<unknown>>().resolves()) =>
      new ScheduleRunner({ db, enqueue, withdraw, now: () => clock, log });

    /** `n` configurations scheduled every minute, anchored at T0 - 1 min, so due at T0. */
    async function dueConfigs(n: number): Promise<string[]> {
      const ids = Array.from({ length: n }, (_, i) => `cfg${String(i).padStart(5, '0')}`);
      const options = JSON.stringify({ url: 'https://example.com/', scheduled_screenshot: true, scheduled_every: 1, scheduled_interval: 'minutes' });
      for (let i = 0; i < ids.length; i += 200) {
        await db('screenshot_configs').insert(
          ids.slice(i, i + 200).map((id) => ({
            id,
            account_id: 'acct1',
            url: 'https://example.com/',
            options,
            capture_options: options,
            scheduled: true,
            scheduled_every: 1,
            scheduled_interval: 'minutes',
            schedule_anchor_ms: T0 - MINUTE,
            next_run_at_ms: T0,
            created_at_ms: T0 - MINUTE,
          })),
        );
      }
      return ids;
    }

    /**
     * capture.enqueue as capture records a job (its own queue, JobQueue), and a worker's start of
     * the oldest queued job (the queue's real claim, every account allowed plenty at once).
     */
    function capture() {
      const queue = new JobQueue(db, 30_000, () => clock);
      const slots = new MemoryAccountSlots(30_000, () => clock);
      const ticket = (job: { id: string; accountId: string }) => ({ ...job, limits: { maxConcurrent: 100, maxQueued: 0 } });
      const turns: ClaimTurns = {
        kinds: new ClassTurns(JOB_KINDS),
        lastStarts: (ids) => slots.lastStarts(ids),
        starter: async (accountId) => (id) => slots.start(ticket({ id, accountId })),
        undo: (job) => slots.finish(ticket(job)),
      };
      const enqueue: Enqueue = sinon.stub<[ParamsOf<'capture.enqueue'>], Promise<unknown>>().callsFake(async (job) => {
        await queue.enqueue({ id: job.jobId, accountId: job.accountId, configId: job.configId, kind: job.kind, options: job.options });
        return { job_id: job.jobId };
      });
      const start = async () => {
        const job = await queue.claim(turns);
        if (!job) throw new Error('no job to start');
        return job;
      };
      return { queue, enqueue, start };
    }

    /** A configuration's jobs in the jobs table, oldest first. */
    const jobsOf = async (configId: string) =>
      (await db('jobs').where({ config_id: configId }).orderBy('created_at_ms').orderBy('id').select('id', 'kind', 'status')) as Array<{
        id: string;
        kind: string;
        status: string;
      }>;

    beforeEach(async () => {
      const b = await backendConfig(backend);
      cleanup = b.cleanup;
      database = b.config.database;
      await migrateLatest(database);
      db = acquireDatabase(database);
      clock = T0;
      infos = [];
    });
    afterEach(async () => {
      sinon.restore();
      await releaseDatabase(database);
      await cleanup();
    });

    it('withdraws the job of a configuration deleted between its claim and its hand-over (after its delete swept its jobs)', async () => {
      const [gone, kept] = await dueConfigs(2);
      // The delete lands while capture is being handed the job: its sweep ran before, its row goes now.
      const enqueue: Enqueue = sinon.stub<[ParamsOf<'capture.enqueue'>], Promise<unknown>>().callsFake(async (job) => {
        if (job.configId === gone) await db('screenshot_configs').where({ id: gone }).delete();
        return { job_id: job.jobId };
      });
      const withdraw: Withdraw = sinon.stub<[ParamsOf<'capture.deleteForConfig'>], Promise<unknown>>().resolves({ screenshots: 0 });
      const started = await runner(enqueue, withdraw).tick();
      expect(started.map((s) => s.configId)).to.deep.equal([kept]);
      expect(withdraw.callCount).to.equal(1);
      expect(withdraw.firstCall.args[0]).to.deep.equal({ accountId: 'acct1', configId: gone });
    });

    it('starts one job per due configuration, in batches until none is due, and moves each to its next slot', async () => {
      const ids = await dueConfigs(2 * TICK_BATCH + 7);
      const enqueue: Enqueue = sinon.stub<[ParamsOf<'capture.enqueue'>], Promise<unknown>>().resolves({ job_id: 'x' });
      const started = await runner(enqueue).tick();
      expect(started.map((s) => s.configId).sort()).to.deep.equal(ids);
      expect(enqueue.callCount).to.equal(ids.length);
      expect(enqueue.firstCall.args[0]).to.include({ accountId: 'acct1', kind: 'scheduled' });
      const rows = await db('screenshot_configs').select('next_run_at_ms', 'pending_job_id', 'last_job_id');
      expect(new Set(rows.map((r) => Number(r.next_run_at_ms)))).to.deep.equal(new Set([T0 + MINUTE]));
      expect(rows.every((r) => r.pending_job_id === null)).to.equal(true);
      expect(new Set(rows.map((r) => r.last_job_id))).to.deep.equal(new Set(started.map((s) => s.jobId)));
      // Nothing is due until the next slot.
      expect(await runner(enqueue).tick()).to.deep.equal([]);
    });

    it('hands a job whose hand-over failed over again under the same id once its mark lapses: one capture, even if the first was recorded', async () => {
      const [id] = await dueConfigs(1);
      // Hourly, so only the slot at T0 is due within the test.
      await db('screenshot_configs')
        .where({ id })
        .update({ scheduled_interval: 'hours', schedule_anchor_ms: T0 - 60 * MINUTE });
      const recorded = new Set<string>();
      // Capture records the job, but its answer times out.
      const timingOut: Enqueue = sinon.stub<[ParamsOf<'capture.enqueue'>], Promise<unknown>>().callsFake(async (job) => {
        recorded.add(job.jobId);
        throw new Error('Request timed out');
      });
      expect(await runner(timingOut).tick()).to.deep.equal([]);
      const row = await db('screenshot_configs').where({ id }).first();
      expect(Number(row.next_run_at_ms), 'the slot moved on').to.equal(T0 + 60 * MINUTE);
      expect(row.pending_job_id).to.equal([...recorded][0]);
      const enqueue: Enqueue = sinon.stub<[ParamsOf<'capture.enqueue'>], Promise<unknown>>().callsFake(async (job) => {
        recorded.add(job.jobId);
        return { job_id: job.jobId };
      });
      clock = T0 + 5_000;
      expect(await runner(enqueue).tick(), 'not handed over again while its mark holds').to.deep.equal([]);
      clock = T0 + 61_000;
      expect(await runner(enqueue).tick()).to.deep.equal([{ configId: id, jobId: row.pending_job_id }]);
      expect(recorded.size, 'one job id for the slot').to.equal(1);
      expect((await db('screenshot_configs').where({ id }).first()).pending_job_id).to.equal(null);
    });

    it('marks a slot pending when it is claimed, not when the tick began: a batch claimed a minute into a long tick is not already stale', async () => {
      const ids = await dueConfigs(TICK_BATCH + 1);
      const last = ids.at(-1)!;
      let slowed = false;
      const enqueue: Enqueue = sinon.stub<[ParamsOf<'capture.enqueue'>], Promise<unknown>>().callsFake(async (job) => {
        // The first batch's hand-over takes 61 s; the second batch's one job is not taken.
        if (!slowed) {
          slowed = true;
          clock += 61_000;
        }
        if (job.configId === last) throw new Error('Request timed out');
        return { job_id: job.jobId };
      });
      await runner(enqueue).tick();
      const row = await db('screenshot_configs').where({ id: last }).first();
      expect(Number(row.job_pending_since_ms)).to.equal(T0 + 61_000);
      // Another scheduler ticking now leaves its job to its claimer, and skips the slot after (due
      // by now): the configuration's job still waits to be handed over.
      const other: Enqueue = sinon.stub<[ParamsOf<'capture.enqueue'>], Promise<unknown>>().resolves({ job_id: 'x' });
      await runner(other).tick();
      sinon.assert.neverCalledWithMatch(other, { configId: last });
      expect((await db('screenshot_configs').where({ id: last }).first()).pending_job_id).to.equal(row.pending_job_id);
    });

    it("skips a configuration's due slots while its previous scheduled job is queued and not started: no second job, nothing handed to capture", async () => {
      const [id] = await dueConfigs(1);
      const c = capture();
      const r = runner(c.enqueue);
      const [first] = await r.tick();
      expect(first).to.include({ configId: id });
      // The workers are behind: the job waits while twelve more slots fall due, a minute apart.
      for (let minute = 1; minute <= 12; minute++) {
        clock = T0 + minute * MINUTE;
        expect(await r.tick(), `the slot at +${minute} min`).to.deep.equal([]);
      }
      expect(c.enqueue.callCount, 'one job handed to capture').to.equal(1);
      expect(await jobsOf(id)).to.deep.equal([{ id: first!.jobId, kind: 'scheduled', status: 'queued' }]);
      const row = await db('screenshot_configs').where({ id }).first();
      expect(Number(row.next_run_at_ms), 'the schedule moved on to its next slot').to.equal(T0 + 13 * MINUTE);
      expect(row.last_job_id).to.equal(first!.jobId);
      expect(row.pending_job_id).to.equal(null);
      expect(infos, 'each skip logged').to.have.length(12);
      expect(infos[0]).to.contain(id).and.contain(first!.jobId);
    });

    it('queues the next slot while the previous scheduled job runs (one waits behind it), and once it finished', async () => {
      const [id] = await dueConfigs(1);
      const c = capture();
      const r = runner(c.enqueue);
      const [first] = await r.tick();
      const running = await c.start();
      expect(running.id).to.equal(first!.jobId);
      clock = T0 + MINUTE;
      const [second] = await r.tick();
      expect(second, 'queued while the previous one runs').to.include({ configId: id });
      clock = T0 + 2 * MINUTE;
      expect(await r.tick(), 'skipped: the second one waits').to.deep.equal([]);
      // Both finish.
      await c.queue.fail(running, 'page_load_failed', 'The page could not be loaded.');
      const next = await c.start();
      expect(next.id).to.equal(second!.jobId);
      await c.queue.fail(next, 'page_load_failed', 'The page could not be loaded.');
      clock = T0 + 3 * MINUTE;
      const [third] = await r.tick();
      expect(third, 'queued once the previous one finished').to.include({ configId: id });
      expect((await jobsOf(id)).map((j) => [j.id, j.status])).to.deep.equal([
        [first!.jobId, 'failed'],
        [second!.jobId, 'failed'],
        [third!.jobId, 'queued'],
      ]);
      expect(c.enqueue.callCount).to.equal(3);
    });

    it("is held back only by the configuration's own waiting scheduled job: a capture-now job waiting, or another configuration's, does not skip a slot", async () => {
      const [withCaptureNow, behind] = await dueConfigs(2);
      const c = capture();
      await c.queue.enqueue({ id: 'capturenow01', accountId: 'acct1', configId: withCaptureNow!, kind: 'config', options: { url: 'https://example.com/' } });
      await c.queue.enqueue({ id: 'scheduled001', accountId: 'acct1', configId: behind!, kind: 'scheduled', options: { url: 'https://example.com/' } });
      const started = await runner(c.enqueue).tick();
      expect(started.map((s) => s.configId)).to.deep.equal([withCaptureNow]);
      expect((await jobsOf(withCaptureNow!)).map((j) => `${j.kind} ${j.status}`).sort()).to.deep.equal(['config queued', 'scheduled queued']);
      expect((await jobsOf(behind!)).map((j) => j.id)).to.deep.equal(['scheduled001']);
    });

    it("skips a slot that falls due while the previous slot's job is still being handed over by another scheduler", async () => {
      const [id] = await dueConfigs(1);
      const c = capture();
      let handOver!: () => void;
      const held = new Promise<void>((resolve) => {
        handOver = resolve;
      });
      // The first scheduler's hand-over is slow (capture answers late).
      const slow: Enqueue = sinon.stub<[ParamsOf<'capture.enqueue'>], Promise<unknown>>().callsFake(async (job) => {
        await held;
        return c.enqueue(job);
      });
      const ticking = runner(slow).tick();
      await until('the first scheduler to hand its job over', async () => slow.callCount === 1, 10_000, 5);
      clock = T0 + MINUTE;
      expect(await runner(c.enqueue).tick(), 'the other scheduler queues nothing').to.deep.equal([]);
      handOver();
      const [first] = await ticking;
      expect(first).to.include({ configId: id });
      expect((await jobsOf(id)).map((j) => j.id)).to.deep.equal([first!.jobId]);
      expect((await db('screenshot_configs').where({ id }).first()).pending_job_id, 'the mark cleared by its own hand-over').to.equal(null);
    });

    it('two runners ticking at once queue no job for a configuration whose scheduled job waits, and one for each other due configuration', async () => {
      const ids = await dueConfigs(3 * TICK_BATCH);
      const c = capture();
      const waiting = ids.filter((_, i) => i % 2 === 0);
      for (const configId of waiting) {
        await c.queue.enqueue({ id: `w${configId}`, accountId: 'acct1', configId, kind: 'scheduled', options: { url: 'https://example.com/' } });
      }
      const [a, b] = await Promise.all([runner(c.enqueue).tick(), runner(c.enqueue).tick()]);
      const others = ids.filter((_, i) => i % 2 === 1);
      expect([...a, ...b].map((s) => s.configId).sort()).to.deep.equal(others);
      const queued = (await db('jobs').where({ kind: 'scheduled', status: 'queued' }).select('config_id')) as Array<{ config_id: string }>;
      expect(queued.map((j) => j.config_id).sort()).to.deep.equal([...ids].sort());
      const moved = await db('screenshot_configs').whereIn('id', waiting).select('next_run_at_ms');
      expect(new Set(moved.map((r) => Number(r.next_run_at_ms)))).to.deep.equal(new Set([T0 + MINUTE]));
    });

    it('hands over, under the same id, a job a runner marked pending and never handed over, once it is stale', async () => {
      const [id] = await dueConfigs(1);
      // Its next slot is well after the test's clock: only the lost job is due.
      await db('screenshot_configs')
        .where({ id })
        .update({ next_run_at_ms: T0 + 10 * MINUTE, pending_job_id: 'lostjob00001', job_pending_since_ms: T0 });
      const enqueue: Enqueue = sinon.stub<[ParamsOf<'capture.enqueue'>], Promise<unknown>>().resolves({ job_id: 'x' });
      clock = T0 + 30_000;
      expect(await runner(enqueue).tick(), 'not stale yet').to.deep.equal([]);
      clock = T0 + 61_000;
      expect(await runner(enqueue).tick()).to.deep.equal([{ configId: id, jobId: 'lostjob00001' }]);
      sinon.assert.calledOnceWithMatch(enqueue, { configId: id, jobId: 'lostjob00001' });
      expect((await db('screenshot_configs').where({ id }).first()).pending_job_id).to.equal(null);
    });

    if (backend === 'mysql') {
      it('two runners ticking at once start each due slot exactly once', async () => {
        const ids = await dueConfigs(3 * TICK_BATCH);
        const seen: string[] = [];
        const enqueue: Enqueue = sinon.stub<[ParamsOf<'capture.enqueue'>], Promise<unknown>>().callsFake(async (job) => {
          seen.push(job.configId);
          return { job_id: job.jobId };
        });
        const [a, b] = await Promise.all([runner(enqueue).tick(), runner(enqueue).tick()]);
        expect([...a, ...b].map((s) => s.configId).sort()).to.deep.equal(ids);
        expect(seen.sort()).to.deep.equal(ids);
      });
    }
  });
}
