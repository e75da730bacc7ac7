/**
 * Local stand-ins for the AI providers' HTTP APIs (127.0.0.1, a free port), speaking each
 * one's wire format so the official SDKs can be pointed at them through their base URL:
 *   Anthropic   POST /v1/messages, GET /v1/models, GET /v1/models/{id}
 *   OpenAI      POST /v1/chat/completions, GET /v1/models
 *   OpenRouter  POST /api/v1/chat/completions, GET /api/v1/models (public), GET /api/v1/key
 * Each checks its key (x-api-key or Bearer for Anthropic, Bearer for the others) and answers errors in the
 * provider's own error body. A test scripts the next answers of a route with `queue` (an error
 * status, a delay, a text, a structured object, a finish reason); with nothing queued an
 * analysis answers a short text, or an object built to match the schema that was sent.
 * Every request is recorded with its body and whether its key was right, never the key.
 */
import type http from 'node:http';
import { AiFailure, type ProviderName, type StructuredField } from '../../services/ai/providers/types';
import { serveLocally } from './local-server';

/** The AiFailure `p` rejects with; fails the test when it resolves or rejects with anything else. */
export async function failureOf(p: Promise<unknown>): Promise<AiFailure> {
  try {
    await p;
  } catch (err) {
    if (err instanceof AiFailure) return err;
    throw err;
  }
  throw new Error('expected an AiFailure');
}

/** 50 fields of 100 options each: the spec's largest structured input, 5000 enum values. */
export function largestFields(): StructuredField[] {
  return Array.from({ length: 50 }, (_, i) => ({
    name: `field_${i}`,
    type: i % 2 === 0 ? ('enum' as const) : ('multi' as const),
    options: Array.from({ length: 100 }, (_, j) => `f${i}_option_${j}`),
  }));
}

/** An answer that matches `largestFields()`: one option of each enum, two of each multi. */
export function answerForLargestFields(): Record<string, unknown> {
  return Object.fromEntries(largestFields().map((f, i) => [f.name, f.type === 'enum' ? `f${i}_option_7` : [`f${i}_option_1`, `f${i}_option_99`]]));
}

/** A 1x1 PNG: real image bytes to find again, base64-encoded, in what the SDK sent. */
export const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg==', 'base64');

export type Route = 'analyze' | 'models' | 'model' | 'key';

export interface Behaviour {
  /** Answer this HTTP status with the provider's error body. */
  status?: number;
  /** The error body's message; by default the provider's usual wording. */
  message?: string;
  /** Retry-After, seconds, on an error. */
  retryAfter?: number;
  /** Wait this long before answering. */
  delayMs?: number;
  /** The answer's text as is (simple mode, or a structured answer that is not JSON). */
  text?: string;
  /** The structured answer (JSON text, or the forced tool's input). */
  structured?: unknown;
  /** stop_reason / finish_reason, e.g. 'refusal', 'max_tokens', 'length'. */
  finish?: string;
  /** Answer 200 with this body and content type as is (a gateway's HTML page, JSON of another shape). */
  raw?: { contentType: string; body: string };
}

export interface Recorded {
  route: Route | 'unknown';
  method: string;
  path: string;
  /** Whether the request carried the key the fake accepts; the key itself is not kept. */
  auth: 'valid' | 'invalid' | 'none';
  headers: Record<string, string>;
  body: Record<string, unknown> | undefined;
}

export interface FakeProvider {
  kind: ProviderName;
  /** What AiClientOptions.baseUrl gets (as the provider's SDK expects it: with /v1 or /api/v1 or not). */
  baseUrl: string;
  /** The key this fake accepts. */
  key: string;
  requests: Recorded[];
  /** The model list this fake serves; tests may change it. */
  models: Record<string, unknown>[];
  /** The next answers of `route`, in order; once used up, the default behaviour returns. */
  queue(route: Route, ...behaviours: Behaviour[]): void;
  /** With nothing queued, the answer to a request, from its body (as a model reads its input); undefined: the default. */
  respond: ((route: Route, body: Record<string, unknown> | undefined) => Behaviour | undefined) | null;
  /** The recorded requests of a route. */
  of(route: Route): Recorded[];
  stop(): Promise<void>;
}

