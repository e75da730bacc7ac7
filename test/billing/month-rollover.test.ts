/**
 * A configuration's job started (its credit reserved under job:<id>) just before a month ends,
 * and failing when the worker runs it just after: the refund goes to the month that was charged.
 * In process (embedded SQLite) and in Redis (the full stack), billing's clock injected.
 */
import { expect } from 'chai';
import { withCaptureCredits } from '../../services/billing/public/credits';
import { type AccountContext, call } from '../../services/shared/contracts';
import { type Backend, backendConfig } from '../support/backends';
import { type RunningSystem, runSystem } from '../support/system';

for (const backend of ['sqlite', 'mysql'] as Backend[]) {
  describe(`a job reserved in one month and settled in the next (${backend})`, function () {
    this.timeout(30_000);
    let sys: RunningSystem;
    let cleanup: () => Promise<void>;
    let clock = new Date('2026-11-30T23:59:59.500Z');
    before(async () => {
      const b = await backendConfig(backend, { SERVICES: 'billing' });
      cleanup = b.cleanup;
      sys = await runSystem(b.config, { billing: { now: () => clock } });
    });
    after(async () => {
      await sys?.stop();
      await cleanup?.();
    });

    it('refunds the month that was charged, and leaves the next month alone', async () => {
      clock = new Date('2026-11-30T23:59:59.500Z');
      const { account_id } = await sys.account('free');
      const account: AccountContext = await call(sys.broker, 'billing.account', { accountId: account_id });
      const usage = async (at: string) => {
        clock = new Date(at);
        return (await call(sys.broker, 'billing.usage', { account })).usage.screenshots;
      };
      // As startJob (config-routes.ts): reserved under job:<id> and held for the worker.
      await withCaptureCredits(sys.broker, { account, amounts: { screenshots: 1 }, reservationId: 'job:J1' }, false, async () => 'cfg', {
        settle: () => 'hold',
        analysed: () => true,
      });
      expect(await usage('2026-11-30T23:59:59.600Z')).to.equal(1);
      // December: two captures made, then the worker reserves the job again by its id (as runJob) and its capture fails.
      clock = new Date('2026-12-01T00:00:00.500Z');
      await call(sys.broker, 'billing.charge', { accountId: account_id, amounts: { screenshots: 2 } });
      const failed = await withCaptureCredits(
        sys.broker,
        { accountId: account_id, amounts: { screenshots: 1 }, reservationId: 'job:J1' },
        false,
        async () => {
          throw new Error('page_load_failed');
        },
        { settle: () => 'commit', analysed: () => true, onFailure: async () => 'refund' },
      ).catch((err: Error) => err);
      expect((failed as Error).message).to.equal('page_load_failed');
      expect(await usage('2026-12-01T00:00:01.000Z'), 'December keeps its two captures').to.equal(2);
      expect(await usage('2026-11-30T23:59:59.900Z'), 'November is refunded the failed job').to.equal(0);
    });

    it('releases a job given up after the month ended from the month it was reserved in', async () => {
      clock = new Date('2026-11-30T23:59:59.500Z');
      const { account_id } = await sys.account('free');
      await call(sys.broker, 'billing.reserveFor', { accountId: account_id, amounts: { screenshots: 1 }, reservationId: 'job:J2' });
      clock = new Date('2026-12-01T00:00:00.500Z');
      await call(sys.broker, 'billing.charge', { accountId: account_id, amounts: { screenshots: 1 } });
      // As releaseCredits: by id, no month named.
      expect(await call(sys.broker, 'billing.release', { accountId: account_id, reservationId: 'job:J2' })).to.deep.equal({ released: true });
      const account: AccountContext = await call(sys.broker, 'billing.account', { accountId: account_id });
      expect((await call(sys.broker, 'billing.usage', { account })).usage.screenshots, 'December').to.equal(1);
      clock = new Date('2026-11-30T23:59:59.900Z');
      expect((await call(sys.broker, 'billing.usage', { account })).usage.screenshots, 'November').to.equal(0);
    });
  });
}
