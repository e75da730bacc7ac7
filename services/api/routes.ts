/**
 * The account endpoints. Each route declares its params shape (validated by http.ts before
 * the handler), then calls the owning services through typed actions; the route table also
 * produces /openapi.json.
 */
import { type Static, Type } from '@sinclair/typebox';
import { call } from '../shared/contracts';
import { ownAiEnabled } from '../billing/public/plan-gates';
import { DEVICE_RECORD_SCHEMA, DEVICES } from '../shared/devices';
import { ok, type RouteContext, type RouteDef, route } from './http';
import { KEY_ONLY_PARAMS } from './request-schemas';

const ACCOUNT_LIMITS_SCHEMA = Type.Object({
  success: Type.Boolean(),
  results: Type.Object({
    screenshot_limit: Type.Integer(),
    screenshot_current_month_usage: Type.Integer(),
    real_location_bandwidth_limit_in_bytes: Type.Integer(),
    real_location_bandwidth_current_month_usage_in_bytes: Type.Integer(),
    ai_analysis_requests_limit: Type.Integer(),
    ai_analysis_requests_current_month_usage: Type.Integer(),
    domain_research_limit: Type.Integer({ description: 'Domains of domain research allowed per month (one credit each).' }),
    domain_research_current_month_usage: Type.Integer({ description: 'Domains researched (or under way) this month.' }),
    bring_your_own_ai_enabled: Type.Boolean(),
    bring_your_own_ai_providers: Type.Array(Type.String()),
    bring_your_own_proxy_enabled: Type.Boolean(),
    bring_your_own_proxies: Type.Array(Type.Object({ id: Type.Integer(), label: Type.String(), verified: Type.Boolean() })),
  }),
});

/** The exact shape of GET /account_limits. */
type AccountLimitsAnswer = Static<typeof ACCOUNT_LIMITS_SCHEMA>;

/** GET /account_limits: billing's counters with the ai and proxy services' lists. */
async function accountLimits({ broker, account }: RouteContext): Promise<AccountLimitsAnswer> {
  const [{ limits, usage }, providers, proxies] = await Promise.all([
    call(broker, 'billing.usage', { account }),
    call(broker, 'ai.verifiedProviders', { accountId: account.accountId }),
    call(broker, 'proxy.summaries', { accountId: account.accountId }),
  ]);
  return {
    success: true,
    results: {
      screenshot_limit: limits.screenshots,
      screenshot_current_month_usage: usage.screenshots,
      real_location_bandwidth_limit_in_bytes: limits.bandwidth_bytes,
      real_location_bandwidth_current_month_usage_in_bytes: usage.bandwidth_bytes,
      ai_analysis_requests_limit: limits.ai_credits,
      ai_analysis_requests_current_month_usage: usage.ai_credits,
      domain_research_limit: limits.research_domains,
      domain_research_current_month_usage: usage.research_domains,
      bring_your_own_ai_enabled: ownAiEnabled(account),
      bring_your_own_ai_providers: providers,
      bring_your_own_proxy_enabled: account.plan.paid && Boolean(account.addons.byo_proxy),
      bring_your_own_proxies: proxies,
    },
  };
}

export const ACCOUNT_ROUTES: RouteDef[] = [
  route({
    method: 'GET',
    url: '/real_locations',
    summary: 'The values real_location accepts (countries, US states, cities, regions), sorted.',
    tag: 'account',
    params: KEY_ONLY_PARAMS,
    response: Type.Object({ success: Type.Boolean(), results: Type.Array(Type.String()) }),
    errors: ['invalid_parameter'],
    handler: async ({ broker }) => ({ success: true, results: await call(broker, 'proxy.realLocations', {}) }),
  }),
  route({
    method: 'GET',
    url: '/devices',
    summary: 'The device presets the device option accepts: viewport, scale factor, user agent, client hints, touch and mobile of each.',
    tag: 'account',
    params: KEY_ONLY_PARAMS,
    response: ok({ count: Type.Integer(), devices: Type.Array(DEVICE_RECORD_SCHEMA) }),
    errors: ['invalid_parameter'],
    handler: async () => ({ success: true, count: DEVICES.length, devices: [...DEVICES] }),
  }),
  route({
    method: 'GET',
    url: '/account_limits',
    summary: "This month's usage and limits of the account.",
    tag: 'account',
    params: KEY_ONLY_PARAMS,
    response: ACCOUNT_LIMITS_SCHEMA,
    errors: ['invalid_parameter'],
    handler: accountLimits,
  }),
];
