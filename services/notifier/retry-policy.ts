/**
 * When a delivery is tried again, and what an answer means (DESIGN section 3). Pure.
 *
 * The schedule is Svix's: at once, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h after the
 * previous attempt (eight attempts over about a day and a half), each delay with up to 20%
 * jitter either way, so receivers coming back from an outage are not hit by every
 * delivery in the same second. A 429's or 503's Retry-After moves an attempt later, up to
 * MAX_RETRY_AFTER_MS.
 */

/** Delay before attempt n+1 after attempt n failed (index n-1); the first attempt is at once. */
export const RETRY_DELAYS_MS = [5_000, 5 * 60_000, 30 * 60_000, 2 * 3_600_000, 5 * 3_600_000, 10 * 3_600_000, 10 * 3_600_000] as const;

/** The longest a receiver's Retry-After may push an attempt back: the schedule's longest delay. */
export const MAX_RETRY_AFTER_MS = Math.max(...RETRY_DELAYS_MS);

/** Attempts a delivery gets in all. */
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length + 1;

const JITTER = 0.2;

/**
 * When the next attempt is due after `attemptsMade` failed ones, or null when none is left.
 * `random` is in [0, 1) (Math.random; tests pass a fixed value).
 */
export function nextAttemptAt(attemptsMade: number, now: number, random: number = Math.random()): number | null {
  const base = RETRY_DELAYS_MS[attemptsMade - 1];
  if (base === undefined) return null;
  return now + Math.round(base * (1 - JITTER + 2 * JITTER * random));
}

/** The outcome of one attempt: a 2xx delivers, 410 Gone stops, anything else (3xx included) is retried. */
export type AttemptVerdict = 'delivered' | 'retry' | 'stop';

export function verdictOf(status: number | null): AttemptVerdict {
  if (status !== null && status >= 200 && status < 300) return 'delivered';
  if (status === 410) return 'stop';
  return 'retry';
}

/** What one attempt's answer is, as the sender saw it. */
export interface AttemptAnswer {
  status: number | null;
  body: string;
  retryAfter: number | null;
}

/**
 * Where a delivery goes after an attempt: delivered, failed (410, or no attempt left), or
 * pending until the next attempt. A Slack incoming webhook has delivered only when it
 * answers 200 with the body `ok`, and its 429 says when to come back (Retry-After).
 */
export function afterAttempt(
  sendTo: 'webhook' | 'slack',
  answer: AttemptAnswer,
  attemptsMade: number,
  now: number,
  random: number = Math.random(),
): { status: 'delivered' | 'failed' | 'pending'; nextAt: number | null } {
  const verdict = sendTo === 'slack' && answer.status === 200 && answer.body.trim() !== 'ok' ? 'retry' : verdictOf(answer.status);
  if (verdict === 'delivered') return { status: 'delivered', nextAt: null };
  if (verdict === 'stop') return { status: 'failed', nextAt: null };
  const scheduled = nextAttemptAt(attemptsMade, now, random);
  if (scheduled === null) return { status: 'failed', nextAt: null };
  // A receiver's Retry-After (429 or 503) can only push the attempt later, and by at most
  // the schedule's longest delay: a receiver cannot park a delivery for weeks.
  if ((answer.status === 429 || answer.status === 503) && answer.retryAfter !== null) {
    return { status: 'pending', nextAt: Math.max(scheduled, now + Math.min(answer.retryAfter * 1000, MAX_RETRY_AFTER_MS)) };
  }
  return { status: 'pending', nextAt: scheduled };
}
