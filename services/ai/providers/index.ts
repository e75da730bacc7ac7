/**
 * The provider layer's entry point: an AiClient for a backend kind. The ai service builds one
 * per call from the account's stored key (or the operator's SERVICE_AI_* settings) and the
 * base URLs and AI_TIMEOUT_MS of its config; this layer reads no environment itself.
 */
import { anthropicClient } from './anthropic';
import { openAiClient, openAiCompatibleClient } from './openai';
import { openRouterClient } from './openrouter';
import type { AiClient, AiClientOptions, BackendKind } from './types';

export function createAiClient(kind: BackendKind, opts: AiClientOptions): AiClient {
  switch (kind) {
    case 'anthropic':
      return anthropicClient(opts);
    case 'openai':
      return openAiClient(opts);
    case 'openrouter':
      return openRouterClient(opts);
    case 'openai-compatible':
      return openAiCompatibleClient(opts);
  }
}

export * from './types';
export { checkStructuredAnswer, needsRelaxedSchema, outputSchema, STRICT_SCHEMA_LIMITS, validationSchema } from './structured';
export { openRouterRouting, UPSTREAM_PREFIX } from './openrouter';
export { OPENAI_MODELS } from './openai';
