/**
 * What keeps the console safe as a public page, apart from escaping (html.ts): its response
 * headers (a Content-Security-Policy that runs scripts from this origin only and none inline,
 * frames refused, no sniffing), its cookies (HttpOnly, SameSite=Lax, Secure when the request
 * came over TLS), and the check every POST passes (a token its form carries, compared in
 * constant time, and the Origin header, when sent, naming this site).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sameSecret } from '../../shared/secrets';

/** The session cookie (Path=/console: the API never sees it). */
export const SESSION_COOKIE = 'console_session';
/** The sign-in form's token, before there is a session (double-submit: the cookie and the form field must match). */
export const SIGNIN_COOKIE = 'console_signin';
/** The hidden field every console form carries its token in. */
export const CSRF_FIELD = '_csrf';

/** The Content-Security-Policy of every console answer; `imageOrigins`: where capture images are served from besides this origin. */
export function contentSecurityPolicy(imageOrigins: string[]): string {
  const images = ["'self'", 'data:', ...new Set(imageOrigins)].join(' ');
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    `img-src ${images}`,
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** The headers every console answer carries. */
export function securityHeaders(imageOrigins: string[]): Record<string, string> {
  return {
    'content-security-policy': contentSecurityPolicy(imageOrigins),
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    'referrer-policy': 'same-origin',
    'cross-origin-opener-policy': 'same-origin',
  };
}

/** The cookies a request sent, by name (the first of a repeated name). */
export function cookiesOf(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const at = part.indexOf('=');
    if (at < 0) continue;
    const name = part.slice(0, at).trim();
    if (!name || name in out) continue;
    const value = part.slice(at + 1).trim();
    try {
      out[name] = decodeURIComponent(value);
    } catch {
      out[name] = value;
    }
  }
  return out;
}

/** Whether the request came over TLS (here, or to a proxy that says so in X-Forwarded-Proto: the api trusts proxy headers, http.ts). */
export function overTls(request: FastifyRequest): boolean {
  return request.protocol === 'https';
}

/** A Set-Cookie value: HttpOnly, SameSite=Lax, Path=/console, Secure over TLS; `maxAgeSeconds` 0 deletes it. */
export function cookie(name: string, value: string, opts: { secure: boolean; maxAgeSeconds: number }): string {
  return [
    `${name}=${encodeURIComponent(value)}`,
    'Path=/console',
    'HttpOnly',
    'SameSite=Lax',
    `Max-Age=${Math.max(0, Math.floor(opts.maxAgeSeconds))}`,
    ...(opts.secure ? ['Secure'] : []),
  ].join('; ');
}

/** Adds a Set-Cookie header beside any already set (Fastify appends a set-cookie header to those it has). */
export function setCookie(reply: FastifyReply, value: string): void {
  reply.header('set-cookie', value);
}

/**
 * Why a POST is refused, or null when it may go on: its Origin header, when sent, must be this
 * site (as the request addressed it), and its form must carry `expected` in the CSRF field.
 */
export function postRefusal(request: FastifyRequest, expected: string | undefined): string | null {
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== `${request.protocol}://${request.host}`) return 'The form was sent from another site.';
  const body = (request.body ?? {}) as Record<string, unknown>;
  const given = body[CSRF_FIELD];
  if (typeof given !== 'string' || !given || !expected || !sameSecret(given, expected)) {
    return 'The form is missing its security token or it has expired.';
  }
  return null;
}
