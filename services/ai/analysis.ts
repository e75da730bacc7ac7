/**
 * AI analysis of captures (DESIGN section 3): the checks made before any credit is used or
 * any screenshot taken (ai.check), and the analysis of a stored capture (ai.analyze), which
 * reads the image from storage, never through the transporter.
 *
 * An analysis never fails its capture: whatever goes wrong once the capture exists (the key
 * removed meanwhile, the provider down, slow or rate-limiting, an answer that does not match
 * the fields) becomes `ai_analyzed: false` with `ai_error`, and the caller refunds the AI
 * credit it reserved.
 */
import sharp from 'sharp';
import type { AiProvider, AiRecord, StoredImage } from '../shared/contracts';
import { analysedRecord, failedRecord, providerOf } from './public/ai-record';
import { failureOf, serviceError } from '../shared/errors';
import type { AnalysisOptions } from '../shared/screenshot-options';
import type { FileStore } from '../shared/storage';
import { checkStructuredFields } from './structured-fields';
import type { OwnProviders } from './own-providers';
import { analysisRequestOf } from './policy';
import type { AnalysisObserver } from './metrics';
import { type AiClient, AiFailure, type ImageContentType, type Upstream } from './providers';

export interface CaptureAnalysisDeps {
  own: Pick<OwnProviders, 'resolve'>;
  /** The operator's backend for ai_provider=service (SERVICE_AI_*); null when none is configured. */
  service: { client: AiClient; model: string } | null;
  store: Pick<FileStore, 'get'>;
  /** Told of failures that are ours (not the provider's), which the record words generically. */
  logError?: (message: string, err: unknown) => void;
  /** Told of every analysis' outcome (metrics.ts). */
  observer?: AnalysisObserver;
}

/** What one analysis runs on. `reportedModel` is null for the service's own AI (the spec hides it). */
export interface Target {
  provider: AiProvider;
  client: AiClient;
  model: string;
  reportedModel: string | null;
  upstream?: Upstream;
}

/**
 * Providers' image limits: Anthropic refuses a side over 8000 px and an image over 5 MB of
 * base64 (3.75 MB of bytes); OpenAI and OpenRouter's upstreams accept more. A capture over
 * them (a full page of 16 000 px) is scaled down to fit, as JPEG; models look at images far
 * smaller than this anyway (Anthropic scales to 1568 px on the long side).
 */
export const IMAGE_LIMITS = { side: 7_680, bytes: 3_500_000 } as const;

const RASTER_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/webp'];

/**
 * The image as the providers accept it: unchanged when it fits IMAGE_LIMITS, else scaled into
 * them. A GIF becomes a PNG of its first frame: not every provider takes an animated one.
 */
export async function fitImage(data: Buffer, contentType: ImageContentType): Promise<{ data: Buffer; contentType: ImageContentType }> {
  if (contentType === 'image/gif') return fitImage(await sharp(data).png().toBuffer(), 'image/png');
  const { width = 0, height = 0 } = await sharp(data).metadata();
  if (width <= IMAGE_LIMITS.side && height <= IMAGE_LIMITS.side && data.length <= IMAGE_LIMITS.bytes) return { data, contentType };
  let side: number = IMAGE_LIMITS.side;
  for (;;) {
    const scaled = await sharp(data, { ignoreIcc: true })
      .resize({ width: side, height: side, fit: 'inside', withoutEnlargement: true })
      .jpeg({ quality: 80 })
      .toBuffer();
    if (scaled.length <= IMAGE_LIMITS.bytes || side <= 1_000) return { data: scaled, contentType: 'image/jpeg' };
    side = Math.floor(side * 0.7);
  }
}

export class CaptureAnalysis {
  constructor(private readonly deps: CaptureAnalysisDeps) {}

  /** The spec's checks, in its order: provider configured, model, structured fields. */
  async check(accountId: string, options: AnalysisOptions): Promise<{ provider: AiProvider; model: string | null }> {
    const target = await targetOf(this.deps, accountId, options);
    checkStructuredFields(options);
    return { provider: target.provider, model: target.reportedModel };
  }

  /** Analyses the stored image; a failure is recorded in the answer, never thrown. */
  async analyze(accountId: string, options: AnalysisOptions, image: StoredImage): Promise<AiRecord> {
    let target: Target | null = null;
    try {
      target = await targetOf(this.deps, accountId, options);
      const fitted = await storedImage(this.deps.store, image);
      const result = await target.client.analyze({
        images: [fitted],
        model: target.model,
        ...(target.upstream ? { upstream: target.upstream } : {}),
        ...analysisRequestOf(options),
      });
      this.deps.observer?.analysed(providerOf(options), null);
      return analysedRecord(options, target.model, result);
    } catch (err) {
      const error = errorOf(err, providerOf(options));
      this.deps.observer?.analysed(providerOf(options), error.error_code);
      if (error.error_code === 'internal_error') this.deps.logError?.('an analysis failed', err);
      return failedRecord(options, target?.model ?? options.ai_model ?? null, error);
    }
  }
}

/** A stored capture's image, as the providers accept it (fitImage). */
export async function storedImage(store: Pick<FileStore, 'get'>, image: StoredImage): Promise<{ data: Buffer; contentType: ImageContentType }> {
  const file = await store.get(image.name);
  if (!file || !RASTER_TYPES.includes(file.contentType)) {
    throw serviceError('internal_error', 'The captured image could not be read for the analysis.');
  }
  return fitImage(file.data, file.contentType as ImageContentType);
}

/**
 * What an analysis with these options runs on: the operator's backend for ai_provider=service
 * (503 ai_service_not_configured without one), else the account's own key and model
 * (OwnProviders.resolve, with the spec's errors).
 */
export async function targetOf(deps: Pick<CaptureAnalysisDeps, 'own' | 'service'>, accountId: string, options: AnalysisOptions): Promise<Target> {
  const provider = providerOf(options);
  if (provider === 'service') {
    const service = deps.service;
    if (!service) {
      throw serviceError(
        'ai_service_not_configured',
        "This server's operator has not configured its own AI backend (SERVICE_AI_PROVIDER), so ai_provider=service cannot analyse. Use your own provider " +
          'key (ai_provider=anthropic, openai or openrouter), or send the request without an analysis.',
      );
    }
    return { provider, client: service.client, model: service.model, reportedModel: null };
  }
  const own = await deps.own.resolve(accountId, provider, options.ai_model);
  return { provider, ...own, reportedModel: own.model };
}

/**
 * The ai_error of a failed analysis: a provider failure's code and note, or a domain error's.
 * The service's own backend is the operator's: its key or billing is not the caller's to fix.
 */
export function errorOf(err: unknown, provider: AiProvider): { error_code: string; note: string } {
  if (err instanceof AiFailure) {
    if (provider === 'service' && (err.code === 'ai_provider_key_rejected' || err.code === 'ai_provider_billing')) {
      return {
        error_code: err.code,
        note:
          "This server's AI backend refused the analysis (its operator's key or billing); the capture is kept and the AI credit was not spent. Retry " +
          'later, or use your own provider key.',
      };
    }
    return { error_code: err.code, note: err.note };
  }
  const failure = failureOf(err);
  return {
    error_code: failure.code,
    note: failure.known ? failure.note : 'The analysis failed on our side; it was logged. The capture is kept and the AI credit was not spent.',
  };
}
