/**
 * The screenshot_configs table: configurations (CRUD, each account's own), the
 * unscheduled configuration a snap belongs to, and a configuration's last job. A
 * configuration's schedule is stored as columns (the anchor and the next run) that the
 * schedule runner (schedule-runner.ts) moves on.
 */
import type { Knex } from 'knex';
import type { Config } from '../shared/config';
import type { ConfigView, ParamsOf, ResultOf } from '../shared/contracts';
import { isMysql, isUniqueViolation } from '../shared/database';
import { serviceError } from '../shared/errors';
import { embedUrl } from '../shared/links';
import { fetchPage } from '../shared/paging';
import { type ConfigOptions, scheduleOf } from '../shared/screenshot-options';
import { randomId } from '../shared/secrets';
import { nextRunAfter } from './schedule';

export interface ConfigRow {
  id: string;
  account_id: string;
  url: string;
  options: string;
  capture_options: string | null;
  scheduled: number | boolean;
  scheduled_every: number | null;
  scheduled_interval: string | null;
  next_run_at_ms: number | string | null;
  schedule_anchor_ms: number | string | null;
  last_job_id: string | null;
  created_at_ms: number | string;
}

/** A snap's configuration as it is created (unscheduled, found again by its account and snap key). */
type SnapConfigRow = Pick<ConfigRow, 'id' | 'account_id' | 'url' | 'options' | 'capture_options' | 'scheduled' | 'created_at_ms'> & {
  snap_key: string;
  last_job_id?: string;
};

/** Columns describing the schedule (or its absence), anchored at `at`. */
function scheduleColumns(o: ConfigOptions, at: number) {
  const s = scheduleOf(o);
  if (!s) return { scheduled: false, scheduled_every: null, scheduled_interval: null, next_run_at_ms: null, schedule_anchor_ms: null };
  return {
    scheduled: true,
    scheduled_every: s.every,
    scheduled_interval: s.interval,
    schedule_anchor_ms: at,
    next_run_at_ms: nextRunAfter(at, s.every, s.interval, at),
  };
}

/** The options a configuration's captures run with (rows from before capture_options kept them in options). */
function runOptions(row: ConfigRow): ConfigOptions {
  return JSON.parse(row.capture_options ?? row.options) as ConfigOptions;
}

/** A snap's options about its answer alone, which its configuration does not show. */
const ANSWER_ONLY: ReadonlySet<string> = new Set(['json', 'ttl']);

/**
 * A /snap_html document (up to BODY_LIMIT_BYTES) is stored once: in capture_options, which its
 * captures run with. The options shown keep its place with null, and show it from there
 * (docs/decisions/2026-12-01-snap-html-document-stored-once.md). A row written before keeps the
 * document in both, and is shown as it is.
 */
const DOCUMENT = 'html_content';

/** The options a configuration shows: as given, its document (when it has one) taken from capture_options. */
function shownOptions(row: Pick<ConfigRow, 'options' | 'capture_options'>): Record<string, unknown> {
  const shown = JSON.parse(row.options) as Record<string, unknown>;
  if (shown[DOCUMENT] !== null) return shown;
  const document = (JSON.parse(row.capture_options ?? '{}') as Record<string, unknown>)[DOCUMENT];
  if (typeof document === 'string') shown[DOCUMENT] = document;
  else delete shown[DOCUMENT];
  return shown;
}

export class ConfigRepository {
  constructor(
    private readonly db: Knex,
    private readonly links: Pick<Config, 'appUrl'>,
    private readonly now: () => number,
  ) {}

  private view(row: ConfigRow): ConfigView {
    return {
      config: shownOptions(row),
      ids: { last_job_id: row.last_job_id, screenshot_config_id: row.id, embed_url: embedUrl(this.links, row.id) },
      created_at: String(Number(row.created_at_ms)),
    };
  }

