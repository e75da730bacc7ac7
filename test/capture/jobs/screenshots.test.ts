/**
 * The archive lists' pages (ScreenshotRepository through services/shared/paging.ts, a
 * deferred join) against the plain definition of page N: the account's (or the
 * configuration's) rows, sorted by capture time then id in the page's direction, filtered
 * by date, rows (N-1) x limit onwards. Computed here in JavaScript from every row, so the
 * test does not lean on the SQL it checks. On SQLite and MariaDB.
 */
import { expect } from 'chai';
import knex, { type Knex } from 'knex';
import { ScreenshotRepository } from '../../../services/capture/jobs/screenshots';
import { knexConfig } from '../../../services/shared/database';
import type { Paging } from '../../../services/shared/paging';
import { type Backend, backendConfig } from '../../support/backends';

const ACCOUNT = 'acct_pages';
const CONFIG = 'cfg_pages';
const T0 = Date.UTC(2026, 0, 1);
const LINKS = { appUrl: 'http://localhost:3000', cdnUrl: 'http://localhost:3000/cdn' };

interface Row {
  id: number;
  account_id: string;
  config_id: string;
  created_at_ms: number;
}

/** The index names on screenshots, on either database. */
async function indexesOfScreenshots(db: Knex): Promise<string[]> {
  if (db.client.config.client === 'mysql2') {
    const [rows] = (await db.raw('SHOW INDEX FROM screenshots')) as [Array<{ Key_name: string }>];
    return [...new Set(rows.map((r) => r.Key_name))];
  }
  const rows = (await db.raw('PRAGMA index_list(screenshots)')) as Array<{ name: string }>;
  return rows.map((r) => r.name);
}

