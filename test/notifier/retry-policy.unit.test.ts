/** The retry schedule and the reading of answers (pure). */
import { expect } from 'chai';
import { MAX_ATTEMPTS, afterAttempt, nextAttemptAt } from '../../services/notifier/retry-policy';

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
});
