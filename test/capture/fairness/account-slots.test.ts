/**
 * The per-account counts of running and waiting captures (services/capture/fairness/account-slots.ts),
 * in the process and on this machine's real Redis (a fresh key prefix), with a controlled clock:
 * the plan's limits, idempotent tickets, and leases that let a dead instance's captures go.
 */
import { expect } from 'chai';
import { type AccountSlots, MemoryAccountSlots, RedisAccountSlots, type Ticket } from '../../../services/capture/fairness/account-slots';
import { REDIS_URL, quietLog, uniqueName } from '../../support/backends';

const LEASE_MS = 10_000;
const limits = { maxConcurrent: 2, maxQueued: 1 };
const ticket = (id: string, accountId = 'A'): Ticket => ({ id, accountId, limits });

for (const backend of ['memory', 'redis'] as const) {
  describe(`account capture counts (${backend})`, () => {
    // Ahead of the real time: Redis expires its keys by the real clock.
    let clock: number;
    let slots: AccountSlots;

    beforeEach(() => {
      clock = Date.now() + 60_000;
      const now = () => clock;
      slots =
        backend === 'memory' ? new MemoryAccountSlots(LEASE_MS, now) : new RedisAccountSlots(REDIS_URL, uniqueName('slotstest:'), LEASE_MS, quietLog, now);
    });
    afterEach(() => slots.close());

    it('admits captures until the account has max_concurrent + max_queued in flight, then refuses with its counts', async () => {
      expect(await slots.admit(ticket('t1'))).to.deep.equal({ ok: true });
      expect(await slots.admit(ticket('t2'))).to.deep.equal({ ok: true });
      expect(await slots.start(ticket('t1'))).to.equal(true);
      expect(await slots.admit(ticket('t3'))).to.deep.equal({ ok: true });
      expect(await slots.admit(ticket('t4'))).to.deep.equal({ ok: false, running: 1, waiting: 2 });
      // Admitting a ticket it holds again changes nothing; another account has its own counts.
      expect(await slots.admit(ticket('t2'))).to.deep.equal({ ok: true });
      expect(await slots.admit(ticket('u1', 'B'))).to.deep.equal({ ok: true });
      expect(await slots.counts('A')).to.deep.equal({ running: 1, waiting: 2 });
    });

    it('starts at most max_concurrent captures; a running ticket starts again (a job taken over), a job starts without waiting', async () => {
      await slots.admit(ticket('t1'));
      await slots.admit(ticket('t2'));
      await slots.admit(ticket('t3'));
      expect(await slots.start(ticket('t1'))).to.equal(true);
      expect(await slots.start(ticket('job1'))).to.equal(true);
      expect(await slots.start(ticket('t2'))).to.equal(false);
      expect(await slots.start(ticket('job1'))).to.equal(true);
      expect(await slots.counts('A')).to.deep.equal({ running: 2, waiting: 2 });
      await slots.finish(ticket('t1'));
      expect(await slots.start(ticket('t2'))).to.equal(true);
      expect(await slots.counts('A')).to.deep.equal({ running: 2, waiting: 1 });
    });

    it('remembers when each account last started a capture', async () => {
      await slots.start(ticket('t1'));
      clock += 500;
      await slots.start(ticket('u1', 'B'));
      const last = await slots.lastStarts(['A', 'B', 'C']);
      expect([...last.entries()].sort()).to.deep.equal([
        ['A', clock - 500],
        ['B', clock],
      ]);
    });

    it('lets a ticket go when its lease runs out (its instance died), keeps one that is renewed, and never brings a finished one back', async () => {
      await slots.start(ticket('kept'));
      await slots.start(ticket('dead'));
      await slots.admit(ticket('finished'));
      await slots.finish(ticket('finished'));
      clock += LEASE_MS - 1;
      await slots.renew([ticket('kept'), ticket('finished')]);
      clock += 2;
      expect(await slots.counts('A')).to.deep.equal({ running: 1, waiting: 0 });
      expect(await slots.start(ticket('next'))).to.equal(true);
      expect(await slots.start(ticket('one-too-many'))).to.equal(false);
    });
  });
}
