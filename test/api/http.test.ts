import { expect } from 'chai';
import knex from 'knex';
import { call } from '../../services/shared/contracts';
import { knexConfig } from '../../services/shared/database';
import { backendConfig } from '../support/backends';
import { screenshotsUsed } from '../support/capture-helpers';
import { expectEnvelope } from '../support/errors';
import { qs, request } from '../support/http';
import { scrape } from '../support/prometheus';
import { type RunningSystem, runSystem } from '../support/system';

const ACCOUNT_LIMITS_KEYS = [
  'screenshot_limit',
  'screenshot_current_month_usage',
  'real_location_bandwidth_limit_in_bytes',
  'real_location_bandwidth_current_month_usage_in_bytes',
  'ai_analysis_requests_limit',
  'ai_analysis_requests_current_month_usage',
  'domain_research_limit',
  'domain_research_current_month_usage',
  'bring_your_own_ai_enabled',
  'bring_your_own_ai_providers',
  'bring_your_own_proxy_enabled',
  'bring_your_own_proxies',
];

describe('api over HTTP (embedded mode: SQLite, in-process counters)', () => {
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  let free: string;
  let paid: string;

  before(async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing,ai,proxy', BODY_LIMIT_BYTES: '4096' });
    cleanup = b.cleanup;
    sys = await runSystem(b.config);
    free = (await sys.account('free')).access_token;
    paid = (await sys.account('paid')).access_token;
  });
  after(async () => {
    await sys.stop();
    await cleanup();
  });

  it('answers GET /health with 503 not_ready while no capture service runs (no capture can be taken)', async () => {
    expectEnvelope(await request(sys.base, 'GET', '/health'), 503, 'not_ready', 'no capture service is running');
  });

  describe('authentication', () => {
    it('answers 401 access_token_required without a key', async () => {
      expectEnvelope(await request(sys.base, 'GET', '/account_limits'), 401, 'access_token_required', 'Authorization: Bearer');
    });

    it('answers 401 access_token_invalid for an unknown key', async () => {
      expectEnvelope(await request(sys.base, 'GET', '/account_limits?access_token=sk_nope'), 401, 'access_token_invalid');
    });

    it('answers 401 access_token_invalid, not "required", for a key sent as a number or an object in a JSON body', async () => {
      expectEnvelope(
        await request(sys.base, 'POST', '/snap', { json: { url: 'https://example.com', access_token: 123 } }),
        401,
        'access_token_invalid',
        'a number was sent',
      );
      expectEnvelope(
        await request(sys.base, 'POST', '/snap', { json: { url: 'https://example.com', access_token: { key: 'x' } } }),
        401,
        'access_token_invalid',
        'an object was sent',
      );
    });

    it('accepts the key as query, Bearer header, form field and JSON body field', async () => {
      expect((await request(sys.base, 'GET', `/account_limits?access_token=${free}`)).status).to.equal(200);
      expect((await request(sys.base, 'GET', '/account_limits', { headers: { authorization: `Bearer ${free}` } })).status).to.equal(200);
      // On /snap the key is checked before the capture; a gate error proves the key was read.
      const form = await request(sys.base, 'POST', '/snap', { form: { access_token: free, url: 'https://example.com', ai_provider: 'openai' } });
      expectEnvelope(form, 402, 'byok_plan_required');
      const json = await request(sys.base, 'POST', '/snap', { json: { access_token: free, url: 'https://example.com', ai_provider: 'openai' } });
      expectEnvelope(json, 402, 'byok_plan_required');
    });
  });

  describe('GET /account_limits', () => {
    it("answers the spec's exact shape for a free account, with the domain research credits beside the others", async () => {
      const r = await request(sys.base, 'GET', `/account_limits?access_token=${free}`);
      expect(r.body.success).to.equal(true);
      expect(r.body.results).to.have.all.keys(...ACCOUNT_LIMITS_KEYS);
      expect(r.body.results).to.deep.equal({
        screenshot_limit: 25,
        screenshot_current_month_usage: 0,
        real_location_bandwidth_limit_in_bytes: 33_554_432,
        real_location_bandwidth_current_month_usage_in_bytes: 0,
        ai_analysis_requests_limit: 25,
        ai_analysis_requests_current_month_usage: 0,
        domain_research_limit: 25,
        domain_research_current_month_usage: 0,
        bring_your_own_ai_enabled: false,
        bring_your_own_ai_providers: [],
        bring_your_own_proxy_enabled: false,
        bring_your_own_proxies: [],
      });
    });

    it('reflects a paid plan with addons', async () => {
      const { access_token } = await sys.account('paid', { byo_ai: 1, byo_proxy: 1, ai_credits: 1, bandwidth_2gb: 1 });
      const r = await request<{ results: Record<string, unknown> }>(sys.base, 'GET', `/account_limits?access_token=${access_token}`);
      expect(r.body.results).to.deep.include({
        screenshot_limit: 10000,
        ai_analysis_requests_limit: 1025,
        domain_research_limit: 1000,
        real_location_bandwidth_limit_in_bytes: 33_554_432 + 2 * 1024 ** 3,
        bring_your_own_ai_enabled: true,
        bring_your_own_proxy_enabled: true,
      });
    });

    it('rejects parameters it does not take', async () => {
      expectEnvelope(await request(sys.base, 'GET', `/account_limits?access_token=${free}&month=5`), 400, 'invalid_parameter', 'takes only access_token');
    });
  });

  describe('bad input as a new user sends it', () => {
    const snap = (params: Record<string, string | number>) => `/snap?${qs({ url: 'https://example.com', ...params })}`;
    it('wait=99999 is 400 invalid_parameter naming wait and its maximum', async () => {
      expectEnvelope(await request(sys.base, 'GET', snap({ access_token: free, wait: 99999 })), 400, 'invalid_parameter', 'wait: must be at most 20000');
    });
    it('image_format=gif is 400 invalid_parameter listing the formats', async () => {
      expectEnvelope(await request(sys.base, 'GET', snap({ access_token: free, image_format: 'gif' })), 400, 'invalid_parameter', 'jpeg, png, webp, pdf');
    });
    it('a string where a number belongs is 400 invalid_parameter', async () => {
      expectEnvelope(
        await request(sys.base, 'GET', snap({ access_token: free, page_width: 'wide' })),
        400,
        'invalid_parameter',
        'page_width: must be a whole number',
      );
    });
    it('a malformed JSON body is 400 invalid_parameter', async () => {
      const r = await request(sys.base, 'POST', `/snap?access_token=${free}`, { body: '{"url": ', headers: { 'content-type': 'application/json' } });
      expectEnvelope(r, 400, 'invalid_parameter', 'JSON body could not be parsed');
    });
    it('a JSON body that is not an object is 400 invalid_parameter', async () => {
      expectEnvelope(
        await request(sys.base, 'POST', `/snap?access_token=${free}`, { json: ['https://example.com'] }),
        400,
        'invalid_parameter',
        'must be a JSON object',
      );
    });
    it('an unknown route is 404 not_found in the envelope', async () => {
      expectEnvelope(await request(sys.base, 'GET', '/screenshot?url=x'), 404, 'not_found', 'GET /screenshot');
      // A known path with a method it does not take is 405 (test/api/protocol-errors.test.ts).
      expectEnvelope(await request(sys.base, 'DELETE', '/screenshot'), 404, 'not_found');
    });
    it('a body over the size limit is 413 payload_too_large', async () => {
      expectEnvelope(
        await request(sys.base, 'POST', '/snap', { json: { access_token: free, url: 'https://example.com', css_inject: 'x'.repeat(5000) } }),
        413,
        'payload_too_large',
      );
    });
    it('an unsupported content type is 415 unsupported_media_type, text/plain (which Fastify reads by itself) too', async () => {
      for (const [type, body] of [
        ['application/xml', '<url/>'],
        ['text/plain', '{"url":"https://example.com"}'],
        ['text/plain; charset=utf-8', 'url=https://example.com'],
      ]) {
        expectEnvelope(await request(sys.base, 'POST', '/snap', { body, headers: { 'content-type': type as string } }), 415, 'unsupported_media_type');
      }
    });
  });

  describe('plan and addon gates, decided before any credit is reserved', () => {
    it('own AI on the free plan is 402 byok_plan_required', async () => {
      expectEnvelope(
        await request(sys.base, 'GET', `/snap?${qs({ access_token: free, url: 'https://example.com', ai_provider: 'anthropic' })}`),
        402,
        'byok_plan_required',
      );
      expect(await screenshotsUsed(sys, free)).to.equal(0);
    });
    it('own AI on a paid plan without the addon is 402 byok_addon_required', async () => {
      expectEnvelope(
        await request(sys.base, 'GET', `/snap?${qs({ access_token: paid, url: 'https://example.com', ai_provider: 'openrouter' })}`),
        402,
        'byok_addon_required',
      );
      expect(await screenshotsUsed(sys, paid)).to.equal(0);
    });
    it('an own proxy on the free plan is 402 byo_proxy_plan_required', async () => {
      expectEnvelope(
        await request(sys.base, 'GET', `/snap?${qs({ access_token: free, url: 'https://example.com', custom_proxy_id: 1 })}`),
        402,
        'byo_proxy_plan_required',
      );
    });
    it('an own proxy on a paid plan without the addon is 402 byo_proxy_addon_required', async () => {
      expectEnvelope(
        await request(sys.base, 'GET', `/snap?${qs({ access_token: paid, url: 'https://example.com', custom_proxy_id: 1 })}`),
        402,
        'byo_proxy_addon_required',
      );
      expect(await screenshotsUsed(sys, paid)).to.equal(0);
    });
    it('an unknown AI provider is 400 ai_provider_unsupported, and structured fields without an analysis 400 naming them', async () => {
      expectEnvelope(
        await request(sys.base, 'GET', `/snap?${qs({ access_token: paid, url: 'https://example.com', ai_provider: 'gemini' })}`),
        400,
        'ai_provider_unsupported',
      );
      // Their definitions are checked after the gates, provider and model (test/ai/capture-analysis.test.ts).
      expectEnvelope(
        await request(sys.base, 'POST', '/snap', {
          json: { access_token: paid, url: 'https://example.com', ai_structured_fields: [{ name: 'x', type: 'enum' }] },
        }),
        400,
        'invalid_parameter',
        'ai_structured_fields: requires analyze_image_with_ai=true',
      );
    });
  });

  describe('monthly limits', () => {
    it('refuses a snap past the screenshot limit with 402 screenshot_limit_reached', async () => {
      await call(sys.broker, 'billing.upsertPlan', { name: 'empty', paid: false, screenshot_limit: 0 });
      const { access_token } = await sys.account('empty');
      // ttl=0: no saved capture may be reused, so billing is asked at once.
      expectEnvelope(
        await request(sys.base, 'GET', `/snap?${qs({ access_token, url: 'https://example.com', ttl: 0 })}`),
        402,
        'screenshot_limit_reached',
        '0 of 0',
      );
    });

    it('counts refusals for an exhausted quota in /metrics, and each account that ran out once', async () => {
      const before = await scrape(sys.base);
      const refusals = before.value('snap_quota_refusals_total', { kind: 'screenshots' }) ?? 0;
      const accounts = before.value('snap_accounts_quota_exhausted', { kind: 'screenshots' }) ?? 0;
      await call(sys.broker, 'billing.upsertPlan', { name: 'empty', paid: false, screenshot_limit: 0 });
      const { access_token } = await sys.account('empty');
      for (let i = 0; i < 2; i++)
        expectEnvelope(await request(sys.base, 'GET', `/snap?${qs({ access_token, url: 'https://example.com', ttl: 0 })}`), 402, 'screenshot_limit_reached');
      const after = await scrape(sys.base);
      expect(after.value('snap_quota_refusals_total', { kind: 'screenshots' })).to.equal(refusals + 2);
      expect(after.value('snap_accounts_quota_exhausted', { kind: 'screenshots' })).to.equal(accounts + 1);
      expect(after.value('snap_accounts_quota_exhausted', { kind: 'ai_credits' })).to.equal(0);
    });

    it('answers 503 capacity_exhausted with Retry-After when no capture service runs, and spends no credit', async () => {
      const { access_token } = await sys.account('free');
      const r = await request(sys.base, 'GET', `/snap?${qs({ access_token, url: 'https://example.com' })}`);
      expectEnvelope(r, 503, 'capacity_exhausted');
      expect(r.headers.get('retry-after')).to.equal('5');
      expect(await screenshotsUsed(sys, access_token)).to.equal(0);
    });

    it('refuses AI credits and bandwidth past their limits with their own codes', async () => {
      const account = await call(sys.broker, 'billing.authenticate', { token: free });
      const ai = await call(sys.broker, 'billing.reserve', { account, amounts: { ai_credits: 26 } }).catch((e) => e);
      expect([ai.type, ai.code]).to.deep.equal(['ai_credits_exhausted', 402]);
      const bw = await call(sys.broker, 'billing.reserve', { account, amounts: { bandwidth_bytes: 33_554_433 } }).catch((e) => e);
      expect([bw.type, bw.code]).to.deep.equal(['real_location_bandwidth_exhausted', 402]);
    });
  });

  describe('OpenAPI', () => {
    it('documents every endpoint with its parameters and error codes, and /docs browses it', async () => {
      const doc = (
        await request<{ paths: Record<string, Record<string, { responses: Record<string, { description: string }>; parameters: Array<{ name: string }> }>> }>(
          sys.base,
          'GET',
          '/openapi.json',
        )
      ).body;
      // The MCP endpoint (installed beside the route table) and the document itself are listed too.
      expect(doc.paths).to.include.all.keys('/snap', '/account_limits', '/health', '/mcp', '/openapi.json');
      expect(doc.paths['/mcp']).to.have.property('post');
      expect(doc.paths['/mcp']?.post?.responses['401']?.description).to.contain('access_token_invalid');
      const getSnap = doc.paths['/snap']?.get;
      expect(getSnap?.parameters.map((p) => p.name)).to.include.members(['url', 'wait', 'image_format', 'multi_step_actions']);
      expect(getSnap?.responses['402']?.description).to.contain('screenshot_limit_reached').and.contain('byok_plan_required');
      expect(getSnap?.responses['401']?.description).to.contain('access_token_required');
      expect(doc.paths['/snap']).to.have.property('post');
      const docs = await request(sys.base, 'GET', '/docs/');
      expect(docs.status).to.equal(200);
      expect(docs.raw.toString()).to.contain('swagger');
    });
  });
});

