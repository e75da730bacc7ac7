/** billing owns: plans (the operator's catalogue), accounts, their addons and API keys. */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('plans', (t) => {
    t.string('name', 64).primary();
    t.boolean('paid').notNullable();
    t.integer('screenshot_limit').unsigned().notNullable();
    t.timestamp('created_at').notNullable().defaultTo(knex.fn.now());
  });
  await knex('plans').insert([
    { name: 'free', paid: false, screenshot_limit: 25 },
    { name: 'paid', paid: true, screenshot_limit: 10000 },
  ]);
  await knex.schema.createTable('accounts', (t) => {
    t.string('id', 32).primary();
    t.string('plan', 64).notNullable().references('name').inTable('plans');
    t.timestamp('created_at').notNullable().defaultTo(knex.fn.now());
  });
  await knex.schema.createTable('account_addons', (t) => {
    t.string('account_id', 32).notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.string('addon', 32).notNullable();
    t.integer('quantity').unsigned().notNullable().defaultTo(1);
    t.primary(['account_id', 'addon']);
  });
  await knex.schema.createTable('api_keys', (t) => {
    t.increments('id').primary();
    t.string('account_id', 32).notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    // SHA-256 hex of the key; the key itself is never stored.
    t.string('key_hash', 64).notNullable().unique();
    t.timestamp('created_at').notNullable().defaultTo(knex.fn.now());
    t.timestamp('revoked_at').nullable();
    t.index(['account_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('api_keys');
  await knex.schema.dropTable('account_addons');
  await knex.schema.dropTable('accounts');
  await knex.schema.dropTable('plans');
}
