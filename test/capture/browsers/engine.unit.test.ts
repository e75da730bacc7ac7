/**
 * CaptureEngine with its collaborators stubbed (sinon): the pool and its browser slots, and
 * the capture on the page itself. What the engine decides (which browser, when to take a
 * capture again, the time budget, giving the browser back and replacing it) is checked here
 * in milliseconds; the same paths with real browsers are in snap.test.ts and actions.test.ts.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import type { BlockerSource } from '../../../services/capture/page/blocking';
import { BrowserPool } from '../../../services/capture/browsers/browser-pool';
import { BrowserSlot, type PreparedPage } from '../../../services/capture/browsers/browser-slot';
import { CdpConnection, CdpError } from '../../../services/capture/page/cdp';
import { EgressPolicy } from '../../../services/shared/egress';
import { CaptureEngine, turnOf } from '../../../services/capture/browsers/engine';
import { BrowserHiccup, type CaptureContext, type CaptureOutput } from '../../../services/capture/page/page-capture';
import { serviceError } from '../../../services/shared/errors';
import type { SnapOptions } from '../../../services/shared/screenshot-options';

const OPTIONS: SnapOptions = { url: 'https://example.com/' };
const OUTPUT: CaptureOutput = { image: Buffer.from('jpeg'), contentType: 'image/jpeg' };
const TIMEOUT_MS = 60_000;

const pageOf = (id: number): PreparedPage => ({
  contextId: `context-${id}`,
  targetId: `target-${id}`,
  sessionId: `session-${id}`,
  mainFrameId: `frame-${id}`,
  viewport: { width: 1920, height: 1000, scale: 1 },
});

/** What a command on a browser that died fails with. */
const gone = () => new CdpError('Page.navigate', 'CDP connection closed: the browser stopped answering');

/** A browser slot whose browser is a stub; `crash` is a page capture during which that browser dies. */
function stubSlot(id: number) {
  const slot = sinon.createStubInstance(BrowserSlot);
  const cdp = sinon.createStubInstance(CdpConnection);
  // The page's events as the engine subscribes to them (the page watch), to send them by hand.
  const listeners = new Map<string, (params: Record<string, unknown>, sessionId: string | undefined) => void>();
  cdp.on.callsFake((event, listener) => {
    listeners.set(event, listener);
    return () => listeners.delete(event);
  });
  cdp.send.resolves({});
  Object.assign(slot, { id, busy: true, broken: false, userAgent: 'Mozilla/5.0 Chrome/156', cdp });
  let lost = false;
  sinon.stub(slot, 'lost').get(() => lost);
  const unwatch = sinon.stub();
  slot.watch.returns(unwatch);
  slot.takePage.resolves(pageOf(id));
  slot.recycle.resolves();
  return {
    slot,
    unwatch,
    /** The browser sends an event of the page's session. */
    emit(event: string, params: Record<string, unknown> = {}) {
      listeners.get(event)?.(params, `session-${id}`);
    },
    die() {
      lost = true;
    },
    async crash(): Promise<never> {
      lost = true;
      throw gone();
    },
  };
}

async function rejection(p: Promise<unknown>): Promise<Error & { type?: string; data?: unknown }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { type?: string };
  }
  throw new Error('expected the capture to fail');
}

