/**
 * JobQueue on a real SQLite file with a controlled clock: leases, take-over after a lease
 * runs out, and that only the lease holder completes or fails a job. (The same queue on
 * MariaDB with several instances is proved in test/system/jobs-cluster.test.ts.)
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { JobQueue } from '../../services/capture/jobs';
import { ScreenshotRepository } from '../../services/capture/screenshots';
import { migratedSqlite } from '../support/sqlite';

const LEASE_MS = 10_000;
const files = { image_name: 'a.png', thumb_name: null, html_name: null, content_type: 'image/png' };

describe('JobQueue (SQLite, controlled clock)', () => {
  let sqlite: Awaited<ReturnType<typeof migratedSqlite>>;
  let db: Knex;
  let clock: number;
  let queue: JobQueue;
  let screenshots: ScreenshotRepository;

  beforeEach(async () => {
    sqlite = await migratedSqlite();
    db = sqlite.db;
    clock = 1_000_000;
    queue = new JobQueue(db, LEASE_MS, () => clock);
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
    screenshots.insert(ScreenshotRepository.newRow(job, { url: 'https://example.test/' }, files, null, clock), trx);

  it('hands out the oldest queued job once, with its options, until its lease runs out', async () => {
    await enqueue('j2', 2_000_000);
    await enqueue('j1', 1_000_000);
    clock = 2_000_001;
    const first = await queue.claim();
    expect(first).to.include({ id: 'j1', accountId: 'acc', configId: 'cfg', kind: 'config', attempts: 1 });
    expect(first && 'options' in first ? first.options : null).to.deep.equal({ url: 'https://example.test/j1' });
    expect((await queue.claim())?.id).to.equal('j2');
    expect(await queue.claim()).to.equal(null);

    clock += LEASE_MS + 1;
    const again = await queue.claim();
    expect(again).to.include({ id: 'j1', attempts: 2 });
    expect(again?.leaseToken).to.not.equal(first?.leaseToken);
  });

  it('lets a renewed lease keep its job', async () => {
    await enqueue('j1');
    const job = await queue.claim();
    clock += LEASE_MS - 1;
    expect(await queue.renew(job!)).to.equal(true);
    clock += LEASE_MS - 1;
    expect(await queue.claim()).to.equal(null);
  });

  it('completes a job with its screenshot only under the current lease', async () => {
    await enqueue('j1');
    const stale = await queue.claim();
    clock += LEASE_MS + 1;
    const current = await queue.claim();
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
    const job = await queue.claim();
    expect(await queue.fail(job!, 'selector_not_found', 'no #x')).to.equal(true);
    expect(await queue.find('acc', 'j1')).to.deep.include({ status: 'failed', error_code: 'selector_not_found', note: 'no #x' });
    expect(await queue.fail(job!, 'internal_error', 'again')).to.equal(false);
    expect(await queue.claim()).to.equal(null);
  });

  it('gives a released job back to the queue', async () => {
    await enqueue('j1');
    const job = await queue.claim();
    await queue.release(job!);
    expect(await queue.find('acc', 'j1')).to.deep.include({ status: 'queued' });
    expect(await queue.claim()).to.include({ id: 'j1', attempts: 2 });
  });

  it('writes a snap’s job as running under its own lease: never claimed, completed like any other', async () => {
    const snap = await queue.start({ id: 's1', accountId: 'acc', configId: 'cfg' });
    clock += 10 * LEASE_MS;
    expect(await queue.claim()).to.equal(null);
    expect(await queue.find('acc', 's1')).to.deep.include({ status: 'running' });
    expect(await queue.complete({ ...snap, leaseToken: 'not-the-lease' }, record(snap))).to.equal(null);
    expect(await queue.complete(snap, record(snap))).to.be.a('number');
    expect(await queue.find('acc', 's1')).to.deep.include({ status: 'completed' });
  });

  it('deletes a configuration’s jobs, and only those', async () => {
    await enqueue('j1');
    await queue.enqueue({ id: 'j2', accountId: 'acc', configId: 'other', kind: 'config', options: { url: 'https://example.test/' } });
    await queue.deleteForConfig('acc', 'cfg');
    expect(await queue.find('acc', 'j1')).to.equal(undefined);
    expect(await queue.find('acc', 'j2')).to.deep.include({ status: 'queued' });
  });
});