for (const backend of ['sqlite', 'mysql'] as Backend[]) {
  describe(`archive list pages on ${backend}`, () => {
    let db: Knex;
    let repo: ScreenshotRepository;
    let cleanup: () => Promise<void>;
    let rows: Row[];

    before(async () => {
      const b = await backendConfig(backend);
      cleanup = b.cleanup;
      db = knex(knexConfig(b.config.database));
      await db.migrate.latest();
      repo = new ScreenshotRepository(db, LINKS);
      // 157 rows of the account: capture times repeat in runs of 1 to 7 equal values, and the
      // ids of equal times are not in time order's direction (times are inserted out of
      // order), so a page boundary falls inside runs of ties at every limit tried below.
      // Two in three rows are in CONFIG; rows of another account sit among them.
      const times: number[] = [];
      for (let run = 0; times.length < 157; run++) for (let k = 0; k <= run % 7 && times.length < 157; k++) times.push(T0 + run * 1000);
      const order = times.map((_, i) => (i * 89) % times.length); // a permutation: 89 and 157 are coprime
      for (const [n, i] of order.entries()) {
        const mine = { account_id: ACCOUNT, config_id: i % 3 === 2 ? 'cfg_other' : CONFIG, created_at_ms: times[i]! };
        await repo.insert({ ...row(mine), job_id: `job${n}` });
        if (n % 10 === 0) await repo.insert({ ...row({ account_id: 'acct_someone_else', config_id: CONFIG, created_at_ms: times[i]! }), job_id: `other${n}` });
      }
      rows = (await db('screenshots').select('id', 'account_id', 'config_id', 'created_at_ms')).map((r: Row) => ({
        ...r,
        id: Number(r.id),
        created_at_ms: Number(r.created_at_ms),
      }));
    });
    after(async () => {
      await db.destroy();
      await cleanup();
    });

    const row = (r: Omit<Row, 'id'>) => ({
      ...r,
      url: 'https://example.com/',
      image_name: `img${r.created_at_ms}.jpeg`,
      thumb_name: null,
      html_name: null,
      content_type: 'image/jpeg',
      cache_key: '0'.repeat(64),
      ai: null,
      proxy_server: null,
      custom_proxy: null,
      bandwidth_bytes: 0,
      load_finished: true,
      status_code: 200,
      final_url: 'https://example.com/',
    });

    /** Page N by definition: filter, sort (time, then id), skip (N-1) x limit. */
    function expected(filter: (r: Row) => boolean, p: Paging): { ids: string[]; has_more: boolean } {
      const sign = p.order === 'ASC' ? 1 : -1;
      const all = rows
        .filter(filter)
        .filter((r) => (p.afterMs === null || r.created_at_ms > p.afterMs) && (p.beforeMs === null || r.created_at_ms < p.beforeMs))
        .sort((a, b) => sign * (a.created_at_ms - b.created_at_ms || a.id - b.id));
      const start = (p.page - 1) * p.limit;
      return { ids: all.slice(start, start + p.limit).map((r) => String(r.id)), has_more: all.length > start + p.limit };
    }

    const pagings = (total: number): Paging[] => {
      const out: Paging[] = [];
      for (const order of ['DESC', 'ASC'] as const)
        for (const limit of [1, 4, 7, 10, 50, 1000])
          for (let page = 1; page <= Math.ceil(total / limit) + 1; page++) out.push({ page, limit, order, afterMs: null, beforeMs: null });
      out.push({ page: 2, limit: 5, order: 'DESC', afterMs: T0 + 3000, beforeMs: T0 + 30_000 });
      out.push({ page: 3, limit: 4, order: 'ASC', afterMs: T0 + 10_000, beforeMs: null });
      return out;
    };

    it('gives every page of the account list exactly as an offset over the whole ordered list, ties on capture time included', async () => {
      const mine = (r: Row) => r.account_id === ACCOUNT;
      const cases = pagings(rows.filter(mine).length);
      for (const p of cases) {
        const page = await repo.listForAccount(ACCOUNT, p);
        expect({ ids: page.screenshots.map((s) => s.id), has_more: page.has_more }, JSON.stringify(p)).to.deep.equal(expected(mine, p));
      }
      // The data has what the test claims: a page boundary inside a run of equal times.
      const sorted = rows.filter(mine).sort((a, b) => b.created_at_ms - a.created_at_ms || b.id - a.id);
      expect(sorted[3]!.created_at_ms).to.equal(sorted[4]!.created_at_ms);
    });

    it('gives every page of the configuration list exactly as an offset over its whole ordered list, without other accounts rows', async () => {
      const ofConfig = (r: Row) => r.account_id === ACCOUNT && r.config_id === CONFIG;
      for (const p of pagings(rows.filter(ofConfig).length)) {
        const page = await repo.listForConfig(ACCOUNT, CONFIG, p);
        expect({ ids: page.screenshots.map((s) => s.id), has_more: page.has_more }, JSON.stringify(p)).to.deep.equal(expected(ofConfig, p));
      }
    });

    it("counts an account's captures per UTC day of a range (the web console's chart), other accounts and the range's end left out", async () => {
      const DAY = 86_400_000;
      const start = Date.UTC(2026, 10, 1);
      // Day 1: 3 (one at its very first and one at its very last millisecond), day 2: none, day 3: 2; the 1st of the next month is outside.
      const mine = [start, start + 5000, start + DAY - 1, start + 2 * DAY + 7, start + 3 * DAY - 1, Date.UTC(2026, 11, 1)];
      for (const [n, at] of mine.entries())
        await repo.insert({ ...row({ account_id: 'acct_days', config_id: 'cfg_days', created_at_ms: at }), job_id: `day${n}` });
      await repo.insert({ ...row({ account_id: 'acct_other_days', config_id: 'cfg_days', created_at_ms: start + 10 }), job_id: 'dayother' });
      expect(await repo.dailyCounts('acct_days', start, Date.UTC(2026, 11, 1))).to.deep.equal([
        { day_ms: start, screenshots: 3 },
        { day_ms: start + 2 * DAY, screenshots: 2 },
      ]);
      expect(await repo.dailyCounts('acct_days', start + DAY, start + 2 * DAY)).to.deep.equal([]);
    });

    it('migrates the list indexes down and up again', async () => {
      const listIndexes = ['screenshots_account_list_index', 'screenshots_config_list_index'];
      expect(await indexesOfScreenshots(db))
        .to.include.members(listIndexes)
        .and.not.include('screenshots_account_id_created_at_ms_index');
      await db.migrate.down({ name: '20261123000013_screenshot_list_indexes.js' });
      const before = await indexesOfScreenshots(db);
      expect(before).to.include('screenshots_account_id_created_at_ms_index');
      expect(before).not.to.include.any.members(listIndexes);
      // Without them the lists are slower, not different.
      const p: Paging = { page: 2, limit: 10, order: 'DESC', afterMs: null, beforeMs: null };
      expect((await repo.listForConfig(ACCOUNT, CONFIG, p)).screenshots.map((s) => s.id)).to.deep.equal(
        expected((r) => r.account_id === ACCOUNT && r.config_id === CONFIG, p).ids,
      );
      expect((await repo.listForAccount(ACCOUNT, p)).screenshots.map((s) => s.id)).to.deep.equal(expected((r) => r.account_id === ACCOUNT, p).ids);
      await db.migrate.up();
      expect(await indexesOfScreenshots(db))
        .to.include.members(listIndexes)
        .and.not.include('screenshots_account_id_created_at_ms_index');
    });
  });
}
