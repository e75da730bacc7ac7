/**
 * The console's side of a session: the cookie carries the session's random id, billing keeps
 * the session (services/billing/console-sessions.ts) and maps it to its account as it maps an
 * API key. Here: reading the cookie, asking billing, and where a request without a live
 * session is sent (the sign-in page, back to where it was going afterwards).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceBroker } from 'moleculer';
import { type ConsoleSession, call } from '../../shared/contracts';
import { toEnvelope } from '../../shared/errors';
import { SESSION_COOKIE, cookie, cookiesOf, overTls, setCookie } from './security';

/** The session id the request's cookie carries ('' for none). */
export function sessionIdOf(request: FastifyRequest): string {
  return cookiesOf(request.headers.cookie)[SESSION_COOKIE] ?? '';
}

/** The live session of the request, or null (no cookie, ended, expired, its key revoked); other failures (rate_limited) are thrown. */
export async function sessionOf(broker: ServiceBroker, request: FastifyRequest): Promise<ConsoleSession | null> {
  const id = sessionIdOf(request);
  if (!id) return null;
  try {
    return await call(broker, 'billing.session', { session: id });
  } catch (err) {
    if (toEnvelope(err).body.error_code === 'access_token_invalid') return null;
    throw err;
  }
}

/** Sets the session cookie (Max-Age: the session's longest life) or, with '', deletes it. */
export function setSessionCookie(reply: FastifyReply, request: FastifyRequest, session: string, maxAgeSeconds: number): void {
  setCookie(reply, cookie(SESSION_COOKIE, session, { secure: overTls(request), maxAgeSeconds: session ? maxAgeSeconds : 0 }));
}

/** Where to go after signing in: a console path the request named (never another site), else the overview. */
export function nextPath(value: unknown): string {
  if (typeof value !== 'string') return '/console';
  return /^\/console(?:[/?][^\\\s]*)?$/.test(value) && !value.includes('//') ? value : '/console';
}

/** The sign-in page's address that leads back to `path` afterwards. */
export function signInPath(path: string): string {
  const next = nextPath(path);
  return next === '/console' ? '/console/sign-in' : `/console/sign-in?next=${encodeURIComponent(next)}`;
}
