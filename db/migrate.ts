/**
 * `npm run migrate`: the one-shot migration step of the full stack (docker-compose's
 * `migrate` service, and the init container of every pod on Kubernetes).
 *
 * Many may start at once (a roll-out starts many pods, a first install finds an empty
 * database). On MySQL/MariaDB they take turns under a named lock (GET_LOCK), which the
 * server releases when its connection closes, so a migrator that was killed never leaves
 * the others waiting; Knex's own lock alone would make every other runner fail at once
 * ("Migration table is already locked"), and two runners on an empty database would race
 * to create Knex's tables. Under the named lock, a Knex lock that is held can only be one
 * a killed migrator left behind, so it is freed.
 */
import knex from 'knex';
import { type Config, loadDatabaseConfig } from '../services/shared/config';
import { acquireDatabase, KNEX_LOG, migrateLatest, releaseDatabase } from '../services/shared/database';

/** The named lock every migrator of this database takes its turn under. */
const LOCK_NAME = 'snapservice_migrate';
/** How long to wait for the others before giving up. */
const LOCK_WAIT_SECONDS = 300;

async function migrateUnderLock(database: Extract<Config['database'], { client: 'mysql2' }>): Promise<string[]> {
  // One connection: GET_LOCK belongs to the session that took it.
  const session = knex({ client: 'mysql2', connection: database.url, pool: { min: 1, max: 1 }, log: KNEX_LOG });
  try {
    const since = Date.now();
    for (let told = false; ; told = true) {
      const [rows] = (await session.raw('SELECT GET_LOCK(?, 5) AS got', [LOCK_NAME])) as [Array<{ got: number | null }>];
      if (rows[0]?.got === 1) break;
      if (Date.now() - since > LOCK_WAIT_SECONDS * 1000) throw new Error(`another migration has run for more than ${LOCK_WAIT_SECONDS} s; giving up`);
      if (!told) console.log('Another process is migrating this database; waiting for it.');
    }
    try {
      return await migrateLatest(database);
    } catch (err) {
      if ((err as Error).name !== 'MigrationLocked') throw err;
      console.log("Knex's migration lock was held with no migration running (one was stopped mid-way); freeing it.");
      const db = acquireDatabase(database);
      try {
        await db.migrate.forceFreeMigrationsLock();
      } finally {
        await releaseDatabase(database);
      }
      return await migrateLatest(database);
    } finally {
      await session.raw('SELECT RELEASE_LOCK(?)', [LOCK_NAME]);
    }
  } finally {
    await session.destroy();
  }
}

async function migrate(): Promise<string[]> {
  // The database settings only: the service's other groups (an AI provider, a real-location
  // preset) are not this step's business, whether its environment holds them whole or not.
  const { database } = loadDatabaseConfig();
  // SQLite is the embedded mode's own file: one process, nothing to take turns with.
  return database.client === 'mysql2' ? migrateUnderLock(database) : migrateLatest(database);
}

migrate()
  .then((applied) => {
    console.log(applied.length ? `Applied migrations: ${applied.join(', ')}` : 'Database is up to date.');
  })
  .catch((err) => {
    console.error('Migration failed:', err instanceof Error ? err.message : err);
    process.exit(1);
  });
