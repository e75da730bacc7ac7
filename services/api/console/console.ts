/**
 * The web console at /console, served by the api's own Fastify server (no second server,
 * both ways of running). Its pages are rendered on the server from the same actions the API
 * calls (services/shared/contracts.ts); it holds no business rule of its own. What it adds:
 * sign-in with an API key exchanged for a session (billing keeps sessions), the security
 * headers, the token checked on every POST, and HTML for people. See README.md beside this file.
 */
import crypto from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceBroker } from 'moleculer';
import type { Config } from '../../shared/config';
import { call } from '../../shared/contracts';
import { toEnvelope } from '../../shared/errors';
import { inRequestContext } from '../request-log';
import { ASSETS } from './assets';
import { messagePage } from './layout';
import { builderPage, builderSubmit, buildResultPage, jobStateAnswer } from './pages/builder';
import { capturePage } from './pages/capture';
import { capturesPage } from './pages/captures';
import { changesPage } from './pages/changes';
import type { ConsolePageContext, PageAnswer } from './pages/context';
import {
  captureNowSubmit,
  configsPage,
  createConfigSubmit,
  deleteConfigPage,
  deleteConfigSubmit,
  editConfigPage,
  newConfigPage,
  updateConfigSubmit,
} from './pages/configs';
import { KEYS_ACTIONS, keysPage } from './pages/keys';
import { installOperator } from './operator';
import { overviewPage } from './pages/overview';
import { signInPage } from './pages/sign-in';
import { redeliver, webhooksPage } from './pages/webhooks';
import { SIGNIN_COOKIE, cookie, cookiesOf, overTls, postRefusal, securityHeaders, setCookie } from './security';
import { nextPath, sessionIdOf, sessionOf, setSessionCookie, signInPath } from './session';

export interface ConsoleDeps {
  broker: ServiceBroker;
  config: Readonly<Config>;
}

/** How long the sign-in form's token lives (its cookie). */
const SIGNIN_TOKEN_SECONDS = 3600;

function send(reply: FastifyReply, status: number, body: string): FastifyReply {
  return reply.code(status).type('text/html; charset=utf-8').send(body);
}

function originOf(address: string): string | null {
  try {
    return new URL(address).origin;
  } catch {
    return null;
  }
}

