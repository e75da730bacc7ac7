/**
 * A pending reservation may have a deadline (usage_reservations.settle_by_ms): a snap's request
 * settles its credit within its time budget, so one still pending after that was held by a
 * process that stopped mid-request, and is given back. Null: no deadline (a job's, settled by
 * whichever run takes the job).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('usage_reservations', (t) => {
    t.bigInteger('settle_by_ms').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('usage_reservations', (t) => {
    t.dropColumn('settle_by_ms');
  });
}
