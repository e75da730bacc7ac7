/**
 * The own AI provider endpoints over HTTP against the real system (api, billing, ai), with
 * each provider's base URL pointed at its local stand-in, which speaks the provider's wire
 * format to the official SDK: storing keys (verified, rejected, provider down), providers and
 * models (the cache included), the test analysis, removal, the plan gates, SECRETS_KEY in both
 * running modes, and no key in any answer or log line.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import knex from 'knex';
import { OPENAI_MODELS } from '../../services/ai/providers';
import { sampleImage } from '../../services/ai/sample-image';
import { knexConfig } from '../../services/shared/database';
import { decryptSecret, GENERATED_KEY_FILE, hintOf } from '../../services/shared/secrets';
import { type FakeProvider, startFakeProvider, unreachableBaseUrl } from '../support/ai-providers';
import { backendConfig } from '../support/backends';
import { expectEnvelope } from '../support/errors';
import { type HttpAnswer, request } from '../support/http';
import { runSystem } from '../support/system';

type Body = Record<string, unknown>;
type Kind = 'anthropic' | 'openai' | 'openrouter';
const KINDS: Kind[] = ['anthropic', 'openai', 'openrouter'];
const AI_SERVICES = 'api,billing,ai,proxy';
/** A key each fake refuses: the OpenAI fake quotes it whole in its 401, the worst case. */
const WRONG_KEY = 'sk-proj-wrongKeyThatMustNeverBeShown9876';

