/**
 * The api's call to capture for a snap (services/api/capture-call.ts) with the broker stubbed
 * (sinon): an instance left pinging unanswered is taken for gone; a snap whose instance went
 * away is taken again under the same job and arrival time, and given up cleanly when no time
 * is left (and its job then given up, asked again while no instance can take that); a snap's
 * ttl lookup taken again the same way. The same with real processes killed and the
 * transporter restarted: test/system/instance-death-cluster.test.ts,
 * test/system/snap-faults-cluster.test.ts.
 */
import { expect } from 'chai';
import { Errors, type ServiceBroker } from 'moleculer';
import sinon from 'sinon';
import { NodeWatch, PING_EVERY_MS, PONG_WITHIN_MS, findRecentSnap, takeSnap } from '../../services/api/capture-call';
import type { AccountContext, ScreenshotRef } from '../../services/shared/contracts';
import { serviceError } from '../../services/shared/errors';

const REF = { id: '1', job_id: 'j' } as ScreenshotRef;
const ACCOUNT = { accountId: 'acc' } as AccountContext;
const SNAP = { account: ACCOUNT, options: { url: 'https://example.test/' }, targets: {} };

/** What a call whose capture instance disappeared fails with (Moleculer's, when the node is dropped). */
const rejected = () => new Errors.RequestRejectedError({ action: 'capture.take', nodeID: 'cap-1' });
/** What a call fails with while no capture instance is known (the transporter reconnecting). */
const noneThere = () => new Errors.ServiceNotAvailableError({ action: 'capture.take' });

function stubBroker() {
  const disconnected = sinon.stub();
  const broker = {
    nodeID: 'api-1',
    call: sinon.stub(),
    ping: sinon.stub(),
    registry: { nodes: { disconnected } },
    logger: { warn: sinon.stub() },
  };
  return { broker, disconnected, as: broker as unknown as ServiceBroker };
}

/** A pending call as Moleculer returns it: the promise with its context (the node it went to). */
function pendingOn<T>(nodeID: string, p: Promise<T>): Promise<T> & { ctx: { nodeID: string } } {
  return Object.assign(p, { ctx: { nodeID } });
}

