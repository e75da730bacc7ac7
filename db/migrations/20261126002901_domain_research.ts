/**
 * Domain research (capture owns it): research_jobs, one row per request, with its counters
 * of finished domains (updated in the transaction that finishes a domain, so the last one
 * to finish knows it is the last); research_domains, one row per domain, whose id is the id
 * of its unit of work in `jobs` (kind 'research'). A research job's webhook delivery is
 * about no configuration: webhook_deliveries.config_id may now be null.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('research_jobs', (t) => {
    t.string('id', 32).primary();
    t.string('account_id', 32).notNullable();
    t.string('name', 255).nullable();
    t.text('additional_notes').nullable();
    // The fields to extract, as given (JSON).
    t.text('structures').notNullable();
    // ai_provider and ai_model (JSON).
    t.text('ai_options').notNullable();
    t.text('webhook_url').nullable();
    t.integer('total_domains').unsigned().notNullable();
    t.integer('completed_domains').unsigned().notNullable().defaultTo(0);
    t.integer('failed_domains').unsigned().notNullable().defaultTo(0);
    t.bigInteger('created_at_ms').notNullable();
    t.bigInteger('finished_at_ms').nullable();
    t.index(['account_id', 'created_at_ms', 'id']);
  });
  await knex.schema.createTable('research_domains', (t) => {
    // The id of its job (jobs.id).
    t.string('id', 32).primary();
    t.string('research_id', 32).notNullable();
    t.string('account_id', 32).notNullable();
    t.integer('position').unsigned().notNullable();
    t.text('domain').notNullable();
    t.text('url').notNullable();
    // queued | completed | failed (running is the job's state)
    t.string('status', 16).notNullable();
    // Values, their pages' URLs, the pages read (JSON).
    t.text('data', 'mediumtext').nullable();
    t.text('sources', 'mediumtext').nullable();
    t.text('pages').nullable();
    t.string('error_code', 64).nullable();
    t.text('note').nullable();
    t.bigInteger('finished_at_ms').nullable();
    t.unique(['research_id', 'position']);
  });
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.string('config_id', 32).nullable().alter();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex('webhook_deliveries').whereNull('config_id').delete();
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.string('config_id', 32).notNullable().alter();
  });
  await knex.schema.dropTable('research_domains');
  await knex.schema.dropTable('research_jobs');
}
