/**
 * The chat-completions family through the `openai` SDK: OpenAI itself, any OpenAI-compatible
 * server (the operator's SERVICE_AI_PROVIDER=openai-compatible), and the analysis OpenRouter
 * shares with them. Each image goes as an `image_url` part holding a data: URL; a structured
 * answer is asked with `response_format: {type: 'json_schema', json_schema: {name, strict:
 * true, schema}}`.
 *
 * OpenAI's `/v1/models` says nothing of capabilities, so its compatible models are a table
 * kept here (vision input and json_schema structured outputs on chat completions), each
 * marked disabled when the key's `/v1/models` does not list it.
 */
import OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { type CallPolicy, withRetries } from './calls';
import { ANSWER_NAME, analysisParts, contentParts, structuredResult, unusableAnswer } from './request';
import { parseJsonAnswer } from './structured';
import type { AiClient, AiClientOptions, AnalysisRequest, AnalysisResult, ModelRecord } from './types';

export const OPENAI_BASE_URL = 'https://api.openai.com/v1';

/**
 * OpenAI models that take images and support Structured Outputs (json_schema, strict) on chat
 * completions. Not every vision model does: gpt-4o-2024-05-13 and gpt-4-turbo take images
 * but not json_schema; o1-mini and o3-mini have no image input; the -pro models are not on
 * chat completions. Update when OpenAI ships models.
 */
export const OPENAI_MODELS: readonly { id: string; name: string; context_length: number }[] = [
  { id: 'gpt-5.2', name: 'GPT-5.2', context_length: 400_000 },
  { id: 'gpt-5.1', name: 'GPT-5.1', context_length: 400_000 },
  { id: 'gpt-5', name: 'GPT-5', context_length: 400_000 },
  { id: 'gpt-5-mini', name: 'GPT-5 mini', context_length: 400_000 },
  { id: 'gpt-5-nano', name: 'GPT-5 nano', context_length: 400_000 },
  { id: 'gpt-4.1', name: 'GPT-4.1', context_length: 1_047_576 },
  { id: 'gpt-4.1-mini', name: 'GPT-4.1 mini', context_length: 1_047_576 },
  { id: 'gpt-4.1-nano', name: 'GPT-4.1 nano', context_length: 1_047_576 },
  { id: 'o3', name: 'o3', context_length: 200_000 },
  { id: 'o4-mini', name: 'o4-mini', context_length: 200_000 },
  { id: 'o1', name: 'o1', context_length: 200_000 },
  { id: 'gpt-4o', name: 'GPT-4o', context_length: 128_000 },
  { id: 'gpt-4o-2024-11-20', name: 'GPT-4o (2024-11-20)', context_length: 128_000 },
  { id: 'gpt-4o-2024-08-06', name: 'GPT-4o (2024-08-06)', context_length: 128_000 },
  { id: 'gpt-4o-mini', name: 'GPT-4o mini', context_length: 128_000 },
  { id: 'gpt-4o-mini-2024-07-18', name: 'GPT-4o mini (2024-07-18)', context_length: 128_000 },
];

/**
 * An `openai` SDK client with everything explicit, so it reads no OPENAI_* variable (an
 * operator's OPENAI_API_KEY must never reach OpenRouter or another server). Without a key the
 * Authorization header is left out (OpenRouter's public model list, a keyless local server).
 */
export function openAiSdk(opts: AiClientOptions, baseURL: string): OpenAI {
  return new OpenAI({
    apiKey: opts.apiKey || 'none',
    adminAPIKey: null,
    organization: null,
    project: null,
    webhookSecret: null,
    baseURL,
    maxRetries: 0,
    timeout: opts.timeoutMs,
    logLevel: 'off',
    ...(opts.apiKey ? {} : { defaultHeaders: { Authorization: null } }),
  });
}

export function policyFor(label: string, opts: AiClientOptions): CallPolicy {
  return { label, timeoutMs: opts.timeoutMs, maxRetries: opts.maxRetries ?? 1, secret: opts.apiKey };
}

/** One analysis on chat completions; `extraBody` carries a provider's own fields (OpenRouter's `provider`). */
export async function chatAnalysis(client: OpenAI, policy: CallPolicy, req: AnalysisRequest, extraBody: Record<string, unknown> = {}): Promise<AnalysisResult> {
  const parts = analysisParts(req);
  const messages: ChatCompletionMessageParam[] = [
    ...(parts.system ? [{ role: 'system' as const, content: parts.system }] : []),
    {
      role: 'user',
      content: contentParts(req, parts).map((p) =>
        'image' in p
          ? { type: 'image_url' as const, image_url: { url: `data:${p.image.contentType};base64,${p.image.data.toString('base64')}` } }
          : { type: 'text' as const, text: p.text },
      ),
    },
  ];
  const body: ChatCompletionCreateParamsNonStreaming = {
    model: req.model,
    messages,
    ...(parts.structured
      ? { response_format: { type: 'json_schema', json_schema: { name: ANSWER_NAME, strict: true, schema: parts.structured.schema } } }
      : {}),
    ...extraBody,
  };
  const completion = await withRetries(policy, (o) => client.chat.completions.create(body, o));
  const choice = completion.choices?.[0];
  if (!choice) throw unusableAnswer('empty');
  if (choice.message.refusal || choice.finish_reason === 'content_filter') throw unusableAnswer('refused');
  if (choice.finish_reason === 'length') throw unusableAnswer('cut off');
  const text = (choice.message.content ?? '').trim();
  const model = completion.model || req.model;
  if (parts.structured) return structuredResult(parseJsonAnswer(text), parts, model);
  if (!text) throw unusableAnswer('empty');
  return { text, structured: null, model };
}

export function openAiClient(opts: AiClientOptions): AiClient {
  const client = openAiSdk(opts, opts.baseUrl ?? OPENAI_BASE_URL);
  const policy = policyFor('OpenAI', opts);
  async function listModels(): Promise<ModelRecord[]> {
    const visible = await withRetries(policy, async (o) => {
      const ids = new Set<string>();
      for await (const m of client.models.list(o)) ids.add(m.id);
      return ids;
    });
    return OPENAI_MODELS.map((m) => ({ ...m, structured_outputs: true, disabled: !visible.has(m.id), source: 'openai' }));
  }
  return {
    async verifyKey() {
      return { modelsCount: (await listModels()).filter((m) => !m.disabled).length };
    },
    listModels,
    analyze: (req) => chatAnalysis(client, policy, req),
  };
}

/**
 * Any server speaking OpenAI's chat completions (vLLM, Ollama, LiteLLM...). It reports no
 * capabilities either; the operator chose its model, so every model it lists is taken as able.
 */
export function openAiCompatibleClient(opts: AiClientOptions): AiClient {
  if (!opts.baseUrl) throw new TypeError('an openai-compatible backend needs a base URL (SERVICE_AI_BASE_URL)');
  const client = openAiSdk(opts, opts.baseUrl);
  const policy = policyFor('The AI backend', opts);
  async function listModels(): Promise<ModelRecord[]> {
    const ids = await withRetries(policy, async (o) => {
      const out: string[] = [];
      for await (const m of client.models.list(o)) out.push(m.id);
      return out;
    });
    return ids.map((id) => ({ id, name: id, context_length: 0, structured_outputs: true, disabled: false, source: 'openai-compatible' }));
  }
  return {
    async verifyKey() {
      return { modelsCount: (await listModels()).length };
    },
    listModels,
    analyze: (req) => chatAnalysis(client, policy, req),
  };
}
