/**
 * db/migrate.js as every pod's init container runs it (deploy/kubernetes): several at once
 * on an empty MariaDB database, one waiting behind another, and one finding the lock a
 * killed migrator left. Each is the real script, as a separate process.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import knex, { type Knex } from 'knex';
import { freshMysqlDatabase } from '../support/backends';
import { until } from '../support/wait';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const MIGRATIONS = fs.readdirSync(path.join(ROOT, 'db', 'migrations')).filter((f) => f.endsWith('.ts')).length;

interface Run {
  child: ChildProcess;
  output(): string;
  exit: Promise<number | null>;
}

function migrate(databaseUrl: string): Run {
  const child = spawn(process.execPath, [path.join(ROOT, 'dist', 'db', 'migrate.js')], {
    env: { ...process.env, DATABASE_URL: databaseUrl },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout?.on('data', (d) => {
    out += d;
  });
  child.stderr?.on('data', (d) => {
    out += d;
  });
  const exit = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, output: () => out, exit };
}

describe('db/migrate.js run by many pods at once (MariaDB)', function () {
  this.timeout(90_000);
  let db: { url: string; drop(): Promise<void> };
  let sql: Knex;

  beforeEach(async () => {
    db = await freshMysqlDatabase();
    sql = knex({ client: 'mysql2', connection: db.url, pool: { min: 1, max: 1 } });
  });
  afterEach(async () => {
    await sql?.destroy();
    await db?.drop();
  });

  it('migrates an empty database once when four start together, and every one exits 0', async () => {
    const runs = Array.from({ length: 4 }, () => migrate(db.url));
    const codes = await Promise.all(runs.map((r) => r.exit));
    expect(codes, runs.map((r) => r.output()).join('\n---\n')).to.deep.equal([0, 0, 0, 0]);
    const applied = runs.filter((r) => /Applied migrations/.test(r.output()));
    expect(applied, 'exactly one runner applies the migrations').to.have.length(1);
    const rows = (await sql('knex_migrations').select('name')) as Array<{ name: string }>;
    expect(rows).to.have.length(MIGRATIONS);
    expect(new Set(rows.map((r) => r.name)).size).to.equal(MIGRATIONS);
  });

  it('waits while another migrator holds the turn, then finds the database up to date', async () => {
    expect(await migrate(db.url).exit).to.equal(0);
    await sql.raw("SELECT GET_LOCK('snapservice_migrate', 0)");
    const run = migrate(db.url);
    await until('the migrator to say it waits', async () => /waiting for it/.test(run.output()), 20_000);
    await new Promise((r) => setTimeout(r, 1_000));
    expect(run.child.exitCode, 'still waiting while the turn is held').to.equal(null);
    await sql.raw("SELECT RELEASE_LOCK('snapservice_migrate')");
    expect(await run.exit, run.output()).to.equal(0);
    expect(run.output()).to.include('Database is up to date.');
  });

  it('frees the Knex lock a killed migrator left behind, instead of failing every pod', async () => {
    expect(await migrate(db.url).exit).to.equal(0);
    await sql('knex_migrations_lock').update({ is_locked: 1 });
    const run = migrate(db.url);
    expect(await run.exit, run.output()).to.equal(0);
    expect(run.output()).to.match(/freeing it/);
    expect(((await sql('knex_migrations_lock').select('is_locked')) as Array<{ is_locked: number }>).map((r) => r.is_locked)).to.deep.equal([0]);
  });
});