/** Registers /console and everything under it on the api's server. */
export function installConsole(app: FastifyInstance, deps: ConsoleDeps): void {
  const { broker, config } = deps;
  const log = broker.getLogger('console');
  // Capture images and thumbnails are served from the CDN links' origin (this server's /cdn unless CDN_URL says otherwise).
  const headers = securityHeaders([config.cdnUrl, config.baseUrl].map(originOf).filter((o): o is string => o !== null));
  const maxAge = config.console.sessionMaxSeconds;

  /** A page for a signed-in account: without a live session, the sign-in page (then back here). */
  const signedIn =
    (render: (ctx: ConsolePageContext) => Promise<string | PageAnswer>) =>
    async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
      const session = await sessionOf(broker, request);
      if (!session) {
        if (sessionIdOf(request)) setSessionCookie(reply, request, '', 0);
        return reply.redirect(signInPath(request.url), 303);
      }
      try {
        const answer = await render({ broker, config, session, request, reply });
        if (typeof answer === 'string') return send(reply, 200, answer);
        if ('redirect' in answer) return reply.redirect(answer.redirect, 303);
        return answer.type ? reply.code(answer.status).type(answer.type).send(answer.body) : send(reply, answer.status, answer.body);
      } catch (err) {
        return failure(reply, err, { accountId: session.account.accountId, csrf: session.csrf });
      }
    };

  /** A signed-in POST: its token and Origin checked before anything is done (403 otherwise), then `handle`, answering a page or a 303 to another. */
  const signedInPost =
    (handle: (ctx: ConsolePageContext) => Promise<string | { redirect: string }>) =>
    async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply> => {
      const session = await sessionOf(broker, request);
      if (!session) {
        if (sessionIdOf(request)) setSessionCookie(reply, request, '', 0);
        return reply.redirect(signInPath('/console'), 303);
      }
      const frame = { accountId: session.account.accountId, csrf: session.csrf };
      const refusal = postRefusal(request, session.csrf);
      if (refusal) return send(reply, 403, messagePage('Nothing was changed', `${refusal} Reload the page and try again.`, frame));
      try {
        const answer = await handle({ broker, config, session, request, reply });
        return typeof answer === 'string' ? send(reply, 200, answer) : reply.redirect(answer.redirect, 303);
      } catch (err) {
        return failure(reply, err, frame);
      }
    };

  /** A failure as a page: the API's status and note (404 for another account's object, as for none); 500 logged, its note not shown. */
  function failure(reply: FastifyReply, err: unknown, session?: { accountId: string; csrf: string }): FastifyReply {
    const framework = (err as { statusCode?: number; type?: unknown } | null)?.statusCode;
    if (framework && framework >= 400 && framework < 500 && !(err as { type?: unknown }).type) {
      // Refused before a handler ran (a body too large, a content type no form sends).
      return send(reply, framework, messagePage('Cannot read this request', 'Send the form as the page gives it.', session));
    }
    const { status, body, retryAfter } = toEnvelope(err);
    if (retryAfter !== undefined) reply.header('Retry-After', String(retryAfter));
    if (status >= 500) {
      log.error({ request_id: reply.request.id }, 'console page failed', err);
      return send(reply, status, messagePage('Something went wrong', `It was logged (request ${reply.request.id}); try again in a moment.`, session));
    }
    const title = status === 404 ? 'Not found' : status === 429 ? 'Too many requests' : 'Cannot show this';
    return send(reply, status, messagePage(title, body.note, session));
  }

  function signInForm(request: FastifyRequest, reply: FastifyReply, status: number, view: { next: string; error?: string; note?: string }) {
    const token = crypto.randomBytes(24).toString('base64url');
    setCookie(reply, cookie(SIGNIN_COOKIE, token, { secure: overTls(request), maxAgeSeconds: SIGNIN_TOKEN_SECONDS }));
    return send(reply, status, signInPage({ token, ...view }));
  }

  app.register(
    async (scope) => {
      scope.addHook('onSend', async (_request, reply, payload) => {
        for (const [name, value] of Object.entries(headers)) reply.header(name, value);
        if (!reply.hasHeader('cache-control')) reply.header('cache-control', 'no-store');
        return payload;
      });

      scope.get('/assets/:name', async (request, reply) => {
        const asset = ASSETS[(request.params as { name: string }).name];
        if (!asset) return send(reply, 404, messagePage('Not found', 'There is no such file.'));
        return reply.type(asset.type).header('cache-control', 'public, max-age=31536000, immutable').send(asset.body);
      });

      scope.get(
        '/sign-in',
        inRequestContext(async (request, reply) => {
          const query = (request.query ?? {}) as Record<string, unknown>;
          return signInForm(request, reply, 200, { next: nextPath(query.next), note: query.signed_out === '1' ? 'You are signed out.' : undefined });
        }),
      );

      scope.post(
        '/sign-in',
        inRequestContext(async (request, reply) => {
          const body = (request.body ?? {}) as Record<string, unknown>;
          const next = nextPath(body.next);
          const refusal = postRefusal(request, cookiesOf(request.headers.cookie)[SIGNIN_COOKIE]);
          if (refusal) return signInForm(request, reply, 403, { next, error: `${refusal} Sign in again.` });
          const key = typeof body.key === 'string' ? body.key.trim() : '';
          if (!key) return signInForm(request, reply, 400, { next, error: 'Enter your API key.' });
          try {
            const opened = await call(broker, 'billing.openSession', { token: key, client: request.ip });
            setSessionCookie(reply, request, opened.session, maxAge);
            setCookie(reply, cookie(SIGNIN_COOKIE, '', { secure: overTls(request), maxAgeSeconds: 0 }));
            return reply.redirect(next, 303);
          } catch (err) {
            const { body: envelope, retryAfter } = toEnvelope(err);
            if (envelope.error_code === 'access_token_invalid') return signInForm(request, reply, 401, { next, error: 'That API key is not valid.' });
            if (envelope.error_code === 'rate_limited') {
              if (retryAfter !== undefined) reply.header('Retry-After', String(retryAfter));
              return signInForm(request, reply, 429, { next, error: envelope.note });
            }
            return failure(reply, err);
          }
        }),
      );

      scope.post(
        '/sign-out',
        inRequestContext(async (request, reply) => {
          const session = await sessionOf(broker, request);
          if (session) {
            const refusal = postRefusal(request, session.csrf);
            const frame = { accountId: session.account.accountId, csrf: session.csrf };
            if (refusal) return send(reply, 403, messagePage('Not signed out', `${refusal} Reload the page and try again.`, frame));
            await call(broker, 'billing.closeSession', { session: sessionIdOf(request) });
          }
          setSessionCookie(reply, request, '', 0);
          return reply.redirect('/console/sign-in?signed_out=1', 303);
        }),
      );

      scope.get('/', inRequestContext(signedIn(overviewPage)));
      scope.get('/captures', inRequestContext(signedIn(capturesPage)));
      scope.get('/captures/:job_id', inRequestContext(signedIn((ctx) => capturePage(ctx, (ctx.request.params as { job_id: string }).job_id))));
      // The capture builder and configurations (pages/builder.ts, pages/configs.ts).
      const jobIdOf = (ctx: ConsolePageContext) => (ctx.request.params as { job_id: string }).job_id;
      scope.get('/build', inRequestContext(signedIn(builderPage)));
      scope.post('/build', inRequestContext(signedIn(builderSubmit)));
      scope.get('/build/:job_id', inRequestContext(signedIn((ctx) => buildResultPage(ctx, jobIdOf(ctx)))));
      scope.get('/jobs/:job_id/state', inRequestContext(signedIn((ctx) => jobStateAnswer(ctx, jobIdOf(ctx)))));
      scope.get('/configs', inRequestContext(signedIn(configsPage)));
      scope.get('/configs/new', inRequestContext(signedIn(newConfigPage)));
      scope.post('/configs', inRequestContext(signedIn(createConfigSubmit)));
      scope.get('/configs/:id/edit', inRequestContext(signedIn(editConfigPage)));
      scope.post('/configs/:id', inRequestContext(signedIn(updateConfigSubmit)));
      scope.post('/configs/:id/capture', inRequestContext(signedIn(captureNowSubmit)));
      scope.get('/configs/:id/delete', inRequestContext(signedIn(deleteConfigPage)));
      scope.post('/configs/:id/delete', inRequestContext(signedIn(deleteConfigSubmit)));

      installOperator(scope, { broker, config });

      scope.get('/changes', inRequestContext(signedIn(changesPage)));
      scope.get('/webhooks', inRequestContext(signedIn(webhooksPage)));
      scope.post('/webhooks/:id/redeliver', inRequestContext(signedInPost((ctx) => redeliver(ctx, (ctx.request.params as { id: string }).id))));
      scope.get('/keys', inRequestContext(signedIn((ctx) => keysPage(ctx))));
      for (const [path, action] of [
        ['/keys/rotate-key', 'rotate-key'],
        ['/keys/rotate-webhook-secret', 'rotate-webhook-secret'],
        ['/keys/rotate-signing-secret', 'rotate-signing-secret'],
        ['/keys/ai', 'ai'],
        ['/keys/ai/:param/test', 'ai-test'],
        ['/keys/ai/:param/delete', 'ai-delete'],
        ['/keys/proxies', 'proxies'],
        ['/keys/proxies/:param/test', 'proxy-test'],
        ['/keys/proxies/:param/delete', 'proxy-delete'],
      ] as const) {
        const run = KEYS_ACTIONS[action] as NonNullable<(typeof KEYS_ACTIONS)[string]>;
        scope.post(path, inRequestContext(signedInPost((ctx) => run(ctx, (ctx.request.params as { param?: string }).param ?? ''))));
      }

      scope.setNotFoundHandler((request, reply) => send(reply, 404, messagePage('Not found', `There is no console page ${request.url.split('?')[0]}.`)));
      scope.setErrorHandler((err, _request, reply) => failure(reply, err));
    },
    { prefix: '/console' },
  );
}
