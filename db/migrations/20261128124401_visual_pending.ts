/**
 * Visual change comparisons a recorded capture owes (docs/decisions/2026-11-28-visual-change-detection.md,
 * "Where it runs"): written in the capture's transaction, with the screenshot, and removed once
 * the comparison ran. The capture process that recorded the capture holds the row's lease
 * while it compares; a row whose lease ran out (that process died in between) is claimed and
 * compared by a capture process (visual-alerts.ts, VisualAlerts.resume). `readings` is the
 * visual steps' readings (JSON: the options and the areas the page reported), `attempts` the
 * times it was claimed, so one that kills its comparer every time is given up.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('visual_pending', (t) => {
    t.string('id', 32).primary();
    t.string('account_id', 32).notNullable();
    t.string('config_id', 32).notNullable();
    t.string('job_id', 32).notNullable();
    t.string('image_name', 64).notNullable();
    t.text('title').nullable();
    t.text('readings', 'mediumtext').notNullable();
    t.bigInteger('captured_at_ms').notNullable();
    t.integer('attempts').unsigned().notNullable().defaultTo(0);
    t.string('lease_token', 32).nullable();
    t.bigInteger('lease_until_ms').nullable();
    t.index(['lease_until_ms']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('visual_pending');
}
