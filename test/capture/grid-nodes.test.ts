/**
 * A Grid of a hub and two Chrome nodes, one of which dies the way a node container does:
 * its Java process, ChromeDriver and browsers all killed at once.
 */
import { expect } from 'chai';
import { screenshotsUsed, snapSuite } from '../support/capture-helpers';
import { type Grid, gridModule } from '../support/grid';

describe('snap on a Grid of a hub and two nodes, when a node dies', function () {
  this.timeout(180_000);
  let grid: Grid | null = null;

  before(async () => {
    // One session per node, so the service's two browsers are on different nodes.
    grid = await gridModule.startGrid({ mode: 'hub', nodes: 2, maxSessions: 1, port: 0, sessionTimeout: 120 });
  });
  const t = snapSuite(() => ({ SELENIUM_URL: grid!.url, CAPTURE_SESSIONS: '2', ALLOW_PRIVATE_NETWORKS: 'true' }));
  after(async () => {
    await grid?.stop();
  });

  it('keeps answering from the other node, one credit per capture', async () => {
    for (let i = 0; i < 2; i++) expect((await t.snap({ url: `${t.fx.origin}/plain` })).status).to.equal(200);
    const before = await screenshotsUsed(t.sys, t.token);
    const [, , node2] = grid!.pids;
    process.kill(-node2!, 'SIGKILL');
    for (let i = 0; i < 4; i++) {
      const r = await t.snap({ url: `${t.fx.origin}/plain` });
      expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
      expect(r.headers.get('content-type')).to.equal('image/jpeg');
    }
    expect(await screenshotsUsed(t.sys, t.token)).to.equal(before + 4);
  });
});
