/**
 * billing owns console_sessions: the web console's sign-in sessions (services/billing/console-sessions.ts).
 * A session is found by the SHA-256 of its random id (the cookie's value is never stored) and
 * stands for the API key it was opened with (its hash, as api_keys keeps it), so revoking or
 * rotating the key ends it. Expired rows are deleted as new sessions open.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('console_sessions', (t) => {
    t.string('id_hash', 64).primary();
    t.string('account_id', 32).notNullable();
    t.string('key_hash', 64).notNullable();
    t.string('csrf_token', 64).notNullable();
    t.bigInteger('created_at_ms').notNullable();
    t.bigInteger('seen_at_ms').notNullable();
    t.bigInteger('expires_at_ms').notNullable();
    t.index(['expires_at_ms']);
    t.index(['seen_at_ms']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('console_sessions');
}
