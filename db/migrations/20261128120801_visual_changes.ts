/**
 * Visual change steps (`"mode": "visual"`, docs/decisions/2026-11-28-visual-change-detection.md):
 * an alert of one keeps its mode, what it found (the share changed, the boxes, the links of
 * the before, after and diff images, the sizes: JSON, shown as the record's `visual`) and the
 * name of its diff image in the file store (removed with the configuration). A text alert
 * leaves all three null. Its baseline is a row of change_readings like a text step's, whose
 * value is then JSON (the image and the areas measured with it).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('change_notifications', (t) => {
    t.string('mode', 16).nullable();
    t.text('visual').nullable();
    t.string('diff_name', 64).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('change_notifications', (t) => {
    t.dropColumn('diff_name');
    t.dropColumn('visual');
    t.dropColumn('mode');
  });
}
