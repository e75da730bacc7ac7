/**
 * A pending reservation keeps the month it was counted in (usage_reservations.month), so a
 * job reserved before a month ends and settled after it refunds the month it charged. Rows
 * written before this have none: they are settled against the month their settlement names.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('usage_reservations', (t) => {
    t.string('month', 7).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('usage_reservations', (t) => {
    t.dropColumn('month');
  });
}
