/** A migrated SQLite database in a folder of its own, for tests of one repository or queue; `drop()` removes it. */
import fs from 'node:fs';
import path from 'node:path';
import type { Knex } from 'knex';
import type { Config } from '../../services/shared/config';
import { acquireDatabase, migrateLatest, releaseDatabase } from '../../services/shared/database';
import { tempDir } from './backends';

export async function migratedSqlite(): Promise<{ db: Knex; dir: string; drop(): Promise<void> }> {
  const dir = tempDir();
  const database: Config['database'] = { client: 'better-sqlite3', filename: path.join(dir, 'test.sqlite') };
  await migrateLatest(database);
  return {
    db: acquireDatabase(database),
    dir,
    async drop() {
      await releaseDatabase(database);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
