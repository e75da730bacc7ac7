/**
 * The operator's endpoints where no browser is needed: how the capture nodes' answers add
 * up to /pressure and /health, and /metrics, /pressure and /health of a system that runs no
 * capture service (an api whose capture nodes are not up), with METRICS_TOKEN set.
 */
import { expect } from 'chai';
import { clusterPressure, notReadyBecause } from '../../services/api/operations';
import type { NodePressure } from '../../services/shared/contracts';
import type { NodeAnswers } from '../../services/shared/metrics';
import { backendConfig } from '../support/backends';
import { expectEnvelope } from '../support/errors';
import { request } from '../support/http';
import { scrape } from '../support/prometheus';
import { type RunningSystem, runSystem } from '../support/system';

const node = (p: Partial<NodePressure>): NodePressure => ({ running: 0, queued: 0, slots: 2, slots_configured: 2, queue_max: 4, recently_rejected: 0, ...p });
const answers = (nodes: NodePressure[], failed: string[] = []): NodeAnswers<NodePressure> => ({
  answers: nodes.map((value, i) => ({ nodeID: `n${i}`, value })),
  failed,
});

describe('cluster pressure and readiness from the capture nodes', () => {
  it('sums the nodes, and stays available while one node has a free browser or queue room', () => {
    const full = node({ running: 2, queued: 4 });
    const p = clusterPressure(answers([full, node({ running: 2, queued: 3, recently_rejected: 5 })], ['n9']), 123);
    expect(p).to.deep.equal({
      date: 123,
      is_available: true,
      reason: '',
      message: '',
      running: 4,
      queued: 7,
      max_concurrent: 4,
      max_queued: 8,
      slots_configured: 4,
      recently_rejected: 5,
      nodes: 2,
      nodes_unreachable: 1,
    });
  });

  it('is full when every browser is busy and every queue is full', () => {
    const p = clusterPressure(answers([node({ running: 2, queued: 4 }), node({ running: 1, slots: 1, queued: 4 })]), 0);
    expect(p).to.include({ is_available: false, reason: 'full', running: 3, queued: 8 });
  });

  it('is not available without a live browser, or without a capture node', () => {
    expect(clusterPressure(answers([node({ slots: 0 })]), 0)).to.include({ is_available: false, reason: 'no_browsers', slots_configured: 2 });
    expect(clusterPressure(answers([], ['n1']), 0)).to.include({ is_available: false, reason: 'no_capture_nodes', nodes_unreachable: 1 });
  });

  it('is ready once one capture node has a live browser, and says what is missing before', () => {
    expect(notReadyBecause(answers([node({ slots: 0 }), node({ slots: 1 })]))).to.equal(null);
    expect(notReadyBecause(answers([node({ slots: 0 })]))).to.contain('none has a live browser yet');
    expect(notReadyBecause(answers([], ['n1'])))
      .to.contain('no capture service is running')
      .and.contain('1 capture node(s) did not answer');
  });
});

describe('operations endpoints of an api with no capture node (METRICS_TOKEN set)', () => {
  const TOKEN = 'metrics-token-0123456789';
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  before(async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing', METRICS_TOKEN: TOKEN });
    cleanup = b.cleanup;
    sys = await runSystem(b.config);
  });
  after(async () => {
    await sys.stop();
    await cleanup();
  });

  it('answers /health 503 not_ready, naming the missing capture service', async () => {
    expectEnvelope(await request(sys.base, 'GET', '/health'), 503, 'not_ready', 'no capture service is running', 'SERVICES=capture');
  });

  it('answers /pressure 503 with the pressure body (not an error envelope)', async () => {
    const r = await request(sys.base, 'GET', '/pressure');
    expect(r.status).to.equal(503);
    expect(r.headers.get('content-type')).to.contain('application/json');
    expect(r.body).to.have.all.keys('pressure');
    expect(r.body.pressure).to.include({
      is_available: false,
      reason: 'no_capture_nodes',
      running: 0,
      queued: 0,
      max_concurrent: 0,
      nodes: 0,
      nodes_unreachable: 0,
    });
    expect(r.body.pressure).to.have.all.keys(
      'date',
      'is_available',
      'reason',
      'message',
      'running',
      'queued',
      'max_concurrent',
      'max_queued',
      'slots_configured',
      'recently_rejected',
      'nodes',
      'nodes_unreachable',
    );
  });

  it('refuses /metrics without METRICS_TOKEN (401 envelope), with a wrong one, and never echoes it', async () => {
    const none = await request(sys.base, 'GET', '/metrics');
    expectEnvelope(none, 401, 'access_token_required', 'METRICS_TOKEN');
    const wrong = await request(sys.base, 'GET', '/metrics', { headers: { authorization: 'Bearer metrics-token-0123456780' } });
    expectEnvelope(wrong, 401, 'access_token_invalid');
    expectEnvelope(await request(sys.base, 'GET', '/metrics?access_token=nope'), 401, 'access_token_invalid');
    for (const r of [none, wrong]) expect(r.raw.toString()).not.to.contain(TOKEN);
  });

  it('answers /metrics with the token (header or parameter): Prometheus text saying no node answered', async () => {
    const m = await scrape(sys.base, { authorization: `Bearer ${TOKEN}` });
    for (const service of ['capture', 'notifier', 'ai']) {
      expect(m.value('snap_metrics_scrape_nodes', { service }), service).to.equal(0);
      expect(m.value('snap_metrics_scrape_errors', { service }), service).to.equal(0);
    }
    expect(m.types.get('snap_metrics_scrape_nodes')).to.equal('gauge');
    expect((await request(sys.base, 'GET', `/metrics?access_token=${TOKEN}`)).status).to.equal(200);
  });
});
