import { expect } from 'chai';
import { counterExpiry, limitsFor, monthOf } from '../../services/billing/limits';

const free = { name: 'free', paid: false, screenshot_limit: 25, max_concurrent: 1, max_queued: 2 };
const paid = { name: 'paid', paid: true, screenshot_limit: 10000, max_concurrent: 1, max_queued: 8 };

describe('billing limits (spec, Limits)', () => {
  it('gives the free plan 25 screenshots, 32 MiB of bandwidth, 25 AI credits and 25 domains of research', () => {
    expect(limitsFor({ plan: free, addons: {} })).to.deep.equal({ screenshots: 25, bandwidth_bytes: 33_554_432, ai_credits: 25, research_domains: 25 });
  });

  it('ignores addons on the free plan (they are sold on paid plans)', () => {
    expect(limitsFor({ plan: free, addons: { ai_credits: 1, bandwidth_2gb: 3 } })).to.deep.equal({
      screenshots: 25,
      bandwidth_bytes: 33_554_432,
      ai_credits: 25,
      research_domains: 25,
    });
  });

  it('adds 1000 AI credits per ai_credits addon and 2 GiB per bandwidth unit on a paid plan, which researches 1000 domains a month', () => {
    expect(limitsFor({ plan: paid, addons: { ai_credits: 1, bandwidth_2gb: 2 } })).to.deep.equal({
      screenshots: 10000,
      ai_credits: 1025,
      bandwidth_bytes: 33_554_432 + 2 * 2 * 1024 ** 3,
      research_domains: 1000,
    });
  });

  it('counts usage by UTC month and keeps counters a week past the month', () => {
    expect(monthOf(new Date('2026-12-31T23:59:59Z'))).to.equal('2026-12');
    expect(monthOf(new Date('2027-01-01T00:00:00Z'))).to.equal('2027-01');
    expect(counterExpiry(new Date('2026-12-15T10:00:00Z')).toISOString()).to.equal('2027-01-08T00:00:00.000Z');
  });
});
