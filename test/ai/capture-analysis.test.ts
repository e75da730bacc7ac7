/**
 * AI analysis of captures end to end: the real system on the real Grid, pages served
 * locally, and every AI backend a local stand-in speaking its provider's wire format to the
 * official SDK (the service's own backend is an OpenAI-style server; own keys go to the
 * Anthropic, OpenAI and OpenRouter stand-ins). What was sent to the provider, what the
 * caller gets, what is stored, and what is charged.
 */
import Ajv from 'ajv';
import { expect } from 'chai';
import { validationSchema } from '../../services/ai/providers';
import type { StructuredField } from '../../services/ai/providers/types';
import { type FakeProvider, startFakeProvider } from '../support/ai-providers';
import { backendConfig } from '../support/backends';
import { snapSuite } from '../support/capture-helpers';
import { expectEnvelope } from '../support/errors';
import { type HttpAnswer, jobFinished, request } from '../support/http';
import { scrape } from '../support/prometheus';
import { type RunningSystem, runSystem } from '../support/system';

type Body = Record<string, unknown>;
type Kind = 'anthropic' | 'openai' | 'openrouter';

const FIELDS: StructuredField[] = [
  { name: 'headline', type: 'string', description: 'The main heading.' },
  { name: 'price', type: 'number' },
  { name: 'in_stock', type: 'boolean' },
  { name: 'colour', type: 'enum', options: ['red', 'green', 'blue'] },
  { name: 'tags', type: 'multi', options: ['sale', 'new', 'popular'] },
];

