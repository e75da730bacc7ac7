/** capture owns: jobs (every capture run, persisted before its id is given out) and screenshots. */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('jobs', (t) => {
    t.string('id', 32).primary();
    t.string('account_id', 32).notNullable();
    t.string('config_id', 32).notNullable();
    // queued | running | completed | failed
    t.string('status', 16).notNullable();
    t.string('error_code', 64).nullable();
    t.text('note').nullable();
    t.integer('screenshot_id').unsigned().nullable();
    t.bigInteger('created_at_ms').notNullable();
    t.bigInteger('finished_at_ms').nullable();
    t.index(['account_id', 'created_at_ms']);
  });
  await knex.schema.createTable('screenshots', (t) => {
    t.increments('id').primary();
    t.string('account_id', 32).notNullable();
    t.string('config_id', 32).notNullable();
    t.string('job_id', 32).notNullable();
    t.text('url').notNullable();
    // Random, unguessable object names in storage (never sequential ids).
    t.string('image_name', 64).nullable();
    t.string('thumb_name', 64).nullable();
    t.string('html_name', 64).nullable();
    t.string('content_type', 64).nullable();
    t.string('cache_key', 64).notNullable();
    t.boolean('is_browser_extension').notNullable().defaultTo(false);
    t.text('ai').nullable();
    t.string('proxy_server', 255).nullable();
    t.string('custom_proxy', 255).nullable();
    t.bigInteger('bandwidth_bytes').notNullable().defaultTo(0);
    t.bigInteger('created_at_ms').notNullable();
    t.index(['account_id', 'created_at_ms']);
    t.index(['config_id', 'created_at_ms']);
    t.index(['account_id', 'cache_key', 'created_at_ms']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('screenshots');
  await knex.schema.dropTable('jobs');
}
