/**
 * The HTTP layer: Fastify with parameter merging (query, form, JSON), authentication,
 * validation of each route's declared params, the error envelope, the route registry that
 * the OpenAPI document is generated from, 404 for unknown routes and 405 for a method a path
 * does not take. Routes call other services only through typed actions. What is refused
 * before a route runs is answered by protocol-errors.ts, in the same envelope.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Socket } from 'node:net';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import formbody from '@fastify/formbody';
import { type TProperties, Type } from '@sinclair/typebox';
import type { ServiceBroker } from 'moleculer';
import { answerSent } from '../shared/answer-check';
import type { Config } from '../shared/config';
import { type AccountContext, call } from '../shared/contracts';
import { type ErrorCode, ERROR_STATUS, serviceError, toEnvelope } from '../shared/errors';
import { REPEATABLE_PARAMS } from '../shared/screenshot-options';
import {
  MAX_HEAD_BYTES,
  MAX_PARAM_LENGTH,
  RouteMethods,
  clientErrorHandler,
  closingError,
  connectHandler,
  expectationHandler,
  frameworkError,
  jsonBodyProblem,
  methodNotAllowed,
} from './protocol-errors';
import type { ParamShape, RawParams } from './request-schemas';
import { inRequestContext, installRequestLog, requestIdOf } from './request-log';
import { type ClientMarker, takeClientMarkers } from './client-compat';
import { foldIndexedKeys } from './client-shapes';

type JsonSchema = Record<string, unknown>;

/** What the HTTP layer tells about each request (ApiMetrics counts it). */
export interface RequestObserver {
  clientMarkers(markers: ClientMarker[]): void;
}

/** What a public route's handler (no access_token) is given. */
export interface PublicRouteContext<P = unknown> {
  /** The route's params as its shape's parse returned them (the raw ones when it declares none). */
  params: P;
  /** The merged parameters as sent, without access_token (configurations echo them). */
  raw: RawParams;
  /** Path parameters, e.g. :job_id. */
  path: Record<string, string>;
  request: FastifyRequest;
  reply: FastifyReply;
  broker: ServiceBroker;
}

/** What a route that needs an access_token is given: the same, and the key's account. */
export interface RouteContext<P = unknown> extends PublicRouteContext<P> {
  account: AccountContext;
}

/**
 * A route: one that needs an access_token (AccountRoute, the default) or a public one
 * (PublicRoute, `auth: false`), whose handler has no account at all. The handler is a
 * method, so a RouteDef<P> is a RouteDef (of unknown params) and one table holds every
 * route; `route()` and `publicRoute()` tie a handler's params type to its shape.
 */
export type RouteDef<P = unknown> = AccountRoute<P> | PublicRoute<P>;

export interface AccountRoute<P = unknown> extends RouteShape<P> {
  auth?: true;
  handler(ctx: RouteContext<P>): Promise<unknown>;
}

export interface PublicRoute<P = unknown> extends RouteShape<P> {
  /** Answers without an access_token. */
  auth: false;
  handler(ctx: PublicRouteContext<P>): Promise<unknown>;
}

/** What every route declares besides its handler. */
interface RouteShape<P> {
  method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';
  url: string;
  /**
   * A GET that does work and may spend (a capture): HEAD is not taken there (405), where
   * Fastify would otherwise answer it by running the GET, so a link checker's or a preview
   * bot's HEAD would take a capture and spend a credit for headers alone.
   */
  noHead?: true;
  summary: string;
  tag: string;
  /** The parameters: documented in /openapi.json, validated before the handler runs. */
  params?: ParamShape<P>;
  /**
   * JSON Schema of the 200 answer, or the content types of an answer that is not always JSON
   * (with `json`, the schema of its JSON form).
   */
  response: JsonSchema | { contentTypes: string[]; json?: JsonSchema };
  /** When the route can answer 302: where its Location sends the client (documented in /openapi.json). */
  redirect?: string;
  errors: ErrorCode[];
}

/** The schema of a success answer: `success` and the record's fields (the owners publish the records, in their public/ folders). */
export const ok = <P extends TProperties>(properties: P) => Type.Object({ success: Type.Boolean(), ...properties });

