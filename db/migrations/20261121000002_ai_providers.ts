/** ai owns: the accounts' own AI provider keys (encrypted) and what their verification found. */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('ai_providers', (t) => {
    t.string('account_id', 32).notNullable();
    t.string('provider', 16).notNullable();
    t.text('key_encrypted').nullable();
    t.string('key_hint', 32).nullable();
    t.string('default_model', 200).nullable();
    t.string('default_upstream', 16).nullable();
    t.boolean('verified').notNullable().defaultTo(false);
    t.timestamp('verified_at').nullable();
    t.integer('models_count').unsigned().nullable();
    t.text('last_error').nullable();
    t.primary(['account_id', 'provider']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('ai_providers');
}