  /** The account's configuration; 404 for another account's, as for none. */
  private async own(accountId: string, id: string): Promise<ConfigRow> {
    const row = (await this.db('screenshot_configs').where({ id, account_id: accountId }).first()) as ConfigRow | undefined;
    if (!row) throw serviceError('not_found', `No screenshot configuration "${id}" in this account.`);
    return row;
  }

  async create({ accountId, input, jobId }: ParamsOf<'scheduler.create'>): Promise<ConfigView> {
    const at = this.now();
    const row = {
      id: randomId(12),
      account_id: accountId,
      url: input.options.url,
      options: JSON.stringify(input.given),
      capture_options: JSON.stringify(input.options),
      last_job_id: jobId,
      created_at_ms: at,
      ...scheduleColumns(input.options, at),
    };
    await this.db('screenshot_configs').insert(row);
    return this.view(row as unknown as ConfigRow);
  }

  async get(accountId: string, id: string): Promise<ResultOf<'scheduler.get'>> {
    const row = await this.own(accountId, id);
    return {
      ...this.view(row),
      options: runOptions(row),
      next_run_at_ms: row.next_run_at_ms === null ? null : Number(row.next_run_at_ms),
    };
  }

  /**
   * PATCH: the given options are merged over the stored ones. Leaving out
   * scheduled_screenshot=true makes the configuration one-time; including it keeps (or
   * makes) it scheduled. A changed schedule is anchored anew; an unchanged one keeps its
   * slots. New options apply to the next capture.
   *
   * `checked`, when given, is the configuration's options as the caller read and checked the
   * change against (what `get` answered): when another change was stored since, nothing is
   * written and configuration_changed is thrown, so two PATCHes checked side by side cannot
   * together store a combination neither check saw.
   */
  async update({ accountId, id, input, checked }: ParamsOf<'scheduler.update'>): Promise<ConfigView> {
    return this.db.transaction(async (trx) => {
      let q = trx('screenshot_configs').where({ id, account_id: accountId }).first();
      if (isMysql(trx)) q = q.forUpdate();
      const row = (await q) as ConfigRow | undefined;
      if (!row) throw serviceError('not_found', `No screenshot configuration "${id}" in this account.`);
      if (checked !== undefined && JSON.stringify(runOptions(row)) !== JSON.stringify(checked)) {
        throw serviceError(
          'configuration_changed',
          `The screenshot configuration "${id}" was changed by another request while this change was checked; send it again.`,
        );
      }
      const given = { ...(JSON.parse(row.options) as Record<string, unknown>), ...input.given };
      const options = { ...(JSON.parse(row.capture_options ?? '{}') as ConfigOptions), ...input.options };
      if (input.options.scheduled_screenshot !== true) {
        // One-time now. Its schedule's fields stay (a later PATCH with scheduled_screenshot=true
        // alone takes them up again), so the answer says it is not scheduled beside them.
        if ('scheduled_every' in given || 'scheduled_interval' in given) given.scheduled_screenshot = false;
        else delete given.scheduled_screenshot;
        options.scheduled_screenshot = undefined;
      }
      const at = this.now();
      const next = scheduleColumns(options, at);
      const unchanged =
        next.scheduled && Boolean(row.scheduled) && next.scheduled_every === row.scheduled_every && next.scheduled_interval === row.scheduled_interval;
      const columns = unchanged ? {} : next;
      const changes = { url: options.url, options: JSON.stringify(given), capture_options: JSON.stringify(options), ...columns };
      await trx('screenshot_configs').where({ id }).update(changes);
      return this.view({ ...row, ...changes } as ConfigRow);
    });
  }

  async list({ accountId, paging }: ParamsOf<'scheduler.list'>): Promise<ResultOf<'scheduler.list'>> {
    const { items, has_more } = await fetchPage(
      this.db('screenshot_configs').where({ account_id: accountId }),
      paging,
      { table: 'screenshot_configs', columns: ['created_at_ms', 'id'], key: 'id' },
      (row: ConfigRow) => this.view(row),
    );
    return { configs: items, has_more };
  }

