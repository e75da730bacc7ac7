/**
 * The own AI provider endpoints (spec, "Own AI providers"): store, list, test and remove an
 * account's provider keys, and list a provider's compatible models. The ai service owns the
 * keys and applies the plan and addon gates where a key is stored or used (PUT, test);
 * listing providers and models and removing a key are open to every account, so an account
 * can see what it would get and can always take its key back.
 */
import { Type } from '@sinclair/typebox';
import { call, MODEL_RECORD_SCHEMA, OWN_AI_PROVIDERS, type OwnAiProvider, PROVIDER_RECORD_SCHEMA, UPSTREAMS } from '../shared/contracts';
import { serviceError } from '../shared/errors';
import { ownAiEnabled } from '../billing/public/plan-gates';
import { PATTERN_RULE, textEnum } from '../shared/screenshot-options';
import { ok, type RouteContext, type RouteDef, route } from './http';
import { KEY_ONLY_PARAMS, objectParams, type ParamShape } from './request-schemas';

/** The values a shape's parse gives its handler. */
type ValuesOf<S> = S extends ParamShape<infer P> ? P : never;

const MODEL_ID = Type.String({ minLength: 1, maxLength: 200 });

const PUT_KEY_PARAMS = objectParams(
  Type.Object(
    {
      api_key: Type.String({
        minLength: 1,
        maxLength: 1000,
        // Keys are printable ASCII; anything else (a control character, a space, a smart quote
        // pasted with it) cannot go in the Authorization header, so it is refused here, not at
        // the provider's answer.
        pattern: '^[\\x21-\\x7E]+$',
        [PATTERN_RULE]: 'an API key as the provider shows it: letters, digits and punctuation, without spaces, control characters or other characters',
        description: "The provider's API key: verified with the provider at once, stored encrypted, never returned.",
      }),
      default_model: Type.Optional({ ...MODEL_ID, description: 'Model for requests that name none; must be in the compatible list.' }),
      default_upstream: Type.Optional(textEnum(UPSTREAMS, { description: 'OpenRouter only: auto (default), anthropic, openai, google, meta.' })),
    },
    { additionalProperties: false },
  ),
  { secret: 'api_key' },
);

const MODELS_PARAMS = objectParams(
  Type.Object(
    {
      provider: textEnum(OWN_AI_PROVIDERS, { description: 'anthropic, openai or openrouter.' }),
      upstream: Type.Optional(textEnum(UPSTREAMS, { description: "OpenRouter only: keep one vendor's models (auto: all)." })),
    },
    { additionalProperties: false },
  ),
  { codes: { provider: 'ai_provider_unsupported' } },
);

const TEST_PARAMS = objectParams(
  Type.Object({ model: Type.Optional({ ...MODEL_ID, description: 'Model to test; default: the stored default_model.' }) }, { additionalProperties: false }),
);

/** The `:provider` of the path, or 400 ai_provider_unsupported. */
function providerOf(ctx: RouteContext): OwnAiProvider {
  const name = ctx.path.provider ?? '';
  if (!(OWN_AI_PROVIDERS as readonly string[]).includes(name)) {
    throw serviceError('ai_provider_unsupported', `There is no provider "${name}"; own keys are for ${OWN_AI_PROVIDERS.join(', ')}.`, { param: 'provider' });
  }
  return name as OwnAiProvider;
}

async function putKey(ctx: RouteContext<ValuesOf<typeof PUT_KEY_PARAMS>>) {
  const { api_key, default_model, default_upstream } = ctx.params;
  const provider = await call(ctx.broker, 'ai.putKey', {
    account: ctx.account,
    provider: providerOf(ctx),
    apiKey: api_key,
    ...(default_model ? { defaultModel: default_model } : {}),
    ...(default_upstream ? { defaultUpstream: default_upstream } : {}),
  });
  return { success: true, provider };
}

async function listProviders({ broker, account }: RouteContext) {
  const providers = await call(broker, 'ai.listProviders', { accountId: account.accountId });
  return { success: true, bring_your_own_ai_enabled: ownAiEnabled(account), has_paid_plan: account.plan.paid, providers };
}

