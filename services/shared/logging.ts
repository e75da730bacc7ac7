/**
 * The one place log lines are written. Every Moleculer logger of the process (services,
 * broker, transporter, the api's access lines) ends in LineLogger, which turns a call's
 * arguments into one record (time, level, node, module, msg, the ambient ids and the
 * call's own fields), redacts it, and writes it as one JSON line (or, for a person at a
 * terminal, one text line).
 *
 * Redaction happens here, on the finished record, not at call sites: Moleculer errors,
 * selenium and proxy messages quote URLs, headers and bodies that call sites never see, so
 * asking every caller to be careful would leak the first time one is not.
 *
 * The ids (request_id, job_id, delivery_id) ride in an AsyncLocalStorage context: the HTTP
 * layer sets request_id, the capture worker and pipeline job_id, the notifier delivery_id,
 * and every line logged beneath them carries them without being passed the id. Across
 * the transporter the request id travels in the Moleculer context (requestID and
 * meta.requestId, see logContextMiddleware).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { LoggerBindings, LogLevels, Middleware } from 'moleculer';
import { Loggers } from 'moleculer';

export const REDACTED = '[REDACTED]';

export type LogFormat = 'json' | 'text';

// ---------------------------------------------------------------------------------------
// Redaction

/**
 * Field names whose values are secrets (after camelCase and dashes become snake_case):
 * access_token, authorization, proxy-authorization, api_key / apiKey / x-api-key, key (a
 * provider key is sent as `key`), password, secret, token, cookie, credentials.
 */
const SECRET_FIELD = /(^|_)(access_token|token|secret|secrets|password|passwd|pass|api_key|apikey|key|keys|authorization|cookie|credentials?)$/;

export function isSecretField(name: string): boolean {
  const snake = name
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .toLowerCase()
    .replace(/-/g, '_');
  return SECRET_FIELD.test(snake);
}

/** Names that, written as name=value or "name": "value" inside a text, carry a secret. */
const SECRET_NAMES = 'access_token|api_?key|apikey|x-api-key|password|passwd|secret|client_secret|token|key|authorization';

