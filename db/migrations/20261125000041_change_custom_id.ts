/**
 * A change step may carry its own id (`custom_id`, sent by the official MCP server): it is
 * kept with each alert the step raises and shown in the alert's `config`.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('change_notifications', (t) => {
    t.string('custom_id', 100).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('change_notifications', (t) => {
    t.dropColumn('custom_id');
  });
}
