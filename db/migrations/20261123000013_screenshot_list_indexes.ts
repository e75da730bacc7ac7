/**
 * The archive lists read their page's keys from an index alone (a deferred join,
 * services/shared/paging.ts): filtered on the account (and the configuration), ordered by
 * capture time then id. This adds the per-configuration list's index, and puts the account
 * list's in the same shape; both are descending, the lists' default order (newest first),
 * because InnoDB walks an index backwards about a third slower than forwards, which is
 * what a deep page of the default order spends its time on (page 50 of 1000 walks 50 000
 * entries). Oldest-first lists walk them backwards instead. MySQL before 8.0 and MariaDB
 * before 10.8 take DESC as ASC (the lists are still covered, walked backwards).
 */
import type { Knex } from 'knex';

const ACCOUNT_LIST = { name: 'screenshots_account_list_index', columns: 'account_id, created_at_ms DESC, id DESC' };
const CONFIG_LIST = { name: 'screenshots_config_list_index', columns: 'account_id, config_id, created_at_ms DESC, id DESC' };

export async function up(knex: Knex): Promise<void> {
  for (const index of [ACCOUNT_LIST, CONFIG_LIST]) await knex.raw(`CREATE INDEX ${index.name} ON screenshots (${index.columns})`);
  await knex.schema.alterTable('screenshots', (t) => {
    t.dropIndex(['account_id', 'created_at_ms']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.index(['account_id', 'created_at_ms']);
    t.dropIndex([], ACCOUNT_LIST.name);
    t.dropIndex([], CONFIG_LIST.name);
  });
}
