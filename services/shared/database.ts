/**
 * Knex for both modes: SQLite (embedded) or MySQL/MariaDB (full stack), from config.
 * One Knex per process and database, shared by the services of that process; each service
 * still touches only the tables it owns.
 */
import fs from 'node:fs';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import type { Config } from './config';
import { formatLine, logRecord } from './logging';

const MIGRATIONS_DIR = path.join(__dirname, '..', '..', 'db', 'migrations');

/** The part of a better-sqlite3 connection this module touches. */
interface SqliteConnection {
  pragma(s: string): unknown;
  prepare(sql: string): unknown;
}

/** Prepared statements kept per SQLite connection (the most recently used). */
export const STATEMENTS_KEPT = 256;

/**
 * Keeps a SQLite connection's prepared statements by their SQL text, the most recently used
 * STATEMENTS_KEPT of them. Knex's better-sqlite3 client prepares every query anew, about 0.3 ms
 * of CPU per `GET /snap` (issue 46); its queries carry their values as bindings, so the same
 * few texts come back. A kept statement stays valid: SQLite prepares it again by itself when the
 * schema changes, and Knex runs each to completion (all or run) before the next query.
 */
export function keepStatements(conn: Pick<SqliteConnection, 'prepare'>): void {
  const prepare = conn.prepare.bind(conn);
  const kept = new Map<string, unknown>();
  conn.prepare = (sql: string) => {
    let statement = kept.get(sql);
    if (statement !== undefined) kept.delete(sql);
    else statement = prepare(sql);
    kept.set(sql, statement);
    if (kept.size > STATEMENTS_KEPT) kept.delete(kept.keys().next().value as string);
    return statement;
  };
}

/**
 * Knex's own messages (a connection that could not be made, a deprecation): one JSON log line
 * each on stderr, its first line only. Knex's default writes them with console.log, a stack
 * over many lines, on stdout, where the service's log is JSON lines and the admin CLI's answer
 * is all there is.
 */
export const KNEX_LOG: NonNullable<Knex.Config['log']> = {
  warn: (message: unknown) => knexLine('warn', message),
  error: (message: unknown) => knexLine('error', message),
  deprecate: (method: string, alternative: string) => knexLine('warn', `${method} is deprecated; use ${alternative}`),
  debug: () => undefined,
};

function knexLine(level: 'warn' | 'error', message: unknown): void {
  const text = message instanceof Error ? message.message : String(message);
  process.stderr.write(`${formatLine(logRecord(level, [text.split('\n')[0] ?? ''], { mod: 'database' }), 'json')}\n`);
}

/**
 * Knex's options for the database. A failed statement's error quotes its SQL with `?` in place
 * of the values (compileSqlOnError: false): the values may be a webhook URL, a page's cookies or
 * other user data, and such an error reaches the logs.
 */
export function knexConfig(database: Config['database']): Knex.Config {
  const migrations: Knex.MigratorConfig = {
    directory: MIGRATIONS_DIR,
    loadExtensions: ['.js'],
    tableName: 'knex_migrations',
  };
  if (database.client === 'better-sqlite3') {
    fs.mkdirSync(path.dirname(database.filename), { recursive: true });
    return {
      client: 'better-sqlite3',
      connection: { filename: database.filename },
      useNullAsDefault: true,
      compileSqlOnError: false,
      log: KNEX_LOG,
      migrations,
      pool: {
        // WAL lets readers proceed while one writer commits; busy_timeout waits instead of
        // failing when two processes (server and admin CLI) write at once.
        afterCreate: (conn: SqliteConnection, done: (err: Error | null) => void) => {
          keepStatements(conn);
          conn.pragma('journal_mode = WAL');
          // With WAL, NORMAL never corrupts the database; it only skips the fsync on each
          // commit (a power cut may lose the last commits), which keeps fsyncs off requests.
          conn.pragma('synchronous = NORMAL');
          conn.pragma('busy_timeout = 5000');
          conn.pragma('foreign_keys = ON');
          done(null);
        },
      },
    };
  }
  return {
    client: 'mysql2',
    connection: { uri: database.url, timezone: 'Z', supportBigNumbers: true, bigNumberStrings: false } as Knex.MySql2ConnectionConfig,
    pool: { min: 0, max: 10 },
    compileSqlOnError: false,
    log: KNEX_LOG,
    migrations,
  };
}

const shared = new Map<string, { db: Knex; users: number }>();

function keyOf(database: Config['database']): string {
  return database.client === 'better-sqlite3' ? `sqlite:${database.filename}` : database.url;
}

/** Returns this process's Knex for the database, opening it on first use. */
export function acquireDatabase(database: Config['database']): Knex {
  const key = keyOf(database);
  let entry = shared.get(key);
  if (!entry) {
    entry = { db: knex(knexConfig(database)), users: 0 };
    shared.set(key, entry);
  }
  entry.users += 1;
  return entry.db;
}

/** Gives the Knex back; the last user closes its pool. */
export async function releaseDatabase(database: Config['database']): Promise<void> {
  const key = keyOf(database);
  const entry = shared.get(key);
  if (!entry) return;
  entry.users -= 1;
  if (entry.users <= 0) {
    shared.delete(key);
    await entry.db.destroy();
  }
}

export async function migrateLatest(database: Config['database']): Promise<string[]> {
  const db = acquireDatabase(database);
  try {
    const [, applied] = (await db.migrate.latest()) as [number, string[]];
    return applied;
  } finally {
    await releaseDatabase(database);
  }
}

/**
 * The migrations of this code the database has not run: none when it is up to date, or ahead
 * (a release before this one, still running during a roll-out, finds migrations it does not
 * know: allowed, as operations.md says each migration stays compatible with the release before).
 * Read only: Knex's own listing creates its tables when they are missing, which is the
 * migrator's to do, under its lock (db/migrate.ts).
 */
export async function pendingMigrations(database: Config['database']): Promise<string[]> {
  const db = acquireDatabase(database);
  try {
    const done = new Set<string>((await db.schema.hasTable('knex_migrations')) ? await db('knex_migrations').pluck('name') : []);
    return fs
      .readdirSync(MIGRATIONS_DIR)
      .filter((file) => file.endsWith('.js') && !done.has(file))
      .sort();
  } finally {
    await releaseDatabase(database);
  }
}

/**
 * True on MySQL/MariaDB (the full stack), false on SQLite (embedded): row locks (FOR UPDATE,
 * SKIP LOCKED) exist only there; SQLite serialises writers anyway. Takes a Knex, a
 * transaction or a query builder.
 */
export function isMysql(db: { client: { config: Knex.Config } }): boolean {
  const client = db.client.config.client;
  return client === 'mysql2' || client === 'mysql';
}

/** True when the error is a unique-key violation on either database. */
export function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; errno?: number };
  return e?.code === 'ER_DUP_ENTRY' || e?.code === 'SQLITE_CONSTRAINT_UNIQUE' || e?.code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/**
 * A time column as the driver answers it, as a Date (null when empty or unreadable): mysql2
 * answers a Date; SQLite what it was given, epoch milliseconds or CURRENT_TIMESTAMP's
 * "YYYY-MM-DD HH:MM:SS", which is UTC.
 */
export function dateOf(value: unknown): Date | null {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value;
  const d = typeof value === 'number' ? new Date(value) : new Date(String(value).replace(' ', 'T') + (/Z|[+-]\d\d:?\d\d$/.test(String(value)) ? '' : 'Z'));
  return Number.isNaN(d.getTime()) ? null : d;
}
