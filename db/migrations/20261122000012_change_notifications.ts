/**
 * notifier owns: change_readings (the last text each `change` step of a configuration
 * read: the baseline the next capture is compared with) and change_notifications (one row
 * per alert, listed by the change notification endpoints; its delivery is a row of
 * webhook_deliveries). Both are written in the transaction that records the capture.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('change_readings', (t) => {
    t.string('config_id', 32).notNullable();
    t.integer('step_index').unsigned().notNullable();
    // A step that now watches another selector starts a new baseline.
    t.string('selector_hash', 64).notNullable();
    t.string('account_id', 32).notNullable();
    t.text('value', 'mediumtext').notNullable();
    t.bigInteger('read_at_ms').notNullable();
    t.primary(['config_id', 'step_index', 'selector_hash']);
  });
  await knex.schema.createTable('change_notifications', (t) => {
    t.string('id', 32).primary();
    t.string('account_id', 32).notNullable();
    t.string('config_id', 32).notNullable();
    t.string('job_id', 32).nullable();
    // The step's place in multi_step_actions: alerts of one capture list in step order.
    t.integer('step_index').unsigned().notNullable();
    t.text('selector').notNullable();
    t.string('send_to', 16).notNullable();
    t.text('url').notNullable();
    t.text('previous_value', 'mediumtext').notNullable();
    t.text('retrieved_value', 'mediumtext').notNullable();
    t.string('delivery_id', 40).notNullable();
    t.bigInteger('created_at_ms').notNullable();
    t.index(['account_id', 'created_at_ms']);
    t.index(['config_id', 'created_at_ms']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('change_notifications');
  await knex.schema.dropTable('change_readings');
}
