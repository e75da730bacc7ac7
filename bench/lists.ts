/**
 * Archive lists at scale: 100 000 screenshots in one account (plus other accounts' rows),
 * on SQLite and on MySQL/MariaDB, through the same query code the services use. Prints the
 * time of each list query and its plan, to show the indexes carry them.
 *
 *   node dist/bench/lists.js            (TEST_MYSQL_URL overrides the MariaDB address)
 */
import fs from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import { knexConfig } from '../services/shared/database';
import { type Paging, pageQuery } from '../services/shared/paging';
import { backendConfig } from '../test/support/backends';

const ROWS = Number(process.env.BENCH_LIST_ROWS ?? 100_000);
const ACCOUNT = 'acct_bench';

async function fill(db: Knex): Promise<void> {
  const start = Date.UTC(2026, 0, 1);
  const batch: Record<string, unknown>[] = [];
  const flush = async () => {
    if (batch.length) await db.batchInsert('screenshots', batch.splice(0), 200);
  };
  for (let i = 0; i < ROWS * 1.2; i++) {
    const mine = i < ROWS;
    batch.push({
      account_id: mine ? ACCOUNT : `acct_other${i % 50}`,
      config_id: mine ? `cfg${i % 100}` : `ocfg${i % 500}`,
      job_id: `job${i}`,
      url: 'https://example.com/',
      image_name: `img${i}.jpeg`,
      thumb_name: `th${i}.jpeg`,
      content_type: 'image/jpeg',
      cache_key: (i % 997).toString(16).padStart(64, '0'),
      created_at_ms: start + i * 60_000,
    });
    if (batch.length >= 5000) await flush();
  }
  await flush();
}

const paging = (p: Partial<Paging>): Paging => ({ page: 1, limit: 1000, afterMs: null, beforeMs: null, order: 'DESC', ...p });

async function measure(db: Knex, label: string, build: () => Knex.QueryBuilder): Promise<string[]> {
  await build(); // warm
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t = process.hrtime.bigint();
    await build();
    runs.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  runs.sort((a, b) => a - b);
  const sql = build().toSQL().toNative();
  const explain = db.client.config.client === 'mysql2' ? `EXPLAIN ${sql.sql}` : `EXPLAIN QUERY PLAN ${sql.sql}`;
  const plan = (await db.raw(explain, sql.bindings as Knex.RawBinding[])) as unknown;
  const rows = (Array.isArray(plan) && Array.isArray(plan[0]) ? plan[0] : plan) as Array<Record<string, unknown>>;
  const planText = rows.map((r) => (r.detail ? String(r.detail) : `table=${r.table} type=${r.type} key=${r.key} rows=${r.rows} extra=${r.Extra ?? ''}`)).join('; ');
  return [`| ${label} | ${runs[Math.floor(runs.length / 2)]!.toFixed(1)} ms | ${planText} |`];
}

async function benchDatabase(name: string, db: Knex): Promise<string[]> {
  await db.migrate.latest();
  const t = Date.now();
  await fill(db);
  const lines = [`### ${name}: ${ROWS} screenshots in one account (+${ROWS * 0.2} in others), filled in ${((Date.now() - t) / 1000).toFixed(1)} s`, '', '| query | median | plan |', '|---|---|---|'];
  const base = () => db('screenshots').where({ account_id: ACCOUNT });
  lines.push(...(await measure(db, 'account list, newest 1000', () => pageQuery(base(), paging({}), 'created_at_ms', 'id'))));
  lines.push(...(await measure(db, 'account list, page 50 of 1000', () => pageQuery(base(), paging({ page: 50 }), 'created_at_ms', 'id'))));
  lines.push(...(await measure(db, 'account list, after a date, ASC', () => pageQuery(base(), paging({ afterMs: Date.UTC(2026, 1, 1), order: 'ASC', limit: 100 }), 'created_at_ms', 'id'))));
  lines.push(...(await measure(db, 'configuration list, newest 1000', () => pageQuery(db('screenshots').where({ account_id: ACCOUNT, config_id: 'cfg7' }), paging({}), 'created_at_ms', 'id'))));
  lines.push(...(await measure(db, 'ttl lookup (cache key)', () => db('screenshots').where({ account_id: ACCOUNT, cache_key: '1'.padStart(64, '0') }).where('created_at_ms', '>=', Date.UTC(2026, 0, 20)).orderBy('created_at_ms', 'desc').limit(1))));
  return lines;
}

async function main(): Promise<void> {
  const out: string[] = ['## Archive lists at scale', ''];
  const sqlite = await backendConfig('sqlite');
  const sdb = knex(knexConfig(sqlite.config.database));
  try {
    out.push(...(await benchDatabase('SQLite', sdb)), '');
  } finally {
    await sdb.destroy();
    await sqlite.cleanup();
  }
  const mysql = await backendConfig('mysql');
  const mdb = knex(knexConfig(mysql.config.database));
  try {
    out.push(...(await benchDatabase('MariaDB', mdb)));
  } finally {
    await mdb.destroy();
    await mysql.cleanup();
  }
  const text = out.join('\n');
  console.log(text);
  fs.writeFileSync(path.join(__dirname, '..', '..', 'bench', 'lists-results.md'), `${text}\n`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
