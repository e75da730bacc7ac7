/**
 * The operator view at /console/operator: for the people who run the service, signed in with
 * CONSOLE_OPERATOR_TOKEN (never an account's key), on routes and a cookie of its own. Off (404)
 * while that variable is unset.
 *
 * Its session is a cookie signed with a key derived from the token (HMAC-SHA256 of its expiry
 * and a random nonce; its CSRF token is derived from the nonce), so every api instance knows it
 * without a store, and changing the token ends every operator session at once. The cookie's Path
 * is /console/operator: an account's pages never receive it, and these pages never read an
 * account's session (a request with only an account's session is refused, 403). Sign-in attempts
 * are counted in the same window per client address as the accounts' sign-in (billing.countSignIn).
 */
import crypto from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceBroker } from 'moleculer';
import type { Config } from '../../shared/config';
import { call } from '../../shared/contracts';
import { toEnvelope } from '../../shared/errors';
import { sameSecret } from '../../shared/secrets';
import { inRequestContext } from '../request-log';
import { messagePage } from './layout';
import { type OperatorPageContext, accountsPage, capacityPage, locationsPage, operatorSignInPage } from './pages/operator';
import { SESSION_COOKIE, SIGNIN_COOKIE, cookie, cookiesOf, overTls, postRefusal, setCookie } from './security';

/** The operator session's cookie (Path=/console/operator). */
export const OPERATOR_COOKIE = 'console_operator';
const OPERATOR_PATH = '/console/operator';
const SIGNIN_TOKEN_SECONDS = 3600;

/** The key operator sessions are signed with: derived from the token, never the token itself. */
function keyOf(token: string): Buffer {
  return crypto.createHash('sha256').update(`console-operator-session:${token}`).digest();
}

function mac(key: Buffer, text: string): string {
  return crypto.createHmac('sha256', key).update(text).digest('base64url');
}

/** A new operator session's cookie value, ending `seconds` after `nowMs`. */
export function issueOperatorSession(token: string, nowMs: number, seconds: number): string {
  const expires = Math.floor(nowMs / 1000) + seconds;
  const nonce = crypto.randomBytes(18).toString('base64url');
  return `${expires}.${nonce}.${mac(keyOf(token), `${expires}.${nonce}`)}`;
}

/** The CSRF token of a live operator session's cookie value, or null (none, forged, expired, signed with another token). */
export function operatorSessionCsrf(token: string, value: string | undefined, nowMs: number): string | null {
  const parts = (value ?? '').split('.');
  if (parts.length !== 3) return null;
  const [expires, nonce, given] = parts as [string, string, string];
  if (!/^\d{1,12}$/.test(expires) || !nonce || !given) return null;
  const key = keyOf(token);
  if (!sameSecret(given, mac(key, `${expires}.${nonce}`))) return null;
  if (Number(expires) * 1000 <= nowMs) return null;
  return mac(key, `csrf.${nonce}`);
}

function operatorCookie(request: FastifyRequest, value: string, maxAgeSeconds: number): string {
  return cookie(OPERATOR_COOKIE, value, { secure: overTls(request), maxAgeSeconds }).replace('Path=/console;', `Path=${OPERATOR_PATH};`);
}

function send(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(body);
}

export interface OperatorDeps {
  broker: ServiceBroker;
  config: Readonly<Config>;
}

