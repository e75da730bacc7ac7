/**
 * The official PagePixels MCP server (PagePixels/mcp-server 1.0.3, src/server.ts), replayed:
 * it is not on the npm registry, so each of its tools' requests is sent here exactly as its
 * `requestApi` sends them (docs/clients.md): JSON bodies with `mcp: true` (and `json: true` on
 * the snaps), query strings through URLSearchParams, `Authorization: Bearer <token>` and
 * `X-MCP-Subject`, argument shapes as its zod schemas allow (scale_factor "2", headers and
 * cookies as {key, value}, a change step with custom_id, url left out on update). Each answer
 * is read as the tool hands it to the agent: the status and the JSON body.
 */
import { expect } from 'chai';
import { imageSize } from '../support/capture-helpers';
import { type ClientWorld, clientWorld, send } from './harness';

describe('client replay: the official MCP server (its 20 tools)', function () {
  this.timeout(120_000);
  const w: ClientWorld = clientWorld();

  /** What requestApi sends: JSON body when there is one, the query through URLSearchParams, the bearer token and the subject. */
  const tool = (method: string, path: string, opts: { body?: Record<string, unknown>; query?: Record<string, unknown> } = {}) => {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined && v !== null) query.set(k, String(v));
    const target = query.size > 0 ? `${path}?${query}` : path;
    const headers: Record<string, string> = { authorization: `Bearer ${w.key}`, 'x-mcp-subject': w.accountId };
    if (opts.body) headers['content-type'] = 'application/json';
    return send(w.base, method, target, headers, opts.body ? JSON.stringify(opts.body) : undefined);
  };

  let configId = '';
  let firstJob = '';

  it('snap: {json: true, mcp: true, ...args} with every shape its schema allows; the headers and cookies reach the page', async () => {
    const r = await tool('POST', '/snap', {
      body: {
        json: true,
        mcp: true,
        url: `${w.site.origin}/page?tool=snap`,
        page_width: 800,
        page_height: 600,
        scale_factor: '2',
        image_format: 'png',
        wait: 0,
        ttl: 0,
        headers: [{ key: 'X-From-Mcp', value: 'yes' }],
        cookies: [{ key: 'mcp_session', value: 'abc' }],
        no_cookie_banners: true,
        multi_step_actions: [{ type: 'click', selector: '#login' }],
      },
    });
    expect(r.status, r.raw.toString()).to.equal(200);
    expect(r.body).to.include.keys(
      'success',
      'id',
      'embed_url',
      'screenshot_configuration_id',
      'direct_link',
      'direct_thumbnail_link',
      'taken_at_timestamp',
      'taken_at',
      'job_id',
    );
    expect(await imageSize(await w.file(String(r.body.direct_link)))).to.deep.equal([1600, 1200]);
    const seen = w.seenAt('/page').filter((s) => s.query === 'tool=snap');
    expect(seen[0]?.headers['x-from-mcp']).to.equal('yes');
    expect(seen[0]?.headers.cookie).to.equal('mcp_session=abc');
  });

  it('snap with real_location (a name from its list) and analyze_image_with_ai with ai_prompt', async () => {
    const before = w.upstreamUsers.length;
    const r = await tool('POST', '/snap', {
      body: {
        json: true,
        mcp: true,
        url: `${w.site.origin}/page?tool=located`,
        real_location: 'London',
        analyze_image_with_ai: true,
        ai_prompt: 'What is the heading?',
        wait: 0,
        ttl: 0,
      },
    });
    expect(r.status, r.raw.toString()).to.equal(200);
    expect(r.body).to.include({ is_proxy_screenshot: true, proxy_server: 'London' });
    expect((r.body.ai as Record<string, unknown>).ai_analyzed).to.equal(true);
    expect(w.upstreamUsers.slice(before).some((u) => u.startsWith('gb-london-session-'))).to.equal(true);
    expect(JSON.stringify(w.ai.of('analyze').at(-1)?.body)).to.contain('What is the heading?');
  });

  it('snap_html: {json: true, mcp: true, html_content}', async () => {
    const r = await tool('POST', '/snap_html', {
      body: { json: true, mcp: true, html_content: '<h1>From an agent</h1>', page_width: 640, page_height: 480, wait: 0, ttl: 0 },
    });
    expect(r.status, r.raw.toString()).to.equal(200);
    expect(await imageSize(await w.file(String(r.body.direct_link)))).to.deep.equal([640, 480]);
  });

  it('create_screenshot_config: scheduled, with a change step carrying custom_id (its first capture starts)', async () => {
    const r = await tool('POST', '/screenshot_configs', {
      body: {
        mcp: true,
        url: `${w.site.origin}/price`,
        scheduled_screenshot: true,
        scheduled_every: 1,
        scheduled_interval: 'days',
        wait: 0,
        custom_title: 'Price watch',
        multi_step_actions: [{ type: 'change', selector: '#price', send_to: 'webhook', url: `${w.receiver.origin}/alerts`, custom_id: 'price-watch-1' }],
      },
    });
    expect(r.status, r.raw.toString()).to.equal(200);
    expect(r.body).to.have.all.keys('success', 'screenshot_configuration_id', 'embed_url', 'job_id');
    configId = String(r.body.screenshot_configuration_id);
    firstJob = String(r.body.job_id);
    expect((await w.finished(firstJob)).body.status).to.equal('completed');
  });

  it('get_job_status', async () => {
    const r = await tool('GET', `/jobs/${firstJob}`);
    expect(r.status).to.equal(200);
    expect(r.body).to.include({ success: true, status: 'completed', job_id: firstJob });
    expect(r.body.screenshot).to.have.all.keys('direct_link', 'direct_thumbnail_link', 'taken_at_timestamp', 'job_id');
  });

  it('capture_screenshot: POST {mcp: true}; the price changed, so a change alert with the custom_id is sent and listed', async () => {
    const r = await tool('POST', `/screenshot_configs/${configId}/capture`, { body: { mcp: true } });
    expect(r.status, r.raw.toString()).to.equal(200);
    expect(r.body).to.have.all.keys('success', 'job_id', 'embed_url');
    expect((await w.finished(String(r.body.job_id))).body.status).to.equal('completed');
    const mine = await tool('GET', `/screenshot_configs/${configId}/change_notifications`, { query: { page: 1, limit: 10 } });
    expect(mine.status).to.equal(200);
    const alerts = mine.body.change_notifications as Array<Record<string, unknown>>;
    expect(alerts).to.have.length(1);
    expect(alerts[0]?.config).to.deep.equal({
      type: 'change',
      selector: '#price',
      send_to: 'webhook',
      url: `${w.receiver.origin}/alerts`,
      custom_id: 'price-watch-1',
    });
    expect(alerts[0]).to.include({ previous_value: '100 EUR', retrieved_value: '101 EUR' });
    const all = await tool('GET', '/change_notifications', { query: { order: 'DESC', after: '1700000000' } });
    expect((all.body.change_notifications as unknown[]).length).to.equal(1);
    // The alert was delivered, carrying the custom_id too.
    for (let i = 0; i < 50 && w.receiver.received.length === 0; i++) await new Promise((res) => setTimeout(res, 100));
    expect(JSON.parse(w.receiver.received[0]?.body ?? '{}').config).to.include({ custom_id: 'price-watch-1' });
  });

  it('get_screenshot_config', async () => {
    const r = await tool('GET', `/screenshot_configs/${configId}`);
    expect(r.status).to.equal(200);
    expect(r.body).to.have.all.keys('success', 'config', 'ids', 'created_at');
    expect(r.body.config).to.include({ url: `${w.site.origin}/price`, custom_title: 'Price watch' });
  });

  it('update_screenshot_config: {mcp: true, ...changes} without url keeps the stored one', async () => {
    const r = await tool('PATCH', `/screenshot_configs/${configId}`, {
      body: { mcp: true, custom_title: 'Renamed', scheduled_screenshot: true, scheduled_every: 2, scheduled_interval: 'days' },
    });
    expect(r.status, r.raw.toString()).to.equal(200);
    expect(r.body.config).to.include({ url: `${w.site.origin}/price`, custom_title: 'Renamed', scheduled_every: 2 });
  });

  it('list_screenshot_configs, list_config_screenshots and list_all_screenshots with paging (after and before as text)', async () => {
    const configs = await tool('GET', '/screenshot_configs', { query: { page: 1, limit: 100, order: 'ASC' } });
    expect(configs.status).to.equal(200);
    expect((configs.body.screenshot_configurations as Array<{ ids: { screenshot_config_id: string } }>).map((c) => c.ids.screenshot_config_id)).to.include(
      configId,
    );
    const shots = await tool('GET', `/screenshot_configs/${configId}/screenshots`, { query: { limit: 10, before: String(Date.now() + 60_000) } });
    expect(shots.status).to.equal(200);
    expect(shots.body.screenshots).to.have.length(2);
    const all = await tool('GET', '/screenshots', { query: { limit: 2 } });
    expect(all.status).to.equal(200);
    expect(all.body.screenshots).to.have.length(2);
    expect(all.body.has_more).to.equal(true);
  });

  it('list_real_locations and get_account_limits', async () => {
    const locations = await tool('GET', '/real_locations');
    expect(locations.body).to.deep.equal({ success: true, results: ['London', 'New York', 'USA'] });
    const limits = await tool('GET', '/account_limits');
    expect(limits.status).to.equal(200);
    expect((limits.body.results as Record<string, number>).screenshot_current_month_usage).to.be.at.least(5);
  });

  it('analyze_any_image_with_ai: POST /ai/analyze {urls, prompts} (no mcp marker), one answer per prompt', async () => {
    const shot = await tool('POST', '/snap', { body: { json: true, mcp: true, url: `${w.site.origin}/page?tool=analyze`, wait: 0, ttl: 0 } });
    const r = await tool('POST', '/ai/analyze', { body: { urls: [String(shot.body.direct_link)], prompts: ['What is the heading?', 'Is there a button?'] } });
    expect(r.status, r.raw.toString()).to.equal(200);
    expect((r.body.results as Array<{ prompt: string }>).map((x) => x.prompt)).to.deep.equal(['What is the heading?', 'Is there a button?']);
  });

  it(
    'the domain research tools: create (name, additional_notes, domains, structures), status until it ends, report as JSON and ?format=csv, list ' +
      'with paging',
    async () => {
      const created = await tool('POST', '/api/domain_research_requests', {
        body: {
          name: 'Competitors',
          additional_notes: 'Small sites',
          domains: [`${w.site.origin}/page?tool=research`],
          structures: [{ data_type: 'string', data_field_name: 'heading', data_field_prompt_description: 'The main heading' }],
        },
      });
      expect(created.status, created.raw.toString()).to.equal(200);
      const jobId = String(created.body.job_id);
      let status = created;
      for (let i = 0; i < 300 && !['completed', 'failed'].includes(String(status.body.status)); i++) {
        await new Promise((r) => setTimeout(r, 200));
        status = await tool('GET', `/api/domain_research_requests/${jobId}/status`);
      }
      expect(status.body).to.include({ job_id: jobId, name: 'Competitors', status: 'completed', total_domains: 1, completed_domains: 1 });
      const report = await tool('GET', `/api/domain_research_requests/${jobId}/report`);
      expect(report.body).to.include({ job_id: jobId, status: 'completed' });
      const csv = await tool('GET', `/api/domain_research_requests/${jobId}/report`, { query: { format: 'csv' } });
      expect(csv.status).to.equal(200);
      expect(csv.headers.get('content-type')).to.contain('text/csv');
      expect(
        csv.raw
          .toString('utf8')
          .replace(/^\uFEFF/, '')
          .split('\r\n')[0],
      ).to.match(/^domain,status,heading/);
      const list = await tool('GET', '/api/domain_research_requests', { query: { page: 1, limit: 10, order: 'DESC' } });
      expect((list.body.domain_research_requests as Array<{ job_id: string }>).map((j) => j.job_id)).to.include(jobId);
    },
  );

  it('delete_screenshot_config: DELETE without a body; then its id answers 404', async () => {
    const r = await tool('DELETE', `/screenshot_configs/${configId}`);
    expect(r.status).to.equal(200);
    expect(r.body).to.include({ success: true, deleted: true });
    expect((await tool('GET', `/screenshot_configs/${configId}`)).status).to.equal(404);
  });

  it('an option its schema does not have is still refused, with a note the agent can act on', async () => {
    const r = await tool('POST', '/snap', { body: { json: true, mcp: true, url: `${w.site.origin}/page`, colour: 'red' } });
    expect(r.status).to.equal(400);
    expect(r.body).to.include({ success: false, error_code: 'invalid_parameter' });
    expect(String(r.body.note)).to.contain('Unknown parameter "colour"');
  });
});
