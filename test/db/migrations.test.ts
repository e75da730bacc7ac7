/**
 * The migrations of db/migrations/, on SQLite and on MariaDB: each one goes down and up again
 * on its own, newest first (the schema after is the schema before), and the schema that comes back is the schema that went (every
 * table, every column), with the plans the billing migration seeds.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { AccountRepository } from '../../services/billing/accounts';
import { isMysql } from '../../services/shared/database';
import { type Backend, migratedDatabase } from '../support/backends';

/** Every table but Knex's own, with its columns, sorted: what the migrations made. */
async function schemaOf(db: Knex): Promise<Record<string, string[]>> {
  const tables: string[] = isMysql(db)
    ? ((await db.raw('SHOW TABLES'))[0] as Record<string, string>[]).map((r) => Object.values(r)[0] as string)
    : (await db('sqlite_master').where({ type: 'table' }).select('name')).map((r: { name: string }) => r.name);
  const ours = tables.filter((t) => !t.startsWith('knex_') && !t.startsWith('sqlite_')).sort();
  const out: Record<string, string[]> = {};
  for (const t of ours) out[t] = Object.keys(await db(t).columnInfo()).sort();
  return out;
}

for (const backend of ['sqlite', 'mysql'] as Backend[]) {
  describe(`migrations on ${backend}: down and up again, one at a time`, function () {
    this.timeout(120_000);
    let db: Knex;
    let cleanup: () => Promise<void>;

    before(async () => {
      ({ db, cleanup } = await migratedDatabase(backend));
    });
    after(async () => {
      await cleanup?.();
    });

    it('takes every migration down and up again, newest first, and ends with the schema it began with', async () => {
      const before = await schemaOf(db);
      const [done] = (await db.migrate.list()) as [{ name: string }[], unknown[]];
      expect(done.length).to.be.greaterThan(10);
      expect(Object.keys(before)).to.include.members(['accounts', 'api_keys', 'jobs', 'screenshots', 'screenshot_configs', 'research_jobs']);
      // Each migration, newest first: down and up again gives back the schema it was given
      // (a down that leaves a column or a table behind shows here), then down for good.
      for (let i = done.length; i > 0; i--) {
        const given = await schemaOf(db);
        await db.migrate.down();
        expect(((await db.migrate.list()) as [unknown[]])[0]).to.have.length(i - 1);
        await db.migrate.up();
        expect(await schemaOf(db), `${done[i - 1]?.name} down and up again`).to.deep.equal(given);
        await db.migrate.down();
      }
      expect(await schemaOf(db)).to.deep.equal({});
      for (let i = 0; i < done.length; i++) await db.migrate.up();
      expect(await schemaOf(db)).to.deep.equal(before);
    });

    it('seeds the plans again as it migrates up', async () => {
      expect(await new AccountRepository(db).listPlans()).to.deep.equal([
        { name: 'free', paid: false, screenshot_limit: 25, max_concurrent: 1, max_queued: 2 },
        { name: 'paid', paid: true, screenshot_limit: 10000, max_concurrent: 1, max_queued: 8 },
      ]);
    });
  });
}
