/**
 * A snap's times, as the api waits for them: its budget (a browser's wait and the capture's own
 * time), capture.take's backstop timeout, and how long its credit may stay pending before
 * billing takes the request holding it for stopped (a process killed mid-request).
 */
import type { Config } from '../../shared/config';

/** Beyond the last attempt's backstop and the settlement's retries, before a snap's credit is given back. */
const SETTLE_MARGIN_MS = 60_000;

/** The broker's timeout for capture.take: a backstop, as the engine enforces the capture's own budget. */
export function takeTimeoutMs(config: Pick<Config, 'capture' | 'ai'>): number {
  return config.capture.timeoutMs + config.capture.queueTimeoutMs + config.ai.timeoutMs + 30_000;
}

export interface SnapTiming {
  /** The request's budget (CAPTURE_QUEUE_TIMEOUT_MS and CAPTURE_TIMEOUT_MS), within which it is taken again when its capture instance disappears. */
  budgetMs: number;
  /**
   * Its credit's deadline (billing.reserve's settleWithinMs): an attempt starts within the
   * budget and ends within capture.take's backstop, then the settlement is asked for up to
   * `settleRetryMs`.
   */
  settleWithinMs: number;
}

export function snapTiming(config: Pick<Config, 'capture' | 'ai'>, settleRetryMs: number): SnapTiming {
  const budgetMs = config.capture.queueTimeoutMs + config.capture.timeoutMs;
  return { budgetMs, settleWithinMs: budgetMs + takeTimeoutMs(config) + settleRetryMs + SETTLE_MARGIN_MS };
}
