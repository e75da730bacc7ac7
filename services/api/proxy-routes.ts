/**
 * The own proxy endpoints (spec, "Own proxies"): store (with a connection test), list, test
 * again and remove an account's proxies. The proxy service owns them and applies the plan
 * and addon gates where a proxy is stored or tested; listing and removing are open to every
 * account. PUT /proxies is the only endpoint that receives a proxy password, and none
 * returns one.
 */
import { Type } from '@sinclair/typebox';
import { PROXY_RECORD_SCHEMA, PROXY_TEST_RESULT_SCHEMA, STORED_PROXY_RECORD_SCHEMA, TESTED_PROXY_SCHEMA } from '../proxy/public/proxy-record';
import { call } from '../shared/contracts';
import { serviceError } from '../shared/errors';
import { ok, type RouteContext, type RouteDef, route } from './http';
import { KEY_ONLY_PARAMS, objectParams, type ParamShape } from './request-schemas';

type ValuesOf<S> = S extends ParamShape<infer P> ? P : never;

const PUT_PARAMS = objectParams(
  Type.Object(
    {
      id: Type.Optional(Type.Integer({ minimum: 1, description: 'The proxy to update.' })),
      protocol: Type.Optional(Type.String({ maxLength: 16, description: 'http (default), https or socks5.' })),
      host: Type.Optional(Type.String({ maxLength: 253, description: 'Host name or IPv4 address; required for a new proxy.' })),
      port: Type.Optional(Type.Integer({ description: '1 to 65535; default 8080 (http), 443 (https), 1080 (socks5).' })),
      username: Type.Optional(Type.String({ maxLength: 255, description: 'Needs a password.' })),
      password: Type.Optional(Type.String({ maxLength: 1000, description: 'Stored encrypted, never returned; left out on update, the stored one is kept.' })),
      test: Type.Optional(Type.Boolean({ description: 'false skips the connection test.' })),
    },
    { additionalProperties: false },
  ),
  { codes: { protocol: 'invalid_proxy', host: 'invalid_proxy', port: 'invalid_proxy', username: 'invalid_proxy' }, secret: 'password' },
);

function idOf(ctx: RouteContext): number {
  const raw = ctx.path.id ?? '';
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw serviceError('not_found', `No proxy "${raw}" in this account.`);
  return Number(raw);
}

async function putProxy(ctx: RouteContext<ValuesOf<typeof PUT_PARAMS>>) {
  const { test, ...input } = ctx.params;
  const { proxy, result } = await call(ctx.broker, 'proxy.put', { account: ctx.account, input, test: test !== false });
  return { success: true, proxy, result };
}

async function listProxies({ broker, account }: RouteContext) {
  const proxies = await call(broker, 'proxy.list', { accountId: account.accountId });
  return { success: true, bring_your_own_proxy_enabled: account.plan.paid && Boolean(account.addons.byo_proxy), has_paid_plan: account.plan.paid, proxies };
}

async function testProxy(ctx: RouteContext) {
  const { proxy, result } = await call(ctx.broker, 'proxy.test', { account: ctx.account, id: idOf(ctx) });
  return {
    success: true,
    proxy: { id: proxy.id, label: proxy.label, verified: proxy.verified, exit_ip: proxy.exit_ip, last_test_ms: proxy.last_test_ms },
    result,
  };
}

async function removeProxy(ctx: RouteContext) {
  const id = idOf(ctx);
  const { removed } = await call(ctx.broker, 'proxy.remove', { accountId: ctx.account.accountId, id });
  if (!removed) throw serviceError('not_found', `No proxy ${id} in this account.`);
  return {
    success: true,
    note:
      `Proxy ${id} was removed. Captures and configurations that use custom_proxy_id=${id} now fail with custom_proxy_not_found; they never fall back ` +
      `to going out directly.`,
  };
}

const TEST_FAILURES = ['proxy_auth_failed', 'proxy_connection_failed', 'proxy_host_not_found', 'proxy_timeout'] as const;
const GATES = ['byo_proxy_plan_required', 'byo_proxy_addon_required'] as const;

export const PROXY_ROUTES: RouteDef[] = [
  route({
    method: 'PUT',
    url: '/proxies',
    summary: 'Store (or update, with id) a proxy; it is tested at once unless test=false.',
    tag: 'proxies',
    params: PUT_PARAMS,
    response: ok({ proxy: STORED_PROXY_RECORD_SCHEMA, result: Type.Union([PROXY_TEST_RESULT_SCHEMA, Type.Null()]) }),
    errors: ['invalid_parameter', 'invalid_proxy', 'not_found', ...GATES, ...TEST_FAILURES, 'secrets_not_configured', 'secret_unreadable'],
    handler: putProxy,
  }),
  route({
    method: 'GET',
    url: '/proxies',
    summary: "The account's proxies (never their passwords).",
    tag: 'proxies',
    params: KEY_ONLY_PARAMS,
    response: ok({ bring_your_own_proxy_enabled: Type.Boolean(), has_paid_plan: Type.Boolean(), proxies: Type.Array(PROXY_RECORD_SCHEMA) }),
    errors: ['invalid_parameter'],
    handler: listProxies,
  }),
  route({
    method: 'POST',
    url: '/proxies/:id/test',
    summary: 'Tests a stored proxy again (exit IP and time recorded).',
    tag: 'proxies',
    params: KEY_ONLY_PARAMS,
    response: ok({ proxy: TESTED_PROXY_SCHEMA, result: PROXY_TEST_RESULT_SCHEMA }),
    errors: ['not_found', 'invalid_proxy', ...GATES, ...TEST_FAILURES, 'secret_unreadable'],
    handler: testProxy,
  }),
  route({
    method: 'DELETE',
    url: '/proxies/:id',
    summary: 'Removes a stored proxy.',
    tag: 'proxies',
    params: KEY_ONLY_PARAMS,
    response: ok({ note: Type.String() }),
    errors: ['not_found'],
    handler: removeProxy,
  }),
];
