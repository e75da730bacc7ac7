/**
 * billing owns link_signing_secrets: one link signing secret per account (signed /render
 * links, docs/api.md "Signed links"), sealed with SECRETS_KEY, and the previous one while a
 * rotation's 24 hours run (as webhook_secrets keeps it).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('link_signing_secrets', (t) => {
    t.string('account_id', 32).primary();
    t.text('secret_sealed').notNullable();
    t.text('previous_sealed').nullable();
    t.bigInteger('previous_until_ms').nullable();
    t.bigInteger('created_at_ms').notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('link_signing_secrets');
}
