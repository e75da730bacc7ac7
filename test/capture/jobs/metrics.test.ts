/**
 * GET /metrics, /pressure and /health of one process (embedded mode, the shared Grid):
 * captures move the counters and the histogram, the browsers show as slots, and a capture
 * running shows as a busy slot.
 */
import { expect } from 'chai';
import { snapSuite } from '../../support/capture-helpers';
import { expectEnvelope } from '../../support/errors';
import { type HttpAnswer, jobFinished, request } from '../../support/http';
import { type Exposition, scrape } from '../../support/prometheus';

describe('operations endpoints of one process with browsers', function () {
  this.timeout(120_000);
  const t = snapSuite({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '2', CAPTURE_TIMEOUT_MS: '15000' });
  const count = (m: Exposition, labels: Record<string, string>) => m.value('snap_captures_total', labels) ?? 0;
  const histogramCount = (m: Exposition, outcome: string) => m.value('snap_capture_duration_seconds_count', { outcome }) ?? 0;

  it('answers /health 200 {success:true} once the browsers are up', async () => {
    const r = await request(t.sys.base, 'GET', '/health');
    expect(r.status).to.equal(200);
    expect(r.body).to.deep.equal({ success: true });
  });

  it('counts a successful capture, and failed ones by error code, in /metrics', async () => {
    const before = await scrape(t.sys.base);
    expect((await t.snap({ url: `${t.fx.origin}/plain` })).status).to.equal(200);
    expectEnvelope(await t.snap({ url: 'http://127.0.0.1:9/nothing-listens-here' }), 422, 'page_load_failed');
    expectEnvelope(await t.snap({ url: `${t.fx.origin}/plain`, selectors: '#not-there' }), 422, 'selector_not_found');
    const after = await scrape(t.sys.base);

    expect(after.types.get('snap_captures_total')).to.equal('counter');
    expect(after.types.get('snap_capture_duration_seconds')).to.equal('histogram');
    expect(count(after, { kind: 'snap', outcome: 'success' }) - count(before, { kind: 'snap', outcome: 'success' })).to.equal(1);
    for (const code of ['page_load_failed', 'selector_not_found']) {
      const labels = { kind: 'snap', outcome: 'failure', error_code: code };
      expect(count(after, labels) - count(before, labels), code).to.equal(1);
    }
    expect(histogramCount(after, 'success') - histogramCount(before, 'success')).to.equal(1);
    expect(histogramCount(after, 'failure') - histogramCount(before, 'failure')).to.equal(2);
    // The +Inf bucket holds every observation; the sum is real seconds.
    expect(after.value('snap_capture_duration_seconds_bucket', { outcome: 'success', le: '+Inf' })).to.equal(histogramCount(after, 'success'));
    expect(after.value('snap_capture_duration_seconds_sum', { outcome: 'success' })).to.be.greaterThan(0);
    // The page came through this instance's egress gateway.
    expect(
      (after.value('snap_egress_gateway_bytes_total', { route: 'direct' }) ?? 0) - (before.value('snap_egress_gateway_bytes_total', { route: 'direct' }) ?? 0),
    ).to.be.greaterThan(100);
  });

  it("counts a configuration's queued job under kind=config", async () => {
    const labels = { kind: 'config', outcome: 'success' };
    const before = count(await scrape(t.sys.base), labels);
    const r = await request<Record<string, string>>(t.sys.base, 'POST', '/screenshot_configs', {
      headers: { authorization: `Bearer ${t.token}` },
      json: { url: `${t.fx.origin}/plain`, wait: 0 },
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect((await jobFinished(t.sys.base, t.token, r.body.job_id as string)).body.status).to.equal('completed');
    expect(count(await scrape(t.sys.base), labels) - before).to.equal(1);
  });

  it('shows the browsers, the queue and the live jobs', async () => {
    const m = await scrape(t.sys.base);
    expect(m.value('snap_browser_slots')).to.equal(2);
    expect(m.value('snap_browser_slots_configured')).to.equal(2);
    expect(m.value('snap_browser_slots_busy')).to.equal(0);
    expect(m.value('snap_capture_queue_depth')).to.equal(0);
    expect(m.value('snap_capture_queue_max')).to.equal(16);
    expect(m.value('snap_jobs', { state: 'running', kind: 'snap' })).to.equal(0);
    expect(m.value('snap_jobs', { state: 'queued', kind: 'config' })).to.equal(0);
    expect(m.value('snap_webhook_deliveries_pending')).to.equal(0);
    expect(m.value('snap_metrics_scrape_nodes', { service: 'capture' })).to.equal(1);
    expect(m.value('snap_metrics_scrape_errors', { service: 'capture' })).to.equal(0);
  });

  it('shows a capture under way as a busy slot and a running job, in /metrics and /pressure', async () => {
    const idle = await request(t.sys.base, 'GET', '/pressure');
    expect(idle.status).to.equal(200);
    expect(idle.body.pressure).to.include({
      is_available: true,
      reason: '',
      running: 0,
      queued: 0,
      max_concurrent: 2,
      max_queued: 16,
      slots_configured: 2,
      nodes: 1,
      nodes_unreachable: 0,
    });

    const pending = t.snap({ url: `${t.fx.origin}/plain`, wait: 3000 });
    let busy: Exposition | null = null;
    for (let i = 0; i < 40 && !busy; i++) {
      const m = await scrape(t.sys.base);
      if (m.value('snap_browser_slots_busy') === 1) busy = m;
      else await new Promise((r) => setTimeout(r, 50));
    }
    expect(busy, 'a busy slot while the capture waits on its page').to.not.equal(null);
    expect(busy?.value('snap_jobs', { state: 'running', kind: 'snap' })).to.equal(1);
    const during = await request(t.sys.base, 'GET', '/pressure');
    expect(during.body.pressure).to.include({ is_available: true, running: 1, max_concurrent: 2 });
    expect((await pending).status).to.equal(200);
  });
});

describe('operations endpoints of a saturated capture instance', function () {
  this.timeout(120_000);
  const t = snapSuite({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1', CAPTURE_QUEUE_MAX: '0', CAPTURE_TIMEOUT_MS: '15000' });

  it('answers /pressure 503 full while its one browser is busy and it may queue nothing, counting the capture it refused', async () => {
    const labels = { kind: 'snap', outcome: 'failure', error_code: 'capacity_exhausted' };
    const before = (await scrape(t.sys.base)).value('snap_captures_total', labels) ?? 0;
    const pending = t.snap({ url: `${t.fx.origin}/plain`, wait: 3000 });
    let full: HttpAnswer | null = null;
    for (let i = 0; i < 40 && !full; i++) {
      const r = await request(t.sys.base, 'GET', '/pressure');
      if (r.status === 503) full = r;
      else await new Promise((res) => setTimeout(res, 50));
    }
    expect(full, '/pressure answered 503 while the browser was busy').to.not.equal(null);
    expect(full?.body.pressure).to.include({
      is_available: false,
      reason: 'full',
      running: 1,
      queued: 0,
      max_concurrent: 1,
      max_queued: 0,
      recently_rejected: 0,
    });
    expectEnvelope(await t.snap({ url: `${t.fx.origin}/plain` }), 503, 'capacity_exhausted');
    expect((await request(t.sys.base, 'GET', '/pressure')).body.pressure).to.include({ recently_rejected: 1 });
    expect((await scrape(t.sys.base)).value('snap_captures_total', labels)! - before).to.equal(1);
    expect((await pending).status).to.equal(200);
    const after = await request(t.sys.base, 'GET', '/pressure');
    expect(after.status).to.equal(200);
    expect(after.body.pressure).to.include({ is_available: true, running: 0, recently_rejected: 1 });
  });
});