const KEYS: Record<ProviderName, string> = {
  anthropic: 'sk-ant-api03-fakeTestKey0123456789abcdef',
  openai: 'sk-proj-fakeTestKey0123456789abcdef',
  openrouter: 'sk-or-v1-fakeTestKey0123456789abcdef',
};

type Capabilities = { image: boolean; structured: boolean; lifecycle?: 'active' | 'deprecated' | 'retired'; maxTokens?: number };

/** An Anthropic `/v1/models` entry, every capability key present as the API sends them. */
export function claudeModel(id: string, display_name: string, c: Capabilities): Record<string, unknown> {
  const no = { supported: false };
  return {
    type: 'model',
    id,
    display_name,
    created_at: '2025-09-29T00:00:00Z',
    deprecated_at: c.lifecycle && c.lifecycle !== 'active' ? '2026-01-05T00:00:00Z' : null,
    retires_at: null,
    lifecycle: c.lifecycle ?? 'active',
    line: null,
    max_input_tokens: 200_000,
    max_tokens: c.maxTokens ?? 64_000,
    capabilities: {
      batch: { supported: true },
      citations: { supported: true },
      code_execution: no,
      context_management: { supported: false, clear_thinking_20251015: null, clear_tool_uses_20250919: null, compact_20260112: null },
      effort: { supported: false, high: no, low: no, max: no, medium: no, xhigh: null },
      image_input: { supported: c.image },
      pdf_input: { supported: c.image },
      server_tools: { supported: false, code_execution: no, web_search: no },
      structured_outputs: { supported: c.structured },
      thinking: { supported: false, types: { adaptive: no, between_tools: no, disabled: { supported: true }, enabled: no } },
    },
  };
}

function defaultModels(kind: ProviderName): Record<string, unknown>[] {
  if (kind === 'anthropic') {
    return [
      claudeModel('claude-sonnet-5-5', 'Claude Sonnet 5.5', { image: true, structured: true }),
      claudeModel('claude-haiku-4-5-20251001', 'Claude Haiku 4.5', { image: true, structured: true }),
      claudeModel('claude-3-haiku-20240307', 'Claude Haiku 3', { image: true, structured: false, lifecycle: 'deprecated', maxTokens: 4096 }),
      claudeModel('claude-3-5-sonnet-20240620', 'Claude Sonnet 3.5', { image: true, structured: true, lifecycle: 'retired', maxTokens: 8192 }),
      claudeModel('claude-text-only-test', 'A model without image input', { image: false, structured: true }),
    ];
  }
  if (kind === 'openai') {
    return ['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'o3', 'gpt-4o-2024-05-13', 'gpt-3.5-turbo', 'whisper-1', 'dall-e-3'].map((id) => ({
      id,
      object: 'model',
      created: 1_715_367_049,
      owned_by: 'system',
    }));
  }
  const entry = (id: string, name: string, modalities: string[], params: string[], prompt: string, completion: string, context_length: number) => ({
    id,
    canonical_slug: id,
    name,
    created: 1_758_000_000,
    description: `${name} (test entry)`,
    context_length,
    architecture: {
      modality: `${modalities.join('+')}->text`,
      input_modalities: modalities,
      output_modalities: ['text'],
      tokenizer: 'Other',
      instruct_type: null,
    },
    pricing: { prompt, completion, request: '0', image: '0', web_search: '0', internal_reasoning: '0' },
    top_provider: { context_length, max_completion_tokens: 64_000, is_moderated: false },
    per_request_limits: null,
    supported_parameters: params,
  });
  const full = ['max_tokens', 'temperature', 'tools', 'tool_choice', 'response_format', 'structured_outputs'];
  return [
    entry('anthropic/claude-sonnet-4.5', 'Anthropic: Claude Sonnet 4.5', ['text', 'image', 'file'], full, '0.000003', '0.000015', 1_000_000),
    entry('openai/gpt-4o', 'OpenAI: GPT-4o', ['text', 'image', 'file'], full, '0.0000025', '0.00001', 128_000),
    entry('google/gemini-2.5-flash', 'Google: Gemini 2.5 Flash', ['text', 'image', 'file', 'audio', 'video'], full, '0.0000003', '0.0000025', 1_048_576),
    entry('meta-llama/llama-4-maverick', 'Meta: Llama 4 Maverick', ['text', 'image'], full, '0.00000015', '0.0000006', 1_048_576),
    entry('meta-llama/llama-3.3-70b-instruct', 'Meta: Llama 3.3 70B Instruct', ['text'], full, '0.00000013', '0.0000004', 131_072),
    entry(
      'mistralai/mistral-small-3.2-24b-instruct',
      'Mistral: Mistral Small 3.2 24B',
      ['image', 'text'],
      ['max_tokens', 'response_format'],
      '0.00000005',
      '0.0000001',
      131_072,
    ),
    entry('deepseek/deepseek-chat', 'DeepSeek: DeepSeek V3', ['text'], full, '0.0000003', '0.00000085', 163_840),
  ];
}