describe('api rate limits (embedded)', () => {
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  before(async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing,ai,proxy', RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_SECONDS: '60' });
    cleanup = b.cleanup;
    sys = await runSystem(b.config);
  });
  after(async () => {
    await sys.stop();
    await cleanup();
  });

  it('answers 429 rate_limited with Retry-After past the per-account limit, and only for that account', async () => {
    const { access_token } = await sys.account();
    for (let i = 0; i < 3; i++) expect((await request(sys.base, 'GET', `/account_limits?access_token=${access_token}`)).status).to.equal(200);
    const r = await request(sys.base, 'GET', `/account_limits?access_token=${access_token}`);
    expectEnvelope(r, 429, 'rate_limited', 'at most 3 per 60 seconds');
    expect(Number(r.headers.get('retry-after'))).to.be.within(1, 60);
    const other = await sys.account();
    expect((await request(sys.base, 'GET', `/account_limits?access_token=${other.access_token}`)).status).to.equal(200);
  });
});

describe('api internal errors', () => {
  it('answers 500 internal_error with a generic note, never the detail, when the database breaks', async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing,ai,proxy' });
    const sys = await runSystem(b.config);
    try {
      const { access_token } = await sys.account();
      const db = knex(knexConfig(b.config.database));
      await db.schema.renameTable('api_keys', 'api_keys_gone');
      await db.destroy();
      const r = await request(sys.base, 'GET', `/account_limits?access_token=${access_token}`);
      expectEnvelope(r, 500, 'internal_error');
      expect(r.raw.toString()).not.to.match(/sqlite|api_keys|select|at /i);
    } finally {
      await sys.stop();
      await b.cleanup();
    }
  });
});
