/**
 * Accounts' own provider keys (the Bring Your Own AI endpoints): storing a key only after the
 * provider has judged it, listing providers and models, a test analysis, removal. The key is
 * sealed before anything else happens and leaves this module only towards its provider; no
 * error, note or record carries it (AiFailure notes are scrubbed by the provider layer).
 *
 * Only PUT changes a row's state. A rejected key is stored unverified with the provider's
 * note (the spec's transition); a provider that could not judge it (down, slow,
 * rate-limiting) changes nothing, since nothing was learnt about the key.
 */
import type { AccountContext, ModelList, OwnAiProvider, ProviderRecord, Upstream } from '../shared/contracts';
import { serviceError } from '../shared/errors';
import { checkFeatures } from '../billing/public/plan-gates';
import { hintOf, type SecretBox } from '../shared/secrets';
import { type CachedModels, type ModelCache, modelListKey } from './model-cache';
import { checkUpstream, chooseModel, httpErrorOf, PROVIDER_LABELS, providerRecord, providerRecords } from './policy';
import type { ProviderKeyRepository, ProviderKeyRow } from './provider-keys';
import { AiFailure, type AiClient } from './providers';
import { SAMPLE_PROMPT, sampleImage } from './sample-image';

export interface OwnProvidersDeps {
  keys: ProviderKeyRepository;
  secrets: SecretBox;
  models: ModelCache;
  /** A client for the provider's configured base URL; no key for OpenRouter's public list. */
  clientFor(provider: OwnAiProvider, apiKey?: string): AiClient;
  now?: () => Date;
}

/** Runs a provider call; its AiFailure becomes the endpoint's HTTP error. */
async function asked<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw err instanceof AiFailure ? httpErrorOf(err) : err;
  }
}

export class OwnProviders {
  private readonly now: () => Date;

  constructor(private readonly deps: OwnProvidersDeps) {
    this.now = deps.now ?? (() => new Date());
  }

  /** The compatible models the key (none: OpenRouter's public list) sees, through the cache. */
  private modelsFor(provider: OwnAiProvider, apiKey: string | undefined, upstream: Upstream | undefined): Promise<CachedModels> {
    return this.deps.models.get(modelListKey(provider, apiKey, upstream), () => this.deps.clientFor(provider, apiKey).listModels(upstream));
  }

  /** The stored key of a verified provider, or 412 ai_provider_not_configured. */
  private async storedKey(accountId: string, provider: OwnAiProvider): Promise<{ apiKey: string; row: ProviderKeyRow }> {
    const row = await this.deps.keys.get(accountId, provider);
    const label = PROVIDER_LABELS[provider];
    if (!row?.verified || !row.keySealed) {
      throw serviceError(
        'ai_provider_not_configured',
        `No verified ${label} key is stored for this account${row?.lastError ? ` (the last one stored was rejected: ${row.lastError})` : ''}. Store one ` +
          `with PUT /ai/providers/${provider}.`,
      );
    }
    let apiKey: string;
    try {
      apiKey = this.deps.secrets.open(row.keySealed);
    } catch (err) {
      if ((err as { type?: string }).type === 'secrets_not_configured') throw err;
      throw serviceError(
        'ai_provider_not_configured',
        `The stored ${label} key can no longer be read (the server's SECRETS_KEY changed); store it again with PUT /ai/providers/${provider}.`,
      );
    }
    return { apiKey, row };
  }

