/**
 * notifier's webhook_deliveries: what a retry by hand asked for (services/notifier/deliveries.ts,
 * `retry`). `last_chance`: a failed or delivered delivery was sent once more; whatever that
 * attempt answers, it does not start the schedule again. `retry_asked`: a retry was asked while
 * an attempt was under way; once that attempt is recorded, the next one is due at once.
 * The index on (status, lease_until_ms) finds the attempts under way, counted per account at
 * every claim (deliveries.ts, `claim`: an account's cap of attempts at once).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.boolean('last_chance').notNullable().defaultTo(false);
    t.boolean('retry_asked').notNullable().defaultTo(false);
    t.index(['status', 'lease_until_ms']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropIndex(['status', 'lease_until_ms']);
    t.dropColumn('last_chance');
    t.dropColumn('retry_asked');
  });
}