describe("the api's call to capture (unit: the broker stubbed)", () => {
  afterEach(() => sinon.restore());

  it('pings the instance a call waits on, and takes it for gone at the first ping it leaves unanswered', async () => {
    const clock = sinon.useFakeTimers();
    const { broker, disconnected, as } = stubBroker();
    broker.ping.onFirstCall().resolves({ nodeID: 'cap-1' }).onSecondCall().resolves(null);
    const watch = new NodeWatch(as);
    void watch.follow(pendingOn('cap-1', new Promise(() => undefined)));
    await clock.tickAsync(PING_EVERY_MS);
    sinon.assert.calledOnceWithExactly(broker.ping, 'cap-1', PONG_WITHIN_MS);
    sinon.assert.notCalled(disconnected);
    await clock.tickAsync(PING_EVERY_MS);
    sinon.assert.calledOnceWithExactly(disconnected, 'cap-1', true);
  });

  it('pings nothing for a call answered in this process, and stops pinging once the call settles', async () => {
    const clock = sinon.useFakeTimers();
    const { broker, as } = stubBroker();
    broker.ping.resolves({});
    const watch = new NodeWatch(as);
    await watch.follow(pendingOn('api-1', Promise.resolve(1)));
    await watch.follow(pendingOn('cap-1', Promise.resolve(2)));
    await clock.tickAsync(5 * PING_EVERY_MS);
    sinon.assert.notCalled(broker.ping);
  });

  it('takes a snap whose instance went away again, as the same job with the same arrival time', async () => {
    const { broker, as } = stubBroker();
    broker.call.onFirstCall().callsFake(() => pendingOn('cap-1', Promise.reject(rejected())));
    broker.call.onSecondCall().callsFake(() => pendingOn('cap-2', Promise.resolve(REF)));
    expect(await takeSnap(as, SNAP, 60_000)).to.equal(REF);
    const [first, second] = broker.call.args.map((a) => a[1] as { jobId: string; attempt: number; since: number });
    expect(second?.jobId).to.equal(first?.jobId);
    expect(second?.since).to.equal(first?.since);
    expect([first?.attempt, second?.attempt]).to.deep.equal([1, 2]);
  });

  it('answers capacity_exhausted when too little of the budget is left, and gives its job and place back', async () => {
    const { broker, as } = stubBroker();
    broker.call.callsFake((action: string) =>
      action === 'capture.take' ? pendingOn('cap-1', Promise.reject(rejected())) : pendingOn('cap-2', Promise.resolve({ ok: true })),
    );
    const err = await takeSnap(as, SNAP, 1_000).then(
      () => null,
      (e: Error & { type?: string }) => e,
    );
    expect(err?.type).to.equal('capacity_exhausted');
    expect(err?.message).to.match(/stopped, and no other could take it within its time budget; nothing was charged/);
    const abandon = broker.call.args.find((a) => a[0] === 'capture.abandon');
    const take = broker.call.args.find((a) => a[0] === 'capture.take')?.[1] as { jobId: string } | undefined;
    expect(abandon?.[1]).to.deep.include({ accountId: 'acc', jobId: take?.jobId, errorCode: 'capacity_exhausted' });
  });

  it('keeps taking a snap again while no instance is there (a transporter restarting), until one answers within its budget', async () => {
    const clock = sinon.useFakeTimers();
    const { broker, as } = stubBroker();
    // Its instance dropped, then six attempts with none known (3 s): more than three attempts.
    broker.call.onFirstCall().callsFake(() => pendingOn('cap-1', Promise.reject(rejected())));
    for (let n = 1; n <= 6; n++) broker.call.onCall(n).callsFake(() => Promise.reject(noneThere()));
    broker.call.onCall(7).callsFake(() => pendingOn('cap-1', Promise.resolve(REF)));
    const taken = takeSnap(as, SNAP, 60_000);
    await clock.tickAsync(10_000);
    expect(await taken).to.equal(REF);
    const attempts = broker.call.args.filter((a) => a[0] === 'capture.take').map((a) => (a[1] as { attempt: number }).attempt);
    expect(attempts).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(broker.call.args.some((a) => a[0] === 'capture.abandon')).to.equal(false);
  });

  it('gives up when the budget runs out with no instance there, and asks capture.abandon again until an instance takes it', async () => {
    const clock = sinon.useFakeTimers();
    const { broker, as } = stubBroker();
    let abandons = 0;
    // Its instance lost under it (the transporter restarting), then none known for the rest of the budget.
    broker.call.onFirstCall().callsFake(() => pendingOn('cap-1', Promise.reject(rejected())));
    broker.call.callsFake((action: string) => {
      if (action === 'capture.take') return Promise.reject(noneThere());
      abandons++;
      return abandons < 3 ? Promise.reject(noneThere()) : Promise.resolve({ ok: true });
    });
    const taken = takeSnap(as, SNAP, 5_000).then(
      () => null,
      (e: Error & { type?: string }) => e,
    );
    await clock.tickAsync(5_000);
    const err = await taken;
    expect(err?.type).to.equal('capacity_exhausted');
    expect(err?.message).to.match(/no other could take it within its time budget; nothing was charged/);
    await clock.tickAsync(5_000);
    expect(abandons, 'capture.abandon asked until an instance took it').to.equal(3);
  });

  it('answers at once, after three attempts, when no capture instance was heard of lately (none running at all)', async () => {
    const clock = sinon.useFakeTimers();
    const { broker, as } = stubBroker();
    broker.call.callsFake(() => Promise.reject(noneThere()));
    const looked = findRecentSnap(as, { accountId: 'acc', cacheKey: 'k', since: 1 }, Date.now() + 60_000).then(
      () => null,
      (e: Error & { type?: string }) => e,
    );
    await clock.tickAsync(1_500);
    const err = await looked;
    expect(err?.type).to.equal('capacity_exhausted');
    expect(err?.message).to.equal('No capture instance is running to take this capture; nothing was charged. Retry shortly.');
    expect(broker.call.callCount).to.equal(3);
  });

  it('gives a snap up once three instances in turn stopped under it, whatever budget is left (a page that stops them)', async () => {
    const { broker, as } = stubBroker();
    broker.call.callsFake((action: string) => (action === 'capture.take' ? pendingOn('cap-1', Promise.reject(rejected())) : Promise.resolve({ ok: true })));
    const err = await takeSnap(as, SNAP, 60_000).then(
      () => null,
      (e: Error & { type?: string }) => e,
    );
    expect(err?.type).to.equal('capacity_exhausted');
    expect(err?.message).to.contain('3 capture instances in turn stopped under it');
    expect(broker.call.args.filter((a) => a[0] === 'capture.take')).to.have.length(3);
    expect(broker.call.args.some((a) => a[0] === 'capture.abandon')).to.equal(true);
  });

  it('gives up a snap no instance ever took without asking capture to abandon a job it never had', async () => {
    const clock = sinon.useFakeTimers();
    const { broker, as } = stubBroker();
    broker.call.callsFake(() => Promise.reject(noneThere()));
    const taken = takeSnap(as, SNAP, 60_000).then(
      () => null,
      (e: Error & { type?: string }) => e,
    );
    await clock.tickAsync(1_500);
    expect((await taken)?.message).to.equal('No capture instance is running to take this capture; nothing was charged. Retry shortly.');
    await clock.tickAsync(5_000);
    expect(broker.call.args.every((a) => a[0] === 'capture.take')).to.equal(true);
  });

  it("takes a snap's ttl lookup whose instance went away again on another", async () => {
    const { broker, as } = stubBroker();
    broker.call.onFirstCall().callsFake(() => pendingOn('cap-1', Promise.reject(rejected())));
    broker.call.onSecondCall().callsFake(() => pendingOn('cap-2', Promise.resolve(REF)));
    const params = { accountId: 'acc', cacheKey: 'k', since: 1 };
    expect(await findRecentSnap(as, params, Date.now() + 60_000)).to.equal(REF);
    expect(broker.call.args.map((a) => [a[0], a[1]])).to.deep.equal([
      ['capture.findRecent', params],
      ['capture.findRecent', params],
    ]);
  });

  it('passes on as it is a service missing under the capture (the scheduler stopped), not taken for no capture instance running', async () => {
    const { broker, as } = stubBroker();
    const missing = new Errors.ServiceNotAvailableError({ action: 'scheduler.snapConfig' });
    broker.call.callsFake(() => pendingOn('cap-1', Promise.reject(missing)));
    expect(
      await takeSnap(as, SNAP, 60_000).then(
        () => null,
        (e: Error) => e,
      ),
    ).to.equal(missing);
    sinon.assert.calledOnce(broker.call);
  });

  it("passes the capture's own answer on as it is", async () => {
    const { broker, as } = stubBroker();
    const failed = serviceError('page_load_failed', 'The page could not be loaded.');
    broker.call.callsFake(() => pendingOn('cap-1', Promise.reject(failed)));
    expect(
      await takeSnap(as, SNAP, 60_000).then(
        () => null,
        (e: Error) => e,
      ),
    ).to.equal(failed);
    sinon.assert.calledOnce(broker.call);
  });
});
