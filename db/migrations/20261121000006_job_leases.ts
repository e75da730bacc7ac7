/**
 * Durable jobs: a queued job keeps the options it runs with; a worker claims it with a
 * lease it keeps renewing. A job whose lease ran out (its worker died) is claimed again,
 * and only the holder of the current lease may complete it.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    // snap (answered in the request) | config (create, capture now) | scheduled
    t.string('kind', 16).notNullable().defaultTo('snap');
    t.text('options').nullable();
    t.string('lease_token', 32).nullable();
    t.bigInteger('lease_until_ms').nullable();
    t.integer('attempts').unsigned().notNullable().defaultTo(0);
    t.index(['status', 'lease_until_ms']);
    t.index(['config_id']);
  });
  await knex.schema.alterTable('screenshot_configs', (t) => {
    // Scheduled slots are counted from this instant (calendar-aware for months and years).
    t.bigInteger('schedule_anchor_ms').nullable();
    // The validated options the next capture runs with (`options` keeps them as given).
    t.text('capture_options').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshot_configs', (t) => {
    t.dropColumn('schedule_anchor_ms');
    t.dropColumn('capture_options');
  });
  await knex.schema.alterTable('jobs', (t) => {
    t.dropIndex(['status', 'lease_until_ms']);
    t.dropIndex(['config_id']);
    t.dropColumn('kind');
    t.dropColumn('options');
    t.dropColumn('lease_token');
    t.dropColumn('lease_until_ms');
    t.dropColumn('attempts');
  });
}
