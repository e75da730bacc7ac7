/**
 * Capture instances keep the configuration a snap is recorded under (SNAP_CONFIG_CACHE_MS,
 * issue 46): deleting the configuration through one instance makes every instance forget it
 * (the broadcast 'capture.configDeleted' over NATS), so no snap is recorded under a deleted
 * configuration, whichever instance takes it. The time is set long (60 s) so that only the
 * broadcast can explain it.
 */
import { expect } from 'chai';
import { type CaptureCluster, startCaptureCluster } from '../support/capture-cluster';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { qs, request } from '../support/http';

describe('snap configurations kept by capture instances, forgotten on every one when deleted (MariaDB + NATS)', function () {
  this.timeout(180_000);
  let fx: FixtureServer;
  let cluster: CaptureCluster;
  let token: string;
  before(async () => {
    fx = await startFixtures();
    // The notifier too: deleting a configuration deletes its alerts.
    cluster = await startCaptureCluster({ CAPTURE_SESSIONS: '1', SNAP_CONFIG_CACHE_MS: '60000' }, ['api', 'billing', 'scheduler', 'ai', 'proxy', 'notifier']);
    await cluster.startCaptures(2);
    token = (await cluster.front.account('paid')).access_token;
  });
  after(async () => {
    await cluster?.stop();
    await fx?.stop();
  });

  /** The configuration one snap of the page was recorded under. */
  const snap = async (): Promise<string> => {
    const r = await request(cluster.front.base, 'GET', `/snap?${qs({ access_token: token, url: `${fx.origin}/plain`, ttl: 0, wait: 0, json: true })}`);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return String(r.body.screenshot_configuration_id);
  };

  it('records no snap under a deleted configuration on any instance', async () => {
    // Snaps are balanced over the two instances (round robin): after four, each has kept the configuration.
    const before: string[] = [];
    for (let i = 0; i < 4; i++) before.push(await snap());
    const first = before[0] as string;
    expect(before).to.deep.equal([first, first, first, first]);
    const deleted = await request(cluster.front.base, 'DELETE', `/screenshot_configs/${first}?${qs({ access_token: token })}`);
    expect(deleted.status, JSON.stringify(deleted.body)).to.equal(200);
    const later: string[] = [];
    for (let i = 0; i < 4; i++) later.push(await snap());
    for (const config of later) expect(config).to.not.equal(first);
    expect(await cluster.db('screenshots').where({ config_id: first }).count({ n: '*' }).first()).to.deep.include({ n: 0 });
  });
});
