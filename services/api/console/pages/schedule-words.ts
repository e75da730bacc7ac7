/**
 * A configuration's schedule said in words ("every day at 09:00 UTC"), from its options and
 * the next run the scheduler computed (services/scheduler/schedule.ts nextRunAfter, stored as
 * the configuration's next run): the time of day, weekday or day of the month is the next
 * run's, since every slot is counted from the same anchor.
 */
import { scheduleOf } from '../../../shared/screenshot-options';

const WEEKDAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const SINGULAR = { minutes: 'minute', hours: 'hour', days: 'day', weeks: 'week', months: 'month', years: 'year' } as const;

const two = (n: number) => String(n).padStart(2, '0');

/** "every day at 09:00 UTC", "every 15 minutes", "every 2 weeks on Monday at 09:00 UTC"; "not scheduled (captured when asked)" without a schedule. */
export function scheduleInWords(options: Record<string, unknown>, nextRunAtMs: number | null | undefined): string {
  let s: ReturnType<typeof scheduleOf> = null;
  try {
    s = scheduleOf(options);
  } catch {
    s = null;
  }
  if (!s) return 'not scheduled (captured when asked)';
  const every = s.every === 1 ? `every ${SINGULAR[s.interval]}` : `every ${s.every} ${s.interval}`;
  if (nextRunAtMs === null || nextRunAtMs === undefined || !Number.isFinite(nextRunAtMs)) return every;
  const d = new Date(nextRunAtMs);
  const at = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())} UTC`;
  switch (s.interval) {
    case 'minutes':
      return every;
    case 'hours':
      return `${every} at minute ${two(d.getUTCMinutes())}`;
    case 'days':
      return `${every} at ${at}`;
    case 'weeks':
      return `${every} on ${WEEKDAYS[d.getUTCDay()]} at ${at}`;
    case 'months':
      return `${every} on day ${d.getUTCDate()} at ${at}`;
    case 'years':
      return `${every} on ${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} at ${at}`;
  }
}