/** The JSON Schema of a route's JSON answer; a route that declares none answers JSON never (the schema nothing meets). */
export function jsonAnswerSchema(response: RouteDef['response']): JsonSchema {
  if (!('contentTypes' in response && Array.isArray(response.contentTypes))) return response;
  return (response.json as JsonSchema | undefined) ?? { not: {}, description: 'This route declares no JSON answer.' };
}

/** A route whose handler must take the params its declared shape produces (a mismatch does not compile). */
export function route<P>(def: AccountRoute<P>): AccountRoute<P> {
  return def;
}

/** The same for a route that answers without an access_token. */
export function publicRoute<P>(def: PublicRoute<P>): PublicRoute<P> {
  return def;
}

/** Errors every authenticated route can answer. */
export const AUTH_ERRORS: ErrorCode[] = ['access_token_required', 'access_token_invalid', 'rate_limited', 'service_unavailable', 'internal_error'];

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * Name/value pairs of a query (decoded as a browser encodes them) as a route reads its query:
 * a name given twice refused unless it is a list's, indexed keys folded (GET /render reads the
 * very pairs its signature covers).
 */
export function paramsOfPairs(pairs: ReadonlyArray<readonly [string, string]>): RawParams {
  const query: Record<string, string | string[]> = {};
  for (const [name, value] of pairs) {
    const had = query[name];
    query[name] = had === undefined ? value : [...(Array.isArray(had) ? had : [had]), value];
  }
  return mergeQuery(query, null);
}

/** The query's parameters: `?a=1&a=2` refused unless `a` is a list's (or the body gives it), indexed keys folded. */
function mergeQuery(query: Record<string, unknown>, body: Record<string, unknown> | null): RawParams {
  for (const [k, v] of Object.entries(query)) {
    // ?a=1&a=2 arrives as an array; a parameter has one value, but for a list that takes the parameter repeated.
    if (Array.isArray(v) && !REPEATABLE_PARAMS.has(k) && !(body && k in body))
      throw serviceError('invalid_parameter', `${k}: given more than once; send it once.`);
  }
  return foldIndexedKeys(query);
}

/**
 * Query string, form fields and JSON body, merged; the body wins on a clash. Indexed keys
 * (`headers[0]=…`) become arrays (client-shapes.ts).
 */
function mergeParams(request: FastifyRequest): RawParams {
  const query = isObject(request.query) ? request.query : {};
  const body = request.body;
  if (body !== undefined && body !== null && !isObject(body)) {
    throw serviceError('invalid_parameter', 'The request body must be a JSON object (or form fields) of parameters.');
  }
  return { ...mergeQuery(query, body ?? null), ...(body ? foldIndexedKeys(body) : {}) };
}

/**
 * The key: the access_token parameter, or the Authorization header as `Bearer <key>` or as
 * the bare key (the n8n node's credential without its "Bearer" prefix). Another scheme
 * (Basic, say) is refused rather than read as a key.
 */
export function tokenOf(params: RawParams, request: FastifyRequest): string {
  const fromParams = params.access_token;
  delete params.access_token;
  if (typeof fromParams === 'string' && fromParams.length > 0) return fromParams;
  if (fromParams !== undefined && fromParams !== null && typeof fromParams !== 'string') {
    const sent = Array.isArray(fromParams) ? 'a list' : typeof fromParams === 'object' ? 'an object' : `a ${typeof fromParams}`;
    throw serviceError('access_token_invalid', `access_token must be the key as a string; ${sent} was sent.`);
  }
  const header = request.headers.authorization?.trim();
  if (header) {
    const bearer = /^Bearer\s+(\S+)$/i.exec(header);
    if (bearer?.[1]) return bearer[1];
    if (/^\S+$/.test(header) && !/^Bearer$/i.test(header)) return header;
    throw serviceError(
      'access_token_invalid',
      'The Authorization header must be "Bearer <key>" (or the bare key); other schemes are not taken. The key can also be sent as the access_token parameter.',
    );
  }
  throw serviceError(
    'access_token_required',
    'An access_token is required: send it as the access_token parameter (query, form or JSON body) or as the header "Authorization: Bearer <key>".',
  );
}

