/**
 * Moleculer broker options, derived from the validated config: no transporter in embedded
 * mode, NATS (or any Moleculer transporter URL) in the full stack.
 */
import type { BrokerOptions } from 'moleculer';
import type { Config } from './services/shared/config';
import { LineLogger, type LineLoggerOptions, logContextMiddleware } from './services/shared/logging';
import { forgetTimedOutCalls } from './runtime/timed-out-calls';

/** `logStream`: where log lines go (stdout; the admin CLI passes stderr, its stdout is its answer). */
export function brokerOptions(config: Readonly<Config>, logStream?: LineLoggerOptions['stream']): BrokerOptions {
  return {
    namespace: config.namespace,
    ...(config.nodeId ? { nodeID: config.nodeId } : {}),
    transporter: config.transporter ?? undefined,
    logLevel: config.logLevel,
    // One JSON line per entry (LOG_FORMAT=text for a person), redacted (services/shared/logging.ts).
    logger: new LineLogger({ level: config.logLevel, format: config.logFormat, ...(logStream ? { stream: logStream } : {}) }),
    middlewares: [logContextMiddleware, forgetTimedOutCalls],
    // Internal calls are short (a database row, a counter). A request lost with its node or
    // with the transporter (a NATS restart) fails after this long with 503 capacity_exhausted
    // instead of holding the caller. Actions that may legitimately take longer (a capture,
    // a provider or proxy check, an analysis) declare their own timeout.
    requestTimeout: 15_000,
    retryPolicy: { enabled: false },
    // Errors must keep their type/code/data across the transporter (see shared/errors.ts).
    errorRegenerator: undefined,
    registry: { strategy: 'RoundRobin', preferLocal: true },
    // A node that died (crash, kill) is dropped from the registry within ~10 s.
    heartbeatInterval: 3,
    heartbeatTimeout: 10,
    tracking: { enabled: true, shutdownTimeout: 30_000 },
    // bin/serve.ts owns SIGINT/SIGTERM. Moleculer's own handlers would race it: a second
    // broker.stop() returns at once and the process exited before browsers were quit.
    skipProcessEventRegistration: true,
  };
}
