/**
 * database.ts on a real SQLite file through Knex: a query's statement is prepared once and
 * kept (Knex's better-sqlite3 client would prepare it on every query), stays right when the
 * schema changes under it, and only the most recently used STATEMENTS_KEPT are kept.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { expect } from 'chai';
import sinon from 'sinon';
import knex from 'knex';
import { STATEMENTS_KEPT, acquireDatabase, keepStatements, knexConfig, releaseDatabase } from '../../services/shared/database';
import { tempDir } from '../support/backends';

describe('database: SQLite statements kept by their text', () => {
  afterEach(() => sinon.restore());

  it('prepares a query once however often it runs, and reads a column added since', async () => {
    const prepare = sinon.spy(Database.prototype, 'prepare');
    const database = { client: 'better-sqlite3' as const, filename: path.join(tempDir('db-statements-'), 'test.sqlite') };
    const db = acquireDatabase(database);
    try {
      await db.schema.createTable('items', (t) => {
        t.integer('id').primary();
        t.string('name');
      });
      await db('items').insert([
        { id: 1, name: 'one' },
        { id: 2, name: 'two' },
      ]);
      const read = (id: number) => db('items').where({ id }).first();
      const sql = db('items').where({ id: 1 }).first().toSQL().sql;
      const preparedBefore = prepare.args.filter(([text]) => text === sql).length;
      expect(await read(1)).to.deep.equal({ id: 1, name: 'one' });
      expect(await read(2)).to.deep.equal({ id: 2, name: 'two' });
      expect(await read(1)).to.deep.equal({ id: 1, name: 'one' });
      expect(prepare.args.filter(([text]) => text === sql).length - preparedBefore, 'prepared once for three reads').to.equal(1);
      // The schema changes under the kept statement: SQLite prepares it again by itself.
      await db.schema.alterTable('items', (t) => {
        t.integer('size').notNullable().defaultTo(7);
      });
      expect(await read(2)).to.deep.equal({ id: 2, name: 'two', size: 7 });
    } finally {
      await releaseDatabase(database);
    }
  });

  it('keeps only the most recently used statements', () => {
    const prepare = sinon.spy((sql: string) => ({ sql }));
    const conn = { prepare };
    keepStatements(conn);
    for (let i = 0; i < STATEMENTS_KEPT; i++) conn.prepare(`select ${i}`);
    conn.prepare('select 0'); // used again: now the most recent
    conn.prepare('select new'); // one too many: the least recently used (select 1) goes
    expect(prepare.callCount).to.equal(STATEMENTS_KEPT + 1);
    conn.prepare('select 0');
    expect(prepare.callCount, 'select 0 was kept').to.equal(STATEMENTS_KEPT + 1);
    conn.prepare('select 1');
    expect(prepare.callCount, 'select 1 was not').to.equal(STATEMENTS_KEPT + 2);
  });

  it("quotes a failed statement's SQL without its values (a webhook URL, a page's cookies)", async () => {
    const database = { client: 'better-sqlite3' as const, filename: path.join(tempDir('db-errors-'), 'test.sqlite') };
    const db = acquireDatabase(database);
    try {
      await db.schema.createTable('hooks', (t) => {
        t.string('name').unique();
        t.string('send_to');
      });
      const row = { name: 'alerts', send_to: 'https://hooks.slack.com/services/T0AAA/B0BBB/SlackTokenXyz123' };
      await db('hooks').insert(row);
      const err = await db('hooks')
        .insert(row)
        .then(() => null)
        .catch((e: Error & { code?: string }) => e);
      expect(err).to.have.property('code', 'SQLITE_CONSTRAINT_UNIQUE');
      expect(err?.message).to.include('insert into `hooks`');
      expect(err?.message).not.to.include('SlackTokenXyz123');
    } finally {
      await releaseDatabase(database);
    }
  });

  it("writes Knex's own warnings as one JSON log line on stderr, nothing on stdout (a database that cannot be reached)", async () => {
    // Port 1 on loopback: nothing listens, the connection is refused at once.
    const db = knex({ ...knexConfig({ client: 'mysql2', url: 'mysql://root:hunter2@127.0.0.1:1/nothing' }), acquireConnectionTimeout: 2_000 });
    const out = sinon.stub(process.stdout, 'write').returns(true);
    const err = sinon.stub(process.stderr, 'write').returns(true);
    try {
      const failed = await db
        .raw('SELECT 1')
        .then(() => null)
        .catch((e: Error) => e);
      expect(failed?.message).to.include('ECONNREFUSED');
    } finally {
      out.restore();
      err.restore();
      await db.destroy();
    }
    const mine = (calls: sinon.SinonSpyCall[]) => calls.map((c) => String(c.args[0])).filter((line) => /Acquire connection|ECONNREFUSED/.test(line));
    expect(mine(out.getCalls()), 'stdout').to.deep.equal([]);
    const lines = mine(err.getCalls());
    expect(lines).to.have.length.greaterThan(0);
    for (const line of lines) {
      expect(line.endsWith('\n') && !line.slice(0, -1).includes('\n'), line).to.equal(true);
      const record = JSON.parse(line) as Record<string, unknown>;
      expect(record).to.include({ level: 'warn', module: 'database' });
      expect(String(record.msg)).to.include('Acquire connection error').and.not.include('hunter2');
    }
  });
});