/** A key already authenticated up the stack, and its account (see withAuthenticatedKey). */
const authenticatedKey = new AsyncLocalStorage<{ token: string; account: AccountContext }>();

/**
 * Runs `fn` with `token` known to stand for `account`: routes run beneath it through
 * app.inject with that key (the tool calls of the MCP endpoint, mcp-http.ts) take the account
 * instead of authenticating the key again, so a request counts once against the account's
 * rate limit. Nothing outside this process can enter the context.
 */
export function withAuthenticatedKey<T>(token: string, account: AccountContext, fn: () => T): T {
  return authenticatedKey.run({ token, account }, fn);
}

/** The account of a key (billing.authenticate: unknown key, rate limit), or the one already authenticated for it. */
export function authenticate(broker: ServiceBroker, token: string): Promise<AccountContext> {
  const known = authenticatedKey.getStore();
  if (known && known.token === token) return Promise.resolve(known.account);
  return call(broker, 'billing.authenticate', { token });
}

/** A route's path as OpenAPI writes it: /jobs/:job_id is /jobs/{job_id}. */
export function openApiPath(url: string): string {
  return url.replace(/:([a-z_]+)/g, '{$1}');
}

export function sendError(reply: FastifyReply, err: unknown, log: { error(...a: unknown[]): void }): FastifyReply {
  const { status, body, retryAfter } = toEnvelope(err);
  if (status >= 500 && body.error_code === 'internal_error') log.error({ request_id: reply.request.id }, 'request failed', err);
  if (retryAfter !== undefined) reply.header('Retry-After', String(retryAfter));
  // Errors answered before the onRequest hooks ran (framework errors) carry the id too.
  if (!reply.hasHeader('X-Request-Id')) reply.header('X-Request-Id', reply.request.id);
  return reply.code(status).header('content-type', 'application/json; charset=utf-8').send(body);
}

/**
 * The server's connections that have not sent a whole request yet (a browser's speculative
 * preconnect), kept current: a connection leaves the set with its first request.
 */
function unusedConnections(server: FastifyInstance['server']): Set<Socket> {
  const unused = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    unused.add(socket);
    socket.once('close', () => unused.delete(socket));
  });
  server.on('request', (request: { socket: Socket }) => unused.delete(request.socket));
  return unused;
}

