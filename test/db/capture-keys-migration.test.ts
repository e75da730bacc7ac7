/**
 * db/migrations/20261130230001_capture_keys_by_difference.ts on SQLite and MariaDB: snap
 * configurations stored under keys of the earlier form (every option, defaults filled in) are
 * found again by the snap that made them, their screenshots by the ttl lookup; one whose key is
 * not its options' (PATCHed since, or made by an older release) becomes ordinary; two of one
 * account that come out with one key leave it to the newest.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { keyBefore } from '../../db/migrations/20261130230001_capture_keys_by_difference';
import { type ConfigOptions, captureKey } from '../../services/shared/screenshot-options';

const options2 = (url: string) => ({ url, wait: 0 }) as ConfigOptions;
import { type Backend, migratedDatabase } from '../support/backends';

const MIGRATION = '20261130230001_capture_keys_by_difference.js';

for (const backend of ['sqlite', 'mysql'] as Backend[]) {
  describe(`the capture keys' migration on ${backend}`, function () {
    this.timeout(60_000);
    let db: Knex;
    let cleanup: () => Promise<void>;

    before(async () => {
      ({ db, cleanup } = await migratedDatabase(backend));
      // Back to just before it, to store rows as the code before it did.
      while (((await db.migrate.list()) as [Array<{ name: string }>])[0].some((m) => m.name === MIGRATION)) await db.migrate.down();
    });
    after(async () => {
      await cleanup?.();
    });

    it("moves each snap configuration's key in the earlier form, and its screenshots' ttl keys, to the form by difference; retires the others", async () => {
      const options = (url: string, more: Record<string, unknown> = {}) => ({ url, wait: 0, json: true, ...more });
      const config = (id: string, account: string, stored: ConfigOptions, snapKey: string | null, at: number) => ({
        id,
        account_id: account,
        url: stored.url,
        options: JSON.stringify(stored),
        capture_options: JSON.stringify(stored),
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
      const a = options('https://a.test/') as ConfigOptions;
      const b = options('https://b.test/') as ConfigOptions;
      const c = options('https://c.test/') as ConfigOptions;
      const patched = options('https://c.test/', { image_format: 'png' }) as ConfigOptions;
      await db('screenshot_configs').insert([
        config('cfgplain0001', 'acct1', a, keyBefore(a), 1000),
        // The same page in another account: its own.
        config('cfgother0001', 'acct2', a, keyBefore(a), 1000),
        // One in each form for one page: the newer keeps the key.
        config('cfgtwiceold1', 'acct1', b, keyBefore(b), 1000),
        config('cfgtwicenew1', 'acct1', b, captureKey(b), 2000),
        // Changed by a PATCH since its snap made it: its key is not its options' (its screenshots are of c as it was).
        config('cfgpatched01', 'acct1', patched, keyBefore(c), 1000),
        // Made by a release with other options: no snap makes its key any more.
        config('cfgolderrel1', 'acct1', options('https://d.test/') as ConfigOptions, 'f'.repeat(64), 1000),
        // Not a snap's: left alone.
        config('cfgordinary1', 'acct1', a, null, 1000),
      ]);
      await db('screenshots').insert([
        shot(1, 'cfgplain0001', 'acct1', keyBefore(a)),
        shot(2, 'cfgplain0001', 'acct1', 'stored-with-a-destination'),
        shot(3, 'cfgpatched01', 'acct1', keyBefore(c)),
      ]);

      await db.migrate.up();

      const keysNow = async () =>
        Object.fromEntries((await db('screenshot_configs').select('id', 'snap_key')).map((r: { id: string; snap_key: string | null }) => [r.id, r.snap_key]));
      const keys = await keysNow();
      expect(keys).to.deep.equal({
        cfgplain0001: captureKey(a),
        cfgother0001: captureKey(a),
        cfgtwiceold1: null,
        cfgtwicenew1: captureKey(b),
        cfgpatched01: null,
        cfgolderrel1: null,
        cfgordinary1: null,
      });
      const cached = Object.fromEntries((await db('screenshots').select('id', 'cache_key')).map((r: { id: number; cache_key: string }) => [r.id, r.cache_key]));
      expect(cached).to.deep.equal({ 1: captureKey(a), 2: 'stored-with-a-destination', 3: keyBefore(c) });
      // Again (down leaves the keys; up finds them in place): nothing moves.
      await db.migrate.down();
      await db.migrate.up();
      expect(await keysNow()).to.deep.equal(keys);
    });

    it('moves a table of more snap configurations than one statement sets (1 200)', async () => {
      await db.migrate.down();
      const many = Array.from({ length: 1200 }, (_, i) => options2(`https://many.test/${i}`));
      for (let i = 0; i < many.length; i += 200) {
        await db('screenshot_configs').insert(
          many.slice(i, i + 200).map((o, k) => ({
            id: `cfgmany${String(i + k).padStart(5, '0')}`,
            account_id: 'acct3',
            url: o.url,
            options: JSON.stringify(o),
            capture_options: JSON.stringify(o),
            snap_key: keyBefore(o),
            scheduled: false,
            created_at_ms: 1000,
          })),
        );
      }
      await db.migrate.up();
      const rows = (await db('screenshot_configs').where({ account_id: 'acct3' }).orderBy('id').select('snap_key')) as Array<{ snap_key: string }>;
      expect(rows.map((r) => r.snap_key)).to.deep.equal(many.map((o) => captureKey(o)));
    });
  });
}
