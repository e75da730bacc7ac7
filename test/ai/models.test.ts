/**
 * What differs between providers: which models each lists (and how it learns their
 * capabilities), Anthropic's forced tool for models without native structured outputs,
 * OpenRouter's upstream routing and public list, and the openai-compatible backend.
 */
import { expect } from 'chai';
import { createAiClient, OPENAI_MODELS } from '../../services/ai/providers';
import type { StructuredField } from '../../services/ai/providers/types';
import { type FakeProvider, failureOf, PNG_1X1, startFakeProvider } from '../support/ai-providers';

const fields: StructuredField[] = [
  { name: 'page_kind', type: 'enum', options: ['home', 'product'] },
  { name: 'badges', type: 'multi', options: ['sale', 'new'] },
];
const image = { images: [{ data: PNG_1X1, contentType: 'image/png' as const }] };

describe('Anthropic models and structured paths', () => {
  let fake: FakeProvider;
  const client = () => createAiClient('anthropic', { apiKey: fake.key, baseUrl: fake.baseUrl, timeoutMs: 3000 });
  beforeEach(async () => {
    fake = await startFakeProvider('anthropic');
  });
  afterEach(async () => {
    await fake.stop();
  });

  it('lists, from every page of /v1/models, the active or deprecated models with image input and structured outputs', async () => {
    const models = await client().listModels();
    expect(models.map((m) => m.id)).to.deep.equal(['claude-sonnet-5-5', 'claude-haiku-4-5-20251001']);
    expect(models[0]).to.deep.equal({
      id: 'claude-sonnet-5-5',
      name: 'Claude Sonnet 5.5',
      context_length: 200_000,
      structured_outputs: true,
      disabled: false,
      source: 'anthropic',
    });
    expect(fake.of('models').length).to.be.at.least(3);
  });

  it('asks a model with structured outputs through output_config.format, no tool', async () => {
    const result = await client().analyze({ ...image, mode: 'structured', fields, model: 'claude-sonnet-5-5' });
    expect(result.structured).to.deep.equal({ page_kind: 'home', badges: ['sale'] });
    const body = fake.of('analyze')[0].body!;
    expect(body.output_config).to.have.nested.property('format.type', 'json_schema');
    expect(body).not.to.have.property('tools');
    expect(body.max_tokens).to.equal(8192);
  });

  it('asks a model without structured outputs through one forced tool whose input_schema is the schema', async () => {
    const result = await client().analyze({ ...image, mode: 'structured', fields, model: 'claude-3-haiku-20240307' });
    expect(result.structured).to.deep.equal({ page_kind: 'home', badges: ['sale'] });
    const body = fake.of('analyze')[0].body!;
    expect(body).not.to.have.property('output_config');
    const tools = body.tools as { name: string; input_schema: Record<string, unknown> }[];
    expect(tools).to.have.length(1);
    expect(tools[0].input_schema).to.have.nested.property('properties.page_kind.enum').that.deep.equals(['home', 'product']);
    expect(body.tool_choice).to.deep.equal({ type: 'tool', name: tools[0].name });
    expect(body.max_tokens).to.equal(4096);
  });

  it("checks the forced tool's input as strictly as a native answer", async () => {
    fake.queue('analyze', { structured: { page_kind: 'pricing', badges: [] } });
    const f = await failureOf(client().analyze({ ...image, mode: 'structured', fields, model: 'claude-3-haiku-20240307' }));
    expect(f.code).to.equal('ai_response_invalid');
    expect(f.note).to.contain("field 'page_kind' is not one of its options");
  });

  it("reads a model's capabilities once, not on every analysis", async () => {
    const c = client();
    await c.analyze({ ...image, mode: 'structured', fields, model: 'claude-sonnet-5-5' });
    await c.analyze({ ...image, mode: 'structured', fields, model: 'claude-sonnet-5-5' });
    expect(fake.of('model')).to.have.length(1);
    expect(fake.of('analyze')).to.have.length(2);
  });

  it('an unknown model is ai_request_rejected', async () => {
    const f = await failureOf(client().analyze({ ...image, mode: 'structured', fields, model: 'claude-none' }));
    expect(f.code).to.equal('ai_request_rejected');
    expect(f.note).to.contain('404');
  });
});

