/**
 * notifier owns: webhook_secrets (one signing secret per account, sealed with SECRETS_KEY,
 * and the previous one while a rotation's 24 hours run), webhook_deliveries (the durable
 * outbox: a delivery is written in the same transaction that records its capture, before
 * any attempt) and webhook_attempts (every attempt, for the delivery log).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhook_secrets', (t) => {
    t.string('account_id', 32).primary();
    t.text('secret_sealed').notNullable();
    t.text('previous_sealed').nullable();
    t.bigInteger('previous_until_ms').nullable();
    t.bigInteger('created_at_ms').notNullable();
  });
  await knex.schema.createTable('webhook_deliveries', (t) => {
    // msg_<random>: also the webhook-id header, the same on every attempt.
    t.string('id', 40).primary();
    t.string('account_id', 32).notNullable();
    t.string('config_id', 32).notNullable();
    // capture | change
    t.string('kind', 16).notNullable();
    // webhook | slack
    t.string('send_to', 16).notNullable().defaultTo('webhook');
    t.text('target_url').notNullable();
    // The exact bytes sent (and signed) on every attempt.
    t.text('body', 'mediumtext').notNullable();
    // pending | delivered | failed
    t.string('status', 16).notNullable();
    t.integer('attempts').unsigned().notNullable().defaultTo(0);
    t.bigInteger('next_attempt_at_ms').nullable();
    t.string('lease_token', 32).nullable();
    t.bigInteger('lease_until_ms').nullable();
    t.text('last_error').nullable();
    t.string('job_id', 32).nullable();
    t.bigInteger('created_at_ms').notNullable();
    t.bigInteger('finished_at_ms').nullable();
    t.index(['status', 'next_attempt_at_ms']);
    t.index(['account_id', 'created_at_ms']);
    t.index(['config_id']);
  });
  await knex.schema.createTable('webhook_attempts', (t) => {
    t.increments('id').primary();
    t.string('delivery_id', 40).notNullable();
    t.integer('number').unsigned().notNullable();
    t.bigInteger('attempted_at_ms').notNullable();
    // null when no HTTP answer came (timeout, refused, connection error)
    t.integer('status_code').nullable();
    t.integer('duration_ms').unsigned().notNullable();
    t.text('error').nullable();
    t.unique(['delivery_id', 'number']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('webhook_attempts');
  await knex.schema.dropTable('webhook_deliveries');
  await knex.schema.dropTable('webhook_secrets');
}
