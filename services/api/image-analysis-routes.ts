/**
 * POST /ai/analyze (the official MCP server's analyze_any_image_with_ai): prompts about images
 * from anywhere. Here, before anything is reserved or fetched, the parameters (counts, lengths,
 * URLs), then the one admission every spending request runs, in its order (spend-admission.ts):
 * image URLs that name a refused address literally, the plan gates for an own provider, the
 * provider and model (ai.check). The ai service does the rest (image-analysis.ts): each host
 * resolved and checked, the credits, the fetch, the provider.
 */
import { type Static, Type } from '@sinclair/typebox';
import { IMAGE_ANALYSIS_LIMITS, IMAGE_ANALYSIS_SCHEMA, call } from '../shared/contracts';
import type { Config } from '../shared/config';
import type { TargetPolicy } from '../shared/address-policy';
import { serviceError } from '../shared/errors';
import { AI_PROVIDERS, type AnalysisOptions, textEnum } from '../shared/screenshot-options';
import { type RouteContext, type RouteDef, route } from './http';
import { admission } from './spend-admission';
import { objectParams, type ParamShape, withLists } from './request-schemas';

const { images: MAX_IMAGES, prompts: MAX_PROMPTS, promptLength: MAX_PROMPT_LENGTH } = IMAGE_ANALYSIS_LIMITS;

const ANALYZE_SCHEMA = Type.Object(
  {
    urls: Type.Array(Type.String({ format: 'http-url', maxLength: 2048 }), {
      minItems: 1,
      maxItems: MAX_IMAGES,
      description: `1 to ${MAX_IMAGES} image URLs (PNG, JPEG, WebP or GIF, at most 20 MB each), shown to the model as Image 1, Image 2, ... in this order.`,
    }),
    prompts: Type.Array(Type.String({ minLength: 1, maxLength: MAX_PROMPT_LENGTH }), {
      minItems: 1,
      maxItems: MAX_PROMPTS,
      description:
        `1 to ${MAX_PROMPTS} prompts of up to ${MAX_PROMPT_LENGTH} characters, each answered on its own; any may refer to any image. One AI ` +
        `credit each with ai_provider=service.`,
    }),
    ai_provider: Type.Optional(
      textEnum(AI_PROVIDERS, { description: 'service (AI credits, the default), or anthropic, openai, openrouter with your own key.' }),
    ),
    ai_model: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Model id for an own provider; ignored for service.' })),
  },
  { additionalProperties: false },
);
type AnalyzeParams = Static<typeof ANALYZE_SCHEMA>;

const object = objectParams(ANALYZE_SCHEMA, { codes: { ai_provider: 'ai_provider_unsupported' } });

/** urls and prompts also as JSON text or a single value (GET and forms); a blank prompt is refused. */
export const ANALYZE_PARAMS: ParamShape<AnalyzeParams> = {
  schema: ANALYZE_SCHEMA,
  parse(raw) {
    const values = object.parse(withLists(raw, ['urls', 'prompts']));
    const blank = values.prompts.findIndex((p) => p.trim() === '');
    if (blank >= 0) throw serviceError('invalid_parameter', `prompts[${blank}]: must not be blank; write what the model should answer.`, { param: 'prompts' });
    return values;
  },
};

/** What an image analysis can name and spend: an own provider, AI credits (reserved by the ai service). */
const ANALYZE_ADMISSION = admission({ features: ['ownAi'], structuredFields: false, route: false, schedule: false, credits: ['ai_credits'] });

async function analyzeImages(ctx: RouteContext<AnalyzeParams>, policy: TargetPolicy, timeoutMs: number) {
  const { urls, prompts, ai_provider, ai_model } = ctx.params;
  const options: AnalysisOptions = { analyze_image_with_ai: true, ...(ai_provider ? { ai_provider } : {}), ...(ai_model ? { ai_model } : {}) };
  const targets = urls.map((u, i) => [`urls[${i}]`, u] as const);
  await ANALYZE_ADMISSION.admit({ broker: ctx.broker, account: ctx.account, policy, given: options, targets });
  const answer = await call(ctx.broker, 'ai.analyzeImages', { account: ctx.account, options, urls, prompts }, { timeout: timeoutMs });
  return { success: true, ...answer };
}

export function imageAnalysisRoutes(policy: TargetPolicy, config: Pick<Config, 'ai'>): RouteDef[] {
  // The ai service's own bounds (an image fetch, a provider call) plus room, above the broker's default.
  const timeoutMs = config.ai.timeoutMs + config.ai.imageTimeoutMs + 20_000;
  return [
    route({
      method: 'POST',
      url: '/ai/analyze',
      summary: 'Prompts about up to 5 images from anywhere, answered together: one answer per prompt (docs/ai.md).',
      tag: 'ai analysis',
      params: ANALYZE_PARAMS,
      response: Type.Object({ success: Type.Boolean(), ...IMAGE_ANALYSIS_SCHEMA.properties }),
      errors: [
        'invalid_parameter',
        'ai_provider_unsupported',
        ...ANALYZE_ADMISSION.errors,
        'image_unreachable',
        'image_too_large',
        'image_not_supported',
        'ai_provider_key_rejected',
        'ai_provider_error',
        'concurrency_limit_reached',
      ],
      handler: (ctx) => analyzeImages(ctx, policy, timeoutMs),
    }),
  ];
}