describe('AI analysis of captures (real Grid, providers on local stand-ins)', function () {
  this.timeout(120_000);
  const fakes = {} as Record<Kind | 'service', FakeProvider>;
  let clock = Date.now();
  before(async () => {
    for (const kind of ['anthropic', 'openai', 'openrouter'] as const) fakes[kind] = await startFakeProvider(kind);
    fakes.service = await startFakeProvider('openai');
  });
  after(async () => {
    for (const f of Object.values(fakes)) await f.stop();
  });
  const t = snapSuite(
    () => ({
      ALLOW_PRIVATE_NETWORKS: 'true',
      CAPTURE_SESSIONS: '2',
      CAPTURE_TIMEOUT_MS: '15000',
      AI_TIMEOUT_MS: '2000',
      SERVICE_AI_PROVIDER: 'openai',
      SERVICE_AI_BASE_URL: fakes.service.baseUrl,
      SERVICE_AI_API_KEY: fakes.service.key,
      SERVICE_AI_MODEL: 'gpt-4o-mini',
      ANTHROPIC_BASE_URL: fakes.anthropic.baseUrl,
      OPENAI_BASE_URL: fakes.openai.baseUrl,
      OPENROUTER_BASE_URL: fakes.openrouter.baseUrl,
    }),
    { scheduler: { now: () => clock, autoTick: false } },
  );

  const api = (method: string, path: string, key: string, json?: Body): Promise<HttpAnswer<Body>> =>
    request<Body>(t.sys.base, method, path, { headers: { authorization: `Bearer ${key}` }, ...(json ? { json } : {}) });
  const snapJson = (key: string, params: Body) =>
    api('POST', '/snap', key, { url: `${t.fx.origin}/plain`, json: true, wait: 0, ttl: 0, analyze_image_with_ai: true, ...params });
  const usage = async (key: string) => {
    const r = (await api('GET', '/account_limits', key)).body.results as Body;
    return { screenshots: r.screenshot_current_month_usage, ai: r.ai_analysis_requests_current_month_usage };
  };
  /** An account on a paid plan with the Bring Your Own AI addon, and a verified key for `kind` when given. */
  const byokAccount = async (kind?: Kind, extra: Body = {}) => {
    const key = (await t.sys.account('big', { byo_ai: 1 })).access_token;
    if (kind) {
      const r = await api('PUT', `/ai/providers/${kind}`, key, { api_key: fakes[kind].key, ...extra });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
    }
    return key;
  };
  const stored = async (link: string) => (await request(t.sys.base, 'GET', new URL(link).pathname)).raw;
  const lastAnalysis = (kind: Kind | 'service') => {
    const sent = fakes[kind].of('analyze');
    return sent[sent.length - 1]?.body ?? {};
  };
  const waitForJob = async (key: string, jobId: string): Promise<Body> => (await jobFinished(t.sys.base, key, jobId)).body;
  const listed = async (key: string) => (await api('GET', '/screenshots', key)).body.screenshots as Body[];

  describe("the service's own AI (AI credits)", () => {
    it('analyses the captured image with the prompt, returns the ai object and spends one AI credit', async () => {
      const key = (await t.sys.account('big')).access_token;
      const before = await usage(key);
      const r = await snapJson(key, { ai_prompt: 'What colour is the box?' });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      expect(r.body.ai).to.deep.equal({
        ai_analyzed: true,
        ai_prompt: 'What colour is the box?',
        ai_response: 'A web page with a heading and a photo.',
        ai_provider: 'service',
        ai_model: null,
        ai_prompt_mode: 'simple',
        ai_structured_response: null,
      });
      // What the SDK sent: the operator's model, the prompt, and our captured image, base64.
      const sent = lastAnalysis('service');
      expect(sent.model).to.equal('gpt-4o-mini');
      const text = JSON.stringify(sent);
      expect(text).to.contain('What colour is the box?');
      expect(text).to.contain((await stored(String(r.body.direct_link))).toString('base64'));
      expect(await usage(key)).to.deep.equal({ screenshots: Number(before.screenshots) + 1, ai: Number(before.ai) + 1 });
      // Stored with the screenshot: the account-wide list shows the same object.
      const row = (await listed(key)).find((s) => s.id === r.body.id);
      expect(row?.ai).to.deep.equal(r.body.ai);
    });

    it('keeps the capture and charges it when the provider fails, gives the AI credit back and says why', async () => {
      const key = (await t.sys.account('big')).access_token;
      const cases: Array<[string, () => void, string]> = [
        ['down (500, retried once)', () => fakes.service.queue('analyze', { status: 500 }, { status: 500 }), 'ai_provider_unavailable'],
        ['rate-limiting (429)', () => fakes.service.queue('analyze', { status: 429, retryAfter: 0 }, { status: 429, retryAfter: 0 }), 'ai_rate_limited'],
        ['slower than AI_TIMEOUT_MS', () => fakes.service.queue('analyze', { delayMs: 4_000 }), 'ai_timeout'],
        ['rejecting the operator key (401)', () => fakes.service.queue('analyze', { status: 401 }), 'ai_provider_key_rejected'],
      ];
      for (const [what, provoke, code] of cases) {
        const before = await usage(key);
        provoke();
        const r = await snapJson(key, {});
        expect(r.status, `${what}: ${JSON.stringify(r.body)}`).to.equal(200);
        const ai = r.body.ai as Body;
        expect(ai.ai_analyzed, what).to.equal(false);
        expect(ai.ai_response, what).to.equal('');
        expect((ai.ai_error as Body).error_code, what).to.equal(code);
        expect(String((ai.ai_error as Body).note), what).to.have.length.above(20);
        expect(String((ai.ai_error as Body).note), what).not.to.contain('store it again');
        expect(await usage(key), what).to.deep.equal({ screenshots: Number(before.screenshots) + 1, ai: before.ai });
        expect((await stored(String(r.body.direct_link))).length, what).to.be.above(1000);
      }
    });

    it('does not hand a failed analysis back under ttl (its note says to try again); a successful one is reused', async () => {
      const key = (await t.sys.account('big')).access_token;
      const params = { ttl: 600, url: `${t.fx.origin}/plain?ttl-analysis` };
      fakes.service.queue('analyze', { status: 500 }, { status: 500 });
      const failed = await snapJson(key, params);
      expect(failed.headers.get('x-cache')).to.equal('MISS');
      expect((failed.body.ai as Body).ai_analyzed).to.equal(false);
      const again = await snapJson(key, params);
      expect(again.headers.get('x-cache'), 'the failed analysis was not reused').to.equal('MISS');
      expect((again.body.ai as Body).ai_analyzed).to.equal(true);
      const reused = await snapJson(key, params);
      expect(reused.headers.get('x-cache')).to.equal('HIT');
      expect(reused.body.id).to.equal(again.body.id);
    });

    it('counts analyses by provider and outcome (failures by error code) in /metrics', async () => {
      const key = (await t.sys.account('big')).access_token;
      const success = { provider: 'service', outcome: 'success' };
      const rejected = { provider: 'service', outcome: 'failure', error_code: 'ai_provider_key_rejected' };
      const before = await scrape(t.sys.base);
      expect((await snapJson(key, {})).body.ai).to.include({ ai_analyzed: true });
      fakes.service.queue('analyze', { status: 401 });
      expect((await snapJson(key, {})).body.ai).to.include({ ai_analyzed: false });
      const after = await scrape(t.sys.base);
      expect(after.types.get('snap_ai_analyses_total')).to.equal('counter');
      expect((after.value('snap_ai_analyses_total', success) ?? 0) - (before.value('snap_ai_analyses_total', success) ?? 0)).to.equal(1);
      expect((after.value('snap_ai_analyses_total', rejected) ?? 0) - (before.value('snap_ai_analyses_total', rejected) ?? 0)).to.equal(1);
    });

    it('answers 402 ai_credits_exhausted before any capture when the AI credits are used up', async () => {
      const account = await t.sys.account('big');
      const key = account.access_token;
      const limits = (await api('GET', '/account_limits', key)).body.results as Body;
      // Spend the month's AI credits through billing itself.
      const ctx = await t.sys.broker.call('billing.authenticate', { token: key });
      await t.sys.broker.call('billing.reserve', { account: ctx, amounts: { ai_credits: Number(limits.ai_analysis_requests_limit) } });
      const analyses = fakes.service.of('analyze').length;
      const r = await snapJson(key, {});
      expectEnvelope(r, 402, 'ai_credits_exhausted', 'AI Analysis credits');
      expect(fakes.service.of('analyze').length).to.equal(analyses);
      expect((await usage(key)).screenshots).to.equal(0);
      expect(await listed(key)).to.have.length(0);
    });

    it('refuses analyze_image_with_ai with html_only (400), and leaves snaps without it untouched (no ai, no credit)', async () => {
      const key = (await t.sys.account('big')).access_token;
      expectEnvelope(await snapJson(key, { html_only: true }), 400, 'invalid_parameter', 'html_only');
      const plain = await snapJson(key, { analyze_image_with_ai: false });
      expect(plain.status).to.equal(200);
      expect(plain.body).not.to.have.property('ai');
      expect((await usage(key)).ai).to.equal(0);
      const row = (await listed(key)).find((s) => s.id === plain.body.id);
      expect(row?.ai).to.deep.equal({ ai_analyzed: false, ai_prompt: '', ai_response: '' });
    });

    it('analyses a pdf as the raster of its first viewport', async () => {
      const key = (await t.sys.account('big')).access_token;
      const r = await snapJson(key, { image_format: 'pdf' });
      expect((r.body.ai as Body).ai_analyzed, JSON.stringify(r.body)).to.equal(true);
      expect(JSON.stringify(lastAnalysis('service'))).to.contain((await stored(String(r.body.direct_thumbnail_link))).toString('base64'));
    });
  });

  describe('own providers (no credits)', () => {
    it('structured mode on OpenRouter: an object with exactly the fields, valid, JSON-encoded in ai_response, no AI credit', async () => {
      const key = await byokAccount('openrouter');
      const r = await snapJson(key, {
        ai_provider: 'openrouter',
        ai_model: 'openai/gpt-4o',
        ai_prompt_mode: 'structured',
        ai_structured_fields: FIELDS,
        ai_structured_instructions: 'A product page.',
        ai_prompt: 'ignored in structured mode',
      });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      const ai = r.body.ai as Body;
      expect(ai).to.include({ ai_analyzed: true, ai_prompt: '', ai_provider: 'openrouter', ai_model: 'openai/gpt-4o', ai_prompt_mode: 'structured' });
      const answer = ai.ai_structured_response as Body;
      expect(Object.keys(answer).sort()).to.deep.equal(FIELDS.map((f) => f.name).sort());
      const validate = new Ajv().compile(validationSchema(FIELDS));
      expect(validate(answer), JSON.stringify(validate.errors)).to.equal(true);
      expect(JSON.parse(String(ai.ai_response))).to.deep.equal(answer);
      // What the SDK sent: the schema built from the fields, routed to require it, and the image.
      const sent = lastAnalysis('openrouter');
      const format = sent.response_format as { type: string; json_schema: { strict: boolean; schema: { properties: Body } } };
      expect(format.type).to.equal('json_schema');
      expect(format.json_schema.strict).to.equal(true);
      expect(Object.keys(format.json_schema.schema.properties).sort()).to.deep.equal(FIELDS.map((f) => f.name).sort());
      expect(sent.provider).to.deep.include({ require_parameters: true });
      expect(JSON.stringify(sent)).to.contain('A product page.');
      expect(JSON.stringify(sent)).to.contain((await stored(String(r.body.direct_link))).toString('base64'));
      expect((await usage(key)).ai).to.equal(0);
    });

    it('Anthropic with its default model; an answer that does not match the fields is ai_response_invalid, the capture kept', async () => {
      const key = await byokAccount('anthropic');
      const ok = await snapJson(key, { ai_provider: 'anthropic' });
      expect(ok.body.ai).to.deep.include({ ai_analyzed: true, ai_provider: 'anthropic', ai_model: 'claude-sonnet-5-5' });
      fakes.anthropic.queue('analyze', { structured: { headline: 'x' } });
      const bad = await snapJson(key, { ai_provider: 'anthropic', ai_prompt_mode: 'structured', ai_structured_fields: JSON.stringify(FIELDS) });
      expect(bad.status).to.equal(200);
      expect(bad.body.ai).to.deep.include({ ai_analyzed: false, ai_structured_response: null });
      expect(((bad.body.ai as Body).ai_error as Body).error_code).to.equal('ai_response_invalid');
      expect(await usage(key)).to.deep.equal({ screenshots: 2, ai: 0 });
    });

    it('50 fields of 100 options work on every provider (a relaxed schema sent, the answer checked strictly)', async () => {
      const fields = Array.from({ length: 50 }, (_, i) => ({
        name: `f${i}`,
        type: i % 2 ? 'multi' : 'enum',
        options: Array.from({ length: 100 }, (_, j) => `f${i}_o${j}`),
      }));
      const answer = Object.fromEntries(fields.map((f, i) => [f.name, f.type === 'enum' ? `f${i}_o7` : [`f${i}_o1`, `f${i}_o99`]]));
      for (const [kind, model] of [
        ['anthropic', 'claude-haiku-4-5-20251001'],
        ['openai', 'gpt-4o'],
        ['openrouter', 'anthropic/claude-sonnet-4.5'],
      ] as const) {
        const key = await byokAccount(kind);
        fakes[kind].queue('analyze', { structured: answer });
        const r = await snapJson(key, { ai_provider: kind, ai_model: model, ai_prompt_mode: 'structured', ai_structured_fields: fields });
        expect(r.status, `${kind}: ${JSON.stringify(r.body).slice(0, 300)}`).to.equal(200);
        expect((r.body.ai as Body).ai_structured_response, kind).to.deep.equal(answer);
      }
    });
  });

  describe('the checks before any credit or capture, in the spec order', () => {
    const bad = [{ name: '1st', type: 'string' }];
    it('gates, then provider configured, then model, then structured fields, then credits', async () => {
      const analyses = () => Object.values(fakes).reduce((n, f) => n + f.of('analyze').length, 0);
      const seen = analyses();
      const everything = { ai_provider: 'openai', ai_prompt_mode: 'structured', ai_structured_fields: bad };
      // A free plan: the plan gate comes first, whatever else is wrong.
      const free = (await t.sys.account('free')).access_token;
      expectEnvelope(await snapJson(free, everything), 402, 'byok_plan_required');
      // A paid plan without the addon.
      const paid = (await t.sys.account('big')).access_token;
      expectEnvelope(await snapJson(paid, everything), 402, 'byok_addon_required');
      // The addon, but no key stored.
      const noKey = await byokAccount();
      expectEnvelope(await snapJson(noKey, everything), 412, 'ai_provider_not_configured', 'PUT /ai/providers/openai');
      // A key, but no model named and none stored (OpenAI needs one).
      const withKey = await byokAccount('openai');
      expectEnvelope(await snapJson(withKey, everything), 400, 'ai_model_required', 'gpt-4o');
      expectEnvelope(await snapJson(withKey, { ...everything, ai_model: 'dall-e-3' }), 400, 'ai_model_not_supported', 'dall-e-3');
      // A good model: now the fields.
      expectEnvelope(await snapJson(withKey, { ...everything, ai_model: 'gpt-4o' }), 400, 'invalid_ai_structured_fields', 'ai_structured_fields[0].name');
      // The service's own AI with bad fields: the fields are checked before credits.
      expectEnvelope(await snapJson(paid, { ai_prompt_mode: 'structured', ai_structured_fields: bad }), 400, 'invalid_ai_structured_fields');
      for (const key of [free, paid, noKey, withKey]) expect(await usage(key)).to.deep.equal({ screenshots: 0, ai: 0 });
      expect(await listed(withKey)).to.have.length(0);
      expect(analyses()).to.equal(seen);
    });

    it('a provider that cannot list its models answers 503 ai_provider_unavailable before any credit', async () => {
      // Google's OpenRouter models: a list no earlier test has fetched (and so cached).
      const key = await byokAccount('openrouter', { default_upstream: 'google' });
      const asked = fakes.openrouter.of('models').length;
      // One attempt and one retry (AiClientOptions.maxRetries): both answered 500.
      fakes.openrouter.queue('models', { status: 500 }, { status: 500 });
      const r = await snapJson(key, { ai_provider: 'openrouter', ai_model: 'google/gemini-2.5-flash' });
      expectEnvelope(r, 503, 'ai_provider_unavailable');
      expect(fakes.openrouter.of('models').length - asked).to.equal(2);
      expect(await usage(key)).to.deep.equal({ screenshots: 0, ai: 0 });
    });
  });

  describe('configurations', () => {
    it('create, get and PATCH echo the AI options; every capture, scheduled ones included, is analysed and charged', async () => {
      const key = (await t.sys.account('big')).access_token;
      clock = Date.now();
      const created = await api('POST', '/screenshot_configs', key, {
        url: `${t.fx.origin}/plain`,
        analyze_image_with_ai: true,
        ai_prompt: 'Name the colours.',
        scheduled_screenshot: true,
        scheduled_interval: 'minutes',
        scheduled_every: 1,
      });
      expect(created.status, JSON.stringify(created.body)).to.equal(200);
      const id = String(created.body.screenshot_configuration_id);
      expect((await waitForJob(key, String(created.body.job_id))).status).to.equal('completed');
      const got = await api('GET', `/screenshot_configs/${id}`, key);
      expect(got.body.config).to.deep.include({ analyze_image_with_ai: true, ai_prompt: 'Name the colours.' });
      const patched = await api('PATCH', `/screenshot_configs/${id}`, key, {
        url: `${t.fx.origin}/plain`,
        ai_prompt: 'Count the boxes.',
        scheduled_screenshot: true,
      });
      expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
      expect(patched.body.config).to.deep.include({ analyze_image_with_ai: true, ai_prompt: 'Count the boxes.' });
      // The next scheduled slot.
      clock += 61_000;
      const due = await t.sys.scheduler?.tick();
      const mine = (due ?? []).filter((d) => d.configId === id);
      expect(mine).to.have.length(1);
      expect((await waitForJob(key, mine[0]?.jobId ?? '')).status).to.equal('completed');
      const ais = (await listed(key)).map((s) => s.ai as Body);
      expect(ais).to.have.length(2);
      expect(ais.map((a) => [a.ai_analyzed, a.ai_prompt])).to.have.deep.members([
        [true, 'Name the colours.'],
        [true, 'Count the boxes.'],
      ]);
      expect(await usage(key)).to.deep.equal({ screenshots: 2, ai: 2 });
    });

    it(
      'after the key is removed, capture now answers 412 ai_provider_not_configured (no fallback to credits), and a queued capture ' + 'fails with it',
      async () => {
        const key = await byokAccount('openrouter', { default_model: 'openai/gpt-4o' });
        const created = await api('POST', '/screenshot_configs', key, { url: `${t.fx.origin}/plain`, analyze_image_with_ai: true, ai_provider: 'openrouter' });
        expect(created.status, JSON.stringify(created.body)).to.equal(200);
        expect((await waitForJob(key, String(created.body.job_id))).status).to.equal('completed');
        expect((await listed(key))[0]?.ai)
          .to.have.property('ai_model')
          .that.equals('openai/gpt-4o');
        const removed = await api('DELETE', '/ai/providers/openrouter', key);
        expect(removed.status).to.equal(200);
        const now = await api('POST', `/screenshot_configs/${created.body.screenshot_configuration_id}/capture`, key);
        expectEnvelope(now, 412, 'ai_provider_not_configured');
        // A scheduled capture queued before the removal fails the same way when it runs.
        const job = await t.sys.broker.call('capture.enqueue', {
          accountId: String(((await t.sys.broker.call('billing.authenticate', { token: key })) as { accountId: string }).accountId),
          configId: String(created.body.screenshot_configuration_id),
          jobId: `removed${Date.now()}`,
          kind: 'scheduled',
          options: { url: `${t.fx.origin}/plain`, analyze_image_with_ai: true, ai_provider: 'openrouter' },
        });
        const failed = await waitForJob(key, String((job as { job_id: string }).job_id));
        expect(failed).to.include({ status: 'failed', error_code: 'ai_provider_not_configured' });
        expect(await usage(key)).to.deep.equal({ screenshots: 1, ai: 0 });
      },
    );
  });
});