/** Registers /console/operator/... inside the console's scope (prefix /console); nothing when CONSOLE_OPERATOR_TOKEN is unset. */
export function installOperator(scope: FastifyInstance, deps: OperatorDeps): void {
  const { broker, config } = deps;
  const token = config.console.operatorToken;
  if (!token) return;
  const log = broker.getLogger('console');
  const lifetime = Math.min(config.console.sessionIdleSeconds, config.console.sessionMaxSeconds);

  function failure(reply: FastifyReply, err: unknown, csrf?: string): FastifyReply {
    const { status, body, retryAfter } = toEnvelope(err);
    if (retryAfter !== undefined) reply.header('Retry-After', String(retryAfter));
    if (status >= 500) {
      log.error({ request_id: reply.request.id }, 'operator page failed', err);
      return send(reply, status, messagePage('Something went wrong', `It was logged (request ${reply.request.id}); try again in a moment.`));
    }
    void csrf;
    return send(reply, status, messagePage(status === 404 ? 'Not found' : 'Cannot do this', body.note));
  }

  const operatorOnly =
    (render: (ctx: OperatorPageContext) => Promise<string | FastifyReply>) =>
    async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
      const cookies = cookiesOf(request.headers.cookie);
      const csrf = operatorSessionCsrf(token, cookies[OPERATOR_COOKIE], Date.now());
      if (!csrf) {
        if (cookies[OPERATOR_COOKIE]) setCookie(reply, operatorCookie(request, '', 0));
        if (cookies[SESSION_COOKIE]) {
          return send(reply, 403, messagePage('Operators only', "An account's session cannot open the operator view; sign in there with the operator token."));
        }
        return reply.redirect(`${OPERATOR_PATH}/sign-in`, 303);
      }
      try {
        const out = await render({ broker, config, csrf, request, reply });
        return typeof out === 'string' ? send(reply, 200, out) : out;
      } catch (err) {
        return failure(reply, err, csrf);
      }
    };

  function signInForm(request: FastifyRequest, reply: FastifyReply, status: number, error?: string) {
    const formToken = crypto.randomBytes(24).toString('base64url');
    setCookie(reply, cookie(SIGNIN_COOKIE, formToken, { secure: overTls(request), maxAgeSeconds: SIGNIN_TOKEN_SECONDS }));
    return send(reply, status, operatorSignInPage(formToken, error));
  }

  scope.get(
    '/operator/sign-in',
    inRequestContext(async (request, reply) => signInForm(request, reply, 200)),
  );

  scope.post(
    '/operator/sign-in',
    inRequestContext(async (request, reply) => {
      const body = (request.body ?? {}) as Record<string, unknown>;
      const refusal = postRefusal(request, cookiesOf(request.headers.cookie)[SIGNIN_COOKIE]);
      if (refusal) return signInForm(request, reply, 403, `${refusal} Sign in again.`);
      const given = typeof body.token === 'string' ? body.token.trim() : '';
      if (!given) return signInForm(request, reply, 400, 'Enter the operator token.');
      try {
        await call(broker, 'billing.countSignIn', { client: request.ip });
      } catch (err) {
        const { body: envelope, retryAfter } = toEnvelope(err);
        if (envelope.error_code !== 'rate_limited') return failure(reply, err);
        if (retryAfter !== undefined) reply.header('Retry-After', String(retryAfter));
        return signInForm(request, reply, 429, envelope.note);
      }
      if (!sameSecret(given, token)) return signInForm(request, reply, 401, 'That operator token is not valid.');
      setCookie(reply, operatorCookie(request, issueOperatorSession(token, Date.now(), lifetime), lifetime));
      setCookie(reply, cookie(SIGNIN_COOKIE, '', { secure: overTls(request), maxAgeSeconds: 0 }));
      return reply.redirect(OPERATOR_PATH, 303);
    }),
  );

  scope.post(
    '/operator/sign-out',
    inRequestContext(
      operatorOnly(async ({ request, reply, csrf }) => {
        const refusal = postRefusal(request, csrf);
        if (refusal) return send(reply, 403, messagePage('Not signed out', `${refusal} Reload the page and try again.`));
        setCookie(reply, operatorCookie(request, '', 0));
        return reply.redirect(`${OPERATOR_PATH}/sign-in`, 303);
      }),
    ),
  );

  scope.get('/operator', inRequestContext(operatorOnly((ctx) => accountsPage(ctx))));

  scope.post(
    '/operator/accounts/:account_id/plan',
    inRequestContext(
      operatorOnly(async (ctx) => {
        const refusal = postRefusal(ctx.request, ctx.csrf);
        if (refusal) return send(ctx.reply, 403, messagePage('Plan not changed', `${refusal} Reload the page and try again.`));
        const accountId = (ctx.request.params as { account_id: string }).account_id;
        const plan = (ctx.request.body as Record<string, unknown> | undefined)?.plan;
        if (typeof plan !== 'string' || !plan) return send(ctx.reply, 400, messagePage('Plan not changed', 'Choose a plan.'));
        const changed = await call(broker, 'billing.setPlan', { accountId, plan });
        return accountsPage(ctx, `Account ${changed.account_id} is now on plan ${changed.plan}.`);
      }),
    ),
  );

  scope.get('/operator/capacity', inRequestContext(operatorOnly((ctx) => capacityPage(ctx))));
  scope.get('/operator/locations', inRequestContext(operatorOnly((ctx) => locationsPage(ctx))));
  scope.post(
    '/operator/locations/test',
    inRequestContext(
      operatorOnly(async (ctx) => {
        const refusal = postRefusal(ctx.request, ctx.csrf);
        if (refusal) return send(ctx.reply, 403, messagePage('Not tested', `${refusal} Reload the page and try again.`));
        const name = (ctx.request.body as Record<string, unknown> | undefined)?.location;
        if (typeof name !== 'string' || !name) return send(ctx.reply, 400, messagePage('Not tested', 'Choose a real location.'));
        try {
          const result = await call(broker, 'proxy.testLocation', { name });
          return locationsPage(ctx, { ok: true, name, text: `exit address ${result.exit_ip ?? 'unknown'} via ${result.via} in ${result.ms} ms` });
        } catch (err) {
          const { status, body } = toEnvelope(err);
          if (status >= 500 && body.error_code === 'internal_error') throw err;
          return locationsPage(ctx, { ok: false, name, text: `${body.error_code}: ${body.note}` });
        }
      }),
    ),
  );
}
