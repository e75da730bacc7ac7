/**
 * Anthropic through @anthropic-ai/sdk: the Messages API with each image as a base64 block,
 * structured answers through `output_config.format` (type json_schema) on models whose
 * `/v1/models` capabilities report structured outputs, else through one forced tool whose
 * input_schema is the schema (the older models; the newest refuse a forced tool_choice, which
 * is why native output is preferred whenever the model has it). The model list is the key's
 * `/v1/models`, keeping active models with `image_input` and `structured_outputs`.
 */
import Anthropic from '@anthropic-ai/sdk';
import { type CallPolicy, type SdkRequestOptions, withRetries } from './calls';
import { ANSWER_NAME, analysisParts, contentParts, structuredResult, unusableAnswer } from './request';
import { parseJsonAnswer } from './structured';
import type { AiClient, AiClientOptions, AnalysisRequest, AnalysisResult, ModelRecord } from './types';

export const ANTHROPIC_BASE_URL = 'https://api.anthropic.com';

/** Within every current model's output limit; a model reporting a lower max_tokens gets that. */
const MAX_TOKENS = 8192;
/** Older Claude models stop at 4096 output tokens; used when the model's own limit is unknown. */
const SAFE_MAX_TOKENS = 4096;
const MODEL_INFO_TTL_MS = 10 * 60_000;

/** Model capabilities by base URL and model: a model's capabilities do not depend on the key. */
const modelInfoCache = new Map<string, { info: Anthropic.Models.ModelInfo; expires: number }>();

export function anthropicClient(opts: AiClientOptions): AiClient {
  const baseURL = opts.baseUrl ?? ANTHROPIC_BASE_URL;
  // Everything explicit, so the SDK reads no ANTHROPIC_* variable or profile for it; its own
  // retries, logs and spans are off (calls.ts retries; a log line could carry a request).
  const client = new Anthropic({
    apiKey: opts.apiKey ?? '',
    baseURL,
    maxRetries: 0,
    timeout: opts.timeoutMs,
    logLevel: 'off',
    openTelemetry: false,
  });
  const policy: CallPolicy = { label: 'Anthropic', timeoutMs: opts.timeoutMs, maxRetries: opts.maxRetries ?? 1, secret: opts.apiKey };

  async function modelInfo(model: string, o: SdkRequestOptions): Promise<Anthropic.Models.ModelInfo> {
    const key = `${baseURL}\n${model}`;
    const hit = modelInfoCache.get(key);
    if (hit && hit.expires > Date.now()) return hit.info;
    const info = await client.models.retrieve(model, {}, o);
    modelInfoCache.set(key, { info, expires: Date.now() + MODEL_INFO_TTL_MS });
    return info;
  }

  async function listModels(): Promise<ModelRecord[]> {
    const all = await withRetries(policy, async (o) => {
      const out: Anthropic.Models.ModelInfo[] = [];
      for await (const m of client.models.list({ limit: 1000 }, o)) out.push(m);
      return out;
    });
    return all
      .filter((m) => m.capabilities?.image_input?.supported && m.capabilities?.structured_outputs?.supported && m.lifecycle !== 'retired')
      .map((m) => ({
        id: m.id,
        name: m.display_name,
        context_length: m.max_input_tokens ?? 0,
        structured_outputs: true,
        disabled: false,
        source: 'anthropic',
      }));
  }

  async function analyze(req: AnalysisRequest): Promise<AnalysisResult> {
    const parts = analysisParts(req);
    const content: Anthropic.Messages.ContentBlockParam[] = contentParts(req, parts).map((p) =>
      'image' in p
        ? { type: 'image', source: { type: 'base64', media_type: p.image.contentType, data: p.image.data.toString('base64') } }
        : { type: 'text', text: p.text },
    );
    const { message, native } = await withRetries(policy, async (o) => {
      const info = parts.structured ? await modelInfo(req.model, o) : undefined;
      const native = info?.capabilities?.structured_outputs?.supported === true;
      const body: Anthropic.Messages.MessageCreateParamsNonStreaming = {
        model: req.model,
        max_tokens: info ? Math.min(MAX_TOKENS, info.max_tokens ?? SAFE_MAX_TOKENS) : SAFE_MAX_TOKENS,
        messages: [{ role: 'user', content }],
        ...(parts.system ? { system: parts.system } : {}),
      };
      if (parts.structured && native) {
        body.output_config = { format: { type: 'json_schema', schema: parts.structured.schema } };
      } else if (parts.structured) {
        body.tools = [
          {
            name: ANSWER_NAME,
            description: 'Records the answer, one value per field.',
            input_schema: parts.structured.schema as Anthropic.Messages.Tool.InputSchema,
          },
        ];
        body.tool_choice = { type: 'tool', name: ANSWER_NAME };
      }
      return { message: await client.messages.create(body, o), native };
    });

    if (message.stop_reason === 'refusal') throw unusableAnswer('refused');
    if (message.stop_reason === 'max_tokens') throw unusableAnswer('cut off');
    const text = message.content
      .flatMap((b) => (b.type === 'text' ? [b.text] : []))
      .join('\n')
      .trim();
    if (!parts.structured) {
      if (!text) throw unusableAnswer('empty');
      return { text, structured: null, model: message.model };
    }
    if (native) return structuredResult(parseJsonAnswer(text), parts, message.model);
    const call = message.content.find((b) => b.type === 'tool_use' && b.name === ANSWER_NAME);
    if (call?.type !== 'tool_use') throw unusableAnswer('empty');
    return structuredResult(call.input, parts, message.model);
  }

  return {
    async verifyKey() {
      return { modelsCount: (await listModels()).length };
    },
    listModels: () => listModels(),
    analyze,
  };
}
