/**
 * The HTTP status of a capture's main document and the address the page ended on (after
 * redirects), as the capture saw them once the page had loaded (docs/api.md, "Fail-on
 * rules"). Null for captures recorded before the columns existed.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.integer('status_code').nullable();
    t.text('final_url').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.dropColumn('status_code');
    t.dropColumn('final_url');
  });
}
