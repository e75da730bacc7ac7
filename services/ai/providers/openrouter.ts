/**
 * OpenRouter through the `openai` SDK pointed at its base URL: analysis is chat completions
 * (openai.ts) plus OpenRouter's `provider` routing object; the model list is its public
 * `/models`, kept to entries whose `architecture.input_modalities` has `image` and whose
 * `supported_parameters` has `structured_outputs`; a key is checked with `GET /key`, since
 * the list proves nothing about a key.
 *
 * Upstream (the spec's default_upstream) names a model vendor. It filters the list by the
 * vendor's id prefix and, where the vendor serves its own models on OpenRouter, routes the
 * request there only (`provider.only`, provider slugs from OpenRouter's provider routing
 * docs). Meta serves no endpoint of its own there, so `meta` only filters the list. Every
 * request has `provider.require_parameters: true`: only endpoints that honour
 * response_format's json_schema may answer, never one that would drop it silently.
 */
import { type SdkRequestOptions, withRetries } from './calls';
import { chatAnalysis, openAiSdk, policyFor } from './openai';
import type { AiClient, AiClientOptions, ModelRecord, Upstream } from './types';

export const OPENROUTER_BASE_URL = 'https://openrouter.ai/api/v1';

/** The id prefix of each vendor's models on OpenRouter. */
export const UPSTREAM_PREFIX: Record<Exclude<Upstream, 'auto'>, string> = {
  anthropic: 'anthropic/',
  openai: 'openai/',
  google: 'google/',
  meta: 'meta-llama/',
};

const UPSTREAM_ENDPOINTS: Partial<Record<Upstream, string[]>> = {
  anthropic: ['anthropic'],
  openai: ['openai'],
  google: ['google-vertex', 'google-ai-studio'],
};

/** The `provider` object of a chat completion routed to `upstream`. */
export function openRouterRouting(upstream: Upstream = 'auto'): { require_parameters: true; only?: string[] } {
  const only = UPSTREAM_ENDPOINTS[upstream];
  return only ? { require_parameters: true, only } : { require_parameters: true };
}

/** The fields of an entry of OpenRouter's `/models` this module reads. */
interface OpenRouterModel {
  id: string;
  name?: string;
  context_length?: number | null;
  architecture?: { input_modalities?: string[] };
  pricing?: { prompt?: string | number; completion?: string | number };
  supported_parameters?: string[];
}

export function openRouterClient(opts: AiClientOptions): AiClient {
  const client = openAiSdk(opts, opts.baseUrl ?? OPENROUTER_BASE_URL);
  const policy = policyFor('OpenRouter', opts);
  // An answer that is not a list of models (a gateway's HTML page, JSON of another shape) is
  // unusable, as unparseable JSON is: never read, and so never cached, as an empty list.
  const fetchModels = async (o: SdkRequestOptions): Promise<{ data: OpenRouterModel[] }> => {
    const list = await client.get<unknown>('/models', o);
    const data = typeof list === 'object' && list !== null ? (list as { data?: unknown }).data : undefined;
    if (!Array.isArray(data)) throw new Error("OpenRouter's /models did not answer a list of models");
    return { data: data.filter((m): m is OpenRouterModel => typeof m === 'object' && m !== null && typeof (m as { id?: unknown }).id === 'string') };
  };

  function compatible(list: { data: OpenRouterModel[] }, upstream: Upstream = 'auto'): ModelRecord[] {
    const prefix = upstream === 'auto' ? '' : UPSTREAM_PREFIX[upstream];
    return list.data
      .filter(
        (m) =>
          m.id.startsWith(prefix) &&
          (m.architecture?.input_modalities ?? []).includes('image') &&
          (m.supported_parameters ?? []).includes('structured_outputs'),
      )
      .map((m) => ({
        id: m.id,
        name: m.name ?? m.id,
        context_length: m.context_length ?? 0,
        structured_outputs: true,
        pricing: { prompt: String(m.pricing?.prompt ?? ''), completion: String(m.pricing?.completion ?? '') },
        disabled: false,
        source: 'openrouter',
      }));
  }

  return {
    async verifyKey() {
      const list = await withRetries(policy, async (o) => {
        await client.get('/key', o);
        return fetchModels(o);
      });
      return { modelsCount: compatible(list).length };
    },
    async listModels(upstream) {
      return compatible(await withRetries(policy, fetchModels), upstream);
    },
    analyze: (req) => chatAnalysis(client, policy, req, { provider: openRouterRouting(req.upstream) }),
  };
}