  async putKey(p: {
    account: AccountContext;
    provider: OwnAiProvider;
    apiKey: string;
    defaultModel?: string;
    defaultUpstream?: Upstream;
  }): Promise<ProviderRecord> {
    const { account, provider, apiKey } = p;
    checkFeatures(account, { ownAi: true }, { managing: true });
    checkUpstream(provider, p.defaultUpstream, 'default_upstream');
    const stored = {
      keySealed: this.deps.secrets.seal(apiKey),
      keyHint: hintOf(apiKey),
      defaultModel: p.defaultModel ?? null,
      defaultUpstream: p.defaultUpstream ?? null,
    };
    let modelsCount: number;
    try {
      ({ modelsCount } = await this.deps.clientFor(provider, apiKey).verifyKey());
    } catch (err) {
      if (err instanceof AiFailure && err.code === 'ai_provider_key_rejected') {
        await this.deps.keys.put(account.accountId, provider, { ...stored, verified: false, verifiedAt: null, modelsCount: null, lastError: err.note });
      }
      throw err instanceof AiFailure ? httpErrorOf(err) : err;
    }
    // A default the key cannot use would fail every later capture: refused now, nothing stored.
    if (p.defaultModel) {
      const { models } = await asked(() => this.modelsFor(provider, provider === 'openrouter' ? undefined : apiKey, p.defaultUpstream));
      chooseModel(provider, p.defaultModel, models);
    }
    const row = await this.deps.keys.put(account.accountId, provider, { ...stored, verified: true, verifiedAt: this.now(), modelsCount, lastError: null });
    return providerRecord(provider, row);
  }

  async listProviders(accountId: string): Promise<ProviderRecord[]> {
    return providerRecords(await this.deps.keys.list(accountId));
  }

  async listModels(p: { accountId: string; provider: OwnAiProvider; upstream?: Upstream }): Promise<ModelList> {
    const { provider, upstream } = p;
    checkUpstream(provider, upstream, 'upstream');
    // OpenRouter's list is public and the same for every key: one cache entry for everyone.
    const apiKey = provider === 'openrouter' ? undefined : (await this.storedKey(p.accountId, provider)).apiKey;
    const { models, fetchedAt } = await asked(() => this.modelsFor(provider, apiKey, upstream));
    return { provider, upstream: upstream ?? null, fetched_at: fetchedAt.toISOString(), models };
  }

  async testProvider(p: { account: AccountContext; provider: OwnAiProvider; model?: string }): Promise<{ text: string; model: string; seconds: number }> {
    const { account, provider } = p;
    checkFeatures(account, { ownAi: true }, { managing: true });
    const { client, model, upstream } = await this.resolve(account.accountId, provider, p.model);
    const image = await sampleImage();
    const started = performance.now();
    const result = await asked(() =>
      client.analyze({ images: [{ data: image, contentType: 'image/png' }], mode: 'simple', prompt: SAMPLE_PROMPT, model, upstream }),
    );
    return { text: result.text, model: result.model, seconds: Math.round(performance.now() - started) / 1000 };
  }

  /**
   * What an analysis with the account's own key runs on: a client with the stored key, the
   * model (the one asked for, else the stored default; chooseModel) and OpenRouter's stored
   * upstream. Otherwise the spec's error: 412 ai_provider_not_configured, 400
   * ai_model_required or ai_model_not_supported, 503 ai_provider_unavailable.
   */
  async resolve(
    accountId: string,
    provider: OwnAiProvider,
    requestedModel: string | undefined,
  ): Promise<{ client: AiClient; model: string; upstream?: Upstream }> {
    const { apiKey, row } = await this.storedKey(accountId, provider);
    const upstream = row.defaultUpstream ?? undefined;
    const { models } = await asked(() => this.modelsFor(provider, provider === 'openrouter' ? undefined : apiKey, upstream));
    const model = chooseModel(provider, requestedModel ?? row.defaultModel, models);
    return { client: this.deps.clientFor(provider, apiKey), model, ...(upstream ? { upstream } : {}) };
  }

  async removeKey(p: { accountId: string; provider: OwnAiProvider }): Promise<{ removed: boolean }> {
    return { removed: await this.deps.keys.remove(p.accountId, p.provider) };
  }

  verifiedProviders(accountId: string): Promise<OwnAiProvider[]> {
    return this.deps.keys.verifiedProviders(accountId);
  }
}
