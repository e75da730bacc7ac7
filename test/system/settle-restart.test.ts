/**
 * A snap whose credit is settled while billing restarts (full stack: MariaDB, Redis, NATS;
 * billing on a broker of its own, the other services on another): the commit of a recorded
 * capture and the refund of a failed one are asked again until billing takes them, and the
 * client gets the capture's own answer.
 */
import { expect } from 'chai';
import Redis from 'ioredis';
import { call } from '../../services/shared/contracts';
import { NATS_URL, backendConfig, uniqueName } from '../support/backends';
import { qs, request } from '../support/http';
import { type LocalServer, serveLocally } from '../support/local-server';
import { type RunningSystem, runSystem } from '../support/system';
import { until } from '../support/wait';

describe('credits settled while billing restarts (full stack)', function () {
  this.timeout(120_000);
  let pages: LocalServer;
  /** The page requests waiting for the test to answer them, by path. */
  const waiting = new Map<string, () => void>();
  let b: Awaited<ReturnType<typeof backendConfig>>;
  let front: RunningSystem;
  let billing: RunningSystem | null = null;
  let redis: Redis;

  before(async () => {
    pages = await serveLocally((req, res) => {
      waiting.set(req.url ?? '/', () => {
        res.writeHead(200, { 'content-type': 'text/html' });
        res.end('<html><body style="background:#fff"><h1>Hello</h1></body></html>');
      });
    });
    b = await backendConfig('mysql', { TRANSPORTER: NATS_URL, NAMESPACE: uniqueName('ns'), ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1' });
    billing = await runSystem({ ...b.config, services: ['billing'] });
    front = await runSystem({ ...b.config, migrateOnStart: false, services: ['api', 'capture', 'scheduler', 'ai', 'proxy'] });
    await front.broker.waitForServices(['billing']);
    redis = new Redis(b.config.redisUrl as string);
  });
  // Billing started again by the test before: seen here before the next test asks it.
  beforeEach(() => front.broker.waitForServices(['billing'], 20_000));
  after(async () => {
    redis?.disconnect();
    await front?.stop();
    await billing?.stop();
    await pages?.stop();
    await b?.cleanup();
  });

  /** Snaps `path` (more parameters in `params`); billing is stopped while the page loads, and started again a second after it answered. */
  async function snapAcrossRestart(token: string, path: string, params: Record<string, string> = {}) {
    const answered = request(front.base, 'GET', `/snap?${qs({ access_token: token, url: `${pages.origin}${path}`, wait: 0, ttl: 0, json: true, ...params })}`);
    await until('the page to be asked for', async () => waiting.has(path), 60_000, 50);
    await billing?.stop();
    billing = null;
    await until('billing to be gone', async () => front.broker.registry.getServiceList({ onlyAvailable: true }).every((s) => s.name !== 'billing'), 20_000, 50);
    waiting.get(path)?.();
    await new Promise((r) => setTimeout(r, 1000));
    billing = await runSystem({ ...b.config, migrateOnStart: false, services: ['billing'] });
    const r = await answered;
    await front.broker.waitForServices(['billing'], 20_000);
    return r;
  }

  it('commits a recorded capture once billing is back, and answers it (200), charged once', async () => {
    const { access_token, account_id } = await call(front.broker, 'billing.createAccount', { plan: 'free' });
    const r = await snapAcrossRestart(access_token, '/recorded');
    expect(r.status, r.raw.toString()).to.equal(200);
    expect(r.body.success).to.equal(true);
    const account = await call(front.broker, 'billing.account', { accountId: account_id });
    expect((await call(front.broker, 'billing.usage', { account })).usage.screenshots).to.equal(1);
    // Settled: no reservation of the account is left pending.
    expect(await redis.keys(`${b.config.redisPrefix}resv:{${account_id}}:*`)).to.deep.equal([]);
  });

  it('refunds a failed capture once billing is back, and answers its failure', async () => {
    const { access_token, account_id } = await call(front.broker, 'billing.createAccount', { plan: 'free' });
    const r = await snapAcrossRestart(access_token, '/failed', { selectors: '#missing' });
    expect(r.status, r.raw.toString()).to.equal(422);
    expect(r.body.error_code).to.equal('selector_not_found');
    const account = await call(front.broker, 'billing.account', { accountId: account_id });
    expect((await call(front.broker, 'billing.usage', { account })).usage.screenshots).to.equal(0);
    expect(await redis.keys(`${b.config.redisPrefix}resv:{${account_id}}:*`)).to.deep.equal([]);
  });
});