/** An object matching `schema` (as sent): the first option of an enum, a list of the first for a multi. */
export function sampleFor(schema: Record<string, unknown>): Record<string, unknown> {
  const props = (schema.properties ?? {}) as Record<string, Record<string, unknown>>;
  return Object.fromEntries(
    Object.entries(props).map(([name, p]) => {
      const items = p.items as Record<string, unknown> | undefined;
      if (Array.isArray(p.enum)) return [name, p.enum[0]];
      if (p.type === 'object') return [name, sampleFor(p)];
      if (p.type === 'integer') return [name, 1];
      if (p.type === 'array') return [name, Array.isArray(items?.enum) ? [items.enum[0]] : ['sample']];
      if (p.type === 'number') return [name, 42];
      if (p.type === 'boolean') return [name, true];
      return [name, `sample ${name}`];
    }),
  );
}

const ANTHROPIC_ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

const USUAL_MESSAGES: Record<number, string> = {
  400: 'Invalid request.',
  401: 'invalid x-api-key',
  402: 'Your credit balance is too low to access the API.',
  403: 'Your API key does not have permission to use the specified resource.',
  404: 'The requested resource could not be found.',
  429: 'Number of requests has exceeded your rate limit.',
  500: 'Internal server error',
  502: 'Bad gateway',
  503: 'Service unavailable',
  529: 'Overloaded',
};

/** The provider's error body for `status`. */
function errorBody(kind: ProviderName, status: number, message: string): Record<string, unknown> {
  if (kind === 'anthropic') {
    return { type: 'error', error: { type: ANTHROPIC_ERROR_TYPES[status] ?? 'api_error', message }, request_id: 'req_011CTestFake' };
  }
  if (kind === 'openai') {
    const [type, code] =
      status === 401
        ? ['invalid_request_error', 'invalid_api_key']
        : status === 429
          ? ['requests', 'rate_limit_exceeded']
          : status >= 500
            ? ['server_error', null]
            : ['invalid_request_error', null];
    return { error: { message, type, param: null, code } };
  }
  return { error: { code: status, message } };
}

/** Total enum values and whether every object is closed and fully required: OpenAI's strict-mode checks. */
function strictProblems(schema: unknown): { enumValues: number; problem?: string } {
  let enumValues = 0;
  let problem: string | undefined;
  const walk = (node: unknown): void => {
    if (!node || typeof node !== 'object') return;
    const n = node as Record<string, unknown>;
    if (Array.isArray(n.enum)) enumValues += n.enum.length;
    if (n.type === 'object') {
      const keys = Object.keys((n.properties ?? {}) as object);
      if (n.additionalProperties !== false) problem ??= "'additionalProperties' is required to be supplied and to be false";
      const required = (n.required ?? []) as string[];
      if (keys.some((k) => !required.includes(k))) problem ??= "'required' is required to be supplied and to be an array including every key in properties";
    }
    if (n.uniqueItems !== undefined) problem ??= "'uniqueItems' is not permitted";
    for (const v of Object.values(n)) {
      if (Array.isArray(v)) v.forEach(walk);
      else walk(v);
    }
  };
  walk(schema);
  return { enumValues, problem };
}

/**
 * The key a request carried. Anthropic's API takes `x-api-key` or a Bearer token; the
 * installed @anthropic-ai/sdk sends the API key as `Authorization: Bearer`.
 */
function presentedKey(req: http.IncomingMessage): string | undefined {
  const header = req.headers['x-api-key'];
  return (Array.isArray(header) ? header[0] : header) ?? req.headers.authorization?.replace(/^Bearer /, '');
}

function readBody(req: http.IncomingMessage): Promise<Record<string, unknown> | undefined> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(raw ? (JSON.parse(raw) as Record<string, unknown>) : undefined);
      } catch {
        resolve(undefined);
      }
    });
  });
}

