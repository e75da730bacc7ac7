/**
 * Redis unreachable (shared/redis.ts): what needs it answers 503 service_unavailable with
 * Retry-After, not 500; the outage is logged through the service's logger, once, not as plain
 * ioredis lines; and the same requests work again once Redis is back, without a restart.
 * On a Redis server of the suite's own (killed with SIGKILL, started again on its port).
 */
import fs from 'node:fs';
import { expect } from 'chai';
import sinon from 'sinon';
import { MemoryUsageStore } from '../../services/billing/usage-store';
import { backendConfig, tempDir, uniqueName } from '../support/backends';
import { CAPTURE_SERVICES } from '../support/capture-helpers';
import { expectEnvelope } from '../support/errors';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { sharedGrid } from '../support/grid';
import { type HttpAnswer, qs, request } from '../support/http';
import { type OwnServer, ownRedis } from '../support/own-server';
import { type RunningSystem, runSystem } from '../support/system';
import { until } from '../support/wait';

describe('Redis unreachable: 503 service_unavailable with Retry-After, then working again', function () {
  this.timeout(120_000);
  let redis: OwnServer;
  let redisDir: string;
  let logged: string[];
  let consoleError: sinon.SinonSpy;

  before(async () => {
    redisDir = tempDir('snapredis-');
    redis = await ownRedis(redisDir);
    await redis.start();
  });
  after(async () => {
    await redis?.stop();
    fs.rmSync(redisDir, { recursive: true, force: true });
  });
  beforeEach(() => {
    logged = [];
    consoleError = sinon.spy(console, 'error');
  });
  afterEach(() => sinon.restore());

  /** A system on the suite's Redis (mysql backend), its log lines kept in `logged`. */
  async function system(env: Record<string, string>, billingStore?: MemoryUsageStore) {
    const b = await backendConfig('mysql', { REDIS_URL: `redis://127.0.0.1:${redis.port}`, LOG_LEVEL: 'info', ...env });
    const sys = await runSystem(b.config, {
      logStream: { write: (line: string) => logged.push(line) },
      ...(billingStore ? { billing: { store: billingStore } } : {}),
    });
    return { sys, cleanup: b.cleanup };
  }

  function expectUnavailable(r: HttpAnswer): void {
    expectEnvelope(r, 503, 'service_unavailable', 'retry shortly');
    expect(r.headers.get('retry-after')).to.equal('5');
  }

  /** The outage was logged through the service's logger, once for the connection, and no ioredis line went to the console. */
  function expectOutageLoggedOnce(purpose: string): void {
    const lines = logged.filter((l) => l.includes(`Redis (${purpose})`) && l.includes('cannot be reached'));
    expect(lines, logged.join('')).to.have.length(1);
    expect(() => JSON.parse(lines[0] as string), 'a JSON log line').not.to.throw();
    const plain = consoleError.getCalls().filter((c) => String(c.args[0]).includes('[ioredis]'));
    expect(
      plain.map((c) => String(c.args[0])),
      'plain ioredis lines',
    ).to.deep.equal([]);
  }

  it("billing's counters and rate windows: every authenticated request answers 503, then works once Redis is back", async () => {
    const { sys, cleanup } = await system({ SERVICES: 'api,billing,ai,proxy' });
    try {
      const { access_token } = await sys.account('paid');
      const limits = () => request(sys.base, 'GET', `/account_limits?${qs({ access_token })}`);
      expect((await limits()).status).to.equal(200);

      await redis.stop('SIGKILL');
      for (let i = 0; i < 3; i++) expectUnavailable(await limits());
      expectUnavailable(await request(sys.base, 'POST', '/screenshot_configs', { json: { access_token, url: 'https://example.com', scheduled_every: 'day' } }));
      expectUnavailable(await request(sys.base, 'GET', `/snap?${qs({ access_token, url: 'https://example.com' })}`));
      expectOutageLoggedOnce('usage counters');

      await redis.start();
      await until('account_limits answers again', async () => (await limits()).status === 200, 20_000);
      expect((await limits()).body).to.deep.include({ success: true });
      expect(logged.some((l) => l.includes('Redis (usage counters)') && l.includes('reachable again'))).to.equal(true);
    } finally {
      await redis.start().catch(() => undefined);
      await sys.stop();
      await cleanup();
    }
  });

  describe('with a page to capture', () => {
    let fx: FixtureServer;
    let sys: RunningSystem | undefined;
    let cleanup: (() => Promise<void>) | undefined;
    before(async () => {
      fx = await startFixtures();
    });
    after(async () => fx?.stop());
    afterEach(async () => {
      await redis.start().catch(() => undefined);
      await sys?.stop();
      await cleanup?.();
    });

    it("capture's account counts: a snap answers 503 (billing's counters elsewhere), then captures once Redis is back", async () => {
      // Billing's counters in this process: only capture's account counts need the Redis that goes.
      const grid = await sharedGrid();
      ({ sys, cleanup } = await system(
        { SERVICES: CAPTURE_SERVICES, SELENIUM_URL: grid.url, ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1' },
        new MemoryUsageStore(),
      ));
      const running = sys;
      const { access_token } = await running.account('paid');
      const snap = () => request(running.base, 'GET', `/snap?${qs({ access_token, url: `${fx.origin}/?n=${uniqueName('')}`, ttl: 0, wait: 0 })}`);
      const first = await snap();
      expect(first.status, first.raw.toString().slice(0, 300)).to.equal(200);

      await redis.stop('SIGKILL');
      expectUnavailable(await snap());
      expectUnavailable(await snap());
      expectOutageLoggedOnce('account capture counts');

      await redis.start();
      await until('a snap is captured again', async () => (await snap()).status === 200, 30_000);
    });
  });
});
