/**
 * Credits settled while the system stops: a capture cut short by the stop is refunded, and
 * the refund outlives the restart (embedded mode: the counters are written to the database
 * by billing's stop, which must come after the services that settle credits have drained).
 */
import { expect } from 'chai';
import { call } from '../../services/shared/contracts';
import { backendConfig } from '../support/backends';
import { qs, request } from '../support/http';
import { type LocalServer, serveLocally } from '../support/local-server';
import { type RunningSystem, runSystem } from '../support/system';
import { until } from '../support/wait';

describe('credits settled while the system stops', function () {
  this.timeout(120_000);
  let pages: LocalServer;
  let asked = 0;
  let b: Awaited<ReturnType<typeof backendConfig>>;
  let sys: RunningSystem | null = null;

  before(async () => {
    // A page that never answers (CAPTURE_TIMEOUT_MS short, so the stop does not wait a minute for it): the capture is still loading it when the stop comes.
    pages = await serveLocally(() => {
      asked += 1;
    });
    b = await backendConfig('sqlite', { ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1', CAPTURE_TIMEOUT_MS: '8000' });
  });
  after(async () => {
    await sys?.stop();
    await pages?.stop();
    await b?.cleanup();
  });

  it('a snap failed by the stop is refunded, and still refunded after the restart', async () => {
    sys = await runSystem(b.config);
    const { access_token, account_id } = await sys.account('free');
    const answered = request(sys.base, 'GET', `/snap?${qs({ access_token, url: `${pages.origin}/hangs`, wait: 0, ttl: 0 })}`);
    await until('the page to be asked for', async () => asked > 0, 60_000, 50);
    const usage = async (s: RunningSystem) => call(s.broker, 'billing.usage', { account: await call(s.broker, 'billing.account', { accountId: account_id }) });
    expect((await usage(sys)).usage.screenshots, 'the credit held while the page loads').to.equal(1);
    const stopped = sys.stop();
    const r = await answered;
    // The answer ends its connection (it was running when the stop began): the stop does not
    // wait out the client's keep-alive (72 s) after it.
    const answeredAt = Date.now();
    await stopped;
    expect(Date.now() - answeredAt, 'ms from the answer to the end of the stop').to.be.below(15_000);
    sys = null;
    // Failed, whichever bound ended it first (the capture's time budget, or the stop).
    expect(r.status, r.raw.toString()).to.be.oneOf([422, 504]);
    expect(r.body.success).to.equal(false);

    sys = await runSystem(b.config);
    expect((await usage(sys)).usage.screenshots, 'the failed capture is not counted after the restart').to.equal(0);
  });
});
