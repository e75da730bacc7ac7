/**
 * BrowserSlot with its browser stubbed (sinon): the WebDriver session and the CDP
 * connection answer as Chromium and ChromeDriver would, so the slot's own rules (a fresh
 * context per capture, prepared while idle but never beside a context still being disposed,
 * and the watchdog that finds a silent browser) are checked in milliseconds.
 */
import { expect } from 'chai';
import { WebDriver, error as webdriverError } from 'selenium-webdriver';
import sinon from 'sinon';
import { BrowserSlot, GRID_KEEPALIVE_MS, MAX_DISPOSAL_WAIT_MS } from '../../../services/capture/browsers/browser-slot';
import { CdpConnection } from '../../../services/capture/page/cdp';
import { DEFAULTS } from '../../../services/capture/page/page-session';

type Params = Record<string, unknown>;

describe('BrowserSlot (unit: browser stubbed)', () => {
  let clock: sinon.SinonFakeTimers;
  let cdp: sinon.SinonStubbedInstance<CdpConnection> & CdpConnection;
  let driver: sinon.SinonStubbedInstance<WebDriver> & WebDriver;
  let slot: BrowserSlot;
  let contexts: number;
  /** Resolves the pending Target.disposeBrowserContext commands, oldest first. */
  let disposals: Array<() => void>;
  let pendingMs: number;
  let closed: boolean;

  /** The CDP commands sent, as "method" or "method session". */
  const sent = () => cdp.send.args.map(([method, , sessionId]) => (sessionId ? `${method} ${sessionId}` : method));

  beforeEach(() => {
    clock = sinon.useFakeTimers();
    contexts = 0;
    disposals = [];
    pendingMs = 0;
    closed = false;
    cdp = sinon.createStubInstance(CdpConnection) as typeof cdp;
    sinon.stub(cdp, 'closed').get(() => closed);
    sinon.stub(cdp, 'oldestPendingMs').get(() => pendingMs);
    cdp.close.callsFake(() => {
      closed = true;
    });
    cdp.send.callsFake(async (method: string): Promise<Params> => {
      switch (method) {
        case 'Target.createBrowserContext':
          contexts++;
          return { browserContextId: `context-${contexts}` };
        case 'Target.createTarget':
          return { targetId: `target-${contexts}` };
        case 'Target.attachToTarget':
          return { sessionId: `session-${contexts}` };
        case 'Page.getFrameTree':
          return { frameTree: { frame: { id: `frame-${contexts}` } } };
        case 'Target.disposeBrowserContext':
          return new Promise((resolve) => disposals.push(() => resolve({})));
        default:
          return {};
      }
    });
    driver = sinon.createStubInstance(WebDriver) as typeof driver;
    driver.getWindowHandle.resolves('window');
    driver.quit.resolves();
    slot = new BrowserSlot(driver, cdp, 1);
    slot.userAgent = 'Mozilla/5.0 Chrome/156';
  });
  afterEach(() => sinon.restore());

  it('prepares the next page while idle, in a fresh context and window, set up for default options at first', async () => {
    slot.prepareNext();
    await clock.tickAsync(0);
    expect(slot.hasReadyPage).to.equal(true);
    expect(cdp.send.firstCall.args).to.deep.equal(['Target.createBrowserContext', { disposeOnDetach: false }]);
    expect(cdp.send.secondCall.args).to.deep.equal(['Target.createTarget', { url: 'about:blank', browserContextId: 'context-1', newWindow: true }]);
    sinon.assert.calledWith(cdp.send, 'Emulation.setUserAgentOverride', { userAgent: 'Mozilla/5.0 Chrome/156' }, 'session-1');
    sinon.assert.calledWith(
      cdp.send,
      'Emulation.setDeviceMetricsOverride',
      sinon.match({ width: DEFAULTS.page_width, height: DEFAULTS.page_height }),
      'session-1',
    );
    const viewport = { width: DEFAULTS.page_width, height: DEFAULTS.page_height, scale: DEFAULTS.scale_factor };
    expect(await slot.takePage()).to.deep.equal({ contextId: 'context-1', targetId: 'target-1', sessionId: 'session-1', mainFrameId: 'frame-1', viewport });
    expect(slot.hasReadyPage).to.equal(false);
  });

  it('prepares the next page for the viewport it is told to expect (the last capture’s)', async () => {
    slot.nextViewport = { width: 1280, height: 800, scale: 2 };
    slot.prepareNext();
    await clock.tickAsync(0);
    sinon.assert.calledWith(cdp.send, 'Emulation.setDeviceMetricsOverride', { width: 1280, height: 800, deviceScaleFactor: 2, mobile: false }, 'session-1');
    expect((await slot.takePage()).viewport).to.deep.equal({ width: 1280, height: 800, scale: 2 });
  });

  it('creates the next context only once the last capture’s context is gone', async () => {
    const used = await slot.takePage();
    const recycled = slot.recycle(used, 5_000);
    slot.prepareNext();
    await clock.tickAsync(0);
    expect(sent().filter((m) => m === 'Target.createBrowserContext')).to.have.length(1);
    expect(slot.hasReadyPage).to.equal(false);
    disposals.shift()!();
    await recycled;
    await clock.tickAsync(0);
    expect(sent().filter((m) => m === 'Target.createBrowserContext')).to.have.length(2);
    expect(cdp.send.calledWith('Target.disposeBrowserContext', { browserContextId: 'context-1' })).to.equal(true);
    expect((await slot.takePage()).contextId).to.equal('context-2');
  });

  it('holds the used context until its capture is answered, then disposes it and prepares the next page', async () => {
    const used = await slot.takePage();
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const recycled = slot.recycle(used, 5_000, answered);
    slot.prepareNext();
    await clock.tickAsync(100);
    expect(sent().filter((m) => m === 'Target.disposeBrowserContext')).to.have.length(0);
    expect(sent().filter((m) => m === 'Target.createBrowserContext')).to.have.length(1);
    answer();
    await clock.tickAsync(0);
    expect(cdp.send.calledWith('Target.disposeBrowserContext', { browserContextId: 'context-1' })).to.equal(true);
    disposals.shift()!();
    await recycled;
    await clock.tickAsync(0);
    expect(slot.hasReadyPage).to.equal(true);
    expect((await slot.takePage()).contextId).to.equal('context-2');
  });

  it('disposes a held context at once when the browser is needed again, or after MAX_DISPOSAL_WAIT_MS at the latest', async () => {
    const never = new Promise<void>(() => undefined);
    const first = await slot.takePage();
    void slot.recycle(first, 5_000, never);
    slot.prepareNext();
    await clock.tickAsync(0);
    expect(sent().filter((m) => m === 'Target.disposeBrowserContext')).to.have.length(0);
    const taking = slot.takePage();
    await clock.tickAsync(0);
    expect(cdp.send.calledWith('Target.disposeBrowserContext', { browserContextId: 'context-1' })).to.equal(true);
    disposals.shift()!();
    const second = await taking;
    expect(second.contextId).to.equal('context-2');

    void slot.recycle(second, 5_000, never);
    await clock.tickAsync(MAX_DISPOSAL_WAIT_MS - 1);
    expect(cdp.send.calledWith('Target.disposeBrowserContext', { browserContextId: 'context-2' })).to.equal(false);
    await clock.tickAsync(1);
    expect(cdp.send.calledWith('Target.disposeBrowserContext', { browserContextId: 'context-2' })).to.equal(true);
    // Nothing is left waiting: no timer outlives the disposal.
    disposals.shift()!();
    await clock.tickAsync(0);
    expect(clock.countTimers()).to.equal(0);
  });

  it('gives up on a context that is not disposed in time (the engine then retires the slot), and still prepares the next page', async () => {
    const used = await slot.takePage();
    const recycled = slot.recycle(used, 5_000).then(
      () => null,
      (e: Error) => e,
    );
    await clock.tickAsync(5_000);
    expect((await recycled)?.message).to.equal('disposing a browser context took longer than 5000 ms');
    slot.prepareNext();
    await clock.tickAsync(0);
    expect(slot.hasReadyPage).to.equal(true);
  });

  it(
    'while watching, asks ChromeDriver about a browser that leaves a command unanswered, and closes the connection when it gets no ' + 'answer either',
    async () => {
      const lost = sinon.stub();
      cdp.onClose.callsFake(lost);
      const unwatch = slot.watch();
      // Commands answered in time: ChromeDriver is not bothered.
      pendingMs = 2_999;
      await clock.tickAsync(5_000);
      sinon.assert.notCalled(driver.getWindowHandle);
      // A stalled command whose browser ChromeDriver still sees: nothing happens.
      pendingMs = 3_000;
      await clock.tickAsync(1_000);
      sinon.assert.calledOnce(driver.getWindowHandle);
      await clock.tickAsync(0);
      sinon.assert.notCalled(cdp.close);
      expect(slot.broken).to.equal(false);
      // ChromeDriver does not answer either within 10 s: the browser counts as gone.
      driver.getWindowHandle.returns(new Promise(() => undefined) as ReturnType<WebDriver['getWindowHandle']>);
      await clock.tickAsync(1_000);
      await clock.tickAsync(9_999);
      sinon.assert.notCalled(cdp.close);
      await clock.tickAsync(1);
      sinon.assert.calledOnceWithExactly(
        cdp.close,
        'CDP connection closed: the browser stopped answering (asking ChromeDriver whether the browser is there took longer than 10000 ms)',
      );
      expect(slot.broken).to.equal(true);
      expect(slot.lost).to.equal(true);
      // One question at a time, and none once the connection is closed.
      expect(driver.getWindowHandle.callCount).to.be.at.most(3);
      unwatch();
    },
  );

  it('stops watching when told to', async () => {
    const unwatch = slot.watch();
    unwatch();
    pendingMs = 60_000;
    await clock.tickAsync(5_000);
    sinon.assert.notCalled(driver.getWindowHandle);
  });

  it('while watching a browser whose CDP bypasses the Grid, sends the Grid a WebDriver command every GRID_KEEPALIVE_MS, and only then', async () => {
    // Relayed CDP counts as the session's activity on the Grid: no command needed.
    let unwatch = slot.watch();
    await clock.tickAsync(3 * GRID_KEEPALIVE_MS);
    sinon.assert.notCalled(driver.getWindowHandle);
    unwatch();
    // Straight to the browser: the Grid sees only WebDriver commands (its session timeout is 60 s).
    slot.gridSeesWebDriverOnly = true;
    slot.lastContact = Date.now();
    expect(slot.lastActive).to.equal(Date.now());
    unwatch = slot.watch();
    await clock.tickAsync(GRID_KEEPALIVE_MS - 1_000);
    sinon.assert.notCalled(driver.getWindowHandle);
    await clock.tickAsync(1_000);
    sinon.assert.calledOnce(driver.getWindowHandle);
    await clock.tickAsync(GRID_KEEPALIVE_MS);
    sinon.assert.calledTwice(driver.getWindowHandle);
    expect(slot.lastActive).to.equal(Date.now());
    unwatch();
  });
  it('while watching, reports a session the Grid no longer knows (a keepalive answered NoSuchSessionError) once, and no other failure', async () => {
    const unknown = sinon.stub();
    slot.onSessionUnknown(unknown);
    slot.gridSeesWebDriverOnly = true;
    slot.lastContact = Date.now();
    const unwatch = slot.watch();
    // The hub down for a moment: the keepalive fails, nothing more happens.
    driver.getWindowHandle.rejects(new Error('ECONNREFUSED connect ECONNREFUSED 127.0.0.1:4444'));
    await clock.tickAsync(GRID_KEEPALIVE_MS);
    sinon.assert.calledOnce(driver.getWindowHandle);
    sinon.assert.notCalled(unknown);
    expect(slot.broken).to.equal(false);
    // A new hub, which knows none of the old one's sessions.
    const err = new webdriverError.NoSuchSessionError('Unable to find session with ID: 1');
    driver.getWindowHandle.rejects(err);
    await clock.tickAsync(GRID_KEEPALIVE_MS);
    sinon.assert.calledTwice(driver.getWindowHandle);
    sinon.assert.calledOnceWithExactly(unknown, err);
    expect(slot.unknown).to.equal(err);
    expect(slot.broken).to.equal(true);
    // The browser itself still answers: its connection stays open for quit to close it over.
    sinon.assert.notCalled(cdp.close);
    await clock.tickAsync(GRID_KEEPALIVE_MS);
    sinon.assert.calledOnce(unknown);
    unwatch();
  });

  it('on quit, no longer holds a used context back for its answer', async () => {
    const used = await slot.takePage();
    void slot.recycle(used, 5_000, new Promise<void>(() => undefined));
    const quitting = slot.quit();
    await clock.tickAsync(0);
    expect(cdp.send.calledWith('Target.disposeBrowserContext', { browserContextId: 'context-1' })).to.equal(true);
    disposals.shift()!();
    await quitting;
    await clock.tickAsync(0);
    expect(clock.countTimers()).to.equal(0);
  });

  it('on quit, disposes the prepared page and closes the browser over CDP before ending the WebDriver session', async () => {
    slot.prepareNext();
    await clock.tickAsync(0);
    const quitting = slot.quit();
    await clock.tickAsync(0);
    disposals.shift()!();
    await quitting;
    expect(slot.broken).to.equal(true);
    expect(sent().slice(-2)).to.deep.equal(['Target.disposeBrowserContext', 'Browser.close']);
    sinon.assert.callOrder(cdp.close, driver.quit);
  });
});
