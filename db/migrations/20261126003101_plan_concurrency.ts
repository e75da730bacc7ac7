/**
 * A plan sets how many captures an account may run at once (max_concurrent) and how many
 * more it may have waiting for a browser (max_queued), across every capture instance. The
 * defaults fit the embedded default of two browsers: one account may hold one of them, so
 * another account always finds the other (docs/operations.md, "Fair sharing").
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('plans', (t) => {
    t.integer('max_concurrent').unsigned().notNullable().defaultTo(1);
    t.integer('max_queued').unsigned().notNullable().defaultTo(8);
  });
  await knex('plans').where({ name: 'free' }).update({ max_concurrent: 1, max_queued: 2 });
  await knex('plans').where({ name: 'paid' }).update({ max_concurrent: 1, max_queued: 8 });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('plans', (t) => {
    t.dropColumn('max_concurrent');
    t.dropColumn('max_queued');
  });
}
