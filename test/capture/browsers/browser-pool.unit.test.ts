/**
 * BrowserPool with its browsers stubbed (sinon): the launcher hands out stub BrowserSlots,
 * so capacity, the wait queue, the choice of browser and the replacement of broken, lost
 * and silent browsers are checked in milliseconds, with sinon's clock for the timers. The
 * fair order and the accounts' limits run with the real ConcurrencyAdmission over counts in the process.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { MemoryAccountSlots, type Ticket } from '../../../services/capture/fairness/account-slots';
import { ConcurrencyAdmission } from '../../../services/capture/fairness/concurrency-admission';
import { BrowserPool, type Claim, type PoolOptions } from '../../../services/capture/browsers/browser-pool';
import { BrowserSlot, type LaunchOptions } from '../../../services/capture/browsers/browser-slot';

const LAUNCH: LaunchOptions = { seleniumUrl: 'http://127.0.0.1:4444', chromeBin: null, chromedriverBin: '/usr/bin/chromedriver', extraArgs: [] };
const QUEUE_TIMEOUT_MS = 30_000;
const KEEP_ALIVE_MS = 20_000;

type StubSlot = sinon.SinonStubbedInstance<BrowserSlot> & BrowserSlot;

describe('BrowserPool (unit: browsers stubbed)', () => {
  let clock: sinon.SinonFakeTimers;
  let launched: StubSlot[];
  /** The listener each slot's onLost was given, by slot id. */
  let lostListeners: Map<number, (err: Error) => void>;
  /** The listener each slot's onSessionUnknown was given, by slot id. */
  let unknownListeners: Map<number, (err: Error) => void>;
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
    slot.onSessionUnknown.callsFake((listener) => void unknownListeners.set(id, listener));
    slot.quit.resolves();
    slot.ping.resolves();
    launched.push(slot);
    return slot;
  }

  async function startPool(opts: Partial<PoolOptions> = {}, admission?: ConcurrencyAdmission): Promise<BrowserPool> {
    pool = new BrowserPool(
      LAUNCH,
      { sessions: 2, queueMax: 2, queueTimeoutMs: QUEUE_TIMEOUT_MS, keepAliveMs: KEEP_ALIVE_MS, ...opts },
      { log, launcher, gate: admission },
    );
    await pool.start();
    return pool;
  }

  /** The real ConcurrencyAdmission over counts in this process; a capture that ends wakes the pool, as in the service. */
  function admissionFor(): ConcurrencyAdmission {
    const admission = new ConcurrencyAdmission({
      slots: new MemoryAccountSlots(60_000),
      leaseMs: 60_000,
      accountOf: () => Promise.reject(new Error('no jobs here')),
      captureSeconds: () => pool.captureSeconds,
      log,
    });
    admission.onFinished(() => pool.wake());
    return admission;
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
    unknownListeners = new Map();
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

  it('lets a snap taken again after its instance disappeared wait past a full queue, in the place its arrival gives it', async () => {
    await startPool({ sessions: 1, queueMax: 1 });
    const held = await pool.acquire();
    const newer = pool.acquire({ cls: 'snap', ticket: null });
    const again = pool.acquire({ cls: 'snap', ticket: null, since: Date.now() - 10_000, again: true });
    expect(pool.stats.queued).to.equal(2);
    pool.release(held);
    // The one that came first (on the instance that died) gets the browser first.
    const first = await Promise.race([again.then(() => 'again'), newer.then(() => 'newer')]);
    expect(first).to.equal('again');
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

  it('retires the browsers of the sessions named (a draining Grid node): idle ones at once, busy ones after their capture', async () => {
    await startPool({ sessions: 3 });
    const [idle, busy, elsewhere] = launched as [StubSlot, StubSlot, StubSlot];
    Object.assign(idle, { sessionId: 's-idle' });
    Object.assign(busy, { sessionId: 's-busy' });
    Object.assign(elsewhere, { sessionId: 's-up' });
    ready.add(busy.id);
    expect(await pool.acquire()).to.equal(busy);
    expect(pool.retireSessions(new Set(['s-idle', 's-busy', 's-gone']))).to.equal(2);
    await settle();
    sinon.assert.calledOnce(idle.quit);
    sinon.assert.notCalled(busy.quit);
    sinon.assert.notCalled(elsewhere.quit);
    // Named again at the next look: not retired twice.
    expect(pool.retireSessions(new Set(['s-busy']))).to.equal(0);
    pool.release(busy);
    await settle();
    sinon.assert.calledOnce(busy.quit);
    expect(launcher.callCount).to.equal(5);
    expect(pool.stats).to.deep.equal({ sessions: 3, busy: 0, queued: 0 });
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

  it('closes and replaces a browser whose session the Grid no longer knows (its hub restarted): an idle one at once, a busy one after its capture', async () => {
    await startPool({ sessions: 2 });
    const [idle, busy] = launched as [StubSlot, StubSlot];
    ready.add(busy.id);
    expect(await pool.acquire()).to.equal(busy);
    const unknown = new Error('Unable to find session with ID: 1\nBuild info: version: 4.20.0');
    // BrowserSlot.ping marks the slot broken as it reports the unknown session.
    for (const slot of [idle, busy]) {
      Object.assign(slot, { broken: true, unknown });
      unknownListeners.get(slot.id)!(unknown);
    }
    await settle();
    sinon.assert.calledOnce(idle.quit);
    sinon.assert.notCalled(busy.quit);
    expect(log.warn.args.map(([m]) => m)).to.deep.equal([
      'Browser session 1 is no longer known to the Grid (Unable to find session with ID: 1); closing and replacing it.',
      'Browser session 2 is no longer known to the Grid (Unable to find session with ID: 1); closing and replacing it once its capture ends.',
    ]);
    pool.release(busy);
    await settle();
    sinon.assert.calledOnce(busy.quit);
    expect(launcher.args.map(([, id]) => id)).to.deep.equal([1, 2, 3, 4]);
    expect(pool.stats).to.deep.equal({ sessions: 2, busy: 0, queued: 0 });
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

  it('once draining, answers what waits at once when its last browser is gone and none is starting (a replacement discarded as it came)', async () => {
    let finishLaunch: (slot: BrowserSlot) => void = () => undefined;
    launcher.callsFake((_opts, id) => (id === 1 ? Promise.resolve(stubSlot(id)) : new Promise((resolve) => (finishLaunch = resolve))));
    await startPool({ sessions: 1 });
    const [only] = launched as [StubSlot];
    const capture = await pool.acquire();
    // The job worker's ask has no queue timeout: it waits for the next free browser.
    const workerAsk = pool.acquire({ cls: 'jobs', ticket: null }).then(
      () => 'granted',
      (err: Error & { type?: string }) => err.type,
    );
    lostListeners.get(only.id)!(new Error('CDP connection closed'));
    pool.release(capture); // its replacement starts
    pool.drain(); // shutdown begins while it does
    await settle();
    expect(await Promise.race([workerAsk, Promise.resolve('waiting')]), 'a browser is still starting').to.equal('waiting');
    const late = stubSlot(2);
    finishLaunch(late);
    await settle();
    expect(await Promise.race([workerAsk, Promise.resolve('waiting')])).to.equal('capacity_exhausted');
    sinon.assert.calledOnce(late.quit);
    expect((await rejection(pool.acquire())).type, 'and what asks later').to.equal('capacity_exhausted');
  });

  describe("the fair order and the accounts' limits", () => {
    const limits = { maxConcurrent: 5, maxQueued: 5 };
    let n = 0;
    const ticketOf = (accountId: string, l = limits): Ticket => ({ id: `t${++n}`, accountId, limits: l });
    const snapOf = (t: Ticket): Claim => ({ cls: 'snap', ticket: t });

    /**
     * Asks for a browser as `claim`; once it has one, notes `name` in `order` and gives the
     * browser back 1 ms later (a capture that takes 1 ms).
     */
    function hold(name: string, claim: Claim, order: string[]): Promise<void> {
      return pool.acquire(claim).then((slot) => {
        order.push(name);
        setTimeout(() => pool.release(slot), 1);
      });
    }

    /** Lets the clock run until `count` grants are noted (or 100 ms). */
    async function untilGranted(order: string[], count: number): Promise<void> {
      for (let i = 0; i < 100 && order.length < count; i++) await clock.tickAsync(1);
    }

    it('gives the next free browser to the account that has waited longest for its turn, not to whoever queued most', async () => {
      const admission = admissionFor();
      await startPool({ sessions: 1, queueMax: 10 }, admission);
      const a0 = ticketOf('A');
      await admission.admit(a0);
      const busy = await pool.acquire(snapOf(a0));
      const order: string[] = [];
      const waits: Array<Promise<void>> = [];
      // A queues three more captures, then B and C one each, 1 ms apart.
      for (const name of ['A1', 'A2', 'A3', 'B1', 'C1']) {
        const t = ticketOf(name.slice(0, 1));
        await admission.admit(t);
        waits.push(hold(name, snapOf(t), order));
        await clock.tickAsync(1);
      }
      pool.release(busy);
      await untilGranted(order, 5);
      await Promise.all(waits);
      // A had its turn, so B and C, waiting since before A's next turn began, come before A again.
      expect(order).to.deep.equal(['A1', 'B1', 'C1', 'A2', 'A3']);
    });

    it("at a full queue, the newest capture of an account with two more waiting gives its place to another account's; else the newcomer is turned away", async () => {
      const admission = admissionFor();
      await startPool({ sessions: 1, queueMax: 2 }, admission);
      const [a0, a1, a2, b1, c1] = [ticketOf('A'), ticketOf('A'), ticketOf('A'), ticketOf('B'), ticketOf('C')];
      for (const t of [a0, a1, a2, b1, c1]) await admission.admit(t);
      const busy = await pool.acquire(snapOf(a0));
      const order: string[] = [];
      const waitA1 = hold('A1', snapOf(a1), order);
      const waitA2 = rejection(pool.acquire(snapOf(a2)));
      await settle();
      // The queue holds A1 and A2; B arrives: A, with two more waiting than B, gives up its newest.
      const waitB1 = hold('B1', snapOf(b1), order);
      const gaveWay = await waitA2;
      expect(gaveWay.type).to.equal('capacity_exhausted');
      expect(gaveWay.message).to.contain("gave its place to another account's");
      expect(pool.stats.queued).to.equal(2);
      // A one, B one: nobody has two more than C, so C is the one turned away.
      const turnedAway = await rejection(pool.acquire(snapOf(c1)));
      expect(turnedAway.message).to.equal('All 1 browsers are busy and 2 captures are waiting; retry shortly.');
      pool.release(busy);
      await untilGranted(order, 2);
      await Promise.all([waitA1, waitB1]);
      expect(order).to.deep.equal(['A1', 'B1']);
    });

    it("lets no account hold more browsers than its plan runs at once: the free browser goes to the next account's capture", async () => {
      const admission = admissionFor();
      await startPool({ sessions: 2 }, admission);
      const one = { maxConcurrent: 1, maxQueued: 2 };
      const [a1, a2, b1] = [ticketOf('A', one), ticketOf('A', one), ticketOf('B', one)];
      for (const t of [a1, a2, b1]) await admission.admit(t);
      const first = await pool.acquire(snapOf(a1));
      let second: BrowserSlot | null = null;
      const waiting = pool.acquire(snapOf(a2)).then((s) => {
        second = s;
      });
      await settle();
      // A runs all it may: its second capture waits though a browser is free, for A's first
      // capture, not for a browser: waiting here, but not for a browser (an autoscaler reads that).
      expect(second).to.equal(null);
      expect(pool.stats).to.deep.include({ busy: 1, queued: 1 });
      expect(pool.waitingForBrowser).to.equal(0);
      const other = await pool.acquire(snapOf(b1));
      expect(other).to.not.equal(first);
      // A's first capture ends: its second starts, on the browser A's first gave back.
      pool.release(first);
      await admission.finish(a1);
      await waiting;
      expect(second).to.equal(first);
    });

    it('counts as waiting for a browser the captures another browser would start: not those their own plan holds back, while that is known', async () => {
      const admission = admissionFor();
      await startPool({ sessions: 2, queueMax: 10 }, admission);
      const one = { maxConcurrent: 1, maxQueued: 4 };
      const [a1, a2, a3, b1, c1] = [ticketOf('A', one), ticketOf('A', one), ticketOf('A', one), ticketOf('B', one), ticketOf('C', one)];
      for (const t of [a1, a2, a3, b1, c1]) await admission.admit(t);
      const first = await pool.acquire(snapOf(a1));
      const held = [pool.acquire(snapOf(a2)), pool.acquire(snapOf(a3))];
      for (const h of held) h.catch(() => undefined);
      await settle();
      expect(pool.stats, "A's two waiting here, a browser free").to.deep.equal({ sessions: 2, busy: 1, queued: 2 });
      expect(pool.waitingForBrowser, "A's two held by its plan, not by a browser").to.equal(0);
      const other = await pool.acquire(snapOf(b1));
      const waitingC = pool.acquire(snapOf(c1));
      waitingC.catch(() => undefined);
      await settle();
      expect(pool.waitingForBrowser, "every browser busy: C's capture waits for one, A's still for A's").to.equal(1);
      // With every browser busy, A is not asked again: what its plan said lapses, and its captures count again.
      await clock.tickAsync(2_000);
      expect(pool.waitingForBrowser, 'the mark lapsed').to.equal(3);
      pool.release(other);
      await admission.finish(b1);
      const cSlot = await waitingC;
      // A's first ends: its second starts; once a browser is free again, its third is held by its plan again.
      pool.release(first);
      await admission.finish(a1);
      await held[0];
      pool.release(cSlot);
      await admission.finish(c1);
      await settle();
      expect(pool.stats).to.deep.equal({ sessions: 2, busy: 1, queued: 1 });
      expect(pool.waitingForBrowser, "A's third, held again by its plan").to.equal(0);
    });

    it("serves /snap's captures before the job worker's ask, but gives the worker at least one browser in four", async () => {
      await startPool({ sessions: 1, queueMax: 10 });
      const busy = await pool.acquire();
      const order: string[] = [];
      const waits = [hold('J', { cls: 'jobs', ticket: null }, order)];
      for (let i = 1; i <= 5; i++) waits.push(hold(`S${i}`, snapOf(ticketOf(`S${i}`)), order));
      await settle();
      // The worker's ask is not a capture: never counted as waiting (nor timed out).
      expect(pool.stats.queued).to.equal(5);
      pool.release(busy);
      await untilGranted(order, 6);
      await Promise.all(waits);
      expect(order).to.deep.equal(['S1', 'S2', 'S3', 'J', 'S4', 'S5']);
    });

    it('answers a capture that waited the whole queue timeout 429 when its own account held it back, 503 when the service was full', async () => {
      const admission = admissionFor();
      await startPool({ sessions: 2, queueMax: 10 }, admission);
      const one = { maxConcurrent: 1, maxQueued: 2 };
      const [a1, a2] = [ticketOf('A', one), ticketOf('A', one)];
      for (const t of [a1, a2]) await admission.admit(t);
      await pool.acquire(snapOf(a1));
      const own = rejection(pool.acquire(snapOf(a2)));
      await clock.tickAsync(QUEUE_TIMEOUT_MS);
      const err = await own;
      expect(err.type).to.equal('concurrency_limit_reached');
      expect(err.message).to.contain(`waited ${QUEUE_TIMEOUT_MS} ms (CAPTURE_QUEUE_TIMEOUT_MS) behind this account's own 1 running captures`);
      expect(err.data?.retryAfter).to.be.at.least(1);
      // Every browser busy with other accounts' captures: the service is full, 503.
      const b1 = ticketOf('B');
      await admission.admit(b1);
      await pool.acquire(snapOf(b1));
      const c1 = ticketOf('C');
      await admission.admit(c1);
      const full = rejection(pool.acquire(snapOf(c1)));
      await clock.tickAsync(QUEUE_TIMEOUT_MS);
      expect((await full).type).to.equal('capacity_exhausted');
    });
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
