/**
 * What a capture's overlay options (hide_selectors, remove_selectors, block_chats,
 * block_overlays) hid or removed, and why: a JSON array, shown as the record's `overlays`
 * (docs/api.md). Null when none of them was asked for, and for captures recorded before.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.text('overlays').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('screenshots', (t) => {
    t.dropColumn('overlays');
  });
}