export async function startFakeProvider(kind: ProviderName): Promise<FakeProvider> {
  const key = KEYS[kind];
  const prefix = kind === 'openrouter' ? '/api/v1' : '/v1';
  const queues = new Map<Route, Behaviour[]>();
  const requests: Recorded[] = [];
  const fake = {} as FakeProvider;
  const models = defaultModels(kind);

  function routeOf(method: string, path: string): Route | 'unknown' {
    if (method === 'POST' && path === (kind === 'anthropic' ? '/v1/messages' : `${prefix}/chat/completions`)) return 'analyze';
    if (method === 'GET' && path === `${prefix}/models`) return 'models';
    if (method === 'GET' && kind === 'anthropic' && path.startsWith('/v1/models/')) return 'model';
    if (method === 'GET' && kind === 'openrouter' && path === '/api/v1/key') return 'key';
    return 'unknown';
  }

  function authOf(req: http.IncomingMessage): Recorded['auth'] {
    const presented = presentedKey(req);
    if (!presented) return 'none';
    return presented === key ? 'valid' : 'invalid';
  }

  const server = await serveLocally((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const route = routeOf(req.method ?? 'GET', url.pathname);
      const body = await readBody(req);
      const auth = authOf(req);
      const headers = Object.fromEntries(
        Object.entries(req.headers)
          .filter(([h]) => h !== 'authorization' && h !== 'x-api-key')
          .map(([h, v]) => [h, String(v)]),
      );
      requests.push({ route, method: req.method ?? 'GET', path: url.pathname + url.search, auth, headers, body });

      const send = (status: number, payload: unknown, extra: Record<string, string> = {}) => {
        if (res.destroyed) return;
        res.writeHead(status, { 'content-type': 'application/json', 'request-id': 'req_011CTestFake', 'x-request-id': 'req_test', ...extra });
        res.end(JSON.stringify(payload));
      };
      const fail = (status: number, message?: string, retryAfter?: number) =>
        send(status, errorBody(kind, status, message ?? USUAL_MESSAGES[status] ?? 'Error'), retryAfter ? { 'retry-after': String(retryAfter) } : {});

      if (route === 'unknown') return fail(404, `No route ${req.method} ${url.pathname}`);
      const b: Behaviour = queues.get(route)?.shift() ?? fake.respond?.(route, body) ?? {};
      if (b.delayMs) await new Promise((r) => setTimeout(r, b.delayMs));
      if (b.status) return fail(b.status, b.message, b.retryAfter);
      if (b.raw) {
        res.writeHead(200, { 'content-type': b.raw.contentType });
        return void res.end(b.raw.body);
      }
      const publicRoute = kind === 'openrouter' && route === 'models';
      if (!publicRoute && auth !== 'valid') {
        const presented = presentedKey(req) ?? '';
        // OpenAI's 401 names the key it got (masked there; whole here, the worst case for our notes).
        return fail(401, kind === 'openai' ? `Incorrect API key provided: ${presented}.` : kind === 'anthropic' ? 'invalid x-api-key' : 'User not found.');
      }

      if (route === 'models' && kind === 'anthropic') {
        const limit = Math.min(Number(url.searchParams.get('limit') ?? 20), 2); // small pages, so paging is exercised
        const after = url.searchParams.get('after_id');
        const start = after ? models.findIndex((m) => m.id === after) + 1 : 0;
        const data = models.slice(start, start + limit);
        return send(200, { data, has_more: start + limit < models.length, first_id: data[0]?.id ?? null, last_id: data.at(-1)?.id ?? null });
      }
      if (route === 'models') return send(200, kind === 'openai' ? { object: 'list', data: models } : { data: models });
      if (route === 'model') {
        const id = decodeURIComponent(url.pathname.slice('/v1/models/'.length));
        const m = models.find((x) => x.id === id);
        return m ? send(200, m) : fail(404, `model: ${id}`);
      }
      if (route === 'key') {
        return send(200, {
          data: {
            label: 'sk-or-v1-fak...def',
            limit: null,
            usage: 0.25,
            usage_daily: 0,
            usage_weekly: 0,
            usage_monthly: 0.25,
            byok_usage: 0,
            byok_usage_daily: 0,
            byok_usage_weekly: 0,
            byok_usage_monthly: 0,
            is_free_tier: false,
            is_provisioning_key: false,
            limit_remaining: null,
            limit_reset: null,
            include_byok_in_limit: false,
            rate_limit: { requests: -1, interval: '10s', note: 'This field is deprecated and safe to ignore.' },
          },
        });
      }

      // analyze
      const model = String(body?.model ?? '');
      if (kind === 'anthropic') {
        if (!req.headers['anthropic-version']) return fail(400, 'anthropic-version: header is required');
        if (typeof body?.max_tokens !== 'number') return fail(400, 'max_tokens: Field required');
        const info = models.find((m) => m.id === model);
        if (!info) return fail(404, `model: ${model}`);
        const caps = info.capabilities as { structured_outputs: { supported: boolean } };
        const format = (body.output_config as { format?: { schema: Record<string, unknown> } } | undefined)?.format;
        if (format && !caps.structured_outputs.supported) return fail(400, `output_config.format: structured outputs are not supported for model ${model}`);
        const forced = body.tool_choice as { type?: string; name?: string } | undefined;
        const tool = (body.tools as { name: string; input_schema: Record<string, unknown> }[] | undefined)?.find((t) => t.name === forced?.name);
        const base = { id: 'msg_01TestFake', type: 'message', role: 'assistant', model, stop_sequence: null, usage: { input_tokens: 1500, output_tokens: 40 } };
        if (forced?.type === 'tool' && tool && b.text === undefined) {
          const input = b.structured ?? sampleFor(tool.input_schema);
          return send(200, { ...base, content: [{ type: 'tool_use', id: 'toolu_01TestFake', name: tool.name, input }], stop_reason: b.finish ?? 'tool_use' });
        }
        const text = b.text ?? (format ? JSON.stringify(b.structured ?? sampleFor(format.schema)) : 'A web page with a heading and a photo.');
        return send(200, { ...base, content: [{ type: 'text', text }], stop_reason: b.finish ?? 'end_turn' });
      }
      if (kind === 'openai' && !models.some((m) => m.id === model)) return fail(404, `The model \`${model}\` does not exist or you do not have access to it.`);
      const rf = body?.response_format as { type?: string; json_schema?: { name?: string; strict?: boolean; schema?: Record<string, unknown> } } | undefined;
      if (rf?.type === 'json_schema' && rf.json_schema?.strict) {
        const { enumValues, problem } = strictProblems(rf.json_schema.schema);
        const name = rf.json_schema.name;
        if (problem) return fail(400, `Invalid schema for response_format '${name}': In context=(), ${problem}.`);
        if (enumValues > 1000) return fail(400, `Invalid schema for response_format '${name}': Too many enum values: ${enumValues} exceeds the limit of 1000.`);
      }
      const content =
        b.text ??
        (rf?.type === 'json_schema' ? JSON.stringify(b.structured ?? sampleFor(rf.json_schema?.schema ?? {})) : 'A web page with a heading and a photo.');
      const finish = b.finish ?? 'stop';
      const refusal = finish === 'refusal' ? "I'm sorry, I can't help with that." : null;
      return send(200, {
        id: kind === 'openai' ? 'chatcmpl-TestFake' : 'gen-1760000000-TestFake',
        object: 'chat.completion',
        created: 1_760_000_000,
        model,
        ...(kind === 'openrouter' ? { provider: 'OpenAI' } : { system_fingerprint: 'fp_test' }),
        choices: [
          { index: 0, logprobs: null, finish_reason: refusal ? 'stop' : finish, message: { role: 'assistant', content: refusal ? null : content, refusal } },
        ],
        usage: { prompt_tokens: 1500, completion_tokens: 40, total_tokens: 1540 },
      });
    })();
  });

  Object.assign(fake, {
    kind,
    baseUrl: kind === 'anthropic' ? server.origin : `${server.origin}${prefix}`,
    key,
    requests,
    models,
    respond: null,
    queue(route: Route, ...behaviours: Behaviour[]) {
      queues.set(route, [...(queues.get(route) ?? []), ...behaviours]);
    },
    of: (route: Route) => requests.filter((r) => r.route === route),
    stop: () => server.stop(),
  });
  return fake;
}

/** A base URL nothing listens on: a port that was free a moment ago. */
export async function unreachableBaseUrl(): Promise<string> {
  const s = await serveLocally((_req, res) => res.end());
  await s.stop();
  return `${s.origin}/v1`;
}
