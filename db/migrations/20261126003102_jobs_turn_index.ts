/**
 * The jobs queue is served account by account (capture/jobs.ts): a claim first reads, per
 * account and kind, its oldest queued job. This index answers that from the index alone.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.index(['status', 'kind', 'account_id', 'created_at_ms'], 'jobs_turns_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.dropIndex(['status', 'kind', 'account_id', 'created_at_ms'], 'jobs_turns_index');
  });
}
