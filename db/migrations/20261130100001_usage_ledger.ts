/**
 * billing owns usage_counters and usage_reservations: the in-process usage store's copy on disk
 * (services/billing/usage-ledger.ts), so a month's usage outlives a restart of a deployment
 * without Redis (the embedded default). A counter row is an account's month, a reservation row
 * one pending reservation's amounts ("a,b,c,d" in USAGE_KINDS' order). With Redis (the full
 * stack) the counters live there and these tables stay empty.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('usage_counters', (t) => {
    t.string('account_id', 32).notNullable();
    t.string('month', 7).notNullable();
    t.bigInteger('screenshots').notNullable().defaultTo(0);
    t.bigInteger('ai_credits').notNullable().defaultTo(0);
    t.bigInteger('bandwidth_bytes').notNullable().defaultTo(0);
    t.bigInteger('research_domains').notNullable().defaultTo(0);
    t.bigInteger('expires_at_ms').notNullable();
    t.primary(['account_id', 'month']);
    t.index(['expires_at_ms']);
  });
  await knex.schema.createTable('usage_reservations', (t) => {
    t.string('account_id', 32).notNullable();
    t.string('id', 128).notNullable();
    t.string('amounts', 200).notNullable();
    t.bigInteger('expires_at_ms').notNullable();
    t.primary(['account_id', 'id']);
    t.index(['expires_at_ms']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('usage_reservations');
  await knex.schema.dropTable('usage_counters');
}
