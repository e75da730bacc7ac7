/**
 * /health, /pressure and /metrics of a cluster over real NATS and MariaDB: an api process
 * alone, then two capture instances (one in this process's broker set, one a separate OS
 * process). The api answers for every node, not just its own process: slots and counters
 * are summed over the capture instances, gauges read from the shared database are not
 * doubled, and a node that stops answering is left out and counted, not fatal.
 */
import { expect } from 'chai';
import knex from 'knex';
import { call } from '../../services/shared/contracts';
import { knexConfig } from '../../services/shared/database';
import { NATS_URL, backendConfig, uniqueName } from '../support/backends';
import { expectEnvelope } from '../support/errors';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { sharedGrid } from '../support/grid';
import { qs, request } from '../support/http';
import { type ServiceProcess, freePort, startServeProcess } from '../support/processes';
import { type Exposition, scrape } from '../support/prometheus';
import { type RunningSystem, runSystem } from '../support/system';
import { until } from '../support/wait';

/** The METRICS_TOKEN capture B runs with (the api here runs without one). */
const OPS_TOKEN = 'ops-token-0123456789abcdef';

describe('operations endpoints across a cluster (MariaDB + Redis + NATS)', function () {
  this.timeout(120_000);
  let fx: FixtureServer;
  let api: RunningSystem;
  let apiStopped = false;
  let captureA: RunningSystem | null = null;
  let captureB: ServiceProcess | null = null;
  let env: Record<string, string>;
  let cleanup: () => Promise<void>;
  let token: string;
  let opsPort: number;

  before(async () => {
    fx = await startFixtures();
    const grid = await sharedGrid();
    const b = await backendConfig('mysql', { TRANSPORTER: NATS_URL, NAMESPACE: uniqueName('ns'), SELENIUM_URL: grid.url, ALLOW_PRIVATE_NETWORKS: 'true' });
    env = b.env;
    cleanup = b.cleanup;
    api = await runSystem({ ...b.config, services: ['api', 'billing', 'scheduler', 'proxy', 'ai', 'notifier'] });
    await call(api.broker, 'billing.upsertPlan', { name: 'big', paid: true, screenshot_limit: 100_000 });
    token = (await api.account('big')).access_token;
  });
  after(async () => {
    if (captureB?.child.signalCode === null) captureB.child.kill('SIGCONT');
    await captureB?.stop();
    await captureA?.stop();
    if (!apiStopped) await api?.stop();
    await cleanup?.();
    await fx?.stop();
  });

  it('answers /health 503 not_ready and /pressure 503 while no capture node runs, then 200 once one has a browser', async () => {
    expectEnvelope(await request(api.base, 'GET', '/health'), 503, 'not_ready', 'no capture service is running');
    const none = await request(api.base, 'GET', '/pressure');
    expect(none.status).to.equal(503);
    expect(none.body.pressure).to.include({ is_available: false, reason: 'no_capture_nodes', nodes: 0, max_concurrent: 0 });

    captureA = await runSystem({ ...api.config, migrateOnStart: false, services: ['capture'], capture: { ...api.config.capture, sessions: 1 } });
    await until('the api to see capture A ready', async () => (await request(api.base, 'GET', '/health')).status === 200);
    expect((await request(api.base, 'GET', '/health')).body).to.deep.equal({ success: true });
  });

  it('sums the browsers and queues of two capture instances (two processes) in /pressure and /metrics', async () => {
    opsPort = await freePort();
    captureB = await startServeProcess(
      { ...env, SERVICES: 'capture', CAPTURE_SESSIONS: '2', MIGRATE_ON_START: 'false', OPS_PORT: String(opsPort), METRICS_TOKEN: OPS_TOKEN },
      /Ops endpoints on port/,
      { timeoutMs: 40_000 },
    );
    // Both nodes, with every browser up (a node answers as soon as it runs, its browsers start beside it).
    await until('the api to see both capture nodes and their three browsers', async () => {
      const { pressure } = (await request<{ pressure: { nodes: number; max_concurrent: number } }>(api.base, 'GET', '/pressure')).body;
      return pressure.nodes === 2 && pressure.max_concurrent === 3;
    });

    const p = await request(api.base, 'GET', '/pressure');
    expect(p.status).to.equal(200);
    expect(p.body.pressure).to.include({
      is_available: true,
      reason: '',
      running: 0,
      queued: 0,
      max_concurrent: 3,
      slots_configured: 3,
      max_queued: 32,
      nodes: 2,
      nodes_unreachable: 0,
    });

    const m = await scrape(api.base);
    expect(m.value('snap_browser_slots')).to.equal(3);
    expect(m.value('snap_browser_slots_configured')).to.equal(3);
    expect(m.value('snap_capture_queue_max')).to.equal(32);
    expect(m.value('snap_metrics_scrape_nodes', { service: 'capture' })).to.equal(2);
    expect(m.value('snap_metrics_scrape_nodes', { service: 'notifier' })).to.equal(1);
    expect(m.value('snap_metrics_scrape_errors', { service: 'capture' })).to.equal(0);
  });

  it('serves a capture process its own /health and /metrics on OPS_PORT (this process only)', async () => {
    const ops = `http://127.0.0.1:${opsPort}`;
    await until('capture B to have its browsers', async () => (await request(ops, 'GET', '/health')).status === 200);
    expect((await request(ops, 'GET', '/health')).body).to.deep.equal({ success: true });
    // METRICS_TOKEN guards a process's own /metrics as it does the api's.
    expectEnvelope(await request(ops, 'GET', '/metrics'), 401, 'access_token_required', 'METRICS_TOKEN');
    expectEnvelope(await request(ops, 'GET', '/metrics', { headers: { authorization: 'Bearer wrong-token-0123456789' } }), 401, 'access_token_invalid');
    const m = await scrape(ops, { authorization: `Bearer ${OPS_TOKEN}` });
    expect(m.value('snap_browser_slots')).to.equal(2);
    expect(m.value('snap_browser_slots_configured')).to.equal(2);
    expect(m.value('snap_metrics_scrape_nodes', { service: 'capture' })).to.equal(1);
    expect(m.value('snap_metrics_scrape_nodes', { service: 'notifier' })).to.equal(undefined);
    expectEnvelope(await request(ops, 'GET', '/snap'), 404, 'not_found', 'GET /health and GET /metrics');
    expectEnvelope(await request(ops, 'POST', '/health', { json: {} }), 405, 'method_not_allowed', 'GET /health and GET /metrics only');
  });

  it("sums both instances' capture counters", async () => {
    const success = (m: Exposition) => m.value('snap_captures_total', { kind: 'snap', outcome: 'success' }) ?? 0;
    const own = async () => {
      const list = api.broker.registry.getServiceList({ onlyAvailable: true, skipInternal: true }) as Array<{ name: string; nodeID: string }>;
      const ids = list.filter((s) => s.name === 'capture').map((s) => s.nodeID);
      const answers = await Promise.all(ids.map((nodeID) => call(api.broker, 'capture.metrics', {}, { nodeID })));
      return answers.map((snapshot) => snapshot.find((x) => x.name === 'snap_captures_total')?.values.find((v) => v.labels.outcome === 'success')?.value ?? 0);
    };
    const before = await scrape(api.base);
    // Round robin over the two instances: snap until each has taken at least one.
    for (let i = 0; i < 8; i++) {
      const r = await request(api.base, 'GET', `/snap?${qs({ access_token: token, url: `${fx.origin}/plain?n=${i}`, wait: 0, ttl: 0 })}`);
      expect(r.status).to.equal(200);
      if (i >= 1 && (await own()).every((n) => n > 0)) break;
    }
    const perNode = await own();
    expect(perNode).to.have.length(2);
    expect(
      perNode.every((n) => n > 0),
      `each instance took a capture: ${perNode}`,
    ).to.equal(true);
    const after = await scrape(api.base);
    expect(success(after)).to.equal(perNode[0]! + perNode[1]!);
    expect(success(after) - success(before)).to.be.greaterThan(1);
    expect(after.value('snap_capture_duration_seconds_count', { outcome: 'success' })).to.equal(success(after));
  });

  it('takes gauges read from the shared jobs table once, not once per instance', async () => {
    const db = knex(knexConfig(api.config.database));
    try {
      // A config job under a long lease, as if a worker held it: both instances read it.
      await db('jobs').insert({
        id: uniqueName('job'),
        account_id: 'acct',
        config_id: 'cfg',
        kind: 'config',
        status: 'running',
        lease_token: 'held',
        lease_until_ms: Date.now() + 3_600_000,
        created_at_ms: Date.now(),
      });
      const m = await scrape(api.base);
      expect(m.value('snap_metrics_scrape_nodes', { service: 'capture' })).to.equal(2);
      expect(m.value('snap_jobs', { state: 'running', kind: 'config' })).to.equal(1);
    } finally {
      await db.destroy();
    }
  });

  it('leaves out a capture instance that does not answer, counting it, and still answers', async () => {
    const b = captureB as ServiceProcess;
    b.child.kill('SIGSTOP');
    try {
      // All at once: the stopped node is still registered (its heartbeats stop counting after 10 s).
      const [m, p, health] = await Promise.all([scrape(api.base), request(api.base, 'GET', '/pressure'), request(api.base, 'GET', '/health')]);
      expect(m.value('snap_metrics_scrape_nodes', { service: 'capture' })).to.equal(1);
      expect(m.value('snap_metrics_scrape_errors', { service: 'capture' })).to.equal(1);
      expect(m.value('snap_browser_slots')).to.equal(1);
      expect(p.status).to.equal(200);
      expect(p.body.pressure).to.include({ nodes: 1, nodes_unreachable: 1, max_concurrent: 1 });
      expect(health.status).to.equal(200);
    } finally {
      b.child.kill('SIGCONT');
    }
  });

  it('stops the api at once after scrapes that a node did not answer (no call left waiting)', async () => {
    const t0 = Date.now();
    apiStopped = true;
    await api.stop();
    expect(Date.now() - t0).to.be.below(5_000);
  });
});
