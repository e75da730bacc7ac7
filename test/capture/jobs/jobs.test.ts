/**
 * JobQueue on a real SQLite file with a controlled clock: leases, take-over after a lease
 * runs out, and that only the lease holder completes or fails a job. (The same queue on
 * MariaDB with several instances is proved in test/system/jobs-cluster.test.ts.)
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { MemoryAccountSlots } from '../../../services/capture/fairness/account-slots';
import { ClassTurns } from '../../../services/capture/fairness/fair-queue';
import { type ClaimTurns, JOB_KINDS, JobQueue, SNAP_STOPPED_NOTE, jobStatusOf, statusOfJob } from '../../../services/capture/jobs/jobs';
import { ScreenshotRepository } from '../../../services/capture/jobs/screenshots';
import { migratedSqlite } from '../../support/sqlite';

const LEASE_MS = 10_000;
const files = { image_name: 'a.png', thumb_name: null, html_name: null, content_type: 'image/png' };

describe('JobQueue (SQLite, controlled clock)', () => {
  let sqlite: Awaited<ReturnType<typeof migratedSqlite>>;
  let db: Knex;
  let clock: number;
  let queue: JobQueue;
  let screenshots: ScreenshotRepository;
  let slots: MemoryAccountSlots;
  /** The real claim order, over account counts in this process (each account may run plenty here). */
  let turns: ClaimTurns;

  /** The claim order with every account's plan running `maxConcurrent` captures at once. */
  const turnsWith = (maxConcurrent: number): ClaimTurns => {
    const ticket = (job: { id: string; accountId: string }) => ({ ...job, limits: { maxConcurrent, maxQueued: 0 } });
    return {
      kinds: new ClassTurns(JOB_KINDS),
      lastStarts: (ids) => slots.lastStarts(ids),
      starter: async (accountId) => (id) => slots.start(ticket({ id, accountId })),
      undo: (job) => slots.finish(ticket(job)),
    };
  };

  beforeEach(async () => {
    sqlite = await migratedSqlite();
    db = sqlite.db;
    clock = 1_000_000;
    queue = new JobQueue(db, LEASE_MS, () => clock);
    slots = new MemoryAccountSlots(LEASE_MS, () => clock);
    turns = turnsWith(100);
    screenshots = new ScreenshotRepository(db, { appUrl: 'http://app', cdnUrl: 'http://cdn' });
  });

  afterEach(async () => {
    await sqlite.drop();
  });

  const enqueue = (id: string, at = clock) => {
    clock = at;
    return queue.enqueue({ id, accountId: 'acc', configId: 'cfg', kind: 'config', options: { url: `https://example.test/${id}` } });
  };
  const record = (job: { id: string; accountId: string; configId: string }) => (trx: Knex.Transaction) =>
    screenshots.insert(ScreenshotRepository.newRow(job, { options: { url: 'https://example.test/' }, cacheKey: null, files, ai: null, now: clock }), trx);

  it('hands out the oldest queued job once, with its options, until its lease runs out', async () => {
    await enqueue('j2', 2_000_000);
    await enqueue('j1', 1_000_000);
    clock = 2_000_001;
    const first = await queue.claim(turns);
    expect(first).to.include({ id: 'j1', accountId: 'acc', configId: 'cfg', kind: 'config', attempts: 1 });
    expect(first && 'options' in first ? first.options : null).to.deep.equal({ url: 'https://example.test/j1' });
    expect((await queue.claim(turns))?.id).to.equal('j2');
    expect(await queue.claim(turns)).to.equal(null);

    clock += LEASE_MS + 1;
    const again = await queue.claim(turns);
    expect(again).to.include({ id: 'j1', attempts: 2 });
    expect(again?.leaseToken).to.not.equal(first?.leaseToken);
  });

  it("gives a job's timings with its state: queued at, and finished at once it ended (the web console's capture page)", async () => {
    await enqueue('j1', 1_000_000);
    expect(jobStatusOf((await queue.find('acc', 'j1'))!, null)).to.deep.equal({
      status: 'queued',
      job_id: 'j1',
      timings: { queued_at_ms: 1_000_000, finished_at_ms: null },
    });
    clock = 1_000_500;
    const job = await queue.claim(turns);
    clock = 1_002_500;
    const id = await queue.complete(job!, record(job!));
    const status = await statusOfJob((await queue.find('acc', 'j1'))!, screenshots);
    expect(status).to.include({ status: 'completed', job_id: 'j1' });
    expect(status.status === 'completed' && status.screenshot.id).to.equal(String(id));
    expect(status.timings).to.deep.equal({ queued_at_ms: 1_000_000, finished_at_ms: 1_002_500 });
  });

  it('lets a renewed lease keep its job', async () => {
    await enqueue('j1');
    const job = await queue.claim(turns);
    clock += LEASE_MS - 1;
    expect(await queue.renew(job!)).to.equal(true);
    clock += LEASE_MS - 1;
    expect(await queue.claim(turns)).to.equal(null);
  });

  it('completes a job with its screenshot only under the current lease', async () => {
    await enqueue('j1');
    const stale = await queue.claim(turns);
    clock += LEASE_MS + 1;
    const current = await queue.claim(turns);
    expect(await queue.renew(stale!)).to.equal(false);
    expect(await queue.complete(stale!, record(stale!))).to.equal(null);
    expect(await db('screenshots').count({ n: '*' }).first()).to.deep.equal({ n: 0 });
    expect(await queue.fail(stale!, 'page_load_failed', 'x')).to.equal(false);

    const id = await queue.complete(current!, record(current!));
    expect(id).to.be.a('number');
    expect(await queue.find('acc', 'j1')).to.deep.include({ status: 'completed', screenshot_id: id, error_code: null });
    expect(await queue.complete(current!, record(current!))).to.equal(null);
    expect(await queue.find('other-account', 'j1')).to.equal(undefined);
  });

  it('records a failure once, with its code and note', async () => {
    await enqueue('j1');
    const job = await queue.claim(turns);
    expect(await queue.fail(job!, 'selector_not_found', 'no #x')).to.equal(true);
    expect(await queue.find('acc', 'j1')).to.deep.include({ status: 'failed', error_code: 'selector_not_found', note: 'no #x' });
    expect(await queue.fail(job!, 'internal_error', 'again')).to.equal(false);
    expect(await queue.claim(turns)).to.equal(null);
  });

  it('keeps a job’s options until it ends, completed or failed (a /snap_html document among them is not kept once per capture), and a released one’s', async () => {
    const options = async (id: string) => ((await db('jobs').where({ id }).first('options')) as { options: string | null }).options;
    await enqueue('j1');
    await enqueue('j2');
    await enqueue('j3');
    const [one, two, three] = [await queue.claim(turns), await queue.claim(turns), await queue.claim(turns)];
    await queue.release(three!);
    expect(await options('j3')).to.equal(JSON.stringify({ url: 'https://example.test/j3' }));
    expect(await queue.claim(turns)).to.deep.include({ id: 'j3', options: { url: 'https://example.test/j3' } });
    await queue.complete(one!, record(one!));
    await queue.fail(two!, 'page_load_failed', 'x');
    expect([await options('j1'), await options('j2')]).to.deep.equal([null, null]);
    expect(await queue.find('acc', 'j1')).to.deep.include({ status: 'completed' });
    expect(await queue.find('acc', 'j2')).to.deep.include({ status: 'failed' });
  });

  it('gives a released job back to the queue', async () => {
    await enqueue('j1');
    const job = await queue.claim(turns);
    await queue.release(job!);
    expect(await queue.find('acc', 'j1')).to.deep.include({ status: 'queued' });
    expect(await queue.claim(turns)).to.include({ id: 'j1', attempts: 2 });
  });

  it('writes a snap’s job as running under its own lease: never claimed, completed like any other', async () => {
    const snap = await queue.start({ id: 's1', accountId: 'acc', configId: 'cfg' });
    clock += 10 * LEASE_MS;
    expect(await queue.claim(turns)).to.equal(null);
    expect(await queue.find('acc', 's1')).to.deep.include({ status: 'running' });
    expect(await queue.complete({ ...snap, leaseToken: 'not-the-lease' }, record(snap))).to.equal(null);
    expect(await queue.complete(snap, record(snap))).to.be.a('number');
    expect(await queue.find('acc', 's1')).to.deep.include({ status: 'completed' });
  });

  it("takes a snap's job again under a new lease, one more attempt: the first holder can no longer complete it", async () => {
    const owner = { id: 's2', accountId: 'acc', configId: 'cfg' };
    const first = await queue.start(owner);
    const again = await queue.retake(owner);
    if (!('leased' in again)) throw new Error('expected the job to be leased again');
    expect(again.leased.leaseToken).to.not.equal(first.leaseToken);
    expect((await db('jobs').where({ id: 's2' }).first('attempts')).attempts).to.equal(2);
    expect(await queue.complete(first, record(first))).to.equal(null);
    expect(await queue.complete(again.leased, record(again.leased))).to.be.a('number');
    expect(await db('screenshots').where({ job_id: 's2' })).to.have.length(1);
  });

  it("answers a snap's job taken again after it finished with its row, and starts one its first attempt never wrote", async () => {
    const owner = { id: 's3', accountId: 'acc', configId: 'cfg' };
    const first = await queue.start(owner);
    await queue.complete(first, record(first));
    const again = await queue.retake(owner);
    expect(again).to.have.nested.property('finished.status', 'completed');
    const fresh = await queue.retake({ id: 's4', accountId: 'acc', configId: 'cfg' });
    expect(fresh).to.have.property('leased');
    expect(await queue.find('acc', 's4')).to.deep.include({ status: 'running' });
  });

  it("fails a snap's job the api gave up on, whoever holds it, a completed one too (its screenshot id returned, to withdraw), and never a failed one", async () => {
    const running = await queue.start({ id: 's5', accountId: 'acc', configId: 'cfg' });
    expect(await queue.abandon('acc', 's5', 'capacity_exhausted', 'its instance stopped')).to.equal(null);
    expect(await queue.find('acc', 's5')).to.deep.include({ status: 'failed', error_code: 'capacity_exhausted', note: 'its instance stopped' });
    expect(await queue.complete(running, record(running))).to.equal(null);
    // Completed before the api heard of it (its answer lost with the transporter): the request was told it failed.
    const done = await queue.start({ id: 's6', accountId: 'acc', configId: 'cfg' });
    const screenshotId = await queue.complete(done, record(done));
    expect(await queue.abandon('acc', 's6', 'capacity_exhausted', 'late')).to.equal(screenshotId);
    expect(await queue.find('acc', 's6')).to.deep.include({ status: 'failed', error_code: 'capacity_exhausted', note: 'late', screenshot_id: null });
    const failed = await queue.start({ id: 's6b', accountId: 'acc', configId: 'cfg' });
    await queue.fail(failed, 'page_load_failed', 'no page');
    expect(await queue.abandon('acc', 's6b', 'capacity_exhausted', 'late')).to.equal(null);
    expect(await queue.find('acc', 's6b')).to.deep.include({ status: 'failed', error_code: 'page_load_failed' });
  });

  it("fails a snap's job whose lease ran out (its process stopped mid-capture), and no other: a renewed one, a finished one and a queued job's are left", async () => {
    const started = clock;
    const lapses = await queue.start({ id: 's7', accountId: 'acc', configId: 'cfg' });
    const renewed = await queue.start({ id: 's8', accountId: 'acc', configId: 'cfg' });
    const done = await queue.start({ id: 's9', accountId: 'acc', configId: 'cfg' });
    await queue.complete(done, record(done));
    // Snaps' jobs written before snaps had a lease (running, with no lease time): one an hour
    // and more ago, and one just now (an instance of the old code capturing it, in a rolling upgrade).
    const unleased = { account_id: 'acc', config_id: 'cfg', kind: 'snap', status: 'running', attempts: 1, lease_token: 'old' };
    await db('jobs').insert({ ...unleased, id: 's10', created_at_ms: clock - 61 * 60_000 });
    await db('jobs').insert({ ...unleased, id: 's11', created_at_ms: clock });
    await enqueue('j1');
    const claimed = await queue.claim(turns);
    expect((await db('jobs').where({ id: 's7' }).first('lease_until_ms')).lease_until_ms).to.equal(started + LEASE_MS);

    clock = started + LEASE_MS / 2;
    expect(await queue.renew(renewed)).to.equal(true);
    const failed = { status: 'failed', error_code: 'capacity_exhausted', note: SNAP_STOPPED_NOTE };
    expect(await queue.failLapsedSnaps(), 'only the old one with no lease').to.equal(1);
    expect(await queue.find('acc', 's10')).to.deep.include({ ...failed, finished_at_ms: clock });
    expect(await queue.find('acc', 's11'), 'written by an instance still capturing it, perhaps').to.deep.include({ status: 'running' });
    expect(await queue.find('acc', 's7')).to.deep.include({ status: 'running' });

    clock = started + LEASE_MS + 1;
    expect(await queue.failLapsedSnaps()).to.equal(1);
    expect(await queue.failLapsedSnaps(), 'once').to.equal(0);
    expect(await queue.find('acc', 's7')).to.deep.include({ ...failed, finished_at_ms: clock });
    expect(await queue.complete(lapses, record(lapses)), 'its lease is gone').to.equal(null);
    expect(await queue.find('acc', 's8')).to.deep.include({ status: 'running' });
    expect(await queue.find('acc', 's9')).to.deep.include({ status: 'completed' });
    // A queued job's lapsed lease is another instance's to take over, not a failure.
    expect(await queue.find('acc', claimed?.id as string)).to.deep.include({ status: 'running' });
    expect((await queue.claim(turns))?.id).to.equal('j1');
  });

  describe('the fair order of claims', () => {
    const queueFor = (id: string, accountId: string, kind: 'config' | 'scheduled', at: number) => {
      clock = at;
      return queue.enqueue({ id, accountId, configId: `cfg-${accountId}`, kind, options: { url: `https://example.test/${id}` } });
    };
    /** Claims until none is left, the clock moving 1 s a claim; the ids in the order claimed. */
    async function claimAll(t: ClaimTurns = turns): Promise<string[]> {
      const ids: string[] = [];
      for (let job = await queue.claim(t); job; job = await queue.claim(t)) {
        ids.push(job.id);
        clock += 1_000;
      }
      return ids;
    }

    it('serves accounts in turn, not in the order their jobs were queued', async () => {
      for (let i = 1; i <= 3; i++) await queueFor(`a${i}`, 'A', 'config', 1_000_000 + i);
      await queueFor('b1', 'B', 'config', 1_000_010);
      await queueFor('c1', 'C', 'config', 1_000_020);
      clock = 2_000_000;
      expect(await claimAll()).to.deep.equal(['a1', 'b1', 'c1', 'a2', 'a3']);
    });

    it("serves configurations' jobs before scheduled ones, and a scheduled one at least once in four claims", async () => {
      for (let i = 1; i <= 2; i++) await queueFor(`s${i}`, 'S', 'scheduled', 1_000_000 + i);
      for (let i = 1; i <= 6; i++) await queueFor(`c${i}`, 'C', 'config', 1_000_100 + i);
      clock = 2_000_000;
      expect(await claimAll()).to.deep.equal(['c1', 'c2', 'c3', 's1', 'c4', 'c5', 'c6', 's2']);
    });

    it('passes by an account that runs all its plan allows, and comes back to it once one of its captures ends', async () => {
      const one = turnsWith(1);
      await queueFor('a1', 'A', 'config', 1_000_001);
      await queueFor('a2', 'A', 'config', 1_000_002);
      await queueFor('b1', 'B', 'config', 1_000_003);
      clock = 2_000_000;
      const a1 = await queue.claim(one);
      expect(a1?.id).to.equal('a1');
      expect((await queue.claim(one))?.id).to.equal('b1');
      expect(await queue.claim(one)).to.equal(null);
      await slots.finish({ id: 'a1', accountId: 'A' });
      expect((await queue.claim(one))?.id).to.equal('a2');
    });
  });

  it('deletes a configuration’s jobs, and only those', async () => {
    await enqueue('j1');
    await queue.enqueue({ id: 'j2', accountId: 'acc', configId: 'other', kind: 'config', options: { url: 'https://example.test/' } });
    await queue.deleteForConfig('acc', 'cfg');
    expect(await queue.find('acc', 'j1')).to.equal(undefined);
    expect(await queue.find('acc', 'j2')).to.deep.include({ status: 'queued' });
  });
});