  /** Deletes the configuration; 404 when it is not (or no longer: another request deleted it first) there. */
  async remove(accountId: string, id: string): Promise<ConfigView> {
    const row = await this.own(accountId, id);
    const n = await this.db('screenshot_configs').where({ id: row.id }).delete();
    if (n === 0) throw serviceError('not_found', `No screenshot configuration "${id}" in this account.`);
    return this.view(row);
  }

  /**
   * Notes the configuration's latest job; false when the configuration is gone (deleted meanwhile).
   * The count is of rows matched, also on MySQL (mysql2 connects with FOUND_ROWS), and the job id is new anyway.
   */
  async noteJob(configId: string, jobId: string): Promise<boolean> {
    return (await this.db('screenshot_configs').where({ id: configId }).update({ last_job_id: jobId })) === 1;
  }

  /** What a public embed needs of a configuration (any account's: its id is the secret). */
  async embedInfo(id: string): Promise<ResultOf<'scheduler.embedInfo'>> {
    const row = (await this.db('screenshot_configs').where({ id }).first('options')) as Pick<ConfigRow, 'options'> | undefined;
    if (!row) throw serviceError('not_found', `No screenshot configuration "${id}".`);
    const placeholder = (JSON.parse(row.options) as { placeholder_url?: unknown }).placeholder_url;
    return { placeholder_url: typeof placeholder === 'string' && placeholder !== '' ? placeholder : null };
  }

  /**
   * The unscheduled configuration of a snap's page and options, created on its first snap;
   * `jobId`, when given, noted as its latest job (written with the row when it is created).
   */
  async snapConfig({ accountId, options, snapKey, jobId }: ParamsOf<'scheduler.snapConfig'>): Promise<ResultOf<'scheduler.snapConfig'>> {
    // What it shows leaves out how the snap was answered (json, and ttl, its reuse), which a
    // configuration does not take, so it can be sent back (PATCH) as read. html_only stays:
    // it decides what the configuration's captures make. A document is kept in capture_options alone.
    const shown = Object.fromEntries(
      Object.entries(options)
        .filter(([name]) => !ANSWER_ONLY.has(name))
        .map(([name, value]) => [name, name === DOCUMENT ? null : value]),
    );
    const created = {
      id: randomId(12),
      account_id: accountId,
      url: options.url,
      options: JSON.stringify(shown),
      capture_options: JSON.stringify(options),
      snap_key: snapKey,
      scheduled: false,
      created_at_ms: this.now(),
      ...(jobId ? { last_job_id: jobId } : {}),
    };
    const id = isMysql(this.db) ? await this.findOrCreate(created) : await this.upsert(created);
    return { id, embed_url: embedUrl(this.links, id) };
  }

  /**
   * SQLite: created, or found with its latest job (`last_job_id`) noted, in one statement (an upsert that
   * answers the row's id, new or not); without a job to note, found by a read after it.
   */
  private async upsert(created: SnapConfigRow): Promise<string> {
    const insert = this.db('screenshot_configs').insert(created).onConflict(['account_id', 'snap_key']);
    const [row] = (await (created.last_job_id ? insert.merge(['last_job_id']) : insert.ignore()).returning('id')) as Array<{ id: string }>;
    return row ? String(row.id) : await this.findOrCreate(created);
  }

  /** Found, its latest job noted; or created. The MySQL client's way: MySQL answers no id from an upsert (no RETURNING). */
  private async findOrCreate(created: SnapConfigRow): Promise<string> {
    const jobId = created.last_job_id;
    const find = () => this.db('screenshot_configs').where({ account_id: created.account_id, snap_key: created.snap_key }).first('id');
    let row = await find();
    if (row && jobId) await this.noteJob(String(row.id), jobId);
    if (!row) {
      try {
        await this.db('screenshot_configs').insert(created);
        row = { id: created.id };
      } catch (err) {
        // Two snaps of the same page at once: the other one created it.
        if (!isUniqueViolation(err)) throw err;
        row = await find();
        if (row && jobId) await this.noteJob(String(row.id), jobId);
      }
    }
    return String(row.id);
  }
}
