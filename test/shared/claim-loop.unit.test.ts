/**
 * shared/claim-loop.ts over a queue held in the test (what the loop claims is the caller's;
 * the job worker's and the dispatcher's claims on real databases are in
 * test/capture/worker.test.ts, research-queue.test.ts and test/notifier/deliveries.test.ts):
 * the concurrency cap, a pump that arrives while a claim is under way, the poll, wakeIn, stop with
 * its grace, idle, and the resource asked for before each claim.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { ClaimLoop } from '../../services/shared/claim-loop';

/** A promise and the function that settles it. */
function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** Lets pending promise callbacks run (several turns of the microtask queue and one of the event loop). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

/** True when `p` has settled by the time the queue has drained. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(
    () => (done = true),
    () => (done = true),
  );
  await settle();
  return done;
}

/**
 * Work the test controls: `queue` is what a claim finds, each claim may be held at `claimGate`
 * (after reading, as a claim that read before new work was committed), and each piece runs
 * until the test finishes it.
 */
function harness(opts: { concurrency?: number; pollMs?: number } = {}) {
  const queue: string[] = [];
  const claimed: string[] = [];
  const running = new Map<string, () => void>();
  let claimGate: Promise<void> | null = null;
  let failing: Error | null = null;
  let claims = 0;
  const log = { info: sinon.stub(), warn: sinon.stub(), error: sinon.stub() };
  const work = {
    claim: sinon.spy(async (_held: undefined) => {
      claims++;
      const failure = failing;
      const item = failure ? null : (queue.shift() ?? null);
      if (claimGate) await claimGate;
      if (failure) throw failure;
      return item;
    }),
    run: sinon.spy(
      (item: string) =>
        new Promise<void>((resolve) => {
          claimed.push(item);
          running.set(item, () => {
            running.delete(item);
            resolve();
          });
        }),
    ),
  };
  const loop = new ClaimLoop<string>(work, { concurrency: opts.concurrency ?? 2, pollMs: opts.pollMs ?? 60_000, log, what: 'a test item' });
  return {
    loop,
    queue,
    claimed,
    running,
    log,
    work,
    get claims() {
      return claims;
    },
    holdClaims(g: Promise<void> | null) {
      claimGate = g;
    },
    /** Claims fail with `err` from now (null: they work again). */
    failClaims(err: Error | null) {
      failing = err;
    },
    finish(item: string) {
      const done = running.get(item);
      if (!done) throw new Error(`${item} is not running`);
      done();
    },
  };
}

