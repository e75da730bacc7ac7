/**
 * Whether a capture's page finished loading (reached its wait_until moment) or was taken as
 * it was drawn when navigation_timeout ran out (docs/api.md). Null for captures recorded
 * before the column existed, and for none since.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.boolean('load_finished').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.dropColumn('load_finished');
  });
}
