/**
 * A configuration deleted before its jobs ended: the credits those jobs held are given back,
 * whether the job was still queued (it never runs now) or running (it loses its lease, so
 * records nothing). Embedded mode, a local ChromeDriver, the account's usage read from billing.
 */
import { expect } from 'chai';
import { call } from '../../../services/shared/contracts';
import { backendConfig } from '../../support/backends';
import { request } from '../../support/http';
import { type LocalServer, serveLocally } from '../../support/local-server';
import { type RunningSystem, runSystem } from '../../support/system';
import { until } from '../../support/wait';

describe('a configuration deleted before its jobs ended gives their credits back', function () {
  this.timeout(120_000);
  let pages: LocalServer;
  let asked = 0;
  let b: Awaited<ReturnType<typeof backendConfig>>;
  let sys: RunningSystem;

  before(async () => {
    // A page that never answers: its job runs until the capture's time budget ends it.
    pages = await serveLocally(() => {
      asked += 1;
    });
    b = await backendConfig('sqlite', { ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '2', CAPTURE_TIMEOUT_MS: '6000' });
    sys = await runSystem(b.config);
    // One capture of the account at a time: a second configuration's job waits in the queue.
    await call(sys.broker, 'billing.upsertPlan', { name: 'one', paid: true, screenshot_limit: 100, max_concurrent: 1, max_queued: 8 });
  });
  after(async () => {
    await sys?.stop();
    await pages?.stop();
    await b?.cleanup();
  });

  it('releases the credit of a queued job, and of a running one once its run ends', async () => {
    const { access_token, account_id } = await sys.account('one');
    const auth = { authorization: `Bearer ${access_token}` };
    const used = async () =>
      (await call(sys.broker, 'billing.usage', { account: await call(sys.broker, 'billing.account', { accountId: account_id }) })).usage.screenshots;
    const create = async (path: string) => {
      const r = await request<{ screenshot_configuration_id: string; job_id: string }>(sys.base, 'POST', '/screenshot_configs', {
        headers: auth,
        json: { url: `${pages.origin}${path}`, wait: 0 },
      });
      expect(r.status, r.raw.toString()).to.equal(200);
      return r.body;
    };
    const status = async (jobId: string) => (await request(sys.base, 'GET', `/jobs/${jobId}`, { headers: auth })).body.status;

    const running = await create('/hangs-first');
    await until('the first job to load its page', async () => asked > 0, 60_000, 50);
    const queued = await create('/hangs-second');
    expect(await status(running.job_id)).to.equal('running');
    expect(await status(queued.job_id)).to.equal('queued');
    expect(await used(), 'both jobs hold a credit').to.equal(2);

    const deleted = await request(sys.base, 'DELETE', `/screenshot_configs/${queued.screenshot_configuration_id}`, { headers: auth });
    expect(deleted.status, deleted.raw.toString()).to.equal(200);
    expect(await used(), "the queued job's credit, given back").to.equal(1);

    const deletedRunning = await request(sys.base, 'DELETE', `/screenshot_configs/${running.screenshot_configuration_id}`, { headers: auth });
    expect(deletedRunning.status, deletedRunning.raw.toString()).to.equal(200);
    // Its run ends with the capture's time budget; nothing is recorded under the deleted job.
    await until('the running job to end and its credit to be given back', async () => (await used()) === 0, 30_000);
    expect(asked, 'the queued job never ran').to.equal(1);
  });
});
