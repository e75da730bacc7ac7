/**
 * The screenshots table: every query capture makes on it, and the ScreenshotRef other
 * services receive (links built here, files left in storage).
 */
import type { Knex } from 'knex';
import type { Config } from '../../shared/config';
import type { AiRecord, DailyCount, OverlayRecordEntry, ScreenshotRef, StoredTo } from '../../shared/contracts';
import { cdnLink, embedUrl } from '../../shared/links';
import { type ListOrder, type Paging, fetchPage } from '../../shared/paging';
import type { SnapOptions } from '../../shared/screenshot-options';

/** The storage objects of one capture (null where the capture made none). */
export interface StoredFiles {
  image_name: string | null;
  thumb_name: string | null;
  html_name: string | null;
  content_type: string | null;
  /** markdown=true's Markdown file and metadata=true's JSON file (absent or null when not asked for). */
  markdown_name?: string | null;
  metadata_name?: string | null;
}

export interface NewScreenshot extends StoredFiles {
  account_id: string;
  config_id: string;
  job_id: string;
  url: string;
  cache_key: string;
  created_at_ms: number;
  /** The AI object, JSON; null when no analysis was asked for. */
  ai: string | null;
  proxy_server: string | null;
  custom_proxy: string | null;
  bandwidth_bytes: number;
  /** The page reached its wait_until moment (false: taken as drawn at navigation_timeout); null when not known. */
  load_finished: boolean | null;
  /** The main document's final HTTP status; null when not known (and before it was kept). */
  status_code: number | null;
  /** The address the page ended on (after redirects); null when not known. */
  final_url: string | null;
  /** What the overlay options hid or removed, JSON; null when none was asked for. */
  overlays?: string | null;
  /** Where store_to uploaded the capture, JSON; null when none was asked for. */
  stored_to?: string | null;
}

export interface ScreenshotRow extends NewScreenshot {
  id: number;
}

/** The archive lists' order: by capture time, equal times by id (insertion order). */
const LIST_ORDER: ListOrder = { table: 'screenshots', columns: ['created_at_ms', 'id'], key: 'id' };

export interface ScreenshotPage {
  screenshots: ScreenshotRef[];
  has_more: boolean;
}

/** The job a screenshot is recorded for. */
export interface ScreenshotOwner {
  id: string;
  accountId: string;
  configId: string;
}

export class ScreenshotRepository {
  constructor(
    private readonly db: Knex,
    private readonly links: Pick<Config, 'appUrl' | 'cdnUrl'>,
  ) {}

  /** The row a finished capture inserts (see insert). */
  static newRow(
    job: ScreenshotOwner,
    capture: {
      options: SnapOptions;
      /**
       * A snap's ttl key (captureKey with its targets), under which a later snap may reuse it
       * within its ttl (findRecent). Null for a configuration's capture: it belongs to that
       * configuration, and a snap answers with a capture of its own snap configuration (DESIGN section 3).
       */
      cacheKey: string | null;
      files: StoredFiles;
      ai: AiRecord | null;
      /** When it was taken (default now). */
      now?: number;
      /** The real location or own proxy it went through (default none). */
      route?: { location: string | null; customProxy: string | null; bandwidthBytes: number };
      /** Whether the page finished loading (default not known). */
      loadFinished?: boolean | null;
      /** The page's final status and address (default not known). */
      outcome?: { statusCode?: number | null; finalUrl?: string | null };
      /** What the overlay options hid or removed (default none asked for). */
      overlays?: OverlayRecordEntry[] | null;
      /** Where store_to uploaded it (default none asked for). */
      storedTo?: StoredTo | null;
    },
  ): NewScreenshot {
    const {
      options,
      cacheKey,
      files,
      ai,
      now = Date.now(),
      route = { location: null, customProxy: null, bandwidthBytes: 0 },
      loadFinished = null,
      outcome = {},
      overlays = null,
      storedTo = null,
    } = capture;
    return {
      account_id: job.accountId,
      config_id: job.configId,
      job_id: job.id,
      url: options.url,
      ...files,
      // No capture key matches '' (captureKey is a hash): a configuration's capture is never found by it.
      cache_key: cacheKey ?? '',
      created_at_ms: now,
      ai: ai ? JSON.stringify(ai) : null,
      proxy_server: route.location,
      custom_proxy: route.customProxy,
      bandwidth_bytes: route.bandwidthBytes,
      load_finished: loadFinished,
      status_code: outcome.statusCode ?? null,
      final_url: outcome.finalUrl ?? null,
      overlays: overlays ? JSON.stringify(overlays) : null,
      ...(storedTo ? { stored_to: JSON.stringify(storedTo) } : {}),
    };
  }

  toRef(row: ScreenshotRow): ScreenshotRef {
    return {
      id: String(row.id),
      job_id: row.job_id,
      config_id: row.config_id,
      embed_url: embedUrl(this.links, row.config_id),
      direct_link: cdnLink(this.links, row.image_name ?? row.html_name),
      direct_thumbnail_link: cdnLink(this.links, row.thumb_name),
      taken_at_ms: Number(row.created_at_ms),
      image_name: row.image_name,
      html_name: row.html_name,
      content_type: row.content_type,
      // markdown=true, metadata=true: the page text saved beside the picture.
      ...(row.markdown_name ? { markdown_name: row.markdown_name, markdown_link: cdnLink(this.links, row.markdown_name) } : {}),
      ...(row.metadata_name ? { metadata_name: row.metadata_name, metadata_link: cdnLink(this.links, row.metadata_name) } : {}),
      ai: row.ai ? (JSON.parse(row.ai) as AiRecord) : null,
      proxy_server: row.proxy_server ?? null,
      custom_proxy: row.custom_proxy ?? null,
      bandwidth_bytes: Number(row.bandwidth_bytes ?? 0),
      // MySQL and SQLite both keep a boolean as 0 or 1.
      load_finished: row.load_finished === null || row.load_finished === undefined ? null : Boolean(row.load_finished),
      status_code: row.status_code === null || row.status_code === undefined ? null : Number(row.status_code),
      final_url: row.final_url ?? null,
      overlays: row.overlays ? (JSON.parse(row.overlays) as OverlayRecordEntry[]) : null,
      ...(row.stored_to ? { stored_to: JSON.parse(row.stored_to) as StoredTo } : {}),
    };
  }

