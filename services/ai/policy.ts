/**
 * The rules of AI as pure functions: how a stored row is shown (the spec's provider record),
 * which model a request runs on, which requests are well-formed, which HTTP error a
 * provider's failure becomes, and the AI object a capture's analysis is recorded as.
 */
import type { Errors } from 'moleculer';
import { OWN_AI_PROVIDERS, type ModelRecord, type OwnAiProvider, type ProviderRecord, type Upstream } from '../shared/contracts';
import { serviceError } from '../shared/errors';
import type { AnalysisOptions } from '../shared/screenshot-options';
import type { ProviderKeyRow } from './provider-keys';
import type { AiFailure, AnalysisRequest } from './providers';

export const PROVIDER_LABELS: Record<OwnAiProvider, string> = { anthropic: 'Anthropic', openai: 'OpenAI', openrouter: 'OpenRouter' };

/**
 * The spec's provider record. No row (or, defensively, a row without a key that is not
 * verified) is only provider, label and verified; default_upstream is OpenRouter's alone,
 * 'auto' when none was chosen.
 */
export function providerRecord(provider: OwnAiProvider, row: ProviderKeyRow | null | undefined): ProviderRecord {
  const base = { provider, label: PROVIDER_LABELS[provider] };
  if (!row || (!row.verified && !row.keySealed)) return { ...base, verified: false };
  return {
    ...base,
    verified: row.verified,
    ...(row.keyHint ? { key_hint: row.keyHint } : {}),
    ...(row.defaultModel ? { default_model: row.defaultModel } : {}),
    ...(provider === 'openrouter' ? { default_upstream: row.defaultUpstream ?? 'auto' } : {}),
    ...(row.verifiedAt ? { verified_at: row.verifiedAt.toISOString() } : {}),
    ...(row.modelsCount !== null ? { models_count: row.modelsCount } : {}),
    last_error: row.lastError,
  };
}

/** The three providers, in the spec's order, each as the account has it. */
export function providerRecords(rows: readonly ProviderKeyRow[]): ProviderRecord[] {
  return OWN_AI_PROVIDERS.map((p) =>
    providerRecord(
      p,
      rows.find((r) => r.provider === p),
    ),
  );
}

/** An upstream (a stored default, or a model-list filter) exists only on OpenRouter. */
export function checkUpstream(provider: OwnAiProvider, upstream: Upstream | undefined, param: string): void {
  if (upstream !== undefined && provider !== 'openrouter') {
    throw serviceError('invalid_parameter', `${param}: only OpenRouter routes to an upstream; leave it out for ${PROVIDER_LABELS[provider]}.`, { param });
  }
}

function listed(models: readonly ModelRecord[]): string {
  const ids = models.filter((m) => !m.disabled).map((m) => m.id);
  if (ids.length === 0) return 'This key has no compatible model.';
  return `Compatible models: ${ids.slice(0, 8).join(', ')}${ids.length > 8 ? `, and ${ids.length - 8} more (GET /ai/models)` : ''}.`;
}

/**
 * The model a request runs on: the one named (it must be in the compatible list and
 * available to the key), else the stored default. With neither, Anthropic takes the first
 * compatible model (its list is newest first); OpenAI and OpenRouter have no sensible
 * default among dozens of priced models, so the caller must name one (the spec's
 * ai_model_required is for those two).
 */
export function chooseModel(provider: OwnAiProvider, requested: string | null | undefined, models: readonly ModelRecord[]): string {
  if (requested) {
    const known = models.find((m) => m.id === requested);
    if (!known || known.disabled) {
      const why = known ? 'is not available to the stored key' : 'is not in the compatible list (vision input and structured outputs)';
      throw serviceError('ai_model_not_supported', `${PROVIDER_LABELS[provider]} model "${requested}" ${why}. ${listed(models)}`);
    }
    return requested;
  }
  const first = models.find((m) => !m.disabled);
  if (provider === 'anthropic' && first) return first.id;
  throw serviceError(
    'ai_model_required',
    `Name a ${PROVIDER_LABELS[provider]} model (model, or ai_model on captures), or store a default_model with PUT ` +
      `/ai/providers/${provider}. ${listed(models)}`,
  );
}

/**
 * The HTTP error a provider failure becomes on the provider endpoints: a rejected key is the
 * spec's 401; a provider that cannot serve now (down, slow, rate-limiting) is 503
 * ai_provider_unavailable; one that answered but would not do it (billing, a refused request,
 * an unusable answer) is 502 ai_provider_error. The failure's note (already free of the key)
 * says what happened and what to do.
 */
export function httpErrorOf(failure: AiFailure): Errors.MoleculerError {
  switch (failure.code) {
    case 'ai_provider_key_rejected':
      return serviceError('ai_provider_key_rejected', failure.note);
    case 'ai_provider_unavailable':
    case 'ai_timeout':
    case 'ai_rate_limited':
      return serviceError('ai_provider_unavailable', failure.note);
    case 'ai_provider_billing':
    case 'ai_request_rejected':
    case 'ai_response_invalid':
      return serviceError('ai_provider_error', failure.note);
  }
}

/** What a capture's options ask the provider for (the image and the model are added by the caller). */
export function analysisRequestOf(o: AnalysisOptions): Pick<AnalysisRequest, 'mode' | 'prompt' | 'fields' | 'instructions'> {
  if (o.ai_prompt_mode === 'structured') {
    return {
      mode: 'structured',
      fields: o.ai_structured_fields ?? [],
      ...(o.ai_structured_instructions ? { instructions: o.ai_structured_instructions } : {}),
    };
  }
  return { mode: 'simple', ...(o.ai_prompt ? { prompt: o.ai_prompt } : {}) };
}