describe('ClaimLoop', () => {
  afterEach(() => sinon.restore());

  it('runs at most `concurrency` pieces at once, and claims the next when one ends', async () => {
    const h = harness({ concurrency: 2 });
    h.queue.push('a', 'b', 'c', 'd');
    await h.loop.pump();
    expect(h.claimed).to.deep.equal(['a', 'b']);
    expect(h.loop.running).to.equal(2);
    // At the cap, a pump claims nothing.
    const before = h.claims;
    await h.loop.pump();
    expect(h.claims).to.equal(before);
    h.finish('a');
    await settle();
    expect(h.claimed).to.deep.equal(['a', 'b', 'c']);
    expect(h.loop.running).to.equal(2);
    h.finish('b');
    h.finish('c');
    await settle();
    expect(h.claimed).to.deep.equal(['a', 'b', 'c', 'd']);
    h.finish('d');
    await h.loop.stop();
    expect(h.loop.running).to.equal(0);
  });

  it('a pump that arrives while a claim is under way gets one more round, which claims the work that came meanwhile', async () => {
    const h = harness();
    const held = gate();
    h.holdClaims(held.opened);
    // The first round's claim has read the queue (empty) and not finished yet.
    const first = h.loop.pump();
    await settle();
    expect(h.claims).to.equal(1);
    // Work arrives, and three pumps with it: recorded, not dropped, and one round serves them all.
    h.queue.push('late');
    const pumps = [h.loop.pump(), h.loop.pump(), h.loop.pump()];
    expect(await settled(pumps[0]!), 'resolved before a round that began after it').to.equal(false);
    h.holdClaims(null);
    held.open();
    await first;
    await Promise.all(pumps);
    expect(h.claimed).to.deep.equal(['late']);
    // The first round's claim, then one more round: "late", then none.
    expect(h.claims).to.equal(3);
    h.finish('late');
    await h.loop.stop();
  });

  it('polls every pollMs once started with polling; started without, it claims only when pumped', async () => {
    const clock = sinon.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const polled = harness({ pollMs: 1_000 });
    polled.loop.start();
    await settle();
    const still = harness({ pollMs: 1_000 });
    still.loop.start(false);
    await settle();
    polled.queue.push('a');
    still.queue.push('a');
    await clock.tickAsync(999);
    expect(polled.claimed).to.deep.equal([]);
    await clock.tickAsync(1);
    await settle();
    expect(polled.claimed).to.deep.equal(['a']);
    await clock.tickAsync(5_000);
    expect(still.claimed).to.deep.equal([]);
    await still.loop.pump();
    expect(still.claimed).to.deep.equal(['a']);
    // Stopping ends the poll: nothing is claimed after it.
    polled.loop.stopClaiming();
    polled.queue.push('b');
    await clock.tickAsync(5_000);
    await settle();
    expect(polled.claimed).to.deep.equal(['a']);
    clock.restore();
    polled.finish('a');
    still.finish('a');
    await Promise.all([polled.loop.idle(), still.loop.idle()]);
  });

  it('wakeIn(ms) claims once more after ms, long before the poll; not when started without polling, nor once stopping', async () => {
    const clock = sinon.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'Date'] });
    const polled = harness({ pollMs: 60_000 });
    polled.loop.start();
    const still = harness({ pollMs: 60_000 });
    still.loop.start(false);
    await clock.tickAsync(0);
    // Asked for 5020, then for 5000 (shares the round at 5020: never one before its time), and for 8000.
    polled.loop.wakeIn(5_020);
    polled.loop.wakeIn(5_000);
    polled.loop.wakeIn(8_000);
    still.loop.wakeIn(5_000);
    polled.queue.push('a');
    still.queue.push('a');
    const before = polled.claims;
    await clock.tickAsync(5_019);
    expect(polled.claimed).to.deep.equal([]);
    await clock.tickAsync(1);
    await clock.tickAsync(100);
    expect(polled.claimed).to.deep.equal(['a']);
    // One round (the claim of "a", then one that finds none).
    expect(polled.claims - before).to.equal(2);
    polled.queue.push('b');
    await clock.tickAsync(2_879);
    expect(polled.claimed).to.deep.equal(['a']);
    await clock.tickAsync(1);
    await clock.tickAsync(0);
    expect(polled.claimed).to.deep.equal(['a', 'b']);
    // A time just after one already asked for gets its own round (the earlier one would find it not due).
    polled.finish('a');
    await clock.tickAsync(0);
    polled.loop.wakeIn(1_000);
    polled.loop.wakeIn(1_030);
    await clock.tickAsync(1_005);
    polled.queue.push('c');
    await clock.tickAsync(24);
    expect(polled.claimed).to.deep.equal(['a', 'b']);
    await clock.tickAsync(1);
    await clock.tickAsync(0);
    expect(polled.claimed).to.deep.equal(['a', 'b', 'c']);
    // Started without polling, nothing but a pump claims.
    await clock.tickAsync(10_000);
    expect(still.claimed).to.deep.equal([]);
    // Once stopping, a wake asked for claims nothing.
    polled.loop.stopClaiming();
    polled.queue.push('d');
    polled.loop.wakeIn(1_000);
    await clock.tickAsync(2_000);
    expect(polled.claimed).to.deep.equal(['a', 'b', 'c']);
    clock.restore();
    polled.finish('b');
    polled.finish('c');
    await Promise.all([polled.loop.idle(), still.loop.idle()]);
  });

  it('a wake further off than setTimeout can wait (24.8 days) waits, re-armed, instead of firing at once again and again', async () => {
    const clock = sinon.useFakeTimers({ toFake: ['setInterval', 'clearInterval', 'setTimeout', 'clearTimeout', 'Date'] });
    const h = harness({ pollMs: 60_000 });
    h.loop.start();
    await clock.tickAsync(0);
    h.loop.wakeIn(35 * 24 * 3_600_000);
    // The next timer to fire is the poll's, a minute on; a wake past setTimeout's limit would fire in 1 ms.
    const before = clock.now;
    clock.next();
    expect(clock.now - before, 'ms to the next timer').to.equal(60_000);
    h.queue.push('a');
    await clock.tickAsync(35 * 24 * 3_600_000);
    expect(h.claimed).to.deep.equal(['a']);
    clock.restore();
    h.finish('a');
    await h.loop.idle();
  });

  it('stop(graceMs) claims no more and waits for the running work at most graceMs; idle() waits for it to end', async () => {
    const h = harness({ concurrency: 2 });
    h.queue.push('a', 'b');
    await h.loop.pump();
    h.queue.push('c');
    const t0 = Date.now();
    await h.loop.stop(150);
    const waited = Date.now() - t0;
    expect(waited).to.be.at.least(140).and.below(2_000);
    expect(h.loop.stopping).to.equal(true);
    expect(h.loop.running, 'still running after the grace').to.equal(2);
    const idle = h.loop.idle();
    h.finish('a');
    await settle();
    expect(h.claimed, 'no claim once stopping').to.deep.equal(['a', 'b']);
    expect(await settled(idle), 'idle before its last piece ended').to.equal(false);
    h.finish('b');
    await idle;
    expect(h.loop.running).to.equal(0);
    expect(await settled(h.loop.pump())).to.equal(true);
    expect(h.claimed).to.deep.equal(['a', 'b']);
  });

  it('stop() without a grace waits for the claim under way and the running work; that claim claims no more after it', async () => {
    const h = harness({ concurrency: 3 });
    h.queue.push('a', 'b', 'c');
    const held = gate();
    // The first claim ("a") is under way when the loop stops.
    h.holdClaims(held.opened);
    const pumped = h.loop.pump();
    await settle();
    const stopped = h.loop.stop();
    expect(await settled(stopped)).to.equal(false);
    h.holdClaims(null);
    held.open();
    await pumped;
    // The piece it claimed runs; the round claimed nothing after it.
    expect(h.claimed).to.deep.equal(['a']);
    expect(h.claims).to.equal(1);
    expect(await settled(stopped), 'stopped while a piece runs').to.equal(false);
    h.finish('a');
    await stopped;
    expect(h.loop.running).to.equal(0);
  });

  it('idle() waits for the claim under way and the round a pump recorded meanwhile', async () => {
    const h = harness();
    const held = gate();
    h.holdClaims(held.opened);
    void h.loop.pump();
    await settle();
    h.queue.push('late');
    void h.loop.pump();
    const idle = h.loop.idle();
    h.holdClaims(null);
    held.open();
    await settle();
    // The recorded round claimed "late", which now runs: still not idle.
    expect(h.claimed).to.deep.equal(['late']);
    expect(await settled(idle)).to.equal(false);
    h.finish('late');
    await idle;
    await h.loop.stop();
  });

  it(
    'asks for the resource before each claim, hands it to the piece claimed with it, and gives it back when nothing was claimed, the claim failed, or the ' +
      'loop stopped meanwhile',
    async () => {
      let n = 0;
      const before = { acquire: sinon.spy(async () => `r${++n}`), giveBack: sinon.spy((_r: string) => undefined) };
      const queue: Array<string | Error> = ['a'];
      const ran: Array<[string, string]> = [];
      const log = { info: sinon.stub(), warn: sinon.stub(), error: sinon.stub() };
      const work = {
        claim: sinon.spy(async (_held: string) => {
          const next = queue.shift() ?? null;
          if (next instanceof Error) throw next;
          return next;
        }),
        run: async (item: string, held: string) => {
          ran.push([item, held]);
        },
      };
      const loop = new ClaimLoop<string, string>(work, { concurrency: 2, pollMs: 60_000, before, log, what: 'an item' });
      await loop.pump();
      // r1 went with "a"; r2 was asked for, the claim found nothing, and it went back.
      expect(ran).to.deep.equal([['a', 'r1']]);
      expect(work.claim.args.map(([r]) => r)).to.deep.equal(['r1', 'r2']);
      sinon.assert.callOrder(before.acquire, work.claim);
      expect(before.giveBack.args).to.deep.equal([['r2']]);

      queue.push(new Error('the database is gone'));
      await loop.pump();
      expect(before.giveBack.args).to.deep.equal([['r2'], ['r3']]);
      sinon.assert.calledOnceWithExactly(log.warn, 'claiming an item failed: the database is gone');

      // Stopped while waiting for the resource: it goes back unused, no claim is made.
      const slow = gate();
      before.acquire = sinon.spy(async () => {
        await slow.opened;
        return 'r4';
      });
      queue.push('b');
      const pumped = loop.pump();
      await settle();
      loop.stopClaiming();
      slow.open();
      await pumped;
      expect(before.giveBack.args).to.deep.equal([['r2'], ['r3'], ['r4']]);
      expect(work.claim.callCount).to.equal(3);
      expect(ran).to.deep.equal([['a', 'r1']]);
      await loop.idle();
    },
  );

  it('logs a failed claim, unless it is stopping, and claims again on the next pump', async () => {
    const h = harness();
    h.queue.push('a');
    h.failClaims(new Error('lock wait timeout'));
    await h.loop.pump();
    sinon.assert.calledOnceWithExactly(h.log.warn, 'claiming a test item failed: lock wait timeout');
    h.failClaims(null);
    await h.loop.pump();
    expect(h.claimed).to.deep.equal(['a']);
    h.finish('a');
    await h.loop.idle();
    // A claim that fails because the service is stopping (its pool or database closed) is no news.
    const closing = gate();
    h.holdClaims(closing.opened);
    h.failClaims(new Error('the pool is closed'));
    const pumped = h.loop.pump();
    await settle();
    h.loop.stopClaiming();
    closing.open();
    await pumped;
    sinon.assert.calledOnce(h.log.warn);
  });

  it('logs an outage once, not once per poll: its first failure, a failure of another kind, and when claims work again', async () => {
    const h = harness();
    h.failClaims(new Error('connect ECONNREFUSED 127.0.0.1:6379'));
    for (let i = 0; i < 5; i++) await h.loop.pump();
    h.failClaims(new Error('the database is gone'));
    await h.loop.pump();
    await h.loop.pump();
    expect(h.log.warn.args.map((a) => a[0])).to.deep.equal([
      'claiming a test item failed: connect ECONNREFUSED 127.0.0.1:6379',
      'claiming a test item failed: the database is gone',
    ]);
    sinon.assert.notCalled(h.log.info);
    h.failClaims(null);
    h.queue.push('a');
    await h.loop.pump();
    await h.loop.pump();
    sinon.assert.calledOnceWithExactly(h.log.info, 'claiming a test item works again, after 7 failed claims');
    expect(h.claimed).to.deep.equal(['a']);
    // A new outage is news again.
    h.failClaims(new Error('connect ECONNREFUSED 127.0.0.1:6379'));
    await h.loop.pump();
    expect(h.log.warn.callCount).to.equal(3);
    h.failClaims(null);
    h.finish('a');
    await h.loop.idle();
  });
});
