/**
 * The page text a capture saves beside its picture (markdown=true, metadata=true): the names
 * of its Markdown file and its metadata JSON file in storage, shown as the record's
 * markdown_url and metadata_url (docs/api.md). Null when not asked for, and for captures
 * recorded before.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.string('markdown_name', 64).nullable();
    t.string('metadata_name', 64).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.dropColumn('markdown_name');
    t.dropColumn('metadata_name');
  });
}
