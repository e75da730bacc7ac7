/**
 * The full stack on this machine's real MariaDB, Redis and NATS: several brokers (and
 * several OS processes) sharing one database and one set of counters.
 */
import { expect } from 'chai';
import { call } from '../../services/shared/contracts';
import { NATS_URL, backendConfig, uniqueName } from '../support/backends';
import { expectEnvelope } from '../support/errors';
import { qs, request } from '../support/http';
import { freePort, runScript, startServeProcess } from '../support/processes';
import { type RunningSystem, runSystem } from '../support/system';

describe('full stack: MariaDB + Redis + NATS', function () {
  this.timeout(60_000);

  describe('monthly limits under concurrency', () => {
    const systems: RunningSystem[] = [];
    let cleanup: () => Promise<void>;
    before(async () => {
      const namespace = uniqueName('ns');
      const b = await backendConfig('mysql', { TRANSPORTER: NATS_URL, NAMESPACE: namespace, SERVICES: 'billing' });
      cleanup = b.cleanup;
      // Two billing instances and one caller, over NATS; the caller's calls are balanced.
      systems.push(await runSystem(b.config));
      systems.push(await runSystem({ ...b.config, migrateOnStart: false }));
      systems.push(await runSystem({ ...b.config, migrateOnStart: false, services: ['ai'] }));
      await systems[2]!.broker.waitForServices(['billing']);
    });
    after(async () => {
      for (const s of systems.reverse()) await s.stop();
      await cleanup();
    });

    it('never exceeds the limit: 60 simultaneous reservations against 3 remaining credits', async () => {
      const caller = systems[2]!.broker;
      await call(caller, 'billing.upsertPlan', { name: 'ten', paid: true, screenshot_limit: 10 });
      const { access_token } = await call(caller, 'billing.createAccount', { plan: 'ten' });
      const account = await call(caller, 'billing.authenticate', { token: access_token });
      for (let i = 0; i < 7; i++) await call(caller, 'billing.reserve', { account, amounts: { screenshots: 1 } });

      // Half of the requests go to each billing instance, all at once.
      const nodes = systems.slice(0, 2).map((s) => s.broker.nodeID);
      const outcomes = await Promise.allSettled(
        Array.from({ length: 60 }, (_, i) => call(caller, 'billing.reserve', { account, amounts: { screenshots: 1 } }, { nodeID: nodes[i % 2] })),
      );
      const granted = outcomes.filter((o) => o.status === 'fulfilled');
      const refused = outcomes.filter((o) => o.status === 'rejected') as PromiseRejectedResult[];
      expect(granted).to.have.length(3);
      expect(refused).to.have.length(57);
      for (const r of refused) expect([r.reason.type, r.reason.code]).to.deep.equal(['screenshot_limit_reached', 402]);
      expect((await call(caller, 'billing.usage', { account })).usage.screenshots).to.equal(10);
    });

    it('refunds through either instance exactly once', async () => {
      const caller = systems[2]!.broker;
      const { access_token } = await call(caller, 'billing.createAccount', { plan: 'free' });
      const account = await call(caller, 'billing.authenticate', { token: access_token });
      const reservation = await call(caller, 'billing.reserve', { account, amounts: { screenshots: 1 } });
      const results = await Promise.all([1, 2, 3, 4].map(() => call(caller, 'billing.refund', { reservation })));
      expect(results.filter((r) => r.refunded)).to.have.length(1);
      expect((await call(caller, 'billing.usage', { account })).usage.screenshots).to.equal(0);
    });
  });

  describe('request rate limits shared by two api instances through Redis', () => {
    const systems: RunningSystem[] = [];
    let cleanup: () => Promise<void>;
    before(async () => {
      const b = await backendConfig('mysql', { SERVICES: 'api,billing,ai,proxy', RATE_LIMIT_MAX: '4' });
      cleanup = b.cleanup;
      systems.push(await runSystem(b.config));
      systems.push(await runSystem({ ...b.config, migrateOnStart: false, port: 0 }));
    });
    after(async () => {
      for (const s of systems) await s.stop();
      await cleanup();
    });

    it('counts requests to both instances against one limit', async () => {
      const { access_token } = await systems[0]!.account();
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        const base = systems[i % 2]!.base;
        statuses.push((await request(base, 'GET', `/account_limits?access_token=${access_token}`)).status);
      }
      expect(statuses).to.deep.equal([200, 200, 200, 200, 429, 429]);
    });
  });

  describe('api and billing as two OS processes over NATS', () => {
    let env: Record<string, string>;
    let cleanup: () => Promise<void>;
    const stops: Array<() => Promise<void>> = [];
    let base: string;

    before(async () => {
      const port = await freePort();
      const b = await backendConfig('mysql', { TRANSPORTER: NATS_URL, NAMESPACE: uniqueName('ns'), MIGRATE_ON_START: 'false', PORT: String(port) });
      env = b.env;
      cleanup = b.cleanup;
      base = `http://127.0.0.1:${port}`;
      runScript('db/migrate.js', [], env);
      const billing = await startServeProcess({ ...env, SERVICES: 'billing,ai,proxy' }, /ServiceBroker .* started/);
      stops.push(billing.stop);
      const api = await startServeProcess({ ...env, SERVICES: 'api' }, /Screenshot service ready/);
      stops.push(api.stop);
      // The api node must have discovered billing before the first request.
      for (let i = 0; i < 50; i++) {
        const r = await request(base, 'GET', '/account_limits?access_token=sk_probe');
        if (r.status === 401) break;
        await new Promise((res) => setTimeout(res, 200));
      }
    });
    after(async () => {
      for (const stop of stops.reverse()) await stop();
      await cleanup();
    });

    it('carries a billing error (screenshot_limit_reached) to the HTTP client with its status and code', async () => {
      runScript('bin/admin.js', ['plans', 'set', 'none', '--screenshots', '0', '--paid', 'false'], env);
      const created = JSON.parse(runScript('bin/admin.js', ['accounts', 'create', '--plan', 'none', '--json'], env));
      // ttl=0 skips the saved-capture lookup (no capture service runs here): billing answers.
      const r = await request(base, 'GET', `/snap?${qs({ access_token: created.access_token, url: 'https://example.com', ttl: 0 })}`);
      expectEnvelope(r, 402, 'screenshot_limit_reached', '0 of 0');
    });

    it('carries authentication and gate errors, and serves /account_limits for a key made with the CLI', async () => {
      const created = JSON.parse(runScript('bin/admin.js', ['accounts', 'create', '--plan', 'paid', '--addons', 'byo_ai', '--json'], env));
      const limits = await request<{ results: Record<string, unknown> }>(base, 'GET', '/account_limits', {
        headers: { authorization: `Bearer ${created.access_token}` },
      });
      expect(limits.status).to.equal(200);
      expect(limits.body.results).to.deep.include({ screenshot_limit: 10000, bring_your_own_ai_enabled: true });
      const gate = await request(base, 'GET', `/snap?${qs({ access_token: created.access_token, url: 'https://example.com', custom_proxy_id: 3 })}`);
      expect([gate.status, gate.body.error_code]).to.deep.equal([402, 'byo_proxy_addon_required']);
      const rotated = JSON.parse(runScript('bin/admin.js', ['keys', 'rotate', created.account_id, '--json'], env));
      const old = await request(base, 'GET', `/account_limits?access_token=${created.access_token}`);
      expect([old.status, old.body.error_code]).to.deep.equal([401, 'access_token_invalid']);
      expect((await request(base, 'GET', `/account_limits?access_token=${rotated.access_token}`)).status).to.equal(200);
    });
  });
});
