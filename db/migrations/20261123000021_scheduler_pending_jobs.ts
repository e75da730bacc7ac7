/**
 * A scheduled slot's job is durable from the moment the slot is claimed: the claim records
 * the job's id (pending_job_id) and since when it waits to be handed to capture
 * (job_pending_since_ms). A scheduler that dies between the claim and the hand-over leaves
 * the mark; another scheduler hands the same job over later (see scheduler.service.ts).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshot_configs', (t) => {
    t.string('pending_job_id', 32).nullable();
    t.bigInteger('job_pending_since_ms').nullable();
    t.index(['job_pending_since_ms']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshot_configs', (t) => {
    t.dropIndex(['job_pending_since_ms']);
    t.dropColumn('job_pending_since_ms');
    t.dropColumn('pending_job_id');
  });
}