describe('CaptureEngine (unit: pool, browsers and page stubbed)', () => {
  let pool: sinon.SinonStubbedInstance<BrowserPool>;
  let runPage: sinon.SinonStub<[CaptureContext, SnapOptions], Promise<CaptureOutput>>;
  const policy = new EgressPolicy(true);
  const blocker: BlockerSource = () => Promise.reject(new Error('no blocking in these captures'));
  let engine: CaptureEngine;

  beforeEach(() => {
    pool = sinon.createStubInstance(BrowserPool);
    runPage = sinon.stub<[CaptureContext, SnapOptions], Promise<CaptureOutput>>();
    engine = new CaptureEngine({ pool, policy, blocker, timeoutMs: TIMEOUT_MS, runPage });
  });
  afterEach(() => sinon.restore());

  it('captures on the prepared page of a browser from the pool, with its own policy and blocker', async () => {
    const { slot, unwatch } = stubSlot(1);
    pool.acquire.resolves(slot);
    runPage.resolves(OUTPUT);
    const before = Date.now();
    expect(await engine.capture(OPTIONS)).to.equal(OUTPUT);
    sinon.assert.calledOnce(runPage);
    const [ctx, o] = runPage.firstCall.args;
    expect(o).to.equal(OPTIONS);
    expect(ctx.page).to.include({ sessionId: 'session-1', contextId: 'context-1', mainFrameId: 'frame-1' });
    expect(ctx.page.cdp).to.equal(slot.cdp);
    expect(ctx).to.include({ userAgent: 'Mozilla/5.0 Chrome/156', policy, blocker });
    expect(ctx.deadline).to.be.within(before + TIMEOUT_MS, Date.now() + TIMEOUT_MS);
    // The browser was watched while the capture ran, and given back.
    sinon.assert.calledOnce(slot.watch);
    sinon.assert.calledOnce(unwatch);
    sinon.assert.calledOnceWithExactly(pool.release, slot);
    expect(slot.broken).to.equal(false);
  });

  it("passes the page's prepared viewport on, and has the browser prepare its next page for this capture's", async () => {
    const { slot } = stubSlot(1);
    pool.acquire.resolves(slot);
    runPage.resolves(OUTPUT);
    await engine.capture({ ...OPTIONS, page_width: 1280, page_height: 800, scale_factor: 2 });
    expect(runPage.firstCall.args[0].page.viewport).to.deep.equal({ width: 1920, height: 1000, scale: 1 });
    expect(slot.nextViewport).to.deep.equal({ width: 1280, height: 800, scale: 2 });
  });

  it('hands the output to finish while it holds the browser, then disposes the used context and gives the browser back', async () => {
    const { slot } = stubSlot(1);
    pool.acquire.resolves(slot);
    runPage.resolves(OUTPUT);
    const finish = sinon.stub<[CaptureOutput], Promise<string>>().resolves('thumbnail made');
    expect(await engine.capture(OPTIONS, { finish })).to.equal('thumbnail made');
    sinon.assert.calledOnceWithExactly(finish, OUTPUT);
    sinon.assert.calledOnceWithExactly(slot.recycle, pageOf(1), sinon.match.number, undefined);
    sinon.assert.callOrder(slot.takePage, runPage, finish, slot.recycle, pool.release);
  });

  it("has the browser hold the used context back until the caller's answer, when it is told when", async () => {
    const { slot } = stubSlot(1);
    pool.acquire.resolves(slot);
    runPage.resolves(OUTPUT);
    const answered = new Promise<void>(() => undefined);
    await engine.capture(OPTIONS, { finish: async (out) => out, answered });
    sinon.assert.calledOnceWithExactly(slot.recycle, pageOf(1), sinon.match.number, answered);
  });

  it('takes a capture again, once, on another browser when its browser dies under it', async () => {
    const first = stubSlot(1);
    const second = stubSlot(2);
    pool.acquire.onFirstCall().resolves(first.slot).onSecondCall().resolves(second.slot);
    runPage.onFirstCall().callsFake(first.crash);
    runPage.onSecondCall().resolves(OUTPUT);
    expect(await engine.capture(OPTIONS)).to.equal(OUTPUT);
    expect(runPage.secondCall.args[0].page.sessionId).to.equal('session-2');
    // The dead browser goes back broken (the pool replaces it); the other one is fine.
    expect(first.slot.broken).to.equal(true);
    expect(second.slot.broken).to.equal(false);
    sinon.assert.calledWith(pool.release, first.slot);
    sinon.assert.calledWith(pool.release, second.slot);
    // Both attempts share one time budget.
    expect(runPage.secondCall.args[0].deadline).to.equal(runPage.firstCall.args[0].deadline);
  });

  it('answers page_crashed when the page kills a second browser too', async () => {
    const first = stubSlot(1);
    const second = stubSlot(2);
    pool.acquire.onFirstCall().resolves(first.slot).onSecondCall().resolves(second.slot);
    runPage.onFirstCall().callsFake(first.crash);
    runPage.onSecondCall().callsFake(second.crash);
    const err = await rejection(engine.capture(OPTIONS));
    expect(err.type).to.equal('page_crashed');
    expect(err.message).to.contain('twice, on two browsers');
    sinon.assert.calledTwice(runPage);
  });

  it("takes a capture again, once, on a fresh context when the browser's screenshot call fails, keeping the browser, and counts it", async () => {
    const observer = { browserFailed: sinon.stub() };
    engine = new CaptureEngine({ pool, policy, blocker, timeoutMs: TIMEOUT_MS, runPage, observer });
    const { slot } = stubSlot(1);
    pool.acquire.resolves(slot);
    runPage.onFirstCall().rejects(new BrowserHiccup('screenshot_failed', new CdpError('Page.captureScreenshot', 'Internal error')));
    runPage.onSecondCall().resolves(OUTPUT);
    expect(await engine.capture(OPTIONS)).to.equal(OUTPUT);
    sinon.assert.calledTwice(runPage);
    // Each attempt had a context of its own, disposed after it; the browser stays in service.
    sinon.assert.calledTwice(slot.takePage);
    sinon.assert.calledTwice(slot.recycle);
    expect(slot.broken).to.equal(false);
    sinon.assert.calledOnceWithExactly(observer.browserFailed, 'screenshot_failed', true);
  });

  it('answers browser_failed (502), not internal_error, when the browser fails the capture twice', async () => {
    const observer = { browserFailed: sinon.stub() };
    engine = new CaptureEngine({ pool, policy, blocker, timeoutMs: TIMEOUT_MS, runPage, observer });
    const { slot } = stubSlot(1);
    pool.acquire.resolves(slot);
    runPage.callsFake(() => Promise.reject(new BrowserHiccup('target_closed', new CdpError('Page.navigate', 'Target closed'))));
    const err = await rejection(engine.capture(OPTIONS));
    expect(err.type).to.equal('browser_failed');
    expect((err as { code?: number }).code).to.equal(502);
    expect(err.message).to.contain("closed the page's tab under the capture, twice");
    sinon.assert.calledTwice(runPage);
    expect(observer.browserFailed.args).to.deep.equal([
      ['target_closed', true],
      ['target_closed', false],
    ]);
  });

  it("answers page_crashed the moment the page's renderer crashes, without waiting for the capture, and keeps the browser", async () => {
    const stub = stubSlot(1);
    pool.acquire.resolves(stub.slot);
    runPage.returns(new Promise(() => undefined));
    const settled = engine.capture(OPTIONS).then(
      () => null,
      (e: Error & { type?: string }) => e,
    );
    await new Promise((r) => setImmediate(r));
    stub.emit('Inspector.targetCrashed');
    const err = await settled;
    expect(err?.type).to.equal('page_crashed');
    expect(err?.message).to.contain('ran out of memory');
    sinon.assert.calledOnce(runPage);
    sinon.assert.calledOnceWithExactly(pool.release, stub.slot);
    expect(stub.slot.broken).to.equal(false);
  });

  it('does not take a capture with multi_step_actions again (its steps may have acted on the site)', async () => {
    const first = stubSlot(1);
    pool.acquire.resolves(first.slot);
    runPage.callsFake(first.crash);
    const err = await rejection(engine.capture({ ...OPTIONS, multi_step_actions: [{ type: 'click', selector: '#send' }] }));
    expect(err.type).to.equal('browser_failed');
    expect(err.message).to.contain('not taken again by themselves');
    sinon.assert.calledOnce(runPage);
    sinon.assert.calledOnce(pool.acquire);
  });

  it('does not take a capture again when less than a second of its budget is left', async () => {
    const clock = sinon.useFakeTimers();
    const first = stubSlot(1);
    pool.acquire.resolves(first.slot);
    runPage.callsFake(
      () =>
        new Promise((_, reject) =>
          setTimeout(() => {
            first.die();
            reject(gone());
          }, TIMEOUT_MS - 900),
        ),
    );
    const settled = engine.capture(OPTIONS).then(
      () => null,
      (e: Error & { type?: string }) => e,
    );
    await clock.tickAsync(TIMEOUT_MS - 900);
    const err = await settled;
    expect(err?.type).to.equal('browser_failed');
    expect(err?.message).to.contain('too late to try again');
    sinon.assert.calledOnce(runPage);
  });

  it('stops a capture that overruns its budget with capture_timeout, naming what it was doing, and still disposes its page and gives the browser back', async () => {
    const clock = sinon.useFakeTimers();
    const { slot } = stubSlot(1);
    pool.acquire.resolves(slot);
    runPage.returns(new Promise(() => undefined));
    const settled = engine.capture(OPTIONS).then(
      () => null,
      (e: Error & { type?: string }) => e,
    );
    await clock.tickAsync(TIMEOUT_MS - 1);
    sinon.assert.notCalled(pool.release);
    await clock.tickAsync(1);
    const err = await settled;
    expect(err?.type).to.equal('capture_timeout');
    expect(err?.message).to.contain(`longer than ${TIMEOUT_MS / 1000} seconds and was stopped while preparing the page`);
    sinon.assert.calledOnceWithExactly(slot.recycle, pageOf(1), sinon.match.number, undefined);
    sinon.assert.calledOnceWithExactly(pool.release, slot);
    // An overrun is the page's doing: the browser stays in service.
    expect(slot.broken).to.equal(false);
  });

  it("answers capture_timeout from the deadline on, whatever the page's work answers while the timeout's note is made", async () => {
    const clock = sinon.useFakeTimers();
    const { slot } = stubSlot(1);
    pool.acquire.resolves(slot);
    // The renderer turns busy just before the deadline (busy longer, the page would be answered
    // page_unresponsive first): the timeout's note waits a second for it to answer a trivial script...
    const busyFrom = Date.now() + TIMEOUT_MS - 500;
    (slot.cdp as sinon.SinonStubbedInstance<CdpConnection>).send
      .withArgs('Runtime.evaluate')
      .callsFake(() => (Date.now() < busyFrom ? Promise.resolve({ result: { value: 1 } }) : new Promise(() => undefined)));
    // ...while the page's work fails a moment after the deadline (its own bound ran out with it).
    runPage.callsFake(() => new Promise((_, reject) => setTimeout(() => reject(serviceError('page_load_failed', 'The page drew nothing.')), TIMEOUT_MS + 5)));
    const settled = engine.capture(OPTIONS).then(
      () => null,
      (e: Error & { type?: string }) => e,
    );
    await clock.tickAsync(TIMEOUT_MS + 1_100);
    const err = await settled;
    expect(err?.type).to.equal('capture_timeout');
    expect(err?.message).to.contain("the page's own script kept its renderer busy");
  });

  it('answers page_unresponsive, long before the deadline, when the renderer leaves a trivial script unanswered for 30 s', async () => {
    const clock = sinon.useFakeTimers();
    const { slot } = stubSlot(1);
    pool.acquire.resolves(slot);
    const send = (slot.cdp as sinon.SinonStubbedInstance<CdpConnection>).send;
    // Answered for the first 5 s (the probes from the 3rd second on), then never.
    const busyFrom = Date.now() + 5_000;
    send.withArgs('Runtime.evaluate').callsFake(() => (Date.now() < busyFrom ? Promise.resolve({ result: { value: 1 } }) : new Promise(() => undefined)));
    runPage.returns(new Promise(() => undefined));
    const settled = engine.capture(OPTIONS).then(
      () => null,
      (e: Error & { type?: string }) => e,
    );
    await clock.tickAsync(5_000 + 30_000 + 1_100);
    const err = await settled;
    expect(err?.type).to.equal('page_unresponsive');
    expect(err?.message).to.contain('busy for 30 s');
    // Probed once a second while it answered: a capture of an ordinary page (under 3 s) sends none.
    expect(send.withArgs('Runtime.evaluate').callCount).to.be.within(3, 4);
  });

  it("replaces a browser whose failure is its own (no error code), not one that failed on the page's account", async () => {
    const { slot: failing } = stubSlot(1);
    pool.acquire.resolves(failing);
    runPage.rejects(new Error('Page.captureScreenshot: Unable to capture screenshot'));
    expect((await rejection(engine.capture(OPTIONS))).message).to.contain('Unable to capture screenshot');
    expect(failing.broken).to.equal(true);

    const { slot: fine } = stubSlot(2);
    pool.acquire.resolves(fine);
    runPage.rejects(serviceError('selector_not_found', 'selectors: no element matches "#missing" on the page.'));
    expect((await rejection(engine.capture(OPTIONS))).type).to.equal('selector_not_found');
    expect(fine.broken).to.equal(false);
  });

  it('retires a browser that cannot dispose the used context in time', async () => {
    const { slot } = stubSlot(1);
    pool.acquire.resolves(slot);
    runPage.resolves(OUTPUT);
    slot.recycle.rejects(new Error('disposing a browser context took longer than 5000 ms'));
    expect(await engine.capture(OPTIONS)).to.equal(OUTPUT);
    await new Promise((r) => setImmediate(r));
    sinon.assert.calledOnceWithExactly(pool.retire, slot);
  });

  it('fails a capture whose fresh context is not ready within 15 s, and replaces that browser', async () => {
    const clock = sinon.useFakeTimers();
    const { slot } = stubSlot(1);
    pool.acquire.resolves(slot);
    slot.takePage.returns(new Promise(() => undefined));
    const settled = engine.capture(OPTIONS).then(
      () => null,
      (e: Error) => e,
    );
    await clock.tickAsync(15_000);
    const err = await settled;
    expect(err?.message).to.contain('preparing a browser context took longer than 15000 ms');
    expect(slot.broken).to.equal(true);
    sinon.assert.notCalled(runPage);
    sinon.assert.calledOnceWithExactly(pool.release, slot);
  });

  it('counts the time budget from the moment a browser starts the capture, not while it waits for one', async () => {
    const clock = sinon.useFakeTimers();
    const { slot } = stubSlot(1);
    // Every browser busy for most of a budget: the capture waits, then takes half a budget.
    pool.acquire.callsFake(() => new Promise((resolve) => setTimeout(() => resolve(slot), TIMEOUT_MS - 1_000)));
    runPage.callsFake(() => new Promise((resolve) => setTimeout(() => resolve(OUTPUT), TIMEOUT_MS / 2)));
    const turn = turnOf({ cls: 'snap', ticket: null });
    const settled = engine.capture(OPTIONS, { finish: async (out) => out, turn }).then(
      (out) => out,
      (e: Error) => e,
    );
    await clock.tickAsync(TIMEOUT_MS - 1_000 + TIMEOUT_MS / 2);
    expect(await settled).to.equal(OUTPUT);
    // What it waited and what it held the browser, apart.
    expect(turn.waitedMs).to.equal(TIMEOUT_MS - 1_000);
    expect(turn.heldMs).to.equal(TIMEOUT_MS / 2);
  });

  it('runs on the browser it was handed, asking the pool for none', async () => {
    const { slot } = stubSlot(1);
    runPage.resolves(OUTPUT);
    const turn = turnOf({ cls: 'jobs', ticket: null }, slot);
    expect(await engine.capture(OPTIONS, { finish: async (out) => out, turn })).to.equal(OUTPUT);
    sinon.assert.notCalled(pool.acquire);
    sinon.assert.calledOnceWithExactly(pool.release, slot);
    expect(turn.slot).to.equal(null);
  });

  it('passes on capacity_exhausted from the pool without touching a browser', async () => {
    pool.acquire.rejects(serviceError('capacity_exhausted', 'All 4 browsers are busy and 8 captures are waiting; retry shortly.', { retryAfter: 2 }));
    expect((await rejection(engine.capture(OPTIONS))).type).to.equal('capacity_exhausted');
    sinon.assert.notCalled(runPage);
    sinon.assert.notCalled(pool.release);
  });
});