describe('ai_provider=service on a server without an AI backend', () => {
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  before(async () => {
    // No capture service either: the refusal must come before any capture is attempted.
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing,ai,proxy,scheduler' });
    cleanup = b.cleanup;
    sys = await runSystem(b.config);
  });
  after(async () => {
    await sys.stop();
    await cleanup();
  });

  it('refuses an analysis option without analyze_image_with_ai=true (400 naming it), on snap and create', async () => {
    const key = (await sys.account('free')).access_token;
    const headers = { authorization: `Bearer ${key}` };
    for (const [name, value] of [
      ['ai_prompt', 'Describe it'],
      ['ai_prompt_mode', 'structured'],
      ['ai_structured_fields', [{ name: 'title', type: 'string' }]],
      ['ai_structured_instructions', 'A shop.'],
      ['ai_model', 'gpt-4o'],
    ] as const) {
      const snap = await request(sys.base, 'POST', '/snap', { headers, json: { url: 'https://example.com', [name]: value } });
      expectEnvelope(snap, 400, 'invalid_parameter', `${name}: requires analyze_image_with_ai=true`);
      const off = await request(sys.base, 'POST', '/snap', { headers, json: { url: 'https://example.com', analyze_image_with_ai: false, [name]: value } });
      expectEnvelope(off, 400, 'invalid_parameter', name);
      const create = await request(sys.base, 'POST', '/screenshot_configs', { headers, json: { url: 'https://example.com', [name]: value } });
      expectEnvelope(create, 400, 'invalid_parameter', name);
    }
    // ai_provider alone is a plan question (the gates), not an analysis option.
    const provider = await request(sys.base, 'POST', '/snap', { headers, json: { url: 'https://example.com', ai_provider: 'service' } });
    expect((provider.body as Body).error_code).not.to.equal('invalid_parameter');
  });

  it('answers 503 ai_service_not_configured on snap and create, before any credit', async () => {
    const key = (await sys.account('free')).access_token;
    const headers = { authorization: `Bearer ${key}` };
    const snap = await request(sys.base, 'POST', '/snap', { headers, json: { url: 'https://example.com', analyze_image_with_ai: true } });
    expectEnvelope(snap, 503, 'ai_service_not_configured', 'SERVICE_AI_PROVIDER');
    const create = await request(sys.base, 'POST', '/screenshot_configs', { headers, json: { url: 'https://example.com', analyze_image_with_ai: true } });
    expectEnvelope(create, 503, 'ai_service_not_configured');
    const limits = (await request<{ results: Body }>(sys.base, 'GET', '/account_limits', { headers })).body.results;
    expect([limits.screenshot_current_month_usage, limits.ai_analysis_requests_current_month_usage]).to.deep.equal([0, 0]);
    expect(
      (await request<{ screenshot_configurations: unknown[] }>(sys.base, 'GET', '/screenshot_configs', { headers })).body.screenshot_configurations,
    ).to.have.length(0);
  });
});