  /** Inserts a screenshot (inside the caller's transaction when given); returns its id. */
  async insert(row: NewScreenshot, trx: Knex | Knex.Transaction = this.db): Promise<number> {
    const [inserted] = await trx('screenshots').insert(row);
    return Number(inserted);
  }

  async byId(id: number): Promise<ScreenshotRef | null> {
    const row = (await this.db('screenshots').where({ id }).first()) as ScreenshotRow | undefined;
    return row ? this.toRef(row) : null;
  }

  listForConfig(accountId: string, configId: string, paging: Paging): Promise<ScreenshotPage> {
    return this.page(this.db('screenshots').where({ account_id: accountId, config_id: configId }), paging);
  }

  listForAccount(accountId: string, paging: Paging): Promise<ScreenshotPage> {
    return this.page(this.db('screenshots').where({ account_id: accountId }), paging);
  }

  /**
   * The account's captures per UTC day in [fromMs, toMs), oldest first, days without any left out (the web
   * console's chart of a month). One count per day, each a range of the account list's index read alone
   * (account_id, created_at_ms): a month of 100 000 captures is counted in about 8 ms on SQLite, where one
   * GROUP BY over the month sorts every entry (60 ms). At most 366 days.
   */
  async dailyCounts(accountId: string, fromMs: number, toMs: number): Promise<DailyCount[]> {
    const DAY = 86_400_000;
    const out: DailyCount[] = [];
    const last = Math.min(toMs, fromMs + 366 * DAY);
    for (let day = fromMs - (((fromMs % DAY) + DAY) % DAY); day < last; day += DAY) {
      const row = await this.db('screenshots')
        .where({ account_id: accountId })
        .where('created_at_ms', '>=', Math.max(day, fromMs))
        .where('created_at_ms', '<', Math.min(day + DAY, last))
        .count({ n: '*' })
        .first();
      const n = Number(row?.n ?? 0);
      if (n > 0) out.push({ day_ms: day, screenshots: n });
    }
    return out;
  }

  private async page(query: Knex.QueryBuilder, paging: Paging): Promise<ScreenshotPage> {
    const { items, has_more } = await fetchPage(query, paging, LIST_ORDER, (row: ScreenshotRow) => this.toRef(row));
    return { screenshots: items, has_more };
  }

  /** The configuration's newest image (not HTML), for its embed URL. */
  async latestImage(configId: string): Promise<{ image_name: string; content_type: string } | null> {
    const row = await this.db('screenshots')
      .where({ config_id: configId })
      .whereNotNull('image_name')
      .orderBy('created_at_ms', 'desc')
      .orderBy('id', 'desc')
      .first('image_name', 'content_type');
    return row ? { image_name: String(row.image_name), content_type: String(row.content_type) } : null;
  }

  /** The image a recorded thumbnail name belongs to (any account's: CDN links are public); null when none does. */
  async imageOfThumbnail(thumbName: string): Promise<string | null> {
    const row = await this.db('screenshots').where({ thumb_name: thumbName }).whereNotNull('image_name').first('image_name');
    return row ? String(row.image_name) : null;
  }

  /** The newest capture of the account with this capture key taken at or after `since` (ttl reuse). */
  async findRecent(accountId: string, cacheKey: string, since: number): Promise<ScreenshotRef | null> {
    const row = (await this.db('screenshots')
      .where({ account_id: accountId, cache_key: cacheKey })
      .where('created_at_ms', '>=', since)
      .orderBy('created_at_ms', 'desc')
      .first()) as ScreenshotRow | undefined;
    return row ? this.toRef(row) : null;
  }

  /** Deletes one screenshot (inside the caller's transaction when given); returns its files, to delete after the row, or null when there was none. */
  async withdraw(id: number, trx: Knex | Knex.Transaction = this.db): Promise<StoredFiles | null> {
    const files = (await trx('screenshots').where({ id }).first('image_name', 'thumb_name', 'html_name', 'content_type', 'markdown_name', 'metadata_name')) as
      | StoredFiles
      | undefined;
    if (!files) return null;
    await trx('screenshots').where({ id }).delete();
    return files;
  }

  /** The files of a configuration's screenshots, to delete after their rows. */
  async filesOfConfig(accountId: string, configId: string): Promise<StoredFiles[]> {
    return this.db('screenshots')
      .where({ account_id: accountId, config_id: configId })
      .select('image_name', 'thumb_name', 'html_name', 'content_type', 'markdown_name', 'metadata_name');
  }

  async deleteForConfig(accountId: string, configId: string, trx: Knex | Knex.Transaction = this.db): Promise<void> {
    await trx('screenshots').where({ account_id: accountId, config_id: configId }).delete();
  }
}
