/**
 * POST /ai/analyze: up to five prompts about up to five images from anywhere, answered in one
 * provider request that carries every image (numbered, in the order given) and every prompt,
 * with a structured answer holding one text per prompt. One request rather than one per
 * prompt: the images, most of the tokens, are sent once.
 *
 * The order of work: the provider and model (as for a capture), every image's host resolved
 * and checked, then the AI credits (one per prompt, for the service's own AI) reserved, then
 * the images fetched and checked, then the provider asked. Whatever fails after the
 * reservation gives the credits back: a bad image is the caller's error (the note names it),
 * a provider failure the provider's (503 or 502, as on the provider endpoints).
 */
import type { AccountContext, AiProvider, ImageAnalysisAnswer } from '../shared/contracts';
import { providerOf } from './public/ai-record';
import { serviceError } from '../shared/errors';
import type { AnalysisOptions } from '../shared/screenshot-options';
import { fitImage, type Target } from './analysis';
import type { ImageSource } from './image-fetch';
import type { AnalysisObserver } from './metrics';
import { httpErrorOf } from './policy';
import { AiFailure, type AnalysisTask } from './providers';

export interface ImageAnalysisRequest {
  account: AccountContext;
  /** ai_provider and ai_model, as on a capture. */
  options: AnalysisOptions;
  urls: string[];
  prompts: string[];
}

export interface ImageAnalysisDeps {
  targets(accountId: string, options: AnalysisOptions): Promise<Target>;
  images: Pick<ImageSource, 'admitAll' | 'fetch'>;
  /** Runs `work` with `amount` AI credits reserved: committed when it returns, refunded when it throws. */
  withAiCredits<T>(account: AccountContext, amount: number, work: () => Promise<T>): Promise<T>;
  observer?: AnalysisObserver;
}

const answerKey = (i: number) => `answer_${i + 1}`;

/** The wording and answer schema of `prompts` about `imageCount` numbered images. */
export function promptsTask(prompts: readonly string[], imageCount: number): AnalysisTask {
  const keys = prompts.map((_, i) => answerKey(i));
  return {
    system:
      `You answer prompts about images. You are given ${imageCount} numbered image${imageCount > 1 ? 's' : ''} and ${prompts.length} numbered ` +
      `prompt${prompts.length > 1 ? 's' : ''}. ` +
      'Answer each prompt on its own, in the answer field of the same number; a prompt may refer to any of the images, by its number or by what it shows. ' +
      'Answer from what the images show, in the language of the prompt.',
    text: prompts.map((p, i) => `Prompt ${i + 1}:\n${p}`).join('\n\n'),
    schema: {
      type: 'object',
      properties: Object.fromEntries(keys.map((k, i) => [k, { type: 'string', description: `The answer to prompt ${i + 1}.` }])),
      required: keys,
      additionalProperties: false,
    },
    check(answer) {
      const a = (answer && typeof answer === 'object' && !Array.isArray(answer) ? answer : {}) as Record<string, unknown>;
      const bad = keys.findIndex((k) => typeof a[k] !== 'string' || (a[k] as string).trim() === '');
      if (bad >= 0) {
        throw new AiFailure(
          'ai_response_invalid',
          `The model's answer has no text for prompt ${bad + 1}. Try again; if it keeps failing, use fewer or clearer prompts, or another model.`,
        );
      }
      return Object.fromEntries(keys.map((k) => [k, (a[k] as string).trim()]));
    },
  };
}

/**
 * The HTTP error a provider failure becomes here, as on the provider endpoints; the service's
 * own backend refusing its key or billing is the operator's problem, never the caller's key.
 */
export function providerFailure(failure: AiFailure, provider: AiProvider): Error {
  if (provider === 'service' && (failure.code === 'ai_provider_key_rejected' || failure.code === 'ai_provider_billing')) {
    return serviceError(
      'ai_provider_error',
      "This server's AI backend refused the request (its operator's key or billing); no AI credit was spent. Retry later, or use your own provider key.",
    );
  }
  return httpErrorOf(failure);
}

export class ImageAnalysis {
  /** Analyses under way here, by account. */
  private readonly running = new Map<string, number>();

  constructor(private readonly deps: ImageAnalysisDeps) {}

  /**
   * At most the plan's max_concurrent analyses of one account at once on this instance (its
   * images fetched, held and scaled in this process, its provider asked): one account's
   * burst of large or slow images cannot take the memory and threads every account's
   * analyses need. Past it, 429 concurrency_limit_reached, as for captures.
   */
  async analyze(req: ImageAnalysisRequest): Promise<ImageAnalysisAnswer> {
    const id = req.account.accountId;
    const under = this.running.get(id) ?? 0;
    if (under >= req.account.plan.max_concurrent) {
      throw serviceError(
        'concurrency_limit_reached',
        `This account has ${under} image analyses under way, all its plan runs at once (max_concurrent ${req.account.plan.max_concurrent}); send the next when one has answered.`,
        { retryAfter: 1 },
      );
    }
    this.running.set(id, under + 1);
    try {
      return await this.analyzeNow(req);
    } finally {
      const left = (this.running.get(id) ?? 1) - 1;
      if (left > 0) this.running.set(id, left);
      else this.running.delete(id);
    }
  }

  private async analyzeNow(req: ImageAnalysisRequest): Promise<ImageAnalysisAnswer> {
    const { account, options, urls, prompts } = req;
    const provider = providerOf(options);
    const target = await this.deps.targets(account.accountId, options);
    const admitted = await this.deps.images.admitAll(urls);
    const credits = provider === 'service' ? prompts.length : 0;
    return this.deps.withAiCredits(account, credits, async () => {
      const images = await Promise.all(admitted.map((a) => this.deps.images.fetch(a)));
      const sent = await Promise.all(images.map(async (image, i) => ({ ...(await fitImage(image.data, image.contentType)), label: `Image ${i + 1}:` })));
      let answers: Record<string, unknown>;
      try {
        const result = await target.client.analyze({
          images: sent,
          task: promptsTask(prompts, sent.length),
          mode: 'simple',
          model: target.model,
          ...(target.upstream ? { upstream: target.upstream } : {}),
        });
        answers = result.structured ?? {};
      } catch (err) {
        if (!(err instanceof AiFailure)) throw err;
        this.deps.observer?.analysed(provider, err.code);
        throw providerFailure(err, provider);
      }
      this.deps.observer?.analysed(provider, null);
      return {
        ai_provider: provider,
        ai_model: target.reportedModel,
        images: images.map((image, i) => ({
          url: urls[i] ?? '',
          content_type: image.contentType,
          width: image.width,
          height: image.height,
          bytes: image.data.length,
        })),
        results: prompts.map((prompt, i) => ({ prompt, ai_response: String(answers[answerKey(i)] ?? '') })),
        ai_credits_used: credits,
      };
    });
  }
}
