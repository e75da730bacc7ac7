/**
 * ai: owns ai_providers (accounts' own provider keys, sealed under SECRETS_KEY) and the model
 * cache. Wiring only: the own-provider endpoints' logic is in own-providers.ts, the rules in
 * policy.ts, the table in provider-keys.ts, the provider clients in providers/.
 * Analysis of captures is in analysis.ts: ai.check before any credit, ai.analyze after the capture.
 */
import type { ServiceSchema } from 'moleculer';
import type { Config } from '../shared/config';
import type { Handler, OwnAiProvider } from '../shared/contracts';
import { acquireDatabase, releaseDatabase } from '../shared/database';
import { SecretBox } from '../shared/secrets';
import type { ServiceUnit } from '../shared/service-unit';
import { type FileStore, createFileStore } from '../shared/storage';
import { CaptureAnalysis } from './analysis';
import { AiMetrics } from './metrics';
import { ModelCache } from './model-cache';
import { OwnProviders } from './own-providers';
import { ProviderKeyRepository } from './provider-keys';
import { type AiClient, createAiClient } from './providers';

export interface AiDeps {
  config: Readonly<Config>;
  now?: () => Date;
  /** Injected for tests; defaults to createFileStore(config). */
  store?: FileStore;
}

export function aiService(deps: AiDeps): ServiceUnit {
  const { config } = deps;
  let own: OwnProviders;
  let analysis: CaptureAnalysis;
  let store: FileStore;
  const metrics = new AiMetrics();
  const clientFor = (provider: OwnAiProvider, apiKey?: string): AiClient =>
    createAiClient(provider, { apiKey, baseUrl: config.ai.baseUrls[provider] ?? undefined, timeoutMs: config.ai.timeoutMs });

  // Actions that call a provider: its own bound (AI_TIMEOUT_MS, retries included) plus room
  // for the rest, above the broker's short default.
  const providerCallMs = config.ai.timeoutMs + 15_000;
  const schema: ServiceSchema = {
    name: 'ai',
    actions: {
      verifiedProviders: { handler: ((ctx) => own.verifiedProviders(ctx.params.accountId)) as Handler<'ai.verifiedProviders'> },
      putKey: { timeout: providerCallMs, handler: ((ctx) => own.putKey(ctx.params)) as Handler<'ai.putKey'> },
      listProviders: { handler: ((ctx) => own.listProviders(ctx.params.accountId)) as Handler<'ai.listProviders'> },
      listModels: { timeout: providerCallMs, handler: ((ctx) => own.listModels(ctx.params)) as Handler<'ai.listModels'> },
      testProvider: { timeout: providerCallMs, handler: ((ctx) => own.testProvider(ctx.params)) as Handler<'ai.testProvider'> },
      removeKey: { handler: ((ctx) => own.removeKey(ctx.params)) as Handler<'ai.removeKey'> },
      check: { timeout: providerCallMs, handler: ((ctx) => analysis.check(ctx.params.accountId, ctx.params.options)) as Handler<'ai.check'> },
      analyze: { timeout: providerCallMs, handler: ((ctx) => analysis.analyze(ctx.params.accountId, ctx.params.options, ctx.params.image)) as Handler<'ai.analyze'> },
      metrics: { handler: (() => metrics.snapshot()) as Handler<'ai.metrics'> },
    },
    created() {
      const secrets = new SecretBox(config);
      own = new OwnProviders({
        keys: new ProviderKeyRepository(acquireDatabase(config.database)),
        secrets,
        models: new ModelCache(deps.now),
        clientFor,
        now: deps.now,
      });
      store = deps.store ?? createFileStore(config);
      const service = config.ai.service;
      analysis = new CaptureAnalysis({
        own,
        service: service
          ? { client: createAiClient(service.provider, { apiKey: service.apiKey ?? undefined, baseUrl: service.baseUrl ?? undefined, timeoutMs: config.ai.timeoutMs }), model: service.model }
          : null,
        store,
        logError: (message, err) => this.logger.error(message, err),
        observer: metrics,
      });
      if (!secrets.configured) this.logger.warn('SECRETS_KEY is not set: own AI provider keys cannot be stored until it is (PUT /ai/providers answers 503 secrets_not_configured).');
    },
    async stopped() {
      await store.close();
      await releaseDatabase(config.database);
    },
  };
  return { schema, handle: {} };
}