const TEXT_RULES: [RegExp, string][] = [
  // Credentials in a URL: scheme://user:password@host (proxy URLs, DATABASE_URL, REDIS_URL).
  // A password may hold ' (a URL leaves it as it is; encodeURIComponent too).
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"<>]+@/gi, `$1${REDACTED}@`],
  // The same inside a URL-encoded URL (a capture's url parameter): scheme%3A%2F%2Fuser%3Apw%40host.
  [/\b([a-z][a-z0-9+.-]*%3A%2F%2F)(?:(?!%2F|%40)[^\s/?#&@"'<>])+%40/gi, `$1${REDACTED}%40`],
  // Authorization schemes: "Bearer <token>", "Basic <base64>".
  [/\b(Bearer|Basic)(\s+|%20|\+)[A-Za-z0-9._~+/=-]{4,}/gi, `$1$2${REDACTED}`],
  // name=value, name: value, "name":"value", and name%3Dvalue (query strings, forms, JSON in messages).
  [new RegExp(`(?<![A-Za-z0-9])((?:${SECRET_NAMES})(?:["']?\\s*[:=]\\s*["']?|%3D|%22%3A%22))(?!\\[REDACTED\\])[^\\s&"',;)}\\]<>]+`, 'gi'), `$1${REDACTED}`],
  // Standard Webhooks signing secrets.
  [/whsec_[A-Za-z0-9+/=_-]+/g, REDACTED],
  // Our API keys (sk_...) and provider keys (sk-..., sk-ant-..., sk-or-v1-..., sk-proj-...).
  [/(?<![A-Za-z0-9])sk[-_][A-Za-z0-9_-]{12,}/g, REDACTED],
];

/** A text with every secret shape in it replaced by [REDACTED]. */
export function redactText(text: string): string {
  let out = text;
  for (const [pattern, replacement] of TEXT_RULES) out = out.replace(pattern, replacement);
  return out;
}

const MAX_DEPTH = 8;

/** An error as a record: what an operator needs (and its stack), nothing it holds by reference. */
function errorRecord(err: Error): Record<string, unknown> {
  const e = err as Error & { code?: unknown; type?: unknown; data?: unknown; cause?: unknown };
  return {
    name: e.name,
    message: e.message,
    ...(e.code !== undefined ? { code: e.code } : {}),
    ...(e.type !== undefined ? { type: e.type } : {}),
    ...(e.data !== undefined ? { data: e.data } : {}),
    ...(e.stack ? { stack: e.stack } : {}),
    ...(e.cause !== undefined ? { cause: e.cause instanceof Error ? errorRecord(e.cause) : e.cause } : {}),
  };
}

/**
 * A copy of `value` that is safe to write: values of secret fields are [REDACTED] (every
 * string or number beneath them), every other string has its secret shapes redacted,
 * errors become records, buffers their length.
 */
export function redact(value: unknown, secret = false, depth = 0, seen = new WeakSet<object>()): unknown {
  if (value === null || value === undefined || typeof value === 'boolean') return value;
  if (typeof value === 'string') return secret ? REDACTED : redactText(value);
  if (typeof value === 'number' || typeof value === 'bigint') return secret ? REDACTED : typeof value === 'bigint' ? String(value) : value;
  if (typeof value === 'function' || typeof value === 'symbol') return undefined;
  if (typeof value !== 'object') return undefined;
  if (Buffer.isBuffer(value)) return `[${value.length} bytes]`;
  if (value instanceof Date) return value.toISOString();
  if (seen.has(value)) return '[Circular]';
  if (depth >= MAX_DEPTH) return '[…]';
  seen.add(value);
  try {
    if (value instanceof Error) return redact(errorRecord(value), secret, depth + 1, seen);
    if (Array.isArray(value)) return value.map((v) => redact(v, secret, depth + 1, seen));
    if (value instanceof URL) return redact(value.href, secret, depth + 1, seen);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      const r = redact(v, secret || isSecretField(k), depth + 1, seen);
      if (r !== undefined) out[k] = r;
    }
    return out;
  } finally {
    seen.delete(value);
  }
}

// ---------------------------------------------------------------------------------------
// The ids of what a line is about

export interface LogContext {
  request_id?: string;
  job_id?: string;
  delivery_id?: string;
}

const context = new AsyncLocalStorage<LogContext>();

/** The ids of the work running now (empty outside any). */
export function currentLogContext(): LogContext {
  return context.getStore() ?? {};
}

/** Runs `fn` with `ids` added to the current ids: every line logged beneath it carries them. */
export function withLogContext<T>(ids: LogContext, fn: () => T): T {
  return context.run({ ...currentLogContext(), ...ids }, fn);
}

/**
 * Runs `fn` with exactly `ids`, dropping the current ones: work that only happens to be
 * started beneath a request (a queued job claimed after it) must not carry its id.
 */
export function withOnlyLogContext<T>(ids: LogContext, fn: () => T): T {
  return context.run({ ...ids }, fn);
}

/**
 * Carries the request id across Moleculer calls, local or over the transporter: a call
 * made beneath a request takes its id as the context's requestID and meta.requestId, and
 * an action run for such a context logs with it.
 */
export const logContextMiddleware: Middleware = {
  name: 'LogContext',
  call(next: (...a: unknown[]) => unknown) {
    return (actionName: string, params: unknown, opts: { requestID?: string; meta?: Record<string, unknown>; parentCtx?: unknown } = {}) => {
      const requestId = currentLogContext().request_id;
      if (!requestId || opts.parentCtx) return next(actionName, params, opts);
      return next(actionName, params, { ...opts, requestID: opts.requestID ?? requestId, meta: { ...(opts.meta ?? {}), requestId } });
    };
  },
  localAction(next: (ctx: { meta?: Record<string, unknown> }) => unknown) {
    return (ctx: { meta?: Record<string, unknown> }) => {
      const requestId = ctx.meta?.requestId;
      if (typeof requestId !== 'string' || currentLogContext().request_id === requestId) return next(ctx);
      return withLogContext({ request_id: requestId }, () => next(ctx));
    };
  },
} as unknown as Middleware;

// ---------------------------------------------------------------------------------------
// Records and lines

const LEVELS: LogLevels[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace'];

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Error) && Object.getPrototypeOf(v) === Object.prototype;
}

/**
 * One record from a logger call. `logger.info({ job_id, ms }, 'capture recorded')`: a
 * leading plain object gives fields; strings make msg; an Error becomes `err` (its
 * message is the msg when there is no other); other objects go in `data` (Moleculer's own
 * lines: `debug('Call action locally.', { action, requestID })`).
 */
export function logRecord(
  level: LogLevels,
  args: unknown[],
  bindings: Partial<LoggerBindings>,
  ids: LogContext = currentLogContext(),
  now = new Date(),
): Record<string, unknown> {
  let fields: Record<string, unknown> = {};
  let rest = args;
  if (isPlainObject(args[0])) {
    fields = args[0];
    rest = args.slice(1);
  }
  const parts: string[] = [];
  const data: unknown[] = [];
  let err: Error | undefined;
  for (const a of rest) {
    if (a instanceof Error && !err) err = a;
    else if (typeof a === 'string') parts.push(a);
    else if (typeof a === 'number' || typeof a === 'boolean') parts.push(String(a));
    else if (a instanceof Error) parts.push(a.message);
    else if (a !== undefined) data.push(a);
  }
  const msg = parts.join(' ') || err?.message || '';
  const record: Record<string, unknown> = {
    time: now.toISOString(),
    level,
    node: bindings.nodeID,
    ...(bindings.ns ? { ns: bindings.ns } : {}),
    module: bindings.mod,
    msg,
    ...ids,
    ...fields,
    ...(data.length ? { data: data.length === 1 ? data[0] : data } : {}),
    ...(err ? { err } : {}),
  };
  return redact(record) as Record<string, unknown>;
}

/** A redacted record as one line: JSON, or `time LEVEL node/module: msg key=value ...` as text. */
export function formatLine(record: Record<string, unknown>, format: LogFormat): string {
  if (format === 'json') return JSON.stringify(record);
  const { time, level, node, module, msg, ns: _ns, err, ...rest } = record;
  const extra = Object.entries(rest)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  const e = err as { stack?: string; message?: string } | undefined;
  const tail = e ? `\n${e.stack ?? e.message}` : '';
  // A line written before there is any node (a configuration error) names only its module.
  const source = `${node === undefined ? '' : `${node}/`}${String(module).toUpperCase()}`;
  return `[${time}] ${String(level).toUpperCase().padEnd(5)} ${source}: ${msg}${extra ? ` ${extra}` : ''}${tail}`;
}

export interface LineLoggerOptions {
  level: LogLevels;
  format: LogFormat;
  /** Where lines go: stdout for the service; the admin CLI sends them to stderr, its stdout is its answer. */
  stream?: { write(line: string): unknown };
}

/** Moleculer's logger for the whole process: every line through logRecord and formatLine. */
export class LineLogger extends Loggers.Base {
  private readonly level: number;
  private readonly format: LogFormat;
  private readonly stream: { write(line: string): unknown };

  constructor(options: LineLoggerOptions) {
    super({ level: options.level });
    this.level = LEVELS.indexOf(options.level);
    this.format = options.format;
    this.stream = options.stream ?? process.stdout;
  }

  override getLogHandler(bindings?: LoggerBindings): Loggers.LogHandler | null {
    return (type, args) => {
      if (LEVELS.indexOf(type) > this.level) return;
      this.stream.write(`${formatLine(logRecord(type, args, bindings ?? {}), this.format)}\n`);
    };
  }
}

/** A line bin/serve.ts writes itself: before any broker exists (a configuration error), or whatever LOG_LEVEL says (readiness). */
export function startupLine(level: LogLevels, msg: string, format: LogFormat = 'json', nodeID?: string, err?: unknown): string {
  return formatLine(logRecord(level, [msg, ...(err === undefined ? [] : [err])], { ...(nodeID ? { nodeID } : {}), mod: 'serve' }, {}), format);
}
