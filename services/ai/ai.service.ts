/**
 * ai: owns ai_providers (accounts' own provider keys, sealed under SECRETS_KEY) and the model
 * cache. Wiring only: the own-provider endpoints' logic is in own-providers.ts, the rules in
 * policy.ts, the table in provider-keys.ts, the provider clients in providers/.
 * Analysis of captures is in analysis.ts: ai.check before any credit, ai.analyze after the capture;
 * POST /ai/analyze's analysis of any image in image-analysis.ts, its images fetched by image-fetch.ts;
 * domain research's extraction of fields from a site's pages in research-extraction.ts.
 */
import type { Config } from '../shared/config';
import type { OwnAiProvider } from '../shared/contracts';
import { withCredits } from '../billing/public/credits';
import { defineService, ServiceDatabase } from '../shared/define-service';
import { egressPolicyFor } from '../shared/egress';
import { SecretBox } from '../shared/secrets';
import type { ServiceUnit } from '../shared/service-unit';
import { type FileStore, createFileStore } from '../shared/storage';
import { CaptureAnalysis, targetOf } from './analysis';
import { ImageAnalysis } from './image-analysis';
import { ImageSource } from './image-fetch';
import { AiMetrics } from './metrics';
import { ResearchExtractor } from './research-extraction';
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
  const database = new ServiceDatabase(config.database);
  let own: OwnProviders;
  let analysis: CaptureAnalysis;
  let images: ImageAnalysis;
  let research: ResearchExtractor;
  let store: FileStore;
  const metrics = new AiMetrics();
  const clientFor = (provider: OwnAiProvider, apiKey?: string): AiClient =>
    createAiClient(provider, { apiKey, baseUrl: config.ai.baseUrls[provider] ?? undefined, timeoutMs: config.ai.timeoutMs });

  // Actions that call a provider: its own bound (AI_TIMEOUT_MS, retries included) plus room
  // for the rest, above the broker's short default.
  const providerCallMs = config.ai.timeoutMs + 15_000;
  const schema = defineService('ai', {
    database,
    actions: {
      verifiedProviders: (ctx) => own.verifiedProviders(ctx.params.accountId),
      putKey: { timeout: providerCallMs, handler: (ctx) => own.putKey(ctx.params) },
      listProviders: (ctx) => own.listProviders(ctx.params.accountId),
      listModels: { timeout: providerCallMs, handler: (ctx) => own.listModels(ctx.params) },
      testProvider: { timeout: providerCallMs, handler: (ctx) => own.testProvider(ctx.params) },
      removeKey: (ctx) => own.removeKey(ctx.params),
      check: { timeout: providerCallMs, handler: (ctx) => analysis.check(ctx.params.accountId, ctx.params.options) },
      analyze: { timeout: providerCallMs, handler: (ctx) => analysis.analyze(ctx.params.accountId, ctx.params.options, ctx.params.image) },
      analyzeImages: { timeout: providerCallMs + config.ai.imageTimeoutMs, handler: (ctx) => images.analyze(ctx.params) },
      research: { timeout: providerCallMs, handler: (ctx) => research.extract(ctx.params) },
      metrics: () => metrics.snapshot(),
    },
    created() {
      const secrets = new SecretBox(config);
      own = new OwnProviders({
        keys: new ProviderKeyRepository(database.knex),
        secrets,
        models: new ModelCache(deps.now),
        clientFor,
        now: deps.now,
      });
      store = deps.store ?? createFileStore(config);
      const service = config.ai.service;
      const backends = {
        own,
        service: service
          ? {
              client: createAiClient(service.provider, {
                apiKey: service.apiKey ?? undefined,
                baseUrl: service.baseUrl ?? undefined,
                timeoutMs: config.ai.timeoutMs,
              }),
              model: service.model,
            }
          : null,
      };
      analysis = new CaptureAnalysis({ ...backends, store, logError: (message, err) => this.logger.error(message, err), observer: metrics });
      const policy = egressPolicyFor(config);
      const broker = this.broker;
      images = new ImageAnalysis({
        targets: (accountId, options) => targetOf(backends, accountId, options),
        images: new ImageSource({ admit: (host) => policy.admit(host), timeoutMs: config.ai.imageTimeoutMs, store, cdnUrl: config.cdnUrl }),
        withAiCredits: (account, amount, work) => (amount > 0 ? withCredits(broker, { account, amounts: { ai_credits: amount } }, work) : work()),
        observer: metrics.of('images'),
      });
      research = new ResearchExtractor({
        targets: (accountId, options) => targetOf(backends, accountId, options),
        store,
        logError: (message, err) => this.logger.error(message, err),
        observer: metrics.of('research'),
      });
      if (!secrets.configured)
        this.logger.warn('SECRETS_KEY is not set: own AI provider keys cannot be stored until it is (PUT /ai/providers answers 503 secrets_not_configured).');
    },
    async stopped() {
      await store.close();
    },
  });
  return { schema, handle: {} };
}