async function listModels(ctx: RouteContext<ValuesOf<typeof MODELS_PARAMS>>) {
  const { provider, upstream } = ctx.params;
  const list = await call(ctx.broker, 'ai.listModels', { accountId: ctx.account.accountId, provider, ...(upstream ? { upstream } : {}) });
  return { success: true, provider: list.provider, upstream: list.upstream, fetched_at: list.fetched_at, count: list.models.length, models: list.models };
}

async function testProvider(ctx: RouteContext<ValuesOf<typeof TEST_PARAMS>>) {
  const result = await call(ctx.broker, 'ai.testProvider', {
    account: ctx.account,
    provider: providerOf(ctx),
    ...(ctx.params.model ? { model: ctx.params.model } : {}),
  });
  return { success: true, result };
}

async function removeKey(ctx: RouteContext) {
  const provider = providerOf(ctx);
  const { removed } = await call(ctx.broker, 'ai.removeKey', { accountId: ctx.account.accountId, provider });
  const note = removed
    ? `The ${provider} key was removed. Captures and configurations that use ai_provider=${provider} now fail with ai_provider_not_configured until a key ` +
      `is stored again; they never fall back to AI credits.`
    : `No ${provider} key was stored; nothing changed.`;
  return { success: true, note };
}

const PROVIDER_ERRORS = ['invalid_parameter', 'ai_provider_unsupported'] as const;
const GATES = ['byok_plan_required', 'byok_addon_required'] as const;
const UPSTREAM_FAILURES = ['ai_provider_key_rejected', 'ai_provider_unavailable', 'ai_provider_error'] as const;

export const AI_ROUTES: RouteDef[] = [
  route({
    method: 'PUT',
    url: '/ai/providers/:provider',
    summary: 'Store (or replace) a provider key; it is verified with the provider at once.',
    tag: 'ai providers',
    params: PUT_KEY_PARAMS,
    response: ok({ provider: PROVIDER_RECORD_SCHEMA }),
    errors: [...PROVIDER_ERRORS, ...GATES, ...UPSTREAM_FAILURES, 'ai_model_not_supported', 'secrets_not_configured'],
    handler: putKey,
  }),
  route({
    method: 'GET',
    url: '/ai/providers',
    summary: 'The three providers, each as the account has it, and whether own keys may be used.',
    tag: 'ai providers',
    params: KEY_ONLY_PARAMS,
    response: ok({ bring_your_own_ai_enabled: Type.Boolean(), has_paid_plan: Type.Boolean(), providers: Type.Array(PROVIDER_RECORD_SCHEMA) }),
    errors: ['invalid_parameter'],
    handler: listProviders,
  }),
  route({
    method: 'GET',
    url: '/ai/models',
    summary: "A provider's vision models with structured outputs (cached ten minutes). Anthropic and OpenAI need a stored key.",
    tag: 'ai providers',
    params: MODELS_PARAMS,
    response: ok({
      provider: textEnum(OWN_AI_PROVIDERS),
      upstream: Type.Union([textEnum(UPSTREAMS), Type.Null()]),
      fetched_at: Type.String(),
      count: Type.Integer(),
      models: Type.Array(MODEL_RECORD_SCHEMA),
    }),
    errors: [...PROVIDER_ERRORS, 'ai_provider_not_configured', ...UPSTREAM_FAILURES],
    handler: listModels,
  }),
  route({
    method: 'POST',
    url: '/ai/providers/:provider/test',
    summary: 'One real analysis of a sample image with the stored key.',
    tag: 'ai providers',
    params: TEST_PARAMS,
    response: ok({ result: Type.Object({ text: Type.String(), model: Type.String(), seconds: Type.Number() }) }),
    errors: [...PROVIDER_ERRORS, ...GATES, 'ai_provider_not_configured', 'ai_model_required', 'ai_model_not_supported', ...UPSTREAM_FAILURES],
    handler: testProvider,
  }),
  route({
    method: 'DELETE',
    url: '/ai/providers/:provider',
    summary: 'Remove the stored key.',
    tag: 'ai providers',
    params: KEY_ONLY_PARAMS,
    response: ok({ note: Type.String() }),
    errors: [...PROVIDER_ERRORS],
    handler: removeKey,
  }),
];
