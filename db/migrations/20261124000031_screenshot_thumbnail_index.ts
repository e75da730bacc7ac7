/**
 * Thumbnails are made when first asked for: the CDN route finds the screenshot a
 * thumbnail name belongs to (and so its image) by this index.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.index(['thumb_name']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.dropIndex(['thumb_name']);
  });
}
