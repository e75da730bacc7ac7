/**
 * A /snap_html document (up to BODY_LIMIT_BYTES, 1 MB by default) is kept once, in the options
 * its captures run with: screenshot_configs.capture_options, and a configuration's job's
 * options while it is queued or running. On MySQL/MariaDB both were TEXT, 64 KB: a document
 * past that was refused by the insert (strict mode: "Data too long"), and the snap failed.
 * MEDIUMTEXT holds 16 MB. SQLite's TEXT has no such bound: nothing changes there. Its down
 * gives TEXT back (on MySQL a row holding more than 64 KB then stops it).
 */
import type { Knex } from 'knex';
import { isMysql } from '../../services/shared/database';

async function columnsAs(knex: Knex, type: 'mediumtext' | 'text'): Promise<void> {
  if (!isMysql(knex)) return;
  await knex.schema.alterTable('screenshot_configs', (t) => {
    t.text('capture_options', type).nullable().alter();
  });
  await knex.schema.alterTable('jobs', (t) => {
    t.text('options', type).nullable().alter();
  });
}

export async function up(knex: Knex): Promise<void> {
  await columnsAs(knex, 'mediumtext');
}

export async function down(knex: Knex): Promise<void> {
  await columnsAs(knex, 'text');
}
