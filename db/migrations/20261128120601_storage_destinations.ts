/**
 * proxy owns: accounts' storage destinations (their own S3-compatible or GCS buckets, the
 * secret sealed like proxy passwords) and their last test. capture owns the screenshots'
 * `stored_to`: where the capture was uploaded (destination, bucket, key, location, ETag),
 * JSON; null when no store_to was asked for, and for captures recorded before.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('storage_destinations', (t) => {
    t.increments('id').primary();
    t.string('account_id', 32).notNullable();
    t.string('name', 64).notNullable();
    t.string('type', 8).notNullable();
    t.string('endpoint', 2048).nullable();
    t.string('region', 64).nullable();
    t.string('bucket', 255).notNullable();
    t.string('access_key_id', 255).nullable();
    t.text('secret_encrypted').notNullable();
    t.boolean('verified').notNullable().defaultTo(false);
    t.integer('last_test_ms').unsigned().nullable();
    t.string('last_error', 64).nullable();
    t.timestamp('created_at').notNullable().defaultTo(knex.fn.now());
    t.unique(['account_id', 'name']);
  });
  await knex.schema.alterTable('screenshots', (t) => {
    t.text('stored_to').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.dropColumn('stored_to');
  });
  await knex.schema.dropTable('storage_destinations');
}
