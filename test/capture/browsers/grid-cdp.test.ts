/**
 * GRID_CDP on a real Grid of a hub and a node on this host: with `direct` the captures'
 * CDP goes straight to the browsers' own DevTools sockets, so a capture is taken, pixels
 * right, while the hub's JVM is frozen (SIGSTOP); with `relay` it goes through the Grid's
 * se:cdp, as the metric of the sessions' routes says, and captures are as right.
 */
import { expect } from 'chai';
import { pixel, snapSuite } from '../../support/capture-helpers';
import { type Grid, gridModule } from '../../support/grid';
import { scrape } from '../../support/prometheus';

describe('GRID_CDP on a Grid of a hub and a node on this host', function () {
  this.timeout(180_000);
  let grid: Grid | null = null;

  before(async () => {
    grid = await gridModule.startGrid({ mode: 'hub', nodes: 1, maxSessions: 2, port: 0, sessionTimeout: 120 });
  });
  after(async () => {
    await grid?.stop();
  });

  const env = (gridCdp: string) => () => ({
    SELENIUM_URL: grid!.url,
    GRID_CDP: gridCdp,
    CAPTURE_SESSIONS: '2',
    ALLOW_PRIVATE_NETWORKS: 'true',
    // A capture whose CDP waited on the frozen hub would fail soon, not after a minute.
    CAPTURE_TIMEOUT_MS: '10000',
  });

  describe('direct', () => {
    const t = snapSuite(env('direct'));

    it("speaks to the browsers' own sockets: captures are right while the hub is frozen", async () => {
      const m = await scrape(t.sys.base);
      expect(m.value('snap_browser_slots_cdp', { route: 'direct' })).to.equal(2);
      expect(m.value('snap_browser_slots_cdp', { route: 'relay' })).to.equal(0);
      const [hub] = grid!.pids;
      process.kill(-hub!, 'SIGSTOP');
      try {
        for (let i = 0; i < 2; i++) {
          const r = await t.snap({ url: `${t.fx.origin}/plain`, selectors: '#box', image_format: 'png' });
          expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
          expect(await pixel(r.raw, 150, 100)).to.deep.equal([0, 0, 255]);
        }
      } finally {
        process.kill(-hub!, 'SIGCONT');
      }
    });
  });

  describe('relay', () => {
    const t = snapSuite(env('relay'));

    it("goes through the Grid's se:cdp, and captures are right", async () => {
      const m = await scrape(t.sys.base);
      expect(m.value('snap_browser_slots_cdp', { route: 'relay' })).to.equal(2);
      expect(m.value('snap_browser_slots_cdp', { route: 'direct' })).to.equal(0);
      const r = await t.snap({ url: `${t.fx.origin}/plain`, selectors: '#box', image_format: 'png' });
      expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
      expect(await pixel(r.raw, 150, 100)).to.deep.equal([0, 0, 255]);
    });
  });
});
