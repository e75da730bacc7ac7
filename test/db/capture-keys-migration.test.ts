/**
 * db/migrations/20261130230001_capture_keys_by_difference.ts on SQLite and MariaDB: snap
 * configurations stored under keys of the earlier form (every option, defaults filled in) are
 * found again by the snap that made them, their screenshots by the ttl lookup; two configurations
 * of one account that come out with one key leave it to the newest.
 */
import { expect } from 'chai';
import knex, { type Knex } from 'knex';
import { knexConfig } from '../../services/shared/database';
import { captureKey } from '../../services/shared/screenshot-options';
import { type Backend, backendConfig } from '../support/backends';

const MIGRATION = '20261130230001_capture_keys_by_difference.js';

for (const backend of ['sqlite', 'mysql'] as Backend[]) {
  describe(`the capture keys' migration on ${backend}`, function () {
    this.timeout(60_000);
    let db: Knex;
    let cleanup: () => Promise<void>;

    before(async () => {
      const b = await backendConfig(backend);
      cleanup = b.cleanup;
      db = knex(knexConfig(b.config.database));
      await db.migrate.latest();
      // Back to just before it, to store rows as the code before it did.
      while (((await db.migrate.list()) as [Array<{ name: string }>])[0].some((m) => m.name === MIGRATION)) await db.migrate.down();
    });
    after(async () => {
      await db.destroy();
      await cleanup();
    });

    it("moves each snap configuration's key, and its screenshots' ttl keys, to the form by difference", async () => {
      const options = (url: string) => ({ url, wait: 0, json: true });
      const config = (id: string, account: string, url: string, snapKey: string | null, at: number) => ({
        id,
        account_id: account,
        url,
        options: JSON.stringify({ url, wait: 0 }),
        capture_options: JSON.stringify(options(url)),
        snap_key: snapKey,
        scheduled: false,
        created_at_ms: at,
      });
      const shot = (id: number, configId: string, account: string, cacheKey: string) => ({
        id,
        account_id: account,
        config_id: configId,
        job_id: `job${id}`,
        url: 'https://a.test/',
        image_name: `img${id}.jpeg`,
        cache_key: cacheKey,
        created_at_ms: 1000 + id,
      });
      await db('screenshot_configs').insert([
        config('cfgplain0001', 'acct1', 'https://a.test/', 'old-key-a', 1000),
        // Two of one page in one account: made again after an earlier upgrade moved the key; the newer keeps it.
        config('cfgtwiceold1', 'acct1', 'https://b.test/', 'old-key-b1', 1000),
        config('cfgtwicenew1', 'acct1', 'https://b.test/', 'old-key-b2', 2000),
        // The same page in another account: its own.
        config('cfgother0001', 'acct2', 'https://a.test/', 'old-key-a', 1000),
        // Not a snap's: left alone.
        config('cfgordinary1', 'acct1', 'https://a.test/', null, 1000),
      ]);
      await db('screenshots').insert([
        shot(1, 'cfgplain0001', 'acct1', 'old-key-a'),
        shot(2, 'cfgplain0001', 'acct1', 'stored-with-a-destination'),
        shot(3, 'cfgtwicenew1', 'acct1', 'old-key-b2'),
      ]);

      await db.migrate.up();

      const keys = Object.fromEntries(
        (await db('screenshot_configs').select('id', 'snap_key')).map((r: { id: string; snap_key: string | null }) => [r.id, r.snap_key]),
      );
      expect(keys).to.deep.equal({
        cfgplain0001: captureKey(options('https://a.test/')),
        cfgtwiceold1: null,
        cfgtwicenew1: captureKey(options('https://b.test/')),
        cfgother0001: captureKey(options('https://a.test/')),
        cfgordinary1: null,
      });
      const cached = Object.fromEntries((await db('screenshots').select('id', 'cache_key')).map((r: { id: number; cache_key: string }) => [r.id, r.cache_key]));
      expect(cached).to.deep.equal({
        1: captureKey(options('https://a.test/')),
        2: 'stored-with-a-destination',
        3: captureKey(options('https://b.test/')),
      });
      // Again (down leaves the keys; up finds them in place): nothing moves.
      await db.migrate.down();
      await db.migrate.up();
      expect(
        Object.fromEntries((await db('screenshot_configs').select('id', 'snap_key')).map((r: { id: string; snap_key: string | null }) => [r.id, r.snap_key])),
      ).to.deep.equal(keys);
    });
  });
}
