/** scheduler owns: screenshot configurations (stored options, schedule, snap reuse key). */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('screenshot_configs', (t) => {
    t.string('id', 32).primary();
    t.string('account_id', 32).notNullable();
    t.text('url').notNullable();
    // The options exactly as given (echoed by get and list).
    t.text('options').notNullable();
    // Set for the unscheduled configurations that snaps belong to: one per account, URL and
    // capture-affecting options (DESIGN section 3).
    t.string('snap_key', 64).nullable();
    t.boolean('scheduled').notNullable().defaultTo(false);
    t.integer('scheduled_every').unsigned().nullable();
    t.string('scheduled_interval', 16).nullable();
    t.bigInteger('next_run_at_ms').nullable();
    t.string('last_job_id', 32).nullable();
    t.bigInteger('created_at_ms').notNullable();
    t.unique(['account_id', 'snap_key']);
    t.index(['account_id', 'created_at_ms']);
    t.index(['scheduled', 'next_run_at_ms']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('screenshot_configs');
}
