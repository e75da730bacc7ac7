/**
 * Schedule arithmetic. Slots are counted from an anchor: anchor + k x (every interval).
 * Months and years follow the calendar and clamp to the month's end (31 Jan + 1 month is
 * the end of February; the next slot is 31 March again, because each slot is counted from
 * the anchor, not from the previous slot). After downtime the next run is the first slot
 * after now: a configuration captures once, not once per missed slot.
 */
import type { SCHEDULE_INTERVALS } from '../shared/screenshot-options';

export type Interval = (typeof SCHEDULE_INTERVALS)[number];

const FIXED_MS: Partial<Record<Interval, number>> = {
  minutes: 60_000,
  hours: 3_600_000,
  days: 86_400_000,
  weeks: 7 * 86_400_000,
};

/** anchor + n months, clamped to the last day of the target month (UTC). */
export function addMonths(anchorMs: number, months: number): number {
  const d = new Date(anchorMs);
  const year = d.getUTCFullYear();
  const month = d.getUTCMonth() + months;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(year, month, Math.min(d.getUTCDate(), lastDay), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
}

/** The k-th slot after the anchor. */
export function slot(anchorMs: number, every: number, interval: Interval, k: number): number {
  const fixed = FIXED_MS[interval];
  if (fixed !== undefined) return anchorMs + k * every * fixed;
  return addMonths(anchorMs, k * every * (interval === 'years' ? 12 : 1));
}

/** The first slot strictly after `afterMs`. */
export function nextRunAfter(anchorMs: number, every: number, interval: Interval, afterMs: number): number {
  const fixed = FIXED_MS[interval];
  if (fixed !== undefined) {
    const step = every * fixed;
    const k = Math.max(1, Math.floor((afterMs - anchorMs) / step) + 1);
    return anchorMs + k * step;
  }
  // Calendar steps: estimate k from average month length, then correct.
  const monthsPerStep = every * (interval === 'years' ? 12 : 1);
  let k = Math.max(1, Math.floor((afterMs - anchorMs) / (monthsPerStep * 28 * 86_400_000)) - 1);
  while (slot(anchorMs, every, interval, k) <= afterMs) k++;
  while (k > 1 && slot(anchorMs, every, interval, k - 1) > afterMs) k--;
  return slot(anchorMs, every, interval, k);
}