export function buildHttpServer(broker: ServiceBroker, config: Readonly<Config>, routes: RouteDef[], observer?: RequestObserver): FastifyInstance {
  const log = broker.getLogger('http');
  const methods = new RouteMethods();
  let closing = false;
  const app = Fastify({
    logger: false,
    bodyLimit: config.bodyLimit,
    trustProxy: config.trustProxy,
    http: { maxHeaderSize: MAX_HEAD_BYTES },
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    clientErrorHandler: clientErrorHandler(() => methods.all()),
    frameworkErrors: (err, request, reply) => void sendError(reply, frameworkError(err, request), log),
    // Fastify's own 503 while closing has its own body; the onRequest hook below answers instead.
    return503OnClosing: false,
    genReqId: requestIdOf,
    requestIdHeader: false,
  });
  installRequestLog(app, log);
  app.addHook('onRoute', (opts) => methods.add(opts.url, opts.method));
  // What Node answers itself otherwise: a bare 417 for an unknown Expect, a closed connection for CONNECT.
  app.server.on('checkExpectation', expectationHandler);
  app.server.on(
    'connect',
    connectHandler(() => methods.all()),
  );
  const unused = unusedConnections(app.server);
  app.addHook('preClose', (done) => {
    closing = true;
    // Node closes idle keep-alive connections at close, but not one that never sent a request
    // (a browser's preconnect): it would hold the close until its headers timeout (60 s).
    for (const socket of unused) socket.destroy();
    done();
  });
  // Node closes the connections idle when the close begins; one whose request was still
  // running then would be kept alive after its answer, holding the close for the keep-alive
  // timeout (72 s). Once an answer is sent while closing, the connections idle by then are
  // closed (a request already sent on the same connection is answered first, with a 503).
  app.addHook('onResponse', (_request, _reply, done) => {
    if (closing) setImmediate(() => app.server.closeIdleConnections());
    done();
  });
  app.addHook('onRequest', (_request, reply, done) => {
    if (closing) {
      sendError(reply, closingError(reply), log);
      return;
    }
    done();
  });

  app.register(formbody);
  // Fastify reads text/plain by itself; no route takes it, so it is 415 as any other type is.
  app.removeContentTypeParser('text/plain');
  // Malformed JSON gets the envelope with a note, not Fastify's default body.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    const text = String(body);
    if (text.trim() === '') return done(null, undefined);
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      done(
        serviceError('invalid_parameter', `The JSON body could not be parsed (${(err as Error).message}); send a valid JSON object.`) as unknown as Error,
        undefined,
      );
      return;
    }
    const problem = jsonBodyProblem(parsed);
    if (problem) return done(serviceError('invalid_parameter', problem) as unknown as Error, undefined);
    done(null, parsed);
  });

  for (const def of routes) {
    // A route without a json option always answers JSON: json=true there is a client marker.
    const answersJson = !(def.params?.schema.properties as Record<string, unknown> | undefined)?.json;
    const answerSchema = jsonAnswerSchema(def.response);
    app.route({
      method: def.method,
      url: def.url,
      exposeHeadRoute: def.method === 'GET' && !def.noHead,
      // Every JSON answer (returned or sent) meets the route's schema; the tests check it (shared/answer-check.ts).
      preSerialization: (_request, reply, payload, done) => {
        if (reply.statusCode < 400) answerSent(`${def.method} ${def.url}`, answerSchema, () => payload);
        done(null, payload);
      },
      handler: inRequestContext(async (request, reply) => {
        try {
          const raw = mergeParams(request);
          const markers = takeClientMarkers(raw, request, answersJson);
          if (markers.length) observer?.clientMarkers(markers);
          const context = () => ({
            params: def.params ? def.params.parse(raw) : raw,
            raw,
            path: (request.params ?? {}) as Record<string, string>,
            request,
            reply,
            broker,
          });
          // The key before the parameters: without a valid key, a request is answered 401 whatever its parameters.
          const result =
            def.auth === false ? await def.handler(context()) : await def.handler({ account: await authenticate(broker, tokenOf(raw, request)), ...context() });
          if (reply.sent) return reply;
          return result;
        } catch (err) {
          return sendError(reply, err, log);
        }
      }),
    });
  }

  app.setNotFoundHandler((request, reply) => {
    const path = request.url.split('?')[0] ?? '';
    const allowed = methods.at(path);
    if (allowed.length > 0) return sendError(reply, methodNotAllowed(reply, request.method, path, allowed), log);
    return sendError(reply, serviceError('not_found', `There is no route ${request.method} ${path}; the endpoints are listed at /openapi.json.`), log);
  });
  app.setErrorHandler((err: Error & { statusCode?: number; code?: string }, _request, reply) => {
    // Errors Fastify raises before a handler runs (body too large, bad content type).
    if (err.statusCode === 413) return sendError(reply, serviceError('payload_too_large', `The request body is larger than ${config.bodyLimit} bytes.`), log);
    if (err.statusCode === 415) {
      return sendError(
        reply,
        serviceError(
          'unsupported_media_type',
          'Send parameters as a query string, application/x-www-form-urlencoded form fields or a JSON body (application/json).',
        ),
        log,
      );
    }
    if (err.statusCode && err.statusCode >= 400 && err.statusCode < 500 && !(err as { type?: string }).type) {
      return sendError(reply, serviceError('invalid_parameter', `The request could not be read: ${err.message}.`), log);
    }
    return sendError(reply, err, log);
  });
  return app;
}

/** A parameter of an OpenAPI operation (path or query). */
export interface OpenApiParameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: JsonSchema;
}

/** An operation of the OpenAPI document, with the parts read back from it (mcp-tools.ts). */
export interface OpenApiOperation {
  parameters?: OpenApiParameter[];
  requestBody?: { content?: Record<string, { schema?: { properties?: Record<string, JsonSchema>; required?: string[] } }> };
  [key: string]: unknown;
}

export interface OpenApiDocument {
  info?: { version?: string; [key: string]: unknown };
  paths: Record<string, Record<string, OpenApiOperation> | undefined>;
  [key: string]: unknown;
}

