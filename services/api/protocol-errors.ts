/**
 * The answers given before any route runs, each in the envelope with a note that says what
 * to do: a request Node's HTTP parser rejects (request line and headers too large, malformed,
 * too slow), a path Fastify's router rejects (bad percent-encoding, an over-long segment), a
 * method the path does not take (405 with `Allow`), and a request that arrives while the
 * server closes. buildHttpServer (http.ts) wires them in.
 */
import { type IncomingMessage, STATUS_CODES, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { type ErrorCode, ERROR_STATUS, serviceError } from '../shared/errors';

/**
 * The most Node reads of a request line plus its headers (Node's default is 16 KiB). A GET
 * carries its parameters in the URL, and the longest text parameters at their limits, percent-
 * encoded (a 2500-character ai_prompt in a non-Latin script alone is about 22 KB), do not fit
 * in 16 KiB; 64 KiB does, and beyond it the note sends the caller to a POST body.
 */
export const MAX_HEAD_BYTES = 64 * 1024;

/** Fastify's longest path parameter (its default); no id this API hands out comes near it. */
export const MAX_PARAM_LENGTH = 100;

const KIB = `${MAX_HEAD_BYTES / 1024} KB`;

/** What Node's parser reports with a client error (node:http 'clientError'). */
interface ParserError extends Error {
  code?: string;
  reason?: string;
}

/** An envelope written straight onto the socket: Node's parser has no request or reply to answer with. `headers`: lines to add. */
function answerOnSocket(socket: Socket, code: ErrorCode, note: string, headers: Record<string, string> = {}): void {
  // Node's own handler does the same: once a response on this socket has begun (keep-alive,
  // pipelining), nothing readable can follow it.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || inFlight?.headersSent) {
    socket.destroy();
    return;
  }
  const status = ERROR_STATUS[code];
  const body = JSON.stringify({ success: false, error_code: code, note });
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\ncontent-type: application/json; charset=utf-8\r\n${extra}` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
  // Closing with unread bytes in the receive buffer (the rest of an over-long request) resets
  // the connection, and the client may lose the answer before reading it: read and drop them
  // until the client closes, for a bounded time.
  socket.on('data', () => undefined);
  socket.resume();
  setTimeout(() => socket.destroy(), 2000).unref();
}

/**
 * One note for both causes: Node counts the request line and the headers against one limit, and
 * the chunk it was reading when it stopped (err.rawPacket) is often a later piece of the request,
 * so which of the two ran over cannot be told reliably.
 */
const HEAD_TOO_LARGE_NOTE =
  `The request line and headers together are larger than the ${KIB} this server reads. If the URL is long, ` +
  'send the parameters in a POST body instead of the query string (JSON or form fields, e.g. POST /snap); otherwise send fewer or smaller headers.';

/** The note for a request the parser could not read, by where it broke. */
function malformedNote(err: ParserError, methods: string): string {
  const why = `The request could not be read as HTTP/1.1 (${err.reason ?? err.code ?? 'parse error'})`;
  switch (err.code) {
    case 'HPE_INVALID_METHOD':
      return `${why}: the request line must start with a method this API takes (${methods}), then the path and HTTP/1.1.`;
    case 'HPE_INVALID_URL':
    case 'HPE_INVALID_CONSTANT':
    case 'HPE_INVALID_VERSION':
      return `${why}: send a request line "METHOD /path?query HTTP/1.1", with spaces and control characters in the URL percent-encoded (a space as %20).`;
    case 'HPE_PAUSED_H2_UPGRADE':
      return `${why}: this server speaks HTTP/1.1 here; send HTTP/1.1 (or put an HTTP/2 proxy in front).`;
    default:
      return `${why}: a header or the body's framing (Content-Length, Transfer-Encoding) is malformed; send well-formed HTTP/1.1 headers.`;
  }
}

/**
 * The server's 'clientError' listener (Fastify's clientErrorHandler): Node's parser rejected
 * the request before Fastify saw it, so the envelope is written on the raw socket, then closed.
 * `methods` lists what the routes take, for the note on an unknown method.
 */
export function clientErrorHandler(methods: () => string[]): (err: ParserError, socket: Socket) => void {
  return (err, socket) => {
    // The client went away: there is no one to answer.
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    if (err.code === 'HPE_HEADER_OVERFLOW') return answerOnSocket(socket, 'headers_too_large', HEAD_TOO_LARGE_NOTE);
    if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      return answerOnSocket(socket, 'request_timeout', 'The request did not arrive in full in time; send it again, without pausing partway through.');
    }
    answerOnSocket(socket, 'malformed_request', malformedNote(err, methods().join(', ')));
  };
}

/**
 * The deepest a JSON body may nest (a request's deepest part, a structured field's definition
 * inside an MCP call, is about a dozen levels). Deeper, a value is refused where it is read:
 * writing it out for a note or for a tool call would exhaust the stack.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * What is wrong with a parsed JSON body that parsing accepts: nesting deeper than
 * MAX_JSON_DEPTH, or a number too large for JSON's doubles (1e309 is read as Infinity). Walked
 * without recursion, so no body can exhaust the stack here. Null when it is fine.
 */
