/**
 * JobWorker with its collaborators stubbed (queue, pipeline, billing through the broker):
 * who is charged, refunded or left pending in each outcome of a job, and how many jobs run
 * at once. The whole path through real browsers is in test/scheduler/configs.test.ts and
 * test/system/jobs-cluster.test.ts.
 */
import { expect } from 'chai';
import type { ServiceBroker } from 'moleculer';
import sinon from 'sinon';
import type { BrowserSlot } from '../../../services/capture/browsers/browser-slot';
import type { CaptureTurn } from '../../../services/capture/browsers/engine';
import { type ClaimedJob, JobQueue } from '../../../services/capture/jobs/jobs';
import { JobWorker } from '../../../services/capture/jobs/worker';
import type { Reservation, ScreenshotRef } from '../../../services/shared/contracts';
import { serviceError } from '../../../services/shared/errors';
import { type LogContext, currentLogContext, withLogContext } from '../../../services/shared/logging';

const job = (id: string, attempts = 1): ClaimedJob => ({
  id,
  accountId: 'acc',
  configId: 'cfg',
  kind: 'config',
  options: { url: 'https://example.test/' },
  leaseToken: 't',
  attempts,
  createdAtMs: Date.now(),
});
const ref = (id: string): ScreenshotRef => ({
  id,
  job_id: 'j',
  config_id: 'cfg',
  embed_url: '',
  direct_link: '',
  direct_thumbnail_link: '',
  taken_at_ms: 0,
  image_name: 'a.png',
  html_name: null,
  content_type: 'image/png',
  ai: null,
  proxy_server: null,
  custom_proxy: null,
  bandwidth_bytes: 0,
  load_finished: true,
  status_code: 200,
  final_url: 'https://example.com/',
});

function setup(sessions = 2) {
  const reservation: Reservation = { id: 'job:j1', accountId: 'acc', month: '2026-11', amounts: { screenshots: 1 } };
  const call = sinon.stub().callsFake(async (action: string) => (action === 'billing.reserveFor' ? reservation : {}));
  const emit = sinon.stub().resolves();
  const broker = { call, emit } as unknown as ServiceBroker;
  const queue = sinon.createStubInstance(JobQueue);
  queue.fail.resolves(true);
  queue.renew.resolves(true);
  queue.release.resolves();
  // The job is still there (not deleted with its configuration) unless a test says otherwise.
  queue.find.resolves({ id: 'j1', account_id: 'acc', config_id: 'cfg', status: 'running', error_code: null, note: null, screenshot_id: null });
  const pipeline = { run: sinon.stub() };
  const logger = { info: sinon.stub(), warn: sinon.stub(), error: sinon.stub() };
  // The pool hands out browsers (each a distinct stand-in: the pipeline, stubbed, never touches them).
  const browsers = { acquire: sinon.stub().callsFake(async () => ({}) as BrowserSlot), giveBack: sinon.stub() };
  const tickets = {
    limitsFor: sinon.stub().resolves({ maxConcurrent: 1, maxQueued: 8 }),
    start: sinon.stub().resolves(true),
    finish: sinon.stub().resolves(),
    lastStarts: sinon.stub().resolves(new Map()),
  };
  const worker = new JobWorker({ broker, queue, pipeline, logger, browsers, tickets }, { sessions, leaseMs: 30_000, pollMs: 60_000 });
  const billingCalls = () => call.getCalls().map((c) => c.args[0] as string);
  return { worker, queue, pipeline, logger, call, emit, billingCalls, browsers, tickets };
}