/** Everything this process writes while a system runs, for the test that greps it for keys. */
function recordOutput(): { text(): string; restore(): void } {
  const chunks: string[] = [];
  const streams = [process.stdout, process.stderr];
  const originals = streams.map((s) => s.write);
  streams.forEach((stream, i) => {
    stream.write = ((chunk: unknown, ...rest: unknown[]) => {
      const text = String(chunk);
      chunks.push(text);
      // The service's log lines (JSON, or "[2026-...Z] DEBUG ..." as text) are kept but not echoed; mocha's are.
      if (/^(\{"time":"|\[\d{4}-\d\d-\d\dT)/.test(text)) return true;
      return (originals[i] as (...a: unknown[]) => boolean).call(stream, chunk, ...rest);
    }) as typeof stream.write;
  });
  return {
    text: () => chunks.join(''),
    restore: () =>
      streams.forEach((stream, i) => {
        stream.write = originals[i] as typeof stream.write;
      }),
  };
}

/** A system whose providers are `urls`, and a client that records every answer it gets. */
async function aiSystem(backend: 'sqlite' | 'mysql', env: Record<string, string>) {
  const b = await backendConfig(backend, { SERVICES: AI_SERVICES, AI_TIMEOUT_MS: '1500', ...env });
  const sys = await runSystem(b.config);
  const answers: string[] = [];
  const api = async (method: string, p: string, key: string, json?: Body): Promise<HttpAnswer<Body>> => {
    const r = await request<Body>(sys.base, method, p, { headers: { authorization: `Bearer ${key}` }, ...(json ? { json } : {}) });
    answers.push(r.raw.toString('utf8'));
    return r;
  };
  const byok = async () => (await sys.account('paid', { byo_ai: 1 })).access_token;
  const stop = async () => {
    await sys.stop();
    await b.cleanup();
  };
  return { sys, config: b.config, api, answers, byok, stop };
}

const baseUrlsOf = (fakes: Record<Kind, FakeProvider>) => ({
  ANTHROPIC_BASE_URL: fakes.anthropic.baseUrl,
  OPENAI_BASE_URL: fakes.openai.baseUrl,
  OPENROUTER_BASE_URL: fakes.openrouter.baseUrl,
});

describe('own AI providers over HTTP (embedded mode, providers on local stand-ins)', function () {
  this.timeout(60_000);
  const fakes = {} as Record<Kind, FakeProvider>;
  let s: Awaited<ReturnType<typeof aiSystem>>;
  let output: ReturnType<typeof recordOutput>;
  const requestsTo = (kind: Kind) => fakes[kind].requests.length;

  before(async () => {
    for (const kind of KINDS) fakes[kind] = await startFakeProvider(kind);
    output = recordOutput();
    // debug: the most the system ever logs, so the grep for keys below sees it all.
    s = await aiSystem('sqlite', { ...baseUrlsOf(fakes), LOG_LEVEL: 'debug' });
  });
  after(async () => {
    await s?.stop();
    output?.restore();
    for (const kind of KINDS) await fakes[kind]?.stop();
  });

  const put = (kind: string, token: string, json: Body) => s.api('PUT', `/ai/providers/${kind}`, token, json);
  const providersOf = async (token: string) => {
    const r = await s.api('GET', '/ai/providers', token);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body.providers as Body[];
  };
  const limitsProviders = async (token: string) => ((await s.api('GET', '/account_limits', token)).body.results as Body).bring_your_own_ai_providers;

  describe('GET /ai/providers', () => {
    it('lists the three providers with only provider, label and verified before any key is stored', async () => {
      const r = await s.api('GET', '/ai/providers', await s.byok());
      expect(r.status).to.equal(200);
      expect(r.body).to.deep.equal({
        success: true,
        bring_your_own_ai_enabled: true,
        has_paid_plan: true,
        providers: [
          { provider: 'anthropic', label: 'Anthropic', verified: false },
          { provider: 'openai', label: 'OpenAI', verified: false },
          { provider: 'openrouter', label: 'OpenRouter', verified: false },
        ],
      });
    });

    it('answers a free account too, saying it may not use own keys', async () => {
      const r = await s.api('GET', '/ai/providers', (await s.sys.account('free')).access_token);
      expect(r.body).to.include({ success: true, bring_your_own_ai_enabled: false, has_paid_plan: false });
      expect(r.body.providers).to.have.length(3);
    });
  });

  describe('PUT /ai/providers/:provider', () => {
    it('verifies each key with its provider and stores it: verified, masked hint, models count', async () => {
      const token = await s.byok();
      const counts: Record<Kind, number> = { anthropic: 2, openai: 4, openrouter: 4 };
      for (const kind of KINDS) {
        const before = Date.now();
        const r = await put(kind, token, { api_key: fakes[kind].key });
        expect(r.status, JSON.stringify(r.body)).to.equal(200);
        const record = r.body.provider as Body;
        expect(record).to.deep.include({ provider: kind, verified: true, key_hint: hintOf(fakes[kind].key), models_count: counts[kind], last_error: null });
        expect(Date.parse(record.verified_at as string)).to.be.within(before - 1000, Date.now());
        if (kind === 'openrouter') expect(record.default_upstream).to.equal('auto');
        else expect(record).not.to.have.property('default_upstream');
      }
      // Anthropic and OpenAI prove a key by listing models; OpenRouter by its key endpoint.
      expect(fakes.anthropic.of('models').at(-1)?.auth).to.equal('valid');
      expect(fakes.openai.of('models').at(-1)?.auth).to.equal('valid');
      expect(fakes.openrouter.of('key').at(-1)?.auth).to.equal('valid');
      expect((await providersOf(token)).map((p) => p.verified)).to.deep.equal([true, true, true]);
      expect(await limitsProviders(token)).to.deep.equal(['anthropic', 'openai', 'openrouter']);
    });

    it('keeps the key sealed with AES-256-GCM under the SECRETS_KEY it generated into DATA_DIR (0600)', async () => {
      const token = await s.byok();
      await put('anthropic', token, { api_key: fakes.anthropic.key });
      const keyFile = path.join(s.config.dataDir, GENERATED_KEY_FILE);
      expect(fs.statSync(keyFile).mode & 0o777).to.equal(0o600);
      const db = knex(knexConfig(s.config.database));
      try {
        const rows = await db('ai_providers').where({ provider: 'anthropic' }).select('key_encrypted');
        for (const row of rows) {
          expect(row.key_encrypted).not.to.contain(fakes.anthropic.key);
          expect(decryptSecret(row.key_encrypted, fs.readFileSync(keyFile, 'utf8').trim())).to.equal(fakes.anthropic.key);
        }
      } finally {
        await db.destroy();
      }
    });

    it('stores default_model and default_upstream, and refuses a default model the key cannot use, storing nothing', async () => {
      const token = await s.byok();
      const r = await put('openrouter', token, { api_key: fakes.openrouter.key, default_model: 'anthropic/claude-sonnet-4.5', default_upstream: 'anthropic' });
      expect(r.body.provider).to.deep.include({ default_model: 'anthropic/claude-sonnet-4.5', default_upstream: 'anthropic' });
      // gpt-5 is in the curated table but not among the models this key sees.
      expectEnvelope(
        await put('openai', token, { api_key: fakes.openai.key, default_model: 'gpt-5' }),
        400,
        'ai_model_not_supported',
        'not available to the stored key',
      );
      expectEnvelope(await put('openai', token, { api_key: fakes.openai.key, default_model: 'gpt-3.5-turbo' }), 400, 'ai_model_not_supported', 'gpt-4o');
      expect((await providersOf(token))[1]).to.deep.equal({ provider: 'openai', label: 'OpenAI', verified: false });
    });

    it('a rejected key is 401 ai_provider_key_rejected and stays stored unverified with the reason', async () => {
      const token = await s.byok();
      const r = await put('openai', token, { api_key: WRONG_KEY });
      expectEnvelope(r, 401, 'ai_provider_key_rejected', 'OpenAI rejected the API key');
      expect(fakes.openai.of('models').at(-1)?.auth).to.equal('invalid');
      const openai = (await providersOf(token))[1];
      expect(openai).to.include({ verified: false, key_hint: hintOf(WRONG_KEY) });
      expect(openai.last_error).to.contain('rejected the API key');
      expect(openai).not.to.have.property('verified_at');
      expect(await limitsProviders(token)).to.deep.equal([]);
      expectEnvelope(await s.api('GET', '/ai/models?provider=openai', token), 412, 'ai_provider_not_configured', 'was rejected');
    });

    it('replacing a verified key with a rejected one leaves the provider unverified', async () => {
      const token = await s.byok();
      expect((await put('anthropic', token, { api_key: fakes.anthropic.key })).status).to.equal(200);
      expectEnvelope(await put('anthropic', token, { api_key: 'sk-ant-api03-revokedKey0000000000' }), 401, 'ai_provider_key_rejected');
      expect((await providersOf(token))[0]).to.include({ verified: false, key_hint: hintOf('sk-ant-api03-revokedKey0000000000') });
    });

    it('a provider that cannot answer now (slow, rate-limiting) is 503 ai_provider_unavailable and changes nothing', async () => {
      const token = await s.byok();
      fakes.openrouter.queue('key', { delayMs: 2500 });
      expectEnvelope(await put('openrouter', token, { api_key: fakes.openrouter.key }), 503, 'ai_provider_unavailable', 'did not answer within 1.5 s');
      fakes.openrouter.queue('key', { status: 429, retryAfter: 60 });
      expectEnvelope(await put('openrouter', token, { api_key: fakes.openrouter.key }), 503, 'ai_provider_unavailable', 'rate-limiting');
      expect((await providersOf(token))[2]).to.deep.equal({ provider: 'openrouter', label: 'OpenRouter', verified: false });
    });

    it('a model list that is not one (a gateway page, JSON of another shape) is 502 ai_provider_error and stores nothing', async () => {
      const token = await s.byok();
      fakes.openrouter.queue(
        'models',
        { raw: { contentType: 'text/html', body: '<html>gateway</html>' } },
        { raw: { contentType: 'application/json', body: '{"object":"list"}' } },
      );
      for (const what of ['an HTML page', 'JSON without data']) {
        const r = await put('openrouter', token, { api_key: fakes.openrouter.key });
        expectEnvelope(r, 502, 'ai_provider_error');
        expect(String(r.body.note), what).to.contain('did not answer a list of models');
      }
      expect((await providersOf(token))[2]).to.deep.equal({ provider: 'openrouter', label: 'OpenRouter', verified: false });
      const stored = await put('openrouter', token, { api_key: fakes.openrouter.key });
      expect(stored.status, JSON.stringify(stored.body)).to.equal(200);
      expect((stored.body.provider as Body).models_count).to.equal(4);
    });

    it('checks its parameters: api_key required (never quoted), default_upstream only for OpenRouter, known providers only', async () => {
      const token = await s.byok();
      expectEnvelope(await put('anthropic', token, {}), 400, 'invalid_parameter', 'api_key is required');
      const odd = await put('anthropic', token, { api_key: { nested: fakes.anthropic.key } });
      expectEnvelope(odd, 400, 'invalid_parameter', 'api_key: must be text');
      expect(odd.body.note).not.to.contain(fakes.anthropic.key);
      // A key with a character no key has (a NUL, a newline pasted with it): the caller's to fix,
      // never quoted; it was a 502 "try again later" from the header the provider's SDK could not send.
      for (const api_key of [`${fakes.anthropic.key}\u0000x`, `a\u0000b`, `${fakes.anthropic.key}\nx`, `${fakes.anthropic.key} x`]) {
        const bad = await put('anthropic', token, { api_key });
        expectEnvelope(bad, 400, 'invalid_parameter', 'api_key: must be an API key as the provider shows it');
        expect(bad.body.note).not.to.contain(fakes.anthropic.key).and.not.contain('a\u0000b');
      }
      expectEnvelope(
        await put('anthropic', token, { api_key: fakes.anthropic.key, default_upstream: 'meta' }),
        400,
        'invalid_parameter',
        'default_upstream: only OpenRouter',
      );
      expectEnvelope(
        await put('openrouter', token, { api_key: fakes.openrouter.key, default_upstream: 'mistral' }),
        400,
        'invalid_parameter',
        'default_upstream: must be one of auto, anthropic',
      );
      expectEnvelope(await put('gemini', token, { api_key: 'k' }), 400, 'ai_provider_unsupported', 'anthropic, openai, openrouter');
    });
  });

  describe('plan and addon gates', () => {
    it('a free plan is 402 byok_plan_required, a paid plan without the addon 402 byok_addon_required, before any provider is asked', async () => {
      const free = (await s.sys.account('free', { byo_ai: 1 })).access_token;
      const paid = (await s.sys.account('paid')).access_token;
      const asked = requestsTo('anthropic');
      expectEnvelope(await put('anthropic', free, { api_key: fakes.anthropic.key }), 402, 'byok_plan_required', 'Storing or testing your own AI provider keys');
      const noAddon = await put('anthropic', paid, { api_key: fakes.anthropic.key });
      expectEnvelope(noAddon, 402, 'byok_addon_required', 'add it to your plan.');
      // Storing a key names no ai_provider: the note offers nothing to leave out.
      expect(noAddon.body.note).not.to.contain('ai_provider=service');
      expectEnvelope(await s.api('POST', '/ai/providers/anthropic/test', free, {}), 402, 'byok_plan_required');
      expectEnvelope(await s.api('POST', '/ai/providers/anthropic/test', paid, {}), 402, 'byok_addon_required');
      expect(requestsTo('anthropic')).to.equal(asked);
    });

    it('listing models and removing a key are open to every plan', async () => {
      const free = (await s.sys.account('free')).access_token;
      expect((await s.api('GET', '/ai/models?provider=openrouter', free)).status).to.equal(200);
      expect((await s.api('DELETE', '/ai/providers/openai', free)).body).to.include({ success: true });
    });
  });

  describe('GET /ai/models', () => {
    it('Anthropic and OpenAI need a stored key: 412 ai_provider_not_configured, nobody asked', async () => {
      const token = await s.byok();
      const asked = requestsTo('anthropic') + requestsTo('openai');
      expectEnvelope(await s.api('GET', '/ai/models?provider=anthropic', token), 412, 'ai_provider_not_configured', 'PUT /ai/providers/anthropic');
      expectEnvelope(await s.api('GET', '/ai/models?provider=openai', token), 412, 'ai_provider_not_configured');
      expect(requestsTo('anthropic') + requestsTo('openai')).to.equal(asked);
    });

    it("lists what the stored key can use, in the spec's model record", async () => {
      const token = await s.byok();
      await put('anthropic', token, { api_key: fakes.anthropic.key });
      await put('openai', token, { api_key: fakes.openai.key });
      const anthropic = await s.api('GET', '/ai/models?provider=anthropic', token);
      expect(anthropic.status, JSON.stringify(anthropic.body)).to.equal(200);
      expect(anthropic.body).to.include({ success: true, provider: 'anthropic', upstream: null, count: 2 });
      expect(new Date(anthropic.body.fetched_at as string).toISOString()).to.equal(anthropic.body.fetched_at);
      expect(anthropic.body.models).to.deep.equal([
        { id: 'claude-sonnet-5-5', name: 'Claude Sonnet 5.5', context_length: 200_000, structured_outputs: true, disabled: false, source: 'anthropic' },
        { id: 'claude-haiku-4-5-20251001', name: 'Claude Haiku 4.5', context_length: 200_000, structured_outputs: true, disabled: false, source: 'anthropic' },
      ]);
      const openai = await s.api('GET', '/ai/models?provider=openai', token);
      const models = openai.body.models as Body[];
      expect(openai.body.count).to.equal(OPENAI_MODELS.length);
      expect(models.filter((m) => !m.disabled).map((m) => m.id)).to.deep.equal(['gpt-4.1', 'o3', 'gpt-4o', 'gpt-4o-mini']);
    });

    it("OpenRouter's list needs no key, carries pricing and filters by upstream", async () => {
      const token = (await s.sys.account('free')).access_token;
      const all = await s.api('GET', '/ai/models?provider=openrouter', token);
      expect((all.body.models as Body[]).map((m) => m.id)).to.deep.equal([
        'anthropic/claude-sonnet-4.5',
        'openai/gpt-4o',
        'google/gemini-2.5-flash',
        'meta-llama/llama-4-maverick',
      ]);
      expect((all.body.models as Body[])[0]).to.deep.include({ pricing: { prompt: '0.000003', completion: '0.000015' }, source: 'openrouter' });
      const meta = await s.api('GET', '/ai/models?provider=openrouter&upstream=meta', token);
      expect(meta.body).to.include({ upstream: 'meta', count: 1 });
      expect(fakes.openrouter.of('models').at(-1)?.auth).to.equal('none');
    });

    it('asks the provider once in ten minutes: a second listing comes from the cache', async () => {
      const token = await s.byok();
      const before = fakes.openrouter.of('models').length;
      const first = await s.api('GET', '/ai/models?provider=openrouter&upstream=google', token);
      expect(fakes.openrouter.of('models').length).to.equal(before + 1);
      const second = await s.api('GET', '/ai/models?provider=openrouter&upstream=google', (await s.sys.account('free')).access_token);
      expect(fakes.openrouter.of('models').length).to.equal(before + 1);
      expect(second.body).to.deep.equal(first.body);
    });

    it('checks its query: provider required and known, upstream only for OpenRouter', async () => {
      const token = await s.byok();
      expectEnvelope(await s.api('GET', '/ai/models', token), 400, 'invalid_parameter', 'provider is required');
      expectEnvelope(await s.api('GET', '/ai/models?provider=mistral', token), 400, 'ai_provider_unsupported', 'anthropic, openai, openrouter');
      expectEnvelope(await s.api('GET', '/ai/models?provider=anthropic&upstream=meta', token), 400, 'invalid_parameter', 'upstream: only OpenRouter');
    });
  });

  describe('POST /ai/providers/:provider/test', () => {
    it('runs one analysis of the sample image and answers {text, model, seconds}', async () => {
      const token = await s.byok();
      await put('anthropic', token, { api_key: fakes.anthropic.key });
      const r = await s.api('POST', '/ai/providers/anthropic/test', token, {});
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      const result = r.body.result as Body;
      // No model named nor stored: Anthropic's newest compatible model.
      expect(result).to.include({ text: 'A web page with a heading and a photo.', model: 'claude-sonnet-5-5' });
      expect(result.seconds).to.be.a('number').within(0, 5);
      const sent = fakes.anthropic.of('analyze').at(-1)!;
      expect(sent.auth).to.equal('valid');
      const user = (sent.body!.messages as { content: Body[] }[])[0].content;
      const source = user.find((c) => c.type === 'image')!.source as { type: string; media_type: string; data: string };
      expect(source).to.include({ type: 'base64', media_type: 'image/png' });
      expect(Buffer.from(source.data, 'base64').equals(await sampleImage())).to.equal(true);
    });

    it('uses the model named, else the stored default model', async () => {
      const token = await s.byok();
      await put('anthropic', token, { api_key: fakes.anthropic.key, default_model: 'claude-haiku-4-5-20251001' });
      expect(((await s.api('POST', '/ai/providers/anthropic/test', token, {})).body.result as Body).model).to.equal('claude-haiku-4-5-20251001');
      const named = await s.api('POST', '/ai/providers/anthropic/test', token, { model: 'claude-sonnet-5-5' });
      expect((named.body.result as Body).model).to.equal('claude-sonnet-5-5');
    });

    it('OpenAI without a model or a default is 400 ai_model_required; an unknown model 400 ai_model_not_supported; no analysis asked', async () => {
      const token = await s.byok();
      await put('openai', token, { api_key: fakes.openai.key });
      const analyses = fakes.openai.of('analyze').length;
      expectEnvelope(await s.api('POST', '/ai/providers/openai/test', token, {}), 400, 'ai_model_required', 'default_model');
      expectEnvelope(await s.api('POST', '/ai/providers/openai/test', token, { model: 'dall-e-3' }), 400, 'ai_model_not_supported', 'dall-e-3');
      expect(fakes.openai.of('analyze').length).to.equal(analyses);
      const r = await s.api('POST', '/ai/providers/openai/test', token, { model: 'gpt-4o' });
      expect(r.body.result).to.include({ model: 'gpt-4o' });
    });

    it("OpenRouter's test is routed to the stored default upstream", async () => {
      const token = await s.byok();
      await put('openrouter', token, { api_key: fakes.openrouter.key, default_model: 'openai/gpt-4o', default_upstream: 'openai' });
      const r = await s.api('POST', '/ai/providers/openrouter/test', token, {});
      expect(r.body.result).to.include({ model: 'openai/gpt-4o' });
      expect(fakes.openrouter.of('analyze').at(-1)!.body!.provider).to.deep.equal({ require_parameters: true, only: ['openai'] });
    });

    it('a provider failing the analysis is answered with its note: 503 when down, 502 ai_provider_error when it refuses', async () => {
      const token = await s.byok();
      await put('anthropic', token, { api_key: fakes.anthropic.key });
      fakes.anthropic.queue('analyze', { status: 529 }, { status: 529 });
      expectEnvelope(await s.api('POST', '/ai/providers/anthropic/test', token, {}), 503, 'ai_provider_unavailable', 'Anthropic failed to answer');
      fakes.anthropic.queue('analyze', { status: 402 });
      expectEnvelope(await s.api('POST', '/ai/providers/anthropic/test', token, {}), 502, 'ai_provider_error', 'billing');
    });

    it('without a stored key is 412 ai_provider_not_configured', async () => {
      expectEnvelope(await s.api('POST', '/ai/providers/openrouter/test', await s.byok(), { model: 'openai/gpt-4o' }), 412, 'ai_provider_not_configured');
    });
  });

  describe('DELETE /ai/providers/:provider', () => {
    it('removes the key: models 412 again, the provider back to its bare record, /account_limits without it', async () => {
      const token = await s.byok();
      await put('anthropic', token, { api_key: fakes.anthropic.key });
      expect((await s.api('GET', '/ai/models?provider=anthropic', token)).status).to.equal(200);
      const r = await s.api('DELETE', '/ai/providers/anthropic', token);
      expect(r.status).to.equal(200);
      expect(r.body).to.have.all.keys('success', 'note');
      expect(r.body.note).to.contain('ai_provider_not_configured');
      expectEnvelope(await s.api('GET', '/ai/models?provider=anthropic', token), 412, 'ai_provider_not_configured');
      expectEnvelope(await s.api('POST', '/ai/providers/anthropic/test', token, {}), 412, 'ai_provider_not_configured');
      expect((await providersOf(token))[0]).to.deep.equal({ provider: 'anthropic', label: 'Anthropic', verified: false });
      expect(await limitsProviders(token)).to.deep.equal([]);
      const again = await s.api('DELETE', '/ai/providers/anthropic', token);
      expect(again.body).to.deep.equal({ success: true, note: 'No anthropic key was stored; nothing changed.' });
      expectEnvelope(await s.api('DELETE', '/ai/providers/gemini', token), 400, 'ai_provider_unsupported');
    });
  });

  // Mocha runs a suite's own tests before its nested suites: this one sits in the last suite, after every request above.
  describe('after every request above', () => {
    it('never showed a provider key in an answer or a log line', () => {
      const logs = output.text();
      expect(logs, 'the logs were recorded').to.contain("Service 'ai' started");
      for (const key of [...KINDS.map((k) => fakes[k].key), WRONG_KEY]) {
        for (const answer of s.answers) expect(answer).not.to.contain(key);
        expect(logs).not.to.contain(key);
      }
    });
  });
});

describe('own AI providers on the full stack (MariaDB, Redis)', function () {
  this.timeout(60_000);

  describe('with SECRETS_KEY, one provider on a stand-in and two unreachable', () => {
    let openai: FakeProvider;
    let s: Awaited<ReturnType<typeof aiSystem>>;
    before(async () => {
      openai = await startFakeProvider('openai');
      const nowhere = await unreachableBaseUrl();
      s = await aiSystem('mysql', { SECRETS_KEY: 'ab'.repeat(32), OPENAI_BASE_URL: openai.baseUrl, ANTHROPIC_BASE_URL: nowhere, OPENROUTER_BASE_URL: nowhere });
    });
    after(async () => {
      await s?.stop();
      await openai?.stop();
    });

    it('stores, lists and removes a key', async () => {
      const token = await s.byok();
      const r = await s.api('PUT', '/ai/providers/openai', token, { api_key: openai.key, default_model: 'gpt-4o' });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
      const listed = (await s.api('GET', '/ai/providers', token)).body.providers as Body[];
      expect(listed[1]).to.deep.include({ verified: true, key_hint: hintOf(openai.key), default_model: 'gpt-4o', models_count: 4, last_error: null });
      expect(listed[1].verified_at).to.equal((r.body.provider as Body).verified_at);
      expect((await s.api('DELETE', '/ai/providers/openai', token)).status).to.equal(200);
      expect(((await s.api('GET', '/ai/providers', token)).body.providers as Body[])[1]).to.deep.equal({
        provider: 'openai',
        label: 'OpenAI',
        verified: false,
      });
    });

    it('a provider that cannot be reached is 503 ai_provider_unavailable, for a key (nothing stored) and for a model list', async () => {
      const token = await s.byok();
      expectEnvelope(
        await s.api('PUT', '/ai/providers/anthropic', token, { api_key: 'sk-ant-api03-anyKey000000000000' }),
        503,
        'ai_provider_unavailable',
        'Anthropic could not be reached',
      );
      expect(((await s.api('GET', '/ai/providers', token)).body.providers as Body[])[0]).to.deep.equal({
        provider: 'anthropic',
        label: 'Anthropic',
        verified: false,
      });
      expectEnvelope(await s.api('GET', '/ai/models?provider=openrouter', token), 503, 'ai_provider_unavailable', 'OpenRouter could not be reached');
    });
  });

  describe('without SECRETS_KEY', () => {
    let openai: FakeProvider;
    let s: Awaited<ReturnType<typeof aiSystem>>;
    before(async () => {
      openai = await startFakeProvider('openai');
      s = await aiSystem('mysql', { OPENAI_BASE_URL: openai.baseUrl });
    });
    after(async () => {
      await s?.stop();
      await openai?.stop();
    });

    it('starts and serves, and refuses to store a key with 503 secrets_not_configured before asking the provider', async () => {
      const token = await s.byok();
      expect((await s.api('GET', '/ai/providers', token)).status).to.equal(200);
      expectEnvelope(await s.api('PUT', '/ai/providers/openai', token, { api_key: openai.key }), 503, 'secrets_not_configured', 'SECRETS_KEY');
      expect(openai.requests).to.have.length(0);
      expect(fs.existsSync(path.join(s.config.dataDir, GENERATED_KEY_FILE))).to.equal(false);
    });
  });
});