describe('OpenAI models', () => {
  let fake: FakeProvider;
  beforeEach(async () => {
    fake = await startFakeProvider('openai');
  });
  afterEach(async () => {
    await fake.stop();
  });

  it('lists the curated table, disabling the models the key does not see, and nothing else the key sees', async () => {
    const client = createAiClient('openai', { apiKey: fake.key, baseUrl: fake.baseUrl, timeoutMs: 3000 });
    const models = await client.listModels();
    expect(models.map((m) => m.id)).to.deep.equal(OPENAI_MODELS.map((m) => m.id));
    expect(models.filter((m) => !m.disabled).map((m) => m.id)).to.have.members(['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'o3']);
    expect(models.find((m) => m.id === 'gpt-5')).to.deep.equal({
      id: 'gpt-5',
      name: 'GPT-5',
      context_length: 400_000,
      structured_outputs: true,
      disabled: true,
      source: 'openai',
    });
    expect(models.map((m) => m.id)).not.to.include.members(['gpt-4o-2024-05-13', 'whisper-1']);
    expect(await client.verifyKey()).to.deep.equal({ modelsCount: 4 });
  });
});

describe('OpenRouter models and routing', () => {
  let fake: FakeProvider;
  const client = (apiKey?: string) => createAiClient('openrouter', { apiKey, baseUrl: fake.baseUrl, timeoutMs: 3000 });
  beforeEach(async () => {
    fake = await startFakeProvider('openrouter');
  });
  afterEach(async () => {
    await fake.stop();
  });

  it('lists the public /models without a key: image input and structured_outputs only, with pricing', async () => {
    const models = await client().listModels();
    expect(models.map((m) => m.id)).to.deep.equal(['anthropic/claude-sonnet-4.5', 'openai/gpt-4o', 'google/gemini-2.5-flash', 'meta-llama/llama-4-maverick']);
    expect(models[1]).to.deep.equal({
      id: 'openai/gpt-4o',
      name: 'OpenAI: GPT-4o',
      context_length: 128_000,
      structured_outputs: true,
      pricing: { prompt: '0.0000025', completion: '0.00001' },
      disabled: false,
      source: 'openrouter',
    });
    expect(fake.of('models')[0].auth).to.equal('none');
  });

  it("filters the list by upstream: the vendor's models only", async () => {
    const c = client(fake.key);
    expect((await c.listModels('meta')).map((m) => m.id)).to.deep.equal(['meta-llama/llama-4-maverick']);
    expect((await c.listModels('google')).map((m) => m.id)).to.deep.equal(['google/gemini-2.5-flash']);
    expect((await c.listModels('anthropic')).map((m) => m.id)).to.deep.equal(['anthropic/claude-sonnet-4.5']);
    expect(await c.listModels('auto')).to.have.length(4);
  });

  it('checks a key with GET /key, whose answer the public list cannot give', async () => {
    expect(await client(fake.key).verifyKey()).to.deep.equal({ modelsCount: 4 });
    expect(fake.of('key').map((r) => r.auth)).to.deep.equal(['valid']);
  });

  it('routes every analysis with require_parameters, and an upstream to its own endpoints only', async () => {
    const c = client(fake.key);
    const run = (upstream?: 'auto' | 'anthropic' | 'openai' | 'google' | 'meta') =>
      c.analyze({ ...image, mode: 'structured', fields, model: 'openai/gpt-4o', upstream });
    for (const u of [undefined, 'auto', 'anthropic', 'openai', 'google', 'meta'] as const) await run(u);
    expect(fake.of('analyze').map((r) => r.body?.provider)).to.deep.equal([
      { require_parameters: true },
      { require_parameters: true },
      { require_parameters: true, only: ['anthropic'] },
      { require_parameters: true, only: ['openai'] },
      { require_parameters: true, only: ['google-vertex', 'google-ai-studio'] },
      { require_parameters: true },
    ]);
  });

  it("never sends the operator's OPENAI_* settings to OpenRouter", async () => {
    const saved = { key: process.env.OPENAI_API_KEY, url: process.env.OPENAI_BASE_URL, org: process.env.OPENAI_ORG_ID };
    Object.assign(process.env, { OPENAI_API_KEY: 'sk-operator-env-key', OPENAI_BASE_URL: 'http://127.0.0.1:1/v1', OPENAI_ORG_ID: 'org-operator' });
    try {
      await client().listModels();
      const [req] = fake.of('models');
      expect(req.auth).to.equal('none');
      expect(req.headers).not.to.have.property('openai-organization');
    } finally {
      for (const [k, v] of [
        ['OPENAI_API_KEY', saved.key],
        ['OPENAI_BASE_URL', saved.url],
        ['OPENAI_ORG_ID', saved.org],
      ] as const) {
        if (v === undefined) delete process.env[k];
        else process.env[k] = v;
      }
    }
  });
});

describe('openai-compatible backend', () => {
  let fake: FakeProvider;
  beforeEach(async () => {
    fake = await startFakeProvider('openai');
  });
  afterEach(async () => {
    await fake.stop();
  });

  it('analyses through chat completions at its base URL and lists every model it serves', async () => {
    const client = createAiClient('openai-compatible', { apiKey: fake.key, baseUrl: fake.baseUrl, timeoutMs: 3000 });
    const result = await client.analyze({ ...image, mode: 'structured', fields, model: 'gpt-4o' });
    expect(result.structured).to.deep.equal({ page_kind: 'home', badges: ['sale'] });
    expect(fake.of('analyze')[0].body).to.have.nested.property('response_format.json_schema.strict', true);
    const models = await client.listModels();
    expect(models).to.have.length(fake.models.length);
    expect(models[0]).to.include({ source: 'openai-compatible', disabled: false });
  });

  it('sends no Authorization header without a key, and needs a base URL', async () => {
    const client = createAiClient('openai-compatible', { baseUrl: fake.baseUrl, timeoutMs: 3000 });
    expect((await failureOf(client.listModels())).code).to.equal('ai_provider_key_rejected');
    expect(fake.of('models')[0].auth).to.equal('none');
    expect(() => createAiClient('openai-compatible', { timeoutMs: 3000 })).to.throw(TypeError, /base URL/);
  });
});
