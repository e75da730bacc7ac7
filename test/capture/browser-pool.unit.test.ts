/**
 * BrowserPool with its browsers stubbed (sinon): the launcher hands out stub BrowserSlots,
 * so capacity, the wait queue, the choice of browser and the replacement of broken, lost
 * and silent browsers are checked in milliseconds, with sinon's clock for the timers.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { BrowserPool, type PoolOptions } from '../../services/capture/browser-pool';
import { BrowserSlot, type LaunchOptions } from '../../services/capture/browser-slot';

const LAUNCH: LaunchOptions = { seleniumUrl: 'http://127.0.0.1:4444', chromeBin: null, chromedriverBin: '/usr/bin/chromedriver', extraArgs: [] };
const QUEUE_TIMEOUT_MS = 30_000;
const KEEP_ALIVE_MS = 20_000;

type StubSlot = sinon.SinonStubbedInstance<BrowserSlot> & BrowserSlot;

describe('BrowserPool (unit: browsers stubbed)', () => {
  let clock: sinon.SinonFakeTimers;
  let launched: StubSlot[];
  /** The listener each slot's onLost was given, by slot id. */
  let lostListeners: Map<number, (err: Error) => void>;
  /** Which slots have their next page ready (BrowserSlot.hasReadyPage), by slot id. */
  let ready: Set<number>;
  let launcher: sinon.SinonStub<[LaunchOptions, number], Promise<BrowserSlot>>;
  let log: { warn: sinon.SinonStub; info: sinon.SinonStub };
  let pool: BrowserPool;

  function stubSlot(id: number): StubSlot {
    const slot = sinon.createStubInstance(BrowserSlot) as StubSlot;
    Object.assign(slot, { id, busy: false, broken: false, lastUsed: Date.now() });
    sinon.stub(slot, 'hasReadyPage').get(() => ready.has(id));
    slot.onLost.callsFake((listener) => void lostListeners.set(id, listener));
    slot.quit.resolves();
    slot.ping.resolves();
    launched.push(slot);
    return slot;
  }

  async function startPool(opts: Partial<PoolOptions> = {}): Promise<BrowserPool> {
    pool = new BrowserPool(LAUNCH, { sessions: 2, queueMax: 2, queueTimeoutMs: QUEUE_TIMEOUT_MS, keepAliveMs: KEEP_ALIVE_MS, ...opts }, log, launcher);
    await pool.start();
    return pool;
  }

  /** Lets the pool's pending promise callbacks (a launch, a hand-over) run. */
  const settle = () => clock.tickAsync(0);

  async function rejection(p: Promise<unknown>): Promise<Error & { type?: string; data?: { retryAfter?: number } }> {
    try {
      await p;
    } catch (err) {
      return err as Error & { type?: string };
    }
    throw new Error('expected a rejection');
  }

  beforeEach(() => {
    clock = sinon.useFakeTimers();
    launched = [];
    lostListeners = new Map();
    ready = new Set();
    launcher = sinon.stub<[LaunchOptions, number], Promise<BrowserSlot>>().callsFake(async (_opts, id) => stubSlot(id));
    log = { warn: sinon.stub(), info: sinon.stub() };
  });
  afterEach(async () => {
    await pool?.stop();
    sinon.restore();
  });

  it('opens every session at start and prepares a page on each', async () => {
    await startPool({ sessions: 3 });
    expect(launcher.args).to.deep.equal([
      [LAUNCH, 1],
      [LAUNCH, 2],
      [LAUNCH, 3],
    ]);
    for (const slot of launched) sinon.assert.calledOnce(slot.prepareNext);
    expect(pool.stats).to.deep.equal({ sessions: 3, busy: 0, queued: 0 });
  });

  it('hands out an idle browser whose next page is ready first, then the least recently used', async () => {
    await startPool({ sessions: 3 });
    const [one, two, three] = launched as [StubSlot, StubSlot, StubSlot];
    one.lastUsed = 100;
    two.lastUsed = 300;
    three.lastUsed = 200;
    ready.add(2).add(3);
    expect(await pool.acquire()).to.equal(three);
    expect(await pool.acquire()).to.equal(two);
    expect(await pool.acquire()).to.equal(one);
    expect(pool.stats).to.deep.equal({ sessions: 3, busy: 3, queued: 0 });
  });

  it('queues a capture while every browser is busy, and hands it the first browser given back', async () => {
    await startPool({ sessions: 1 });
    const slot = await pool.acquire();
    let waited: BrowserSlot | null = null;
    const waiting = pool.acquire().then((s) => {
      waited = s;
    });
    await settle();
    expect(waited).to.equal(null);
    expect(pool.stats).to.deep.equal({ sessions: 1, busy: 1, queued: 1 });
    pool.release(slot);
    await waiting;
    expect(waited).to.equal(slot);
    expect(slot.busy).to.equal(true);
    // Given back, the browser started preparing its next page before it was handed on.
    sinon.assert.calledTwice(launched[0]!.prepareNext);
    expect(pool.stats).to.deep.equal({ sessions: 1, busy: 1, queued: 0 });
  });

  it('answers capacity_exhausted at once when the wait queue is full', async () => {
    await startPool({ sessions: 1, queueMax: 1 });
    await pool.acquire();
    const queued = pool.acquire();
    queued.catch(() => undefined);
    const err = await rejection(pool.acquire());
    expect(err.type).to.equal('capacity_exhausted');
    expect(err.message).to.equal('All 1 browsers are busy and 1 captures are waiting; retry shortly.');
    expect(err.data).to.deep.equal({ retryAfter: 2 });
    expect(pool.stats.queued).to.equal(1);
  });

  it('answers capacity_exhausted when no browser becomes free within the queue timeout', async () => {
    await startPool({ sessions: 1 });
    await pool.acquire();
    const settled = rejection(pool.acquire());
    await clock.tickAsync(QUEUE_TIMEOUT_MS - 1);
    expect(pool.stats.queued).to.equal(1);
    await clock.tickAsync(1);
    const err = await settled;
    expect(err.type).to.equal('capacity_exhausted');
    expect(err.message).to.equal(`No browser became free within ${QUEUE_TIMEOUT_MS} ms; retry shortly.`);
    expect(err.data).to.deep.equal({ retryAfter: 5 });
    expect(pool.stats.queued).to.equal(0);
  });

  it('keeps trying to start a browser that fails to launch, ever more slowly, and says so to waiting captures', async () => {
    launcher.rejects(new Error('the Grid has no free slot'));
    const starting = startPool({ sessions: 1 });
    await clock.tickAsync(15_000);
    await starting;
    // Launches at 0, 0.5 s, 1.5 s, 3.5 s, 7.5 s, then 15.5 s (the delay doubles).
    sinon.assert.callCount(launcher, 5);
    await clock.tickAsync(500);
    sinon.assert.callCount(launcher, 6);
    expect(log.warn.lastCall.args[0]).to.contain('Could not start a browser session (retrying in 16000 ms): the Grid has no free slot');
    const settled = rejection(pool.acquire());
    await clock.tickAsync(QUEUE_TIMEOUT_MS);
    const err = await settled;
    expect(err.type).to.equal('capacity_exhausted');
    expect(err.message).to.contain('(no browser could be started: the Grid has no free slot)');
    // Once the Grid has room, the browser joins and takes the next capture.
    launcher.callsFake(async (_opts, id) => stubSlot(id));
    const next = pool.acquire();
    await clock.tickAsync(30_000);
    expect(await next).to.equal(launched[0]);
  });

  it('replaces a browser given back broken', async () => {
    await startPool({ sessions: 1 });
    const broken = await pool.acquire();
    broken.broken = true;
    pool.release(broken);
    await settle();
    sinon.assert.calledOnce(launched[0]!.quit);
    expect(launcher.lastCall.args).to.deep.equal([LAUNCH, 2]);
    expect(await pool.acquire()).to.equal(launched[1]);
    expect(pool.stats.sessions).to.equal(1);
  });

  it('retires an idle browser at once, and a busy one when it is given back', async () => {
    await startPool({ sessions: 2 });
    const [idle, busy] = launched as [StubSlot, StubSlot];
    ready.add(busy.id);
    expect(await pool.acquire()).to.equal(busy);
    pool.retire(idle);
    await settle();
    sinon.assert.calledOnce(idle.quit);
    pool.retire(busy);
    await settle();
    sinon.assert.notCalled(busy.quit);
    expect(busy.broken).to.equal(true);
    pool.release(busy);
    await settle();
    sinon.assert.calledOnce(busy.quit);
    // Each was replaced by a new browser.
    expect(launcher.args.map(([, id]) => id)).to.deep.equal([1, 2, 3, 4]);
    expect(pool.stats).to.deep.equal({ sessions: 2, busy: 0, queued: 0 });
  });

  it('retires a browser as soon as it is found gone, and starts another', async () => {
    await startPool({ sessions: 1 });
    const [slot] = launched as [StubSlot];
    lostListeners.get(slot.id)!(new Error('CDP connection closed'));
    await settle();
    sinon.assert.calledOnce(slot.quit);
    expect(log.warn.firstCall.args[0]).to.equal('Browser session 1 is gone (CDP connection closed); replacing it.');
    expect(await pool.acquire()).to.equal(launched[1]);
  });

  it('pings idle browsers so the Grid keeps their sessions, and replaces one that does not answer', async () => {
    await startPool({ sessions: 3 });
    const [busy, quiet, silent] = launched as [StubSlot, StubSlot, StubSlot];
    ready.add(busy.id);
    expect(await pool.acquire()).to.equal(busy);
    silent.ping.rejects(new Error('invalid session id'));
    await clock.tickAsync(KEEP_ALIVE_MS);
    sinon.assert.notCalled(busy.ping);
    sinon.assert.calledOnce(quiet.ping);
    sinon.assert.calledOnce(silent.ping);
    sinon.assert.notCalled(quiet.quit);
    sinon.assert.calledOnce(silent.quit);
    expect(log.warn.firstCall.args[0]).to.equal('Browser session 3 stopped answering (invalid session id); replacing it.');
    expect(launcher.lastCall.args[1]).to.equal(4);
  });

  it('on stop, turns waiting and new captures away and quits every browser for good', async () => {
    await startPool({ sessions: 2 });
    const first = await pool.acquire();
    await pool.acquire();
    const waiting = rejection(pool.acquire());
    await pool.stop();
    const err = await waiting;
    expect(err.type).to.equal('capacity_exhausted');
    expect(err.message).to.equal('The capture service is shutting down; retry shortly.');
    for (const slot of launched) sinon.assert.calledOnce(slot.quit);
    expect((await rejection(pool.acquire())).type).to.equal('capacity_exhausted');
    // A capture that ends after the stop gives its browser back to no one.
    pool.release(first);
    await clock.tickAsync(60_000);
    sinon.assert.callCount(launcher, 2);
  });

  it('once draining, replaces no browser that dies, while the others go on serving', async () => {
    await startPool({ sessions: 2 });
    const [dying, other] = launched as [StubSlot, StubSlot];
    pool.drain();
    lostListeners.get(dying.id)!(new Error('CDP connection closed'));
    await clock.tickAsync(60_000);
    sinon.assert.calledOnce(dying.quit);
    sinon.assert.callCount(launcher, 2);
    expect(await pool.acquire()).to.equal(other);
  });

  it('on stop, waits for a browser still starting and quits it', async () => {
    let finishLaunch: (slot: BrowserSlot) => void = () => undefined;
    launcher.callsFake((_opts, id) => (id === 1 ? Promise.resolve(stubSlot(id)) : new Promise((resolve) => (finishLaunch = resolve))));
    const starting = startPool({ sessions: 2 });
    await clock.tickAsync(15_000); // start() waits this long for the sessions, then goes on
    await starting;
    const stopped = pool.stop().then(() => 'stopped');
    await settle();
    expect(await Promise.race([stopped, Promise.resolve('waiting')])).to.equal('waiting');
    const late = stubSlot(2);
    finishLaunch(late);
    expect(await stopped).to.equal('stopped');
    sinon.assert.calledOnce(late.quit);
  });
});
