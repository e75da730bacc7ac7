/**
 * The behaviour every UsageStore must show, for the suites of each backend
 * (usage-store.unit.test.ts: in process; usage-store.test.ts: Redis).
 */
import { expect } from 'chai';
import type { UsageStore } from '../../services/billing/usage-store';
import type { Reservation } from '../../services/shared/contracts';
import { uniqueName } from '../support/backends';

export const limits = { screenshots: 3, ai_credits: 2, bandwidth_bytes: 1000, research_domains: 4 };
export const expiry = new Date(Date.now() + 3600_000);
let n = 0;
export const reservation = (accountId: string, amounts: Reservation['amounts'], month = '2026-11'): Reservation => ({
  id: `r${++n}`,
  accountId,
  month,
  amounts,
});

export function behavesAsAUsageStore(name: string, make: () => { store: UsageStore; prefix: string }) {
  describe(`${name} usage store`, () => {
    let store: UsageStore;
    let prefix: string;
    beforeEach(() => ({ store, prefix } = make()));
    afterEach(() => store.close());

    it('reserves up to the limit and refuses the request that would pass it', async () => {
      for (let i = 0; i < 3; i++) expect(await store.reserve(reservation('a', { screenshots: 1 }), limits, expiry)).to.deep.equal({ ok: true });
      expect(await store.reserve(reservation('a', { screenshots: 1 }), limits, expiry)).to.deep.equal({
        ok: false,
        exceeded: 'screenshots',
        used: 3,
        limit: 3,
      });
      expect((await store.usage('a', '2026-11')).screenshots).to.equal(3);
    });

    it('reserves several kinds at once, or none of them', async () => {
      expect(await store.reserve(reservation('b', { screenshots: 1, ai_credits: 3 }), limits, expiry)).to.include({ ok: false, exceeded: 'ai_credits' });
      expect(await store.usage('b', '2026-11')).to.deep.equal({ screenshots: 0, ai_credits: 0, bandwidth_bytes: 0, research_domains: 0 });
      expect(await store.reserve(reservation('b', { screenshots: 1, ai_credits: 2 }), limits, expiry)).to.deep.equal({ ok: true });
      expect(await store.usage('b', '2026-11')).to.deep.equal({ screenshots: 1, ai_credits: 2, bandwidth_bytes: 0, research_domains: 0 });
      expect(await store.reserve(reservation('b', { research_domains: 5 }), limits, expiry)).to.include({
        ok: false,
        exceeded: 'research_domains',
        used: 0,
        limit: 4,
      });
      const research = reservation('b', { research_domains: 4 });
      expect(await store.reserve(research, limits, expiry)).to.deep.equal({ ok: true });
      expect((await store.usage('b', '2026-11')).research_domains).to.equal(4);
      expect(await store.refund(research)).to.equal(true);
      expect(await store.usage('b', '2026-11')).to.deep.equal({ screenshots: 1, ai_credits: 2, bandwidth_bytes: 0, research_domains: 0 });
    });

    it('refunds a reservation exactly once', async () => {
      const r = reservation('c', { screenshots: 2 });
      await store.reserve(r, limits, expiry);
      expect(await store.refund(r)).to.equal(true);
      expect(await store.refund(r)).to.equal(false);
      expect((await store.usage('c', '2026-11')).screenshots).to.equal(0);
    });

    it('counts a pending reservation id once however often it is reserved (a retried job)', async () => {
      const r = { ...reservation('h', { screenshots: 1 }), id: 'job:abc' };
      expect(await store.reserve(r, limits, expiry)).to.deep.equal({ ok: true });
      expect(await store.reserve(r, limits, expiry)).to.deep.equal({ ok: true });
      expect((await store.usage('h', '2026-11')).screenshots).to.equal(1);
      expect(await store.refund(r)).to.equal(true);
      expect((await store.usage('h', '2026-11')).screenshots).to.equal(0);
    });

    it('does not refund a committed reservation', async () => {
      const r = reservation('d', { screenshots: 1 });
      await store.reserve(r, limits, expiry);
      expect(await store.commit(r)).to.equal(true);
      expect(await store.refund(r)).to.equal(false);
      expect((await store.usage('d', '2026-11')).screenshots).to.equal(1);
    });

    it('gives back a reservation with a deadline once it is past, and none settled or without one', async () => {
      const now = Date.now();
      const account = uniqueName('overdue');
      const overdue = { ...reservation(account, { screenshots: 1, ai_credits: 1 }), settleBy: now - 1 };
      const later = { ...reservation(account, { screenshots: 1 }), settleBy: now + 60_000 };
      const committed = { ...reservation(account, { screenshots: 1 }), settleBy: now - 1 };
      const none = reservation(account, { ai_credits: 1 });
      for (const r of [overdue, later, committed, none]) expect(await store.reserve(r, limits, expiry)).to.deep.equal({ ok: true });
      expect(await store.commit(committed)).to.equal(true);
      expect(await store.usage(account, '2026-11')).to.include({ screenshots: 3, ai_credits: 2 });

      expect(await store.giveBackOverdue(now)).to.equal(1);
      expect(await store.usage(account, '2026-11')).to.include({ screenshots: 2, ai_credits: 1 });
      // Given back once: the late settlement and a second pass find nothing.
      expect(await store.commit(overdue)).to.equal(false);
      expect(await store.giveBackOverdue(now)).to.equal(0);
      expect(await store.giveBackOverdue(now + 60_000)).to.equal(1);
      expect(await store.usage(account, '2026-11')).to.include({ screenshots: 1, ai_credits: 1 });
      expect(await store.refund(none)).to.equal(true);
    });

    it('keeps months and accounts apart', async () => {
      await store.reserve(reservation('e', { screenshots: 3 }), limits, expiry);
      expect(await store.reserve(reservation('e', { screenshots: 1 }, '2026-12'), limits, expiry)).to.deep.equal({ ok: true });
      expect(await store.reserve(reservation('f', { screenshots: 3 }), limits, expiry)).to.deep.equal({ ok: true });
    });

    it('limits requests per window and says when to retry', async () => {
      const now = new Date('2026-11-21T10:00:10Z');
      const account = uniqueName('rate');
      for (let i = 0; i < 3; i++) expect((await store.hitRate(account, 3, 60, now)).allowed).to.equal(true);
      const refused = await store.hitRate(account, 3, 60, now);
      expect(refused.allowed).to.equal(false);
      expect(refused.retryAfter, 'the seconds left of the clock minute').to.equal(50);
    });

    it('counts each account that ran out of a kind once a month, kinds and months apart', async () => {
      const account = uniqueName('h');
      for (const a of ['1', '2', '1', '3']) await store.noteExhausted('screenshots', account + a, '2026-11', expiry);
      await store.noteExhausted('ai_credits', `${account}1`, '2026-11', expiry);
      expect(await store.exhaustedAccounts('screenshots', '2026-11')).to.equal(3);
      expect(await store.exhaustedAccounts('ai_credits', '2026-11')).to.equal(1);
      expect(await store.exhaustedAccounts('bandwidth_bytes', '2026-11')).to.equal(0);
      await store.noteExhausted('screenshots', `${account}4`, '2026-12', expiry);
      expect(await store.exhaustedAccounts('screenshots', '2026-12')).to.equal(1);
      expect(await store.exhaustedAccounts('ai_credits', '2026-12')).to.equal(0);
    });

    it('never passes the limit under many concurrent reservations', async () => {
      const tight = { ...limits, screenshots: 7 };
      const outcomes = await Promise.all(Array.from({ length: 60 }, () => store.reserve(reservation('g', { screenshots: 1 }), tight, expiry)));
      expect(outcomes.filter((o) => o.ok)).to.have.length(7);
      expect((await store.usage('g', '2026-11')).screenshots).to.equal(7);
      void prefix;
    });
  });
}
