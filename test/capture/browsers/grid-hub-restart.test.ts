/**
 * A Grid whose hub restarts (SIGKILLed, started again on the same ports) while the pool's
 * browsers talk to their own DevTools sockets (GRID_CDP=direct): the new hub knows none of
 * the old sessions, though their browsers run on. The browser busy with a capture all along
 * (its slot never idle, so only the capture's keepalive reaches the Grid) is found unknown,
 * closed after its capture and replaced, as the idle one is: no browser is left running that
 * the Grid does not know.
 */
import { expect } from 'chai';
import { BrowserPool } from '../../../services/capture/browsers/browser-pool';
import { type BrowserSlot, GRID_KEEPALIVE_MS } from '../../../services/capture/browsers/browser-slot';
import { configFrom } from '../../support/backends';
import { type Grid, browserRunning, gridModule } from '../../support/grid';
import { until } from '../../support/wait';

describe('browsers on a Grid whose hub restarts (GRID_CDP=direct)', function () {
  this.timeout(240_000);
  let grid: Grid | null = null;
  let pool: BrowserPool | null = null;
  const warnings: string[] = [];

  before(async () => {
    // Room for the replacements beside the old sessions, which the node keeps until its session timeout.
    grid = await gridModule.startGrid({ mode: 'hub', nodes: 1, maxSessions: 4, port: 0, sessionTimeout: 120 });
    const { capture } = configFrom({});
    pool = new BrowserPool(
      { seleniumUrl: grid.url, chromeBin: capture.chromeBin, chromedriverBin: capture.chromedriverBin, extraArgs: [], gridCdp: 'direct' },
      { sessions: 2, queueMax: 4, queueTimeoutMs: 90_000, keepAliveMs: 20_000 },
      { log: { warn: (m: unknown) => void warnings.push(String(m)), info: () => undefined } },
    );
    await pool.start(60_000);
  });
  after(async () => {
    await pool?.stop();
    await grid?.stop();
  });

  const userDataDir = async (slot: BrowserSlot) => (await slot.driver.getCapabilities()).get('chrome').userDataDir as string;

  it('finds the sessions the new hub does not know, busy or idle, closes their browsers and replaces them', async () => {
    const busy = await pool!.acquire();
    const idle = await pool!.acquire();
    pool!.release(idle);
    expect([busy.cdpRoute, idle.cdpRoute]).to.deep.equal(['direct', 'direct']);
    const old = [busy, idle];
    const dirs = await Promise.all(old.map(userDataDir));
    for (const dir of dirs) expect(browserRunning(dir), dir).to.equal(true);

    // A capture holds the busy browser throughout, as steady load keeps every browser in use.
    const unwatch = busy.watch();
    try {
      await grid!.restartHub();
      await until('the busy browser found unknown to the Grid and retired', async () => busy.broken, GRID_KEEPALIVE_MS + 10_000);
      // Its capture goes on: the browser still answers over its own socket.
      expect(busy.lost).to.equal(false);
      expect((await busy.cdp.send<{ product: string }>('Browser.getVersion')).product).to.match(/Chrome/);
    } finally {
      unwatch();
    }
    pool!.release(busy);

    await until('both old browsers ended', async () => dirs.every((dir) => !browserRunning(dir)), 20_000);
    // Two browsers again, each on a session the new hub knows.
    const fresh = [await pool!.acquire(), await pool!.acquire()];
    for (const slot of fresh) {
      expect(old).not.to.include(slot);
      await slot.ping();
      pool!.release(slot);
    }
    expect(pool!.stats.sessions).to.equal(2);
    expect(
      warnings.some((w) => /^Browser session \d+ is no longer known to the Grid \(.*\); closing and replacing it once its capture ends\.$/.test(w)),
      warnings.join('\n'),
    ).to.equal(true);
  });
});
