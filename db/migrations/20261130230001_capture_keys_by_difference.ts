/**
 * A capture's key (`captureKey`) was a hash of every capture-affecting option with its default
 * filled in, so each release that added an option changed every key: a snap repeated after an
 * upgrade found neither its saved capture (ttl) nor its snap configuration, was charged again,
 * and started a new configuration, whose change alerts began again from nothing. The key is now
 * a hash of the options that differ from their defaults. This moves the keys stored by the
 * release before it to the new form:
 * - a snap configuration whose key is its options' key in the earlier form (`keyBefore`) moves
 *   to their key now, with the `cache_key` of its screenshots stored under it (those with a
 *   store_to or an own proxy were keyed with what those pointed to, which is not stored: they are
 *   captured anew once);
 * - one whose key is not (its options were changed by a PATCH since, so its screenshots are of
 *   other options; or a release before that one made it, under a key no snap makes any more)
 *   becomes an ordinary one-time configuration, its screenshots kept;
 * - two of one account that come out with one key (one made again by an earlier upgrade) leave
 *   it to the newest (its latest capture is what a change is compared with).
 *
 * The earlier form is computed from today's option table: on a database whose snaps were made
 * by a release with fewer options, no key matches it, and every snap configuration becomes an
 * ordinary one (as that release's own upgrade would have left them). Data only; its down leaves
 * the keys as they are (the earlier ones cannot be made again).
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { type ConfigOptions, captureKey, OPTION_TABLE } from '../../services/shared/screenshot-options';

interface Row {
  id: string;
  account_id: string;
  snap_key: string;
  options: string;
  capture_options: string | null;
  created_at_ms: number | string;
}

/** The key in its earlier form: every capture-affecting option, in the table's order, its default filled in. */
export function keyBefore(o: ConfigOptions): string {
  const values = OPTION_TABLE.filter((x) => x.affectsCapture).map((x) => [
    x.name,
    (o as Record<string, unknown>)[x.name] ?? (x as { default?: unknown }).default ?? null,
  ]);
  return crypto.createHash('sha256').update(JSON.stringify(values)).digest('hex');
}

const BATCH = 500;

/** Sets snap_key of many rows in statements of BATCH rows (a CASE on the id). */
async function setKeys(knex: Knex, keys: Array<[id: string, key: string | null]>): Promise<void> {
  for (let i = 0; i < keys.length; i += BATCH) {
    const part = keys.slice(i, i + BATCH);
    const cases = part.map(() => 'WHEN ? THEN ?').join(' ');
    await knex('screenshot_configs')
      .whereIn(
        'id',
        part.map(([id]) => id),
      )
      .update({ snap_key: knex.raw(`CASE id ${cases} END`, part.flat()) });
  }
}

export async function up(knex: Knex): Promise<void> {
  const rows: Row[] = [];
  for (let after = ''; ; ) {
    const page = (await knex('screenshot_configs')
      .whereNotNull('snap_key')
      .where('id', '>', after)
      .orderBy('id')
      .limit(1000)
      .select('id', 'account_id', 'snap_key', 'options', 'capture_options', 'created_at_ms')) as Row[];
    rows.push(...page);
    if (page.length < 1000) break;
    after = page[page.length - 1]!.id;
  }
  const moves: Array<{ row: Row; key: string | null }> = rows.map((row) => {
    const options = JSON.parse(row.capture_options ?? row.options) as ConfigOptions;
    const now = captureKey(options);
    // Already in the new form (this migration down and up again), or in the earlier form of its own options.
    return { row, key: row.snap_key === now || row.snap_key === keyBefore(options) ? now : null };
  });
  // The newest of an account's configurations with one key keeps it.
  const keeper = new Map<string, Row>();
  for (const { row, key } of moves) {
    if (key === null) continue;
    const held = keeper.get(`${row.account_id} ${key}`);
    if (!held || Number(row.created_at_ms) > Number(held.created_at_ms)) keeper.set(`${row.account_id} ${key}`, row);
  }
  const final = moves.map(({ row, key }) => ({ row, key: key !== null && keeper.get(`${row.account_id} ${key}`) === row ? key : null }));
  const changed = final.filter(({ row, key }) => key !== row.snap_key);
  // Out of the way first (a key may pass from one row to another), then each to its place.
  await setKeys(
    knex,
    changed.map(({ row }) => [row.id, `moving:${row.id}`]),
  );
  await setKeys(
    knex,
    changed.map(({ row, key }) => [row.id, key]),
  );
  for (const { row, key } of changed) {
    if (key !== null) await knex('screenshots').where({ config_id: row.id, cache_key: row.snap_key }).update({ cache_key: key });
  }
}

export async function down(): Promise<void> {
  // The keys stay as up made them (see above).
}
