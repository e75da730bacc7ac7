/** proxy owns: the accounts' own proxies (passwords encrypted) and their last test. */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('proxies', (t) => {
    t.increments('id').primary();
    t.string('account_id', 32).notNullable();
    t.string('protocol', 8).notNullable().defaultTo('http');
    t.string('host', 255).notNullable();
    t.integer('port').unsigned().notNullable();
    t.string('username', 255).nullable();
    t.text('password_encrypted').nullable();
    t.boolean('verified').notNullable().defaultTo(false);
    t.timestamp('verified_at').nullable();
    t.string('exit_ip', 64).nullable();
    t.integer('last_test_ms').unsigned().nullable();
    t.text('last_error').nullable();
    t.timestamp('created_at').notNullable().defaultTo(knex.fn.now());
    t.index(['account_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('proxies');
}
