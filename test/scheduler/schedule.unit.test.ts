import { expect } from 'chai';
import { addMonths, nextRunAfter } from '../../services/scheduler/schedule';
import { scheduleOf } from '../../services/shared/screenshot-options';
import { errorOf } from '../support/errors';

const t = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

describe('schedule arithmetic', () => {
  it('steps minutes, hours, days and weeks from the anchor', () => {
    const anchor = t('2026-11-21T10:00:00Z');
    expect(iso(nextRunAfter(anchor, 1, 'minutes', anchor))).to.equal('2026-11-21T10:01:00.000Z');
    expect(iso(nextRunAfter(anchor, 15, 'minutes', anchor + 1))).to.equal('2026-11-21T10:15:00.000Z');
    expect(iso(nextRunAfter(anchor, 2, 'hours', anchor))).to.equal('2026-11-21T12:00:00.000Z');
    expect(iso(nextRunAfter(anchor, 1, 'days', anchor))).to.equal('2026-11-22T10:00:00.000Z');
    expect(iso(nextRunAfter(anchor, 1, 'weeks', anchor))).to.equal('2026-11-28T10:00:00.000Z');
  });

  it('follows the calendar for months: 31 Jan + 1 month is the end of February, then 31 March', () => {
    const anchor = t('2027-01-31T08:00:00Z');
    expect(iso(addMonths(anchor, 1))).to.equal('2027-02-28T08:00:00.000Z');
    expect(iso(nextRunAfter(anchor, 1, 'months', anchor))).to.equal('2027-02-28T08:00:00.000Z');
    expect(iso(nextRunAfter(anchor, 1, 'months', t('2027-02-28T08:00:00Z')))).to.equal('2027-03-31T08:00:00.000Z');
    expect(iso(nextRunAfter(t('2028-02-29T00:00:00Z'), 1, 'years', t('2028-03-01T00:00:00Z')))).to.equal('2029-02-28T00:00:00.000Z');
  });

  it('after downtime gives the first slot after now, not every missed slot', () => {
    const anchor = t('2026-01-01T00:00:00Z');
    const now = t('2026-11-21T10:30:30Z');
    expect(iso(nextRunAfter(anchor, 1, 'minutes', now))).to.equal('2026-11-21T10:31:00.000Z');
    expect(iso(nextRunAfter(anchor, 3, 'months', now))).to.equal('2027-01-01T00:00:00.000Z');
    expect(iso(nextRunAfter(anchor, 1, 'years', now))).to.equal('2027-01-01T00:00:00.000Z');
  });

  it('reads the schedule of a configuration: none unless scheduled, every defaults to 1, an interval is required', () => {
    expect(scheduleOf({ url: 'http://x.test/', scheduled_interval: 'hours' })).to.equal(null);
    expect(scheduleOf({ url: 'http://x.test/', scheduled_screenshot: true, scheduled_interval: 'days' })).to.deep.equal({ every: 1, interval: 'days' });
    expect(scheduleOf({ url: 'http://x.test/', scheduled_screenshot: true, scheduled_every: 3, scheduled_interval: 'weeks' })).to.deep.equal({
      every: 3,
      interval: 'weeks',
    });
    const err = errorOf(() => scheduleOf({ url: 'http://x.test/', scheduled_screenshot: true }));
    expect([err.code, err.type, err.message]).to.deep.equal([
      400,
      'invalid_parameter',
      'scheduled_interval is required with scheduled_screenshot=true: one of minutes, hours, days, weeks, months, years.',
    ]);
    // Named, so the console shows the note beside that field.
    let param: unknown;
    try {
      scheduleOf({ url: 'http://x.test/', scheduled_screenshot: true });
    } catch (e) {
      param = (e as { data?: { param?: unknown } }).data?.param;
    }
    expect(param).to.equal('scheduled_interval');
  });
});
