/**
 * A capture's key (`captureKey`) was a hash of every capture-affecting option with its default
 * filled in, so each release that added an option changed every key: a snap repeated after an
 * upgrade found neither its saved capture (ttl) nor its snap configuration, was charged again,
 * and started a new configuration, whose change alerts began again from nothing. The key is now
 * a hash of the options that differ from their defaults. This moves the keys stored before to
 * it: each snap configuration's `snap_key`, from the options it runs with, and the `cache_key`
 * of its screenshots that were stored under that key (those with a store_to or an own proxy
 * were keyed with what those pointed to, which is not stored: they are captured anew once).
 * Snap configurations of one account that come out with one key (made again by an earlier
 * upgrade) keep it on the newest (its latest capture is what a change is compared with); the
 * others become ordinary one-time configurations, their screenshots kept.
 *
 * Data only, and its down leaves the new keys (the old ones cannot be made again; code from
 * before reads them as keys it never made, as after any release that added an option).
 */
import type { Knex } from 'knex';
import { type ConfigOptions, captureKey } from '../../services/shared/screenshot-options';

interface Row {
  id: string;
  account_id: string;
  snap_key: string;
  options: string;
  capture_options: string | null;
  created_at_ms: number | string;
}

const BATCH = 1000;

export async function up(knex: Knex): Promise<void> {
  const moves: Array<{ row: Row; key: string }> = [];
  for (let after = ''; ; ) {
    const rows = (await knex('screenshot_configs')
      .whereNotNull('snap_key')
      .where('id', '>', after)
      .orderBy('id')
      .limit(BATCH)
      .select('id', 'account_id', 'snap_key', 'options', 'capture_options', 'created_at_ms')) as Row[];
    for (const row of rows) moves.push({ row, key: captureKey(JSON.parse(row.capture_options ?? row.options) as ConfigOptions) });
    if (rows.length < BATCH) break;
    after = rows[rows.length - 1]!.id;
  }
  // The newest of an account's configurations with one key keeps it.
  const keeper = new Map<string, { row: Row; key: string }>();
  for (const m of moves) {
    const slot = `${m.row.account_id} ${m.key}`;
    const held = keeper.get(slot);
    if (!held || Number(m.row.created_at_ms) > Number(held.row.created_at_ms)) keeper.set(slot, m);
  }
  const changed = moves.filter((m) => m.key !== m.row.snap_key || keeper.get(`${m.row.account_id} ${m.key}`) !== m);
  // Out of the way first (a key may pass from one row to another), then each to its place.
  for (const { row } of changed)
    await knex('screenshot_configs')
      .where({ id: row.id })
      .update({ snap_key: `moving:${row.id}` });
  for (const m of changed) {
    const keeps = keeper.get(`${m.row.account_id} ${m.key}`) === m;
    await knex('screenshot_configs')
      .where({ id: m.row.id })
      .update({ snap_key: keeps ? m.key : null });
    if (m.key !== m.row.snap_key) {
      await knex('screenshots').where({ config_id: m.row.id, cache_key: m.row.snap_key }).update({ cache_key: m.key });
    }
  }
}

export async function down(): Promise<void> {
  // The keys stay as up made them (see above).
}
