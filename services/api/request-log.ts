/**
 * Request ids and access lines. Every request gets an id: the caller's X-Request-Id when it
 * looks like one (a proxy or client that already tagged it), otherwise a fresh one. It is
 * answered in X-Request-Id, written on the request's access line and on every line logged
 * while the request is handled (the log context), and travels with the Moleculer calls the
 * request makes (logContextMiddleware), so a capture's lines carry it too.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { LoggerInstance } from 'moleculer';
import { withLogContext } from '../shared/logging';
import { randomId } from '../shared/secrets';

export const REQUEST_ID_HEADER = 'x-request-id';

/** What an incoming id may be: short, printable, no spaces or quotes (it is echoed and logged). */
const SANE_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** Fastify's genReqId: the caller's id when sane, else `req_` and 16 random characters. */
export function requestIdOf(req: IncomingMessage): string {
  const given = req.headers[REQUEST_ID_HEADER];
  if (typeof given === 'string' && SANE_ID.test(given)) return given;
  return `req_${randomId(12)}`;
}

/** Paths probed every few seconds by health checks and scrapers: their successful answers are logged at debug, the others at warn. */
const PROBES = new Set(['/health', '/metrics', '/pressure']);

function pathOf(request: FastifyRequest): string {
  return (request.raw.url ?? request.url).split('?')[0] ?? '';
}

/** Answers X-Request-Id on every reply and writes one access line per request (without its query string). */
export function installRequestLog(app: FastifyInstance, log: Pick<LoggerInstance, 'info' | 'debug' | 'warn' | 'error'>): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('X-Request-Id', request.id);
    done();
  });
  app.addHook('onResponse', (request, reply, done) => {
    const path = pathOf(request);
    const status = reply.statusCode;
    const fields = { request_id: request.id, method: request.method, path, status, ms: Math.round(reply.elapsedTime * 10) / 10 };
    // A probe's 503 (not ready yet, saturated) is an answer, not a failure of ours: warn.
    const level = PROBES.has(path) ? (status < 400 ? 'debug' : 'warn') : status >= 500 ? 'error' : 'info';
    log[level](fields, `${request.method} ${path} ${status}`);
    done();
  });
}

/** A route handler that runs in its request's log context: every line logged beneath it (here and in the services it calls) carries the request id. */
export function inRequestContext<T>(handler: (request: FastifyRequest, reply: FastifyReply) => T): (request: FastifyRequest, reply: FastifyReply) => T {
  return (request, reply) => withLogContext({ request_id: request.id }, () => handler(request, reply));
}
