/**
 * change_notifications and change_readings as the notifier reads them: the alert records
 * of the change notification endpoints (spec, "Change notification record"), and the
 * removal of a configuration's readings and alerts with it. Recording them is done with
 * the capture (public/change-alerts.ts).
 */
import type { Knex } from 'knex';
import type { ChangeNotificationRecord } from '../shared/contracts';
import { type Paging, pageOf, pageQuery } from '../shared/paging';
import { wordDiff } from './public/change-alerts';

interface AlertRow {
  id: string;
  config_id: string;
  selector: string;
  send_to: string;
  url: string;
  custom_id: string | null;
  previous_value: string;
  retrieved_value: string;
  created_at_ms: number | string;
  /** A visual change step's alert: 'visual', with what it found (JSON: its step's config and `visual`); null for a text one. */
  mode?: string | null;
  visual?: string | null;
}

/**
 * An alert as the lists show it: a visual one with its step's options and what it found; with
 * `history` (GET /screenshot_configs/:id/changes), a text one with its word diff too.
 */
export function alertRecord(r: AlertRow, history = false): ChangeNotificationRecord {
  if (r.mode === 'visual' && r.visual) {
    const found = JSON.parse(r.visual) as Pick<ChangeNotificationRecord, 'config' | 'visual'>;
    return {
      id: r.id,
      screenshot_configuration_id: r.config_id,
      previous_value: r.previous_value,
      retrieved_value: r.retrieved_value,
      config: found.config,
      sent_at: String(Number(r.created_at_ms)),
      ...(found.visual ? { visual: found.visual } : {}),
    };
  }
  return {
    id: r.id,
    screenshot_configuration_id: r.config_id,
    previous_value: r.previous_value,
    retrieved_value: r.retrieved_value,
    config: { type: 'change', selector: r.selector, send_to: r.send_to, url: r.url, ...(r.custom_id ? { custom_id: r.custom_id } : {}) },
    sent_at: String(Number(r.created_at_ms)),
    ...(history ? { word_diff: wordDiff(r.previous_value, r.retrieved_value) } : {}),
  };
}

export class ChangeNotifications {
  constructor(private readonly db: Knex) {}

  async list(
    accountId: string,
    configId: string | undefined,
    paging: Paging,
    history = false,
  ): Promise<{ change_notifications: ChangeNotificationRecord[]; has_more: boolean }> {
    const query = this.db('change_notifications').where({ account_id: accountId });
    if (configId) query.where({ config_id: configId });
    // Alerts of one capture share their time: they list in step order, then by id.
    const rows = (await pageQuery(query, paging, { table: 'change_notifications', columns: ['created_at_ms', 'step_index', 'id'], key: 'id' })) as AlertRow[];
    const page = pageOf(rows, paging);
    return { change_notifications: page.rows.map((r) => alertRecord(r, history)), has_more: page.has_more };
  }

  async deleteForConfig(trx: Knex.Transaction, accountId: string, configId: string): Promise<void> {
    await trx('change_notifications').where({ account_id: accountId, config_id: configId }).delete();
    await trx('change_readings').where({ account_id: accountId, config_id: configId }).delete();
  }
}
