/**
 * The per-configuration archive list reads its page's keys from an index alone (a deferred
 * join, services/shared/paging.ts): it filters on account and configuration and orders by
 * capture time, then id, so it needs an index on those four columns. The account list's
 * index (account_id, created_at_ms) already ends in the id, implicitly: InnoDB appends the
 * primary key to every secondary index, and SQLite the rowid, which `id` is.
 */
import type { Knex } from 'knex';

const COLUMNS = ['account_id', 'config_id', 'created_at_ms', 'id'];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.index(COLUMNS, 'screenshots_config_list_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.dropIndex(COLUMNS, 'screenshots_config_list_index');
  });
}
