import { expect } from 'chai';
import { scheduleInWords } from '../../../../services/api/console/pages/schedule-words';
import { nextRunAfter } from '../../../../services/scheduler/schedule';

describe('console schedule in words', () => {
  // Sunday 2026-11-29 09:00 UTC is the next run the scheduler computed.
  const next = Date.UTC(2026, 10, 29, 9, 0);
  const scheduled = (every: number, interval: string) => ({ scheduled_screenshot: true, scheduled_every: every, scheduled_interval: interval });

  it('says each interval with the time, weekday or day of its next run', () => {
    expect(scheduleInWords(scheduled(1, 'days'), next)).to.equal('every day at 09:00 UTC');
    expect(scheduleInWords(scheduled(15, 'minutes'), next)).to.equal('every 15 minutes');
    expect(scheduleInWords(scheduled(2, 'hours'), next)).to.equal('every 2 hours at minute 00');
    expect(scheduleInWords(scheduled(1, 'weeks'), next)).to.equal('every week on Sunday at 09:00 UTC');
    expect(scheduleInWords(scheduled(3, 'months'), next)).to.equal('every 3 months on day 29 at 09:00 UTC');
    expect(scheduleInWords(scheduled(1, 'years'), next)).to.equal('every year on 29 November at 09:00 UTC');
  });

  it("agrees with the scheduler's own next run, and says when there is no schedule", () => {
    const anchor = Date.UTC(2026, 0, 5, 7, 30);
    const run = nextRunAfter(anchor, 1, 'days', Date.UTC(2026, 10, 28, 12, 0));
    expect(scheduleInWords(scheduled(1, 'days'), run)).to.equal('every day at 07:30 UTC');
    expect(scheduleInWords({ url: 'https://example.com' }, null)).to.equal('not scheduled (captured when asked)');
    expect(scheduleInWords({ scheduled_screenshot: true }, null), 'no interval: as the API refuses it').to.equal('not scheduled (captured when asked)');
    expect(scheduleInWords(scheduled(1, 'days'), null)).to.equal('every day');
  });
});