/** The error envelope every error answers (a failed job's adds its status and job_id). */
export const ERROR_ENVELOPE_SCHEMA: JsonSchema = {
  type: 'object',
  required: ['success', 'error_code', 'note'],
  properties: { success: { const: false }, error_code: { type: 'string' }, note: { type: 'string' } },
};

/** GET /openapi.json: the document's parts (what they hold is OpenAPI's). */
export const OPENAPI_DOCUMENT_SCHEMA = Type.Object({
  openapi: Type.String(),
  info: Type.Object({ title: Type.String(), version: Type.String(), description: Type.String() }),
  servers: Type.Array(Type.Object({ url: Type.String() })),
  components: Type.Record(Type.String(), Type.Unknown()),
  security: Type.Array(Type.Record(Type.String(), Type.Array(Type.String()))),
  paths: Type.Record(Type.String(), Type.Record(Type.String(), Type.Unknown(), { description: 'An operation of each method.' })),
});

/** The OpenAPI 3 document, generated from the same route table and schemas. */
export function openApiDocument(routes: RouteDef[], config: Readonly<Config>): OpenApiDocument {
  const envelope = ERROR_ENVELOPE_SCHEMA;
  const paths: Record<string, Record<string, OpenApiOperation>> = {};
  const binary = (r: RouteDef['response']): string[] | null => ('contentTypes' in r && Array.isArray(r.contentTypes) ? (r.contentTypes as string[]) : null);
  const schemaOf = (r: RouteDef['response'], type: string): JsonSchema => {
    if (type === 'application/json') return jsonAnswerSchema(r);
    return type.startsWith('text/') ? { type: 'string' } : { type: 'string', format: 'binary' };
  };
  for (const def of routes) {
    const path = openApiPath(def.url);
    const pathParams = [...def.url.matchAll(/:([a-z_]+)/g)].map((m) => ({ name: m[1] as string, in: 'path', required: true, schema: { type: 'string' } }));
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of [...(def.auth === false ? [] : AUTH_ERRORS), ...def.errors]) {
      const status = ERROR_STATUS[code];
      byStatus.set(status, [...new Set([...(byStatus.get(status) ?? []), code])]);
    }
    const responses: Record<string, unknown> = {
      200: binary(def.response)
        ? { description: 'OK', content: Object.fromEntries((binary(def.response) ?? []).map((t) => [t, { schema: schemaOf(def.response, t) }])) }
        : { description: 'OK', content: { 'application/json': { schema: def.response } } },
    };
    if (def.redirect) responses[302] = { description: def.redirect, headers: { Location: { schema: { type: 'string', format: 'uri' } } } };
    for (const [status, codes] of [...byStatus].sort((a, b) => a[0] - b[0])) {
      responses[status] = { description: `error_code: ${codes.join(', ')}`, content: { 'application/json': { schema: envelope } } };
    }
    const params = def.params?.schema as { properties?: Record<string, JsonSchema>; required?: string[] } | undefined;
    const op: OpenApiOperation = {
      summary: def.summary,
      tags: [def.tag],
      ...(def.auth === false ? { security: [] } : {}),
      responses,
    };
    const props = params?.properties ?? {};
    if (def.method === 'GET' || def.method === 'DELETE') {
      op.parameters = [
        ...pathParams,
        ...Object.entries(props).map(([name, schema]) => ({ name, in: 'query', required: (params?.required ?? []).includes(name), schema })),
      ];
    } else {
      op.parameters = pathParams;
      if (Object.keys(props).length) {
        const schema = { type: 'object', properties: props, required: params?.required ?? [] };
        op.requestBody = { content: { 'application/json': { schema }, 'application/x-www-form-urlencoded': { schema } } };
      }
    }
    paths[path] = { ...(paths[path] ?? {}), [def.method.toLowerCase()]: op };
  }
  return {
    openapi: '3.0.3',
    info: {
      title: 'Screenshot capture service',
      version: '1.0.0',
      description: 'Parameters may be sent as a query string, form fields or a JSON body. Errors: {success:false, error_code, note}.',
    },
    servers: [{ url: config.baseUrl }],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer' },
        access_token: { type: 'apiKey', in: 'query', name: 'access_token' },
      },
    },
    security: [{ bearer: [] }, { access_token: [] }],
    paths,
  };
}