describe('JobWorker (collaborators stubbed)', () => {
  it('charges a stored job under its job id and announces capture.completed', async () => {
    const t = setup();
    t.pipeline.run.resolves(ref('42'));
    await t.worker.run(job('j1'));
    expect(t.billingCalls()).to.deep.equal(['billing.reserveFor', 'billing.commit']);
    expect(t.call.firstCall.args[1]).to.deep.equal({ accountId: 'acc', amounts: { screenshots: 1 }, reservationId: 'job:j1' });
    expect(t.emit.calledOnceWithExactly('capture.completed', { accountId: 'acc', configId: 'cfg', jobId: 'j1', screenshotId: '42' })).to.equal(true);
    expect(t.queue.fail.called).to.equal(false);
  });

  it('runs a job under its own job id only, not the ids of the request whose event woke the worker', async () => {
    const t = setup();
    let seen: LogContext = {};
    t.pipeline.run.callsFake(async () => {
      seen = currentLogContext();
      return ref('42');
    });
    await withLogContext({ request_id: 'req_other', job_id: 'other' }, () => t.worker.run(job('j1')));
    expect(seen).to.deep.equal({ job_id: 'j1' });
  });

  it('leaves the credit to the instance that took the job over when the lease was lost', async () => {
    const t = setup();
    t.pipeline.run.resolves(null);
    await t.worker.run(job('j1'));
    expect(t.billingCalls()).to.deep.equal(['billing.reserveFor']);
    expect(t.emit.called).to.equal(false);
  });

  it("gives the credit back when the lease was lost to the job's deletion with its configuration (it may have reserved it again after the deletion released it)", async () => {
    for (const outcome of ['stored nothing', 'failed'] as const) {
      const t = setup();
      if (outcome === 'failed') {
        t.pipeline.run.rejects(serviceError('page_load_failed', 'The page did not load.'));
        t.queue.fail.resolves(false);
      } else t.pipeline.run.resolves(null);
      t.queue.find.resolves(undefined);
      await t.worker.run(job('j1'));
      expect(t.billingCalls(), outcome).to.deep.equal(['billing.reserveFor', outcome === 'failed' ? 'billing.refund' : 'billing.release']);
    }
  });

  it('records a domain failure on the job and refunds the credit', async () => {
    const t = setup();
    t.pipeline.run.rejects(serviceError('selector_not_found', 'No element matches #x.'));
    await t.worker.run(job('j1'));
    expect(t.queue.fail.calledOnceWith(sinon.match({ id: 'j1' }), 'selector_not_found', 'No element matches #x.')).to.equal(true);
    expect(t.billingCalls()).to.deep.equal(['billing.reserveFor', 'billing.refund']);
    expect(t.logger.error.called).to.equal(false);
  });

  it('logs an error of ours and shows the job a generic note', async () => {
    const t = setup();
    t.pipeline.run.rejects(new TypeError('x is undefined'));
    await t.worker.run(job('j1'));
    expect(t.queue.fail.firstCall.args.slice(1)).to.deep.equal(['internal_error', 'The capture failed on our side; it was logged.']);
    expect(t.logger.error.calledOnce).to.equal(true);
  });

  it('does not refund a failure it could not record (the lease was lost)', async () => {
    const t = setup();
    t.queue.fail.resolves(false);
    t.pipeline.run.rejects(serviceError('page_load_failed', 'gone'));
    await t.worker.run(job('j1'));
    expect(t.billingCalls()).to.deep.equal(['billing.reserveFor']);
  });

  it('records a refused reservation (the month is used up) as the job’s failure, without capturing', async () => {
    const t = setup();
    t.call.withArgs('billing.reserveFor').rejects(serviceError('screenshot_limit_reached', 'used up'));
    await t.worker.run(job('j1'));
    expect(t.pipeline.run.called).to.equal(false);
    expect(t.queue.fail.firstCall.args.slice(1)).to.deep.equal(['screenshot_limit_reached', 'used up']);
    expect(t.billingCalls()).to.deep.equal(['billing.reserveFor']);
  });

  it('gives up a job that was interrupted too often, and releases its credit without reserving one', async () => {
    const t = setup();
    await t.worker.run(job('j1', 4));
    expect(t.pipeline.run.called).to.equal(false);
    expect(t.queue.fail.firstCall.args.slice(1)).to.deep.equal(['internal_error', 'The capture was interrupted 3 times and was given up.']);
    expect(t.billingCalls()).to.deep.equal(['billing.release']);
    expect(t.call.firstCall.args[1]).to.deep.equal({ accountId: 'acc', reservationId: 'job:j1' });
  });

  it('gives up an analysed job by releasing its screenshot and AI reservations, even when the month is used up', async () => {
    const t = setup();
    // What a reservation would answer now: a release must not ask for one.
    t.call.withArgs('billing.reserveFor').rejects(serviceError('screenshot_limit_reached', 'used up'));
    await t.worker.run({ ...job('j1', 4), options: { url: 'https://example.test/', analyze_image_with_ai: true } } as ClaimedJob);
    expect(t.billingCalls()).to.deep.equal(['billing.release', 'billing.release']);
    expect(t.call.getCalls().map((c) => c.args[1].reservationId)).to.deep.equal(['job:j1', 'job:j1:ai']);
  });

  it('when stopping, hands a failing job back to the queue with its credit still pending', async () => {
    const t = setup();
    let fail!: (err: Error) => void;
    t.pipeline.run.returns(new Promise((_, reject) => (fail = reject)));
    const running = t.worker.run(job('j1'));
    await new Promise((r) => setImmediate(r));
    const stopped = t.worker.stop(1_000);
    fail(new Error('the browser was stopped'));
    await Promise.all([running, stopped]);
    expect(t.queue.release.calledOnce).to.equal(true);
    expect(t.queue.fail.called).to.equal(false);
    expect(t.billingCalls()).to.deep.equal(['billing.reserveFor']);
  });

  it('hands a job back to the queue, its credit pending, when a service did not answer (a node or NATS gone)', async () => {
    const t = setup();
    const timedOut = Object.assign(new Error("Request is timed out when call 'billing.reserveFor' action"), { type: 'REQUEST_TIMEOUT', code: 504 });
    t.call.callsFake(async (action: string) => {
      if (action === 'billing.reserveFor') throw timedOut;
      return {};
    });
    await t.worker.run(job('j1'));
    expect(t.queue.release.calledOnce).to.equal(true);
    expect(t.queue.fail.called).to.equal(false);
    expect(t.billingCalls()).to.deep.equal(['billing.reserveFor']);
  });

  it('hands a job back to the queue when no browser came free in time', async () => {
    const t = setup();
    t.pipeline.run.rejects(serviceError('capacity_exhausted', 'No browser became free within 30000 ms; retry shortly.'));
    await t.worker.run(job('j1'));
    expect(t.queue.release.calledOnce).to.equal(true);
    expect(t.queue.fail.called).to.equal(false);
    expect(t.billingCalls()).to.deep.equal(['billing.reserveFor']);
  });

  it('runs at most `sessions` jobs at once and claims the next when one finishes', async () => {
    const t = setup(2);
    const queued = [job('j1'), job('j2'), job('j3')];
    t.queue.claim.callsFake(async () => queued.shift() ?? null);
    const finish: Array<() => void> = [];
    t.pipeline.run.callsFake(() => new Promise((resolve) => finish.push(() => resolve(ref('1')))));
    await t.worker.pump();
    await new Promise((r) => setTimeout(r, 10));
    expect(t.pipeline.run.callCount).to.equal(2);
    finish[0]?.();
    await new Promise((r) => setTimeout(r, 10));
    expect(t.pipeline.run.callCount).to.equal(3);
    for (const f of finish.slice(1)) f();
    await t.worker.stop(1_000);
    expect(t.emit.callCount).to.equal(3);
  });

  it('claims a job only with a browser in hand, runs the job on it, and gives it back when no job may start', async () => {
    const t = setup(2);
    const slot = {} as BrowserSlot;
    t.browsers.acquire.onFirstCall().resolves(slot);
    t.queue.claim.resolves(null);
    t.queue.claim.onFirstCall().resolves(job('j1'));
    let given: BrowserSlot | null = null;
    // As the engine does: the capture takes the browser it was handed.
    t.pipeline.run.callsFake(async (_job, _options, turn: CaptureTurn) => {
      given = turn.slot;
      turn.slot = null;
      return ref('1');
    });
    await t.worker.pump();
    await new Promise((r) => setTimeout(r, 10));
    // Asked as the jobs class, with no account yet; the claim came after the browser.
    expect(t.browsers.acquire.firstCall.args[0]).to.deep.equal({ cls: 'jobs', ticket: null });
    sinon.assert.callOrder(t.browsers.acquire, t.queue.claim);
    expect(given).to.equal(slot);
    const turn = t.pipeline.run.firstCall.args[2];
    expect(turn.claim).to.deep.equal({ cls: 'jobs', ticket: { id: 'j1', accountId: 'acc', limits: { maxConcurrent: 1, maxQueued: 8 } } });
    // The browsers asked for next found no job: each went back to the pool at once, never the job's.
    expect(t.browsers.giveBack.callCount).to.be.greaterThan(0);
    expect(t.browsers.giveBack.args.filter(([given]) => given === slot)).to.deep.equal([]);
    // The job's capture counted in its account's running captures until its end.
    sinon.assert.calledOnceWithExactly(t.tickets.finish, turn.claim.ticket);
  });

  it('gives back the browser of a job that failed before its capture took it, and ends its count', async () => {
    const t = setup();
    t.call.withArgs('billing.reserveFor').rejects(serviceError('screenshot_limit_reached', 'used up'));
    const slot = {} as BrowserSlot;
    await t.worker.run(job('j1'), slot);
    sinon.assert.calledOnceWithExactly(t.browsers.giveBack, slot);
    sinon.assert.calledOnce(t.tickets.finish);
  });
});
