/**
 * SnapDesk with its collaborators stubbed (admission, queue, pipeline, the scheduler's
 * configurations): the order of a snap's steps (its account's limits before anything is
 * written, its ticket given back however it ends), an attempt taken again, a snap given up,
 * and a configuration's archive deleted rows first. The whole path with real browsers is in
 * test/capture/snap.test.ts and test/system/instance-death-cluster.test.ts.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import sinon from 'sinon';
import { JobQueue } from '../../../services/capture/jobs/jobs';
import { ScreenshotRepository } from '../../../services/capture/jobs/screenshots';
import { SnapDesk } from '../../../services/capture/jobs/snaps';
import type { AccountContext, ScreenshotRef } from '../../../services/shared/contracts';
import { serviceError } from '../../../services/shared/errors';

const account: AccountContext = {
  accountId: 'acc',
  plan: { name: 'paid', paid: true, screenshot_limit: 100, max_concurrent: 1, max_queued: 8 },
  addons: {},
};
const shot = { id: 's1', job_id: 'j1' } as unknown as ScreenshotRef;

function setup() {
  const steps: string[] = [];
  const ticket = { id: 'j1', accountId: 'acc', limits: { maxConcurrent: 1, maxQueued: 8 } };
  const admission = {
    ticket: sinon.stub().returns(ticket),
    admit: sinon.stub().callsFake(async () => void steps.push('admit')),
    finish: sinon.stub().callsFake(async () => void steps.push('finish')),
    release: sinon.stub().callsFake(async () => void steps.push('release')),
  };
  const queue = sinon.createStubInstance(JobQueue);
  queue.start.callsFake(async (o) => {
    steps.push('start');
    return { ...o, leaseToken: 't' };
  });
  queue.abandon.callsFake(async () => {
    steps.push('abandon');
    return null;
  });
  queue.deleteForConfig.callsFake(async () => {
    steps.push('jobs deleted');
    return [];
  });
  const screenshots = sinon.createStubInstance(ScreenshotRepository);
  screenshots.filesOfConfig.resolves([{ image_name: 'a.png' }, { image_name: 'b.png' }] as never);
  screenshots.deleteForConfig.callsFake(async () => void steps.push('screenshots deleted'));
  const pipeline = {
    snap: sinon.stub().callsFake(async () => {
      steps.push('snap');
      return shot;
    }),
  };
  // The scheduler notes the job with the configuration's lookup (false: a configuration kept by the instance).
  let notedByScheduler = true;
  const files = { thumbnailOf: sinon.stub(), remove: sinon.stub().callsFake(async () => void steps.push('file removed')) };
  const metrics = { refused: sinon.stub() };
  const configs = {
    snapConfig: sinon.stub().callsFake(async (_accountId: string, _options: unknown, jobId?: string) => {
      steps.push(jobId && notedByScheduler ? `config, ${jobId} noted` : 'config');
      return { id: 'cfg', noted: jobId !== undefined && notedByScheduler };
    }),
    noteJob: sinon.stub().callsFake(() => void steps.push('noted')),
    forget: sinon.stub().callsFake(() => void steps.push('config forgotten')),
  };
  // The one query the desk makes itself: the diff images of a configuration's visual change alerts.
  const diffRows = { where: () => diffRows, whereNotNull: () => diffRows, select: async () => [{ diff_name: 'diff1.png' }] };
  const db = Object.assign(() => diffRows, { transaction: async (work: (trx: unknown) => Promise<void>) => work({}) }) as unknown as Knex;
  const jobQueued = sinon.stub();
  const configDeleted = sinon.stub().callsFake(() => void steps.push('deletion announced'));
  queue.renew.resolves(true);
  const desk = new SnapDesk({ db, admission, queue, leaseMs: 30_000, pipeline, screenshots, files, metrics, configs, jobQueued, configDeleted });
  const keptConfig = () => {
    notedByScheduler = false;
  };
  return { desk, steps, admission, queue, pipeline, metrics, configs, screenshots, files, jobQueued, configDeleted, keptConfig };
}

const params = (attempt = 1) => ({ account, options: { url: 'https://example.test/' }, jobId: 'j1', attempt, since: 5 });

describe('SnapDesk (collaborators stubbed)', () => {
  it('admits a snap by its limits before anything is written, records its job, captures it, and gives its ticket back', async () => {
    const t = setup();
    expect(await t.desk.take(params())).to.equal(shot);
    expect(t.steps).to.deep.equal(['admit', 'config, j1 noted', 'start', 'snap', 'finish']);
    expect(t.configs.noteJob.called, 'noted with the lookup: no second call').to.equal(false);
    expect(t.queue.start.firstCall.args[0]).to.deep.equal({ id: 'j1', accountId: 'acc', configId: 'cfg' });
    const turn = t.pipeline.snap.firstCall.args[2];
    expect(turn.claim).to.include({ cls: 'snap', since: 5, again: false });
  });

  it('notes the job itself, once its job is started, when the configuration was kept (the scheduler not asked)', async () => {
    const t = setup();
    t.keptConfig();
    await t.desk.take(params());
    expect(t.steps).to.deep.equal(['admit', 'config', 'start', 'noted', 'snap', 'finish']);
    expect(t.configs.noteJob.calledOnceWith('cfg', 'j1')).to.equal(true);
  });

  it('writes nothing for a snap its account has no room for, and counts the refusal', async () => {
    const t = setup();
    t.admission.admit.rejects(serviceError('concurrency_limit_reached', 'full'));
    const err = await t.desk.take(params()).catch((e: unknown) => e);
    expect((err as { type: string }).type).to.equal('concurrency_limit_reached');
    expect(t.steps).to.deep.equal([]);
    expect(t.metrics.refused.calledOnceWith('snap', 'concurrency_limit_reached')).to.equal(true);
  });

  it('gives the ticket back when the capture fails', async () => {
    const t = setup();
    t.pipeline.snap.rejects(serviceError('page_load_failed', 'no'));
    await t.desk.take(params()).catch(() => undefined);
    expect(t.steps).to.deep.equal(['admit', 'config, j1 noted', 'start', 'finish']);
  });

  it('takes a snap again under its job without noting it twice, in its place in the fair order', async () => {
    const t = setup();
    t.queue.retake.resolves({ leased: { id: 'j1', accountId: 'acc', configId: 'cfg', leaseToken: 't2' } });
    await t.desk.take(params(2));
    expect(t.queue.start.called).to.equal(false);
    expect(t.configs.noteJob.called).to.equal(false);
    expect(t.pipeline.snap.firstCall.args[2].claim).to.include({ since: 5, again: true });
  });

  it('answers a snap taken again whose job finished meanwhile as it finished, capturing nothing', async () => {
    const t = setup();
    const finished = { id: 'j1', account_id: 'acc', config_id: 'cfg', status: 'failed', error_code: 'page_load_failed', note: 'gone', screenshot_id: null };
    t.queue.retake.resolves({ finished } as never);
    const err = await t.desk.take(params(3)).catch((e: unknown) => e);
    expect((err as { type: string }).type).to.equal('page_load_failed');
    expect(t.pipeline.snap.called).to.equal(false);
    expect(t.steps).to.deep.equal(['admit', 'config', 'finish']);
  });

  it('fails a snap given up on, then gives its place in the counts back', async () => {
    const t = setup();
    await t.desk.abandon('acc', 'j1', 'capacity_exhausted', 'gone');
    expect(t.steps).to.deep.equal(['abandon', 'release']);
    expect(t.queue.abandon.firstCall.args.slice(0, 4)).to.deep.equal(['acc', 'j1', 'capacity_exhausted', 'gone']);
    expect(t.files.remove.called).to.equal(false);
  });

  it('withdraws the screenshot of a snap given up on that completed meanwhile (its row, then its files)', async () => {
    const t = setup();
    t.queue.abandon.callsFake(async () => {
      t.steps.push('abandon');
      return 7;
    });
    t.screenshots.withdraw.callsFake(async () => {
      t.steps.push('screenshot withdrawn');
      return { image_name: 'a.png' } as never;
    });
    await t.desk.abandon('acc', 'j1', 'capacity_exhausted', 'gone');
    expect(t.steps).to.deep.equal(['abandon', 'screenshot withdrawn', 'file removed', 'release']);
    expect(t.screenshots.withdraw.firstCall.args[0]).to.equal(7);
    expect(t.files.remove.firstCall.args[0]).to.deep.equal({ image_name: 'a.png' });
  });

  it('forgets a configuration being deleted (here and, announced, on every instance), deletes its rows before its files, and announces a job it queues', async () => {
    const t = setup();
    expect(await t.desk.deleteForConfig('acc', 'cfg')).to.deep.equal({ screenshots: 2 });
    expect(t.steps).to.deep.equal([
      'config forgotten',
      'deletion announced',
      'screenshots deleted',
      'jobs deleted',
      'file removed',
      'file removed',
      'file removed',
    ]);
    expect(t.configs.forget.calledOnceWith('cfg')).to.equal(true);
    expect(t.configDeleted.calledOnceWith('acc', 'cfg')).to.equal(true);
    expect(t.files.remove.lastCall.args[0]).to.include({ image_name: 'diff1.png' });
    const job = { id: 'j9', accountId: 'acc', configId: 'cfg', kind: 'config' as const, options: { url: 'https://example.test/' } };
    expect(await t.desk.enqueue(job)).to.deep.equal({ job_id: 'j9' });
    expect(t.jobQueued.calledOnceWith('j9')).to.equal(true);
  });

  it("answers another account's job, or none, 404 not_found", async () => {
    const t = setup();
    t.queue.find.resolves(undefined);
    const err = await t.desk.jobStatus('acc', 'nope').catch((e: unknown) => e);
    expect((err as { type: string }).type).to.equal('not_found');
  });
});
