/**
 * The compatibility policy over HTTP (docs/clients.md), without a browser: the client markers
 * are accepted, ignored and counted by client kind in /metrics while any other unknown
 * parameter is still refused; the key as the clients send it; PATCH without url; the one
 * admission path (the same bad configuration answers the same code on snap, create, update
 * and capture-now); POST /oauth/introspect for the official MCP server.
 */
import { expect } from 'chai';
import { call } from '../../services/shared/contracts';
import { backendConfig } from '../support/backends';
import { expectEnvelope } from '../support/errors';
import { type HttpAnswer, request } from '../support/http';
import { scrape } from '../support/prometheus';
import { type RunningSystem, runSystem } from '../support/system';

const CLIENT_ID = 'mcp-server';
const CLIENT_SECRET = 'introspection-secret-0123456789';

describe('client compatibility over HTTP', function () {
  this.timeout(60_000);
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  let key: string;
  let accountId: string;

  before(async () => {
    const b = await backendConfig('sqlite', {
      SERVICES: 'api,billing,ai,proxy,scheduler',
      MCP_INTROSPECTION_CLIENT_ID: CLIENT_ID,
      MCP_INTROSPECTION_CLIENT_SECRET: CLIENT_SECRET,
    });
    cleanup = b.cleanup;
    sys = await runSystem(b.config);
    const account = await sys.account('paid', { byo_proxy: 1, byo_ai: 1 });
    key = account.access_token;
    accountId = account.account_id;
  });
  after(async () => {
    await sys.stop();
    await cleanup();
  });

  const api = (method: string, path: string, opts: { json?: unknown; headers?: Record<string, string> } = {}) =>
    request(sys.base, method, path, { ...opts, headers: { authorization: `Bearer ${key}`, ...(opts.headers ?? {}) } });
  const markers = async () => (await scrape(sys.base)).all('snap_api_client_markers_total');
  const marker = async (client: string, name: string) => (await markers()).find((s) => s.labels.client === client && s.labels.marker === name)?.value ?? 0;

  describe('client markers', () => {
    it('json=true on an endpoint that always answers JSON is accepted and counted (the n8n node sends it on every call)', async () => {
      const before = await marker('n8n', 'json');
      const r = await api('GET', '/real_locations?json=true', { headers: { 'user-agent': 'n8n' } });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      expect(r.body).to.deep.equal({ success: true, results: [] });
      expect(await marker('n8n', 'json')).to.equal(before + 1);
    });

    it('json=false there is refused: it asks for something the endpoint cannot do', async () => {
      expectEnvelope(await api('GET', '/real_locations?json=false'), 400, 'invalid_parameter', 'json: this endpoint always answers JSON');
    });

    it('mcp, microsoft and X-MCP-Subject are accepted and counted by client kind; the request does what it says', async () => {
      const [mcp, subject, microsoft] = [await marker('mcp', 'mcp'), await marker('mcp', 'x-mcp-subject'), await marker('microsoft', 'microsoft')];
      const listed = await api('GET', '/screenshot_configs?mcp=true&limit=5&microsoft=true', { headers: { 'x-mcp-subject': 'user-42' } });
      expect(listed.status, JSON.stringify(listed.body)).to.equal(200);
      expect(listed.body).to.deep.equal({ success: true, screenshot_configurations: [], has_more: false });
      const limits = await api('GET', '/account_limits?mcp=1');
      expect(limits.status).to.equal(200);
      expect(await marker('mcp', 'mcp')).to.equal(mcp + 2);
      expect(await marker('mcp', 'x-mcp-subject')).to.equal(subject + 1);
      expect(await marker('microsoft', 'microsoft')).to.equal(microsoft + 1);
    });

    it('a marker with a value that is not true or false is refused, and every other unknown parameter still is', async () => {
      expectEnvelope(await api('GET', '/account_limits?mcp=banana'), 400, 'invalid_parameter', 'mcp: marks a call from an official client');
      expectEnvelope(await api('GET', '/account_limits?colour=red'), 400, 'invalid_parameter', 'colour');
      expectEnvelope(await api('GET', '/screenshot_configs?mcp=true&colour=red'), 400, 'invalid_parameter', 'Unknown parameter "colour"');
      expectEnvelope(
        await api('POST', '/screenshot_configs', { json: { mcp: true, url: 'https://example.com', colour: 'red' } }),
        400,
        'invalid_parameter',
        'Unknown parameter "colour"',
      );
    });
  });

  describe('the key as the clients send it', () => {
    it('takes Authorization: <key> without the Bearer prefix (an n8n credential option)', async () => {
      const r = await request(sys.base, 'GET', '/account_limits', { headers: { authorization: key } });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
    });

    it('refuses another scheme rather than reading it as a key, and never echoes the key', async () => {
      const r = await request(sys.base, 'GET', '/account_limits', { headers: { authorization: `Basic ${Buffer.from(`u:${key}`).toString('base64')}` } });
      expectEnvelope(r, 401, 'access_token_invalid', 'Bearer <key>');
      const wrong = await request(sys.base, 'GET', '/account_limits', { headers: { authorization: 'sk_not_a_key' } });
      expectEnvelope(wrong, 401, 'access_token_invalid');
      expect(wrong.raw.toString()).to.not.contain('sk_not_a_key');
    });
  });

  describe('PATCH /screenshot_configs/:id', () => {
    const url = 'https://example.com/pricing';
    let id = '';
    before(async () => {
      const created = await call(sys.broker, 'scheduler.create', {
        accountId,
        input: { given: { url, wait: 100 }, options: { url, wait: 100 } },
        jobId: 'job-1',
      });
      id = created.ids.screenshot_config_id;
    });

    it('without url keeps the stored one (the MCP server and the Python client leave it out)', async () => {
      const r = await api('PATCH', `/screenshot_configs/${id}`, { json: { mcp: true, wait: 250, proxy_server: '' } });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      expect(r.body.config).to.deep.equal({ url, wait: 250 });
      expect((await call(sys.broker, 'scheduler.get', { accountId, id })).options).to.deep.include({ url, wait: 250 });
    });

    it('that carries nothing to change is refused (the npm client sends {}), and the configuration is unchanged', async () => {
      for (const json of [{}, { mcp: true }, undefined]) {
        expectEnvelope(
          await api('PATCH', `/screenshot_configs/${id}`, json === undefined ? {} : { json }),
          400,
          'invalid_parameter',
          'No parameter to change arrived',
        );
      }
      expect((await call(sys.broker, 'scheduler.get', { accountId, id })).options).to.deep.include({ url, wait: 250 });
    });
  });

  describe('one admission path', () => {
    /** Snap, create, update and capture-now of the same options; each answer. */
    async function everywhere(options: Record<string, unknown>, token = key): Promise<HttpAnswer[]> {
      const owner = (await call(sys.broker, 'billing.authenticate', { token })).accountId;
      const url = 'https://example.com/';
      const stored = await call(sys.broker, 'scheduler.create', {
        accountId: owner,
        input: { given: { url, ...options }, options: { url, ...options } },
        jobId: 'j',
      });
      const id = stored.ids.screenshot_config_id;
      const auth = { authorization: `Bearer ${token}` };
      return [
        await request(sys.base, 'POST', '/snap', { headers: auth, json: { url, ...options } }),
        await request(sys.base, 'POST', '/screenshot_configs', { headers: auth, json: { url, ...options } }),
        await request(sys.base, 'PATCH', `/screenshot_configs/${id}`, { headers: auth, json: options }),
        await request(sys.base, 'POST', `/screenshot_configs/${id}/capture`, { headers: auth }),
      ];
    }

    it('the same bad configuration answers the same code on snap, create, update and capture-now: the analysis before the proxy', async () => {
      // No openai key stored, and no proxy 3: the analysis is checked first, everywhere.
      const answers = await everywhere({ analyze_image_with_ai: true, ai_provider: 'openai', ai_model: 'gpt-4o', custom_proxy_id: 3 });
      for (const r of answers) expectEnvelope(r, 412, 'ai_provider_not_configured');
      const proxyOnly = await everywhere({ custom_proxy_id: 3 });
      for (const r of proxyOnly) expectEnvelope(r, 412, 'custom_proxy_not_found');
    });

    it('capture-now runs the plan gates too: a plan downgraded since the configuration was stored answers 402', async () => {
      const account = await sys.account('paid', { byo_proxy: 1 });
      const url = 'https://example.com/';
      const stored = await call(sys.broker, 'scheduler.create', {
        accountId: account.account_id,
        input: { given: { url, custom_proxy_id: 7 }, options: { url, custom_proxy_id: 7 } },
        jobId: 'j',
      });
      await call(sys.broker, 'billing.setPlan', { accountId: account.account_id, plan: 'free' });
      const answers = [
        ...(await everywhere({ custom_proxy_id: 7 }, account.access_token)),
        await request(sys.base, 'POST', `/screenshot_configs/${stored.ids.screenshot_config_id}/capture`, {
          headers: { authorization: `Bearer ${account.access_token}` },
        }),
      ];
      for (const r of answers) expectEnvelope(r, 402, 'byo_proxy_plan_required');
      const limits = await request<{ results: { screenshot_current_month_usage: number } }>(sys.base, 'GET', '/account_limits', {
        headers: { authorization: `Bearer ${account.access_token}` },
      });
      expect(limits.body.results.screenshot_current_month_usage).to.equal(0);
    });
  });

  describe('POST /oauth/introspect (the official MCP server asks it about each token)', () => {
    const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
    const introspect = (token: string, authorization = basic(CLIENT_ID, CLIENT_SECRET)) =>
      request(sys.base, 'POST', '/oauth/introspect', { headers: { authorization }, form: { token } });

    it('answers active with the account as sub and the MCP scopes for an API key', async () => {
      const r = await introspect(key);
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      expect(r.body).to.deep.equal({ success: true, active: true, sub: accountId, scope: 'mcp_read mcp_write', client_id: CLIENT_ID, token_type: 'Bearer' });
    });

    it('answers inactive for an unknown key, without echoing it', async () => {
      const r = await introspect('sk_unknown_key_123');
      expect(r.body).to.deep.equal({ success: true, active: false });
      expect(r.raw.toString()).to.not.contain('sk_unknown_key_123');
    });

    it('refuses a caller without the client credentials', async () => {
      expectEnvelope(await introspect(key, basic(CLIENT_ID, 'wrong-secret-0123456789')), 401, 'access_token_invalid', 'MCP_INTROSPECTION_CLIENT_ID');
      expectEnvelope(await introspect(key, `Bearer ${key}`), 401, 'access_token_required', 'Authorization: Basic');
    });
  });
});

describe('POST /oauth/introspect without MCP_INTROSPECTION_CLIENT_ID', () => {
  it('is off: 404 saying how to turn it on', async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing' });
    const sys = await runSystem(b.config);
    try {
      const r = await request(sys.base, 'POST', '/oauth/introspect', { form: { token: 'x' } });
      expectEnvelope(r, 404, 'not_found', 'MCP_INTROSPECTION_CLIENT_ID');
    } finally {
      await sys.stop();
      await b.cleanup();
    }
  });
});
