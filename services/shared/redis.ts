/**
 * The Redis connections of the full stack (billing's usage counters and rate windows,
 * capture's account counts), written once: how they connect, what an outage logs and what
 * it answers.
 *
 * While Redis cannot be reached, ioredis keeps reconnecting and fails each command after
 * `maxRetriesPerRequest` reconnection attempts (MaxRetriesPerRequestError, within a second or
 * so), so a request is not held for the whole outage. What needs Redis then answers 503
 * `service_unavailable` with Retry-After (redisUnavailable), not 500: the service is not
 * broken and the request was not wrong; the same request works once Redis is back, which
 * ioredis finds by itself. The outage is logged through the service's logger once, when it
 * starts (the first failed connection), and once when it ends; without a listener ioredis
 * would print a plain "[ioredis] Unhandled error event" line for every attempt.
 */
import Redis, { type RedisOptions } from 'ioredis';
import type { LoggerInstance } from 'moleculer';
import { serviceError } from './errors';

/** Seconds a client is told to wait (Retry-After) while Redis is unreachable. */
export const REDIS_RETRY_AFTER_SECONDS = 5;

/** How long one attempt to connect to Redis may take (ioredis's default is 10 s). */
const CONNECT_TIMEOUT_MS = 2_000;

/** Socket errors of a connection that could not be made or was lost. */
const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);

/** Replies of a Redis that is there but cannot serve yet (loading its data, a failover). */
const NOT_YET_REPLIES = /^(LOADING|MASTERDOWN|TRYAGAIN|CLUSTERDOWN)\b/;

/** A connection to Redis whose outages go through `log`, once each; `purpose` names it there. */
export function connectRedis(url: string, purpose: string, log: Pick<LoggerInstance, 'error' | 'info'>, options: RedisOptions = {}): Redis {
  // A connection not made within CONNECT_TIMEOUT_MS is tried again: a Redis cut off by the network (its packets dropped) fails a request within seconds, as a refused one does.
  const redis = new Redis(url, { maxRetriesPerRequest: 2, enableOfflineQueue: true, connectTimeout: CONNECT_TIMEOUT_MS, ...options });
  const where = redis.options.path ?? `${redis.options.host}:${redis.options.port}`;
  let down = false;
  redis.on('error', (err: Error) => {
    if (down) return;
    down = true;
    log.error(`Redis (${purpose}) at ${where} cannot be reached: ${err.message}. Reconnecting; until then what needs it answers 503 service_unavailable.`);
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    log.info(`Redis (${purpose}) at ${where} is reachable again.`);
  });
  return redis;
}

/** Whether `err` says Redis could not be reached (as opposed to a command it refused). */
export function isRedisDown(err: unknown): boolean {
  const e = err as { name?: unknown; message?: unknown; code?: unknown } | null;
  if (!e) return false;
  if (e.name === 'MaxRetriesPerRequestError') return true;
  if (typeof e.code === 'string' && CONNECTION_CODES.has(e.code)) return true;
  return typeof e.message === 'string' && (e.message === 'Connection is closed.' || NOT_YET_REPLIES.test(e.message));
}

/** The answer to a request that needs Redis while it cannot be reached. */
export function redisUnavailable() {
  return serviceError('service_unavailable', 'A store this request needs cannot be reached right now (the operator is told); retry shortly.', {
    retryAfter: REDIS_RETRY_AFTER_SECONDS,
  });
}

/**
 * `store` (an object whose methods use Redis) with each method's failure to reach Redis
 * turned into redisUnavailable; every other error passes as it is.
 */
export function answeringUnavailable<T extends object>(store: T): T {
  return new Proxy(store, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const out: unknown = value.apply(target, args);
        if (!(out instanceof Promise)) return out;
        return out.catch((err: unknown) => {
          throw isRedisDown(err) ? redisUnavailable() : err;
        });
      };
    },
  });
}
