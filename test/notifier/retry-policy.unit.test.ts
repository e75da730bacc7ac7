/** The retry schedule and the reading of answers (pure). */
import { expect } from 'chai';
import { retryAfterSeconds } from '../../services/notifier/http-post';
import { MAX_ATTEMPTS, MAX_RETRY_AFTER_MS, afterAttempt, nextAttemptAt } from '../../services/notifier/retry-policy';

describe('webhook retry policy', () => {
  it('follows DESIGN section 3: 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h, eight attempts in all', () => {
    const middle = [1, 2, 3, 4, 5, 6, 7].map((n) => nextAttemptAt(n, 0, 0.5));
    expect(middle).to.deep.equal([5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(MAX_ATTEMPTS).to.equal(8);
    expect(nextAttemptAt(8, 0, 0.5)).to.equal(null);
  });

  it('jitters each delay by up to 20% either way', () => {
    expect(nextAttemptAt(1, 1000, 0)).to.equal(1000 + 4_000);
    expect(nextAttemptAt(1, 1000, 0.999999)).to.be.closeTo(1000 + 6_000, 1);
  });

  it('delivers on 2xx, stops on 410, retries anything else, fails after the last attempt', () => {
    const answer = (status: number | null, body = '') => ({ status, body, retryAfter: null });
    expect(afterAttempt('webhook', answer(204), 1, 0)).to.deep.equal({ status: 'delivered', nextAt: null });
    expect(afterAttempt('webhook', answer(410), 1, 0)).to.deep.equal({ status: 'failed', nextAt: null });
    expect(afterAttempt('webhook', answer(301), 1, 0, 0.5)).to.deep.equal({ status: 'pending', nextAt: 5_000 });
    expect(afterAttempt('webhook', answer(null), 2, 0, 0.5)).to.deep.equal({ status: 'pending', nextAt: 300_000 });
    expect(afterAttempt('webhook', answer(500), 8, 0, 0.5)).to.deep.equal({ status: 'failed', nextAt: null });
    expect(afterAttempt('slack', answer(200, 'ok\n'), 1, 0)).to.deep.equal({ status: 'delivered', nextAt: null });
    expect(afterAttempt('slack', answer(200, 'no_text'), 1, 0, 0.5).status).to.equal('pending');
    expect(afterAttempt('slack', { status: 429, body: '', retryAfter: 60 }, 1, 0, 0.5)).to.deep.equal({ status: 'pending', nextAt: 60_000 });
  });

  it("moves an attempt later by a 429's or 503's Retry-After, never earlier, and at most by the schedule's longest delay", () => {
    const outcome = (status: number, retryAfter: number | null) => afterAttempt('webhook', { status, body: '', retryAfter }, 1, 0, 0.5);
    expect(outcome(503, 40)).to.deep.equal({ status: 'pending', nextAt: 40_000 });
    expect(outcome(429, 1)).to.deep.equal({ status: 'pending', nextAt: 5_000 });
    expect(outcome(500, 40)).to.deep.equal({ status: 'pending', nextAt: 5_000 });
    // 35 days asked: 10 hours given.
    expect(outcome(429, 3_000_000)).to.deep.equal({ status: 'pending', nextAt: MAX_RETRY_AFTER_MS });
    expect(MAX_RETRY_AFTER_MS).to.equal(10 * 3_600_000);
  });

  it('reads Retry-After as seconds or as an HTTP-date', () => {
    const now = Date.parse('2026-11-30T12:00:00Z');
    expect(retryAfterSeconds('120', now)).to.equal(120);
    expect(retryAfterSeconds('Mon, 30 Nov 2026 12:01:00 GMT', now)).to.equal(60);
    expect(retryAfterSeconds('Mon, 30 Nov 2026 11:00:00 GMT', now)).to.equal(0);
    for (const bad of [undefined, '', 'soon', '-5', '1.5']) expect(retryAfterSeconds(bad, now), String(bad)).to.equal(null);
  });
});