export function jsonBodyProblem(body: unknown): string | null {
  const stack: Array<[unknown, number]> = [[body, 1]];
  while (stack.length) {
    const [value, depth] = stack.pop() as [unknown, number];
    if (typeof value === 'number' && !Number.isFinite(value)) {
      return 'The JSON body holds a number too large to read (beyond about 1.8e308); send numbers in range.';
    }
    if (value === null || typeof value !== 'object') continue;
    if (depth > MAX_JSON_DEPTH) {
      return `The JSON body nests more than ${MAX_JSON_DEPTH} levels deep; no request of this API needs that many: send the parameters as the docs show them.`;
    }
    for (const child of Object.values(value)) if (typeof child === 'number' || (child !== null && typeof child === 'object')) stack.push([child, depth + 1]);
  }
  return null;
}

/**
 * The server's 'checkExpectation' listener: a request whose Expect header is not 100-continue
 * (Node otherwise answers a bare 417 with no body) gets the envelope, 400 malformed_request.
 */
export function expectationHandler(req: IncomingMessage, res: ServerResponse): void {
  const expect = String(req.headers.expect ?? '').slice(0, 60);
  const body = JSON.stringify({
    success: false,
    error_code: 'malformed_request',
    note: `The Expect header "${expect}" asks for something this server does not do; send Expect: 100-continue, or no Expect header.`,
  });
  res.writeHead(ERROR_STATUS.malformed_request, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    connection: 'close',
  });
  res.end(body);
}

/**
 * The server's 'connect' listener: CONNECT (a proxy's method, which no route takes) gets the
 * envelope, 405, on the socket; Node otherwise closes the connection without an answer.
 */
export function connectHandler(methods: () => string[]): (req: IncomingMessage, socket: Duplex) => void {
  return (_req, socket) => {
    const taken = methods().join(', ');
    answerOnSocket(socket as Socket, 'method_not_allowed', `This API is not a proxy and takes no CONNECT; its methods are ${taken} (see /openapi.json).`, {
      allow: taken,
    });
  };
}

/** Errors Fastify's router raises before any route, which bypass its error handler (its `frameworkErrors` option). */
export function frameworkError(err: FastifyError, request: FastifyRequest): Error {
  const path = request.url.split('?')[0] ?? '';
  const shown = path.length > 120 ? `${path.slice(0, 100)}…` : path;
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return serviceError(
      'not_found',
      `There is nothing at ${shown}: a path segment is longer than ${MAX_PARAM_LENGTH} characters, and no id here is; the endpoints are listed at ` +
        `/openapi.json.`,
    );
  }
  if (err.code === 'FST_ERR_BAD_URL') {
    return serviceError('malformed_request', `The path ${shown} is not valid percent-encoding; encode a literal "%" as %25.`);
  }
  return err;
}

/**
 * The methods each route pattern takes, collected from Fastify's onRoute hook (so routes that
 * plugins register, such as /docs, count too); a request for a known path with another method
 * answers 405 with `Allow` rather than 404.
 */
export class RouteMethods {
  private readonly patterns = new Map<string, { pattern: RegExp; methods: Set<string> }>();

  add(url: string, method: string | string[]): void {
    let entry = this.patterns.get(url);
    if (!entry) {
      entry = { pattern: patternOf(url), methods: new Set() };
      this.patterns.set(url, entry);
    }
    for (const m of [method].flat()) entry.methods.add(m.toUpperCase());
  }

  /** The methods some route takes at this path (sorted), none for a path no route has. */
  at(path: string): string[] {
    const methods = new Set<string>();
    for (const { pattern, methods: ms } of this.patterns.values()) if (pattern.test(path)) for (const m of ms) methods.add(m);
    return [...methods].sort();
  }

  /** Every method some route takes. */
  all(): string[] {
    return [...new Set([...this.patterns.values()].flatMap((e) => [...e.methods]))].sort();
  }
}

/** A Fastify route URL (`/jobs/:job_id`, `/docs/static/*`) as a regular expression over a path. */
function patternOf(url: string): RegExp {
  const source = url
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => (part === '*' ? '.*' : /^:[A-Za-z0-9_]+$/.test(part) ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}$`);
}

/** The 405 for a method the path does not take, naming those it does. */
export function methodNotAllowed(reply: FastifyReply, method: string, path: string, allowed: string[]): Error {
  reply.header('allow', allowed.join(', '));
  return serviceError('method_not_allowed', `${path} does not take ${method}; it takes ${allowed.join(', ')} (see /openapi.json).`);
}

/** The answer to a request that arrives on an open connection while the server is closing. */
export function closingError(reply: FastifyReply): Error {
  reply.header('connection', 'close');
  return serviceError('capacity_exhausted', 'This server is shutting down; retry shortly (another instance, or this one once restarted, will answer).', {
    retryAfter: 1,
  });
}
