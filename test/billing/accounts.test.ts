import { expect } from 'chai';
import type { Knex } from 'knex';
import { AccountRepository, parseAddons } from '../../services/billing/accounts';
import { hashApiKey } from '../../services/shared/secrets';
import { type Backend, migratedDatabase } from '../support/backends';

for (const backend of ['sqlite', 'mysql'] as Backend[]) {
  describe(`accounts and keys on ${backend}`, () => {
    let db: Knex;
    let repo: AccountRepository;
    let cleanup: () => Promise<void>;

    before(async () => {
      ({ db, cleanup } = await migratedDatabase(backend));
      repo = new AccountRepository(db);
    });
    after(async () => {
      await cleanup?.();
    });

    it('stores only the hash of a key and finds the account by it', async () => {
      const { account_id, access_token } = await repo.create('paid', { byo_ai: 1, bandwidth_2gb: 2 });
      const stored = await db('api_keys').where({ account_id });
      expect(stored).to.have.length(1);
      expect(JSON.stringify(stored)).not.to.contain(access_token);
      expect(stored[0].key_hash).to.equal(hashApiKey(access_token));
      const ctx = await repo.byToken(access_token);
      expect(ctx).to.deep.equal({
        accountId: account_id,
        plan: { name: 'paid', paid: true, screenshot_limit: 10000, max_concurrent: 1, max_queued: 8 },
        addons: { byo_ai: 1, bandwidth_2gb: 2 },
      });
    });

    it('revokes the old key at once when the key is rotated', async () => {
      const { account_id, access_token } = await repo.create('free', {});
      const rotated = await repo.rotateKey(account_id);
      expect(rotated.access_token).not.to.equal(access_token);
      expect(await repo.byToken(access_token)).to.equal(null);
      expect((await repo.byToken(rotated.access_token))?.accountId).to.equal(account_id);
    });

    it('changes plan and addons, and lets the operator change the catalogue', async () => {
      await repo.upsertPlan({ name: 'pro', paid: true, screenshot_limit: 50000 });
      const { account_id, access_token } = await repo.create('free', {});
      const summary = await repo.setPlan(account_id, 'pro', { byo_proxy: 1 });
      expect(summary).to.deep.include({ plan: 'pro', addons: { byo_proxy: 1 }, active_keys: 1 });
      expect((await repo.byToken(access_token))?.plan.screenshot_limit).to.equal(50000);
      await repo.upsertPlan({ name: 'pro', paid: true, screenshot_limit: 60000 });
      expect((await repo.byToken(access_token))?.plan.screenshot_limit).to.equal(60000);
    });

    it("sets a plan's concurrency limits, changing only the fields given, and refuses numbers out of range", async () => {
      // A new plan takes the default limits.
      expect(await repo.upsertPlan({ name: 'team', screenshot_limit: 5000 })).to.deep.equal({
        name: 'team',
        paid: true,
        screenshot_limit: 5000,
        max_concurrent: 1,
        max_queued: 8,
      });
      expect(await repo.upsertPlan({ name: 'team', max_concurrent: 4, max_queued: 0 })).to.deep.equal({
        name: 'team',
        paid: true,
        screenshot_limit: 5000,
        max_concurrent: 4,
        max_queued: 0,
      });
      const { account_id } = await repo.create('team', {});
      expect((await repo.byId(account_id))?.plan).to.deep.include({ max_concurrent: 4, max_queued: 0 });
      const refused = async (fields: Record<string, number>) =>
        (await repo.upsertPlan({ name: 'team', ...fields }).catch((e) => e)) as Error & { type: string };
      expect((await refused({ max_concurrent: 0 })).message).to.equal('max_concurrent must be a whole number from 1 to 10000.');
      expect((await refused({ max_queued: -1 })).message).to.equal('max_queued must be a whole number from 0 to 10000.');
      expect((await refused({ max_queued: 1.5 })).type).to.equal('invalid_parameter');
      expect((await refused({ screenshot_limit: 1e20 })).message).to.equal('screenshot_limit is too large: at most 9007199254740991.');
      const missing = await repo.upsertPlan({ name: 'nothing', max_concurrent: 2 }).catch((e) => e);
      expect(missing.message).to.equal('A new plan needs screenshot_limit (there is no plan "nothing" yet).');
      expect((await repo.plan('team')).max_concurrent).to.equal(4);
    });

    it('refuses an unknown plan, account or addon with a note that lists what exists', async () => {
      const err = await repo.create('gold', {}).catch((e) => e);
      expect(err.type).to.equal('invalid_parameter');
      expect(err.message).to.contain('free');
      expect((await repo.rotateKey('acct_missing').catch((e) => e)).type).to.equal('not_found');
      expect(() => parseAddons('byo_ai,turbo')).to.throw('Unknown addon "turbo"');
      expect(parseAddons('byo_ai, bandwidth_2gb:3')).to.deep.equal({ byo_ai: 1, bandwidth_2gb: 3 });
    });
  });
}
