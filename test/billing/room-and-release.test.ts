/**
 * billing.checkRoom and billing.release on the real billing service, in process (SQLite,
 * counters in memory) and full stack (MariaDB, counters in Redis): what a month has left is
 * answered without anything being reserved, and a reservation for work that never ran is
 * given back by its id without one being made, so neither leaves usage or a refusal behind.
 */
import { expect } from 'chai';
import { type AccountContext, call } from '../../services/shared/contracts';
import { type Backend, backendConfig } from '../support/backends';
import { type RunningSystem, runSystem } from '../support/system';

for (const backend of ['sqlite', 'mysql'] as Backend[]) {
  describe(`billing room and release (${backend})`, function () {
    this.timeout(30_000);
    let sys: RunningSystem;
    let cleanup: () => Promise<void>;
    before(async () => {
      const b = await backendConfig(backend, { SERVICES: 'billing' });
      cleanup = b.cleanup;
      sys = await runSystem(b.config);
    });
    after(async () => {
      await sys?.stop();
      await cleanup?.();
    });

    const freeAccount = async (): Promise<AccountContext> => {
      const { account_id } = await sys.account('free');
      return call(sys.broker, 'billing.account', { accountId: account_id });
    };
    const usage = async (account: AccountContext) => (await call(sys.broker, 'billing.usage', { account })).usage;
    /** Refusals counted for the operator (snap_quota_refusals_total), by kind. */
    const refusals = async (kind: string): Promise<number> => {
      const metrics = await call(sys.broker, 'billing.metrics', {});
      const family = metrics.find((m) => m.name === 'snap_quota_refusals_total');
      return Number(family?.values.find((v) => v.labels.kind === kind)?.value ?? 0);
    };

    it('answers what the month has left of each kind, reserving nothing', async () => {
      const account = await freeAccount();
      await call(sys.broker, 'billing.charge', { accountId: account.accountId, amounts: { screenshots: 20, research_domains: 24 } });
      const room = await call(sys.broker, 'billing.checkRoom', { account, amounts: { screenshots: 5, research_domains: 1 } });
      expect(room.left).to.deep.equal({ screenshots: 5, ai_credits: 25, bandwidth_bytes: 32 * 1024 * 1024, research_domains: 1 });
      // By account id (a caller with only the id), the same answer.
      expect((await call(sys.broker, 'billing.checkRoom', { accountId: account.accountId })).left).to.deep.equal(room.left);
      expect(await usage(account)).to.deep.equal({ screenshots: 20, ai_credits: 0, bandwidth_bytes: 0, research_domains: 24 });
    });

    it('refuses amounts that do not fit with the code and note a reservation of them gets, and still holds nothing', async () => {
      const account = await freeAccount();
      await call(sys.broker, 'billing.charge', { accountId: account.accountId, amounts: { research_domains: 24 } });
      const before = await refusals('research_domains');
      const room = await call(sys.broker, 'billing.checkRoom', { account, amounts: { research_domains: 2 } }).catch((e) => e);
      const reserve = await call(sys.broker, 'billing.reserve', { account, amounts: { research_domains: 2 } }).catch((e) => e);
      expect([room.type, room.code]).to.deep.equal(['domain_research_limit_reached', 402]);
      expect(room.message).to.equal(reserve.message).and.contain('1 of');
      // Both were answered 402, so both are counted as refusals.
      expect(await refusals('research_domains')).to.equal(before + 2);
      // The byte a real location needs: none left is real_location_bandwidth_exhausted.
      await call(sys.broker, 'billing.charge', { accountId: account.accountId, amounts: { bandwidth_bytes: 32 * 1024 * 1024 } });
      const bytes = await call(sys.broker, 'billing.checkRoom', { accountId: account.accountId, amounts: { bandwidth_bytes: 1 } }).catch((e) => e);
      expect([bytes.type, bytes.code]).to.deep.equal(['real_location_bandwidth_exhausted', 402]);
      expect(await usage(account)).to.deep.include({ research_domains: 24, bandwidth_bytes: 32 * 1024 * 1024 });
    });

    it('releases a pending reservation by its id, once, leaving no usage; a later commit finds nothing', async () => {
      const account = await freeAccount();
      const { accountId } = account;
      await call(sys.broker, 'billing.reserve', { account, amounts: { screenshots: 1 }, reservationId: 'job:j1' });
      await call(sys.broker, 'billing.reserve', { account, amounts: { ai_credits: 1 }, reservationId: 'job:j1:ai' });
      expect(await usage(account)).to.deep.include({ screenshots: 1, ai_credits: 1 });
      expect(await call(sys.broker, 'billing.release', { accountId, reservationId: 'job:j1' })).to.deep.equal({ released: true });
      expect(await call(sys.broker, 'billing.release', { accountId, reservationId: 'job:j1:ai' })).to.deep.equal({ released: true });
      expect(await call(sys.broker, 'billing.release', { accountId, reservationId: 'job:j1' })).to.deep.equal({ released: false });
      expect(await usage(account)).to.deep.equal({ screenshots: 0, ai_credits: 0, bandwidth_bytes: 0, research_domains: 0 });
      const reservation = { id: 'job:j1', accountId, month: (await call(sys.broker, 'billing.usage', { account })).month, amounts: { screenshots: 1 } };
      expect(await call(sys.broker, 'billing.commit', { reservation })).to.deep.equal({ committed: false });
    });

    it('releases nothing, and refuses nothing, for a reservation that is not pending, even in a used-up month', async () => {
      const account = await freeAccount();
      await call(sys.broker, 'billing.charge', { accountId: account.accountId, amounts: { screenshots: 25 } });
      const before = await refusals('screenshots');
      // Where reserving again to refund would be refused (402) and counted, a release answers false and touches nothing.
      expect(await call(sys.broker, 'billing.release', { accountId: account.accountId, reservationId: 'job:never' })).to.deep.equal({ released: false });
      expect(await refusals('screenshots')).to.equal(before);
      expect(await usage(account)).to.deep.equal({ screenshots: 25, ai_credits: 0, bandwidth_bytes: 0, research_domains: 0 });
      // Another account's reservation is not this one's to release.
      const other = await freeAccount();
      await call(sys.broker, 'billing.reserve', { account: other, amounts: { screenshots: 1 }, reservationId: 'job:theirs' });
      expect(await call(sys.broker, 'billing.release', { accountId: account.accountId, reservationId: 'job:theirs' })).to.deep.equal({ released: false });
      expect((await usage(other)).screenshots).to.equal(1);
      expect(await call(sys.broker, 'billing.release', { accountId: other.accountId, reservationId: 'job:theirs' })).to.deep.equal({ released: true });
      expect((await usage(other)).screenshots).to.equal(0);
    });
  });
}
