/**
 * The archive as a gallery: the account's captures (capture.listForAccount) or one
 * configuration's (scheduler.get, then capture.listForConfig, as GET
 * /screenshot_configs/:id/screenshots does: another account's configuration is 404), newest
 * first, a page at a time with the lists' own paging (services/shared/paging.ts: a deferred
 * join on the archive's index, so a deep page of 100 000 captures stays fast), filtered by
 * configuration and by UTC dates. Each capture shows its thumbnail (its existing thumbnail link).
 */
import { type ConfigView, call, type ScreenshotRef } from '../../../shared/contracts';
import { serviceError } from '../../../shared/errors';
import type { Paging } from '../../../shared/paging';
import { html, type SafeHtml, safeUrl } from '../html';
import { page, timeOf } from '../layout';
import type { ConsolePageContext } from './context';

/** Captures per page unless ?limit= says otherwise (1 to MAX_LIMIT). */
export const PAGE_SIZE = 24;
const MAX_LIMIT = 100;
/** Configurations offered in the filter: the newest ones (a configuration not among them can still be named by its id). */
const FILTER_CONFIGS = 100;

/** The gallery's query, as read from the address. */
export interface GalleryQuery {
  page: number;
  limit: number;
  config: string;
  from: string;
  to: string;
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** A YYYY-MM-DD date's first millisecond (UTC), or a 400 naming the field. */
function dayStart(field: string, value: string): number {
  const m = DATE.exec(value);
  const ms = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : Number.NaN;
  if (!m || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value) {
    throw serviceError('invalid_parameter', `${field}: a date as YYYY-MM-DD, such as 2026-11-28; got "${value}".`);
  }
  return ms;
}

/** ?page= of every list page: a whole number from 1 to 1000000, 1 when not given (400 with a note otherwise). */
export function pageNumber(value: unknown): number {
  return whole('page', value, 1, 1_000_000);
}

function whole(field: string, value: unknown, fallback: number, max: number): number {
  if (value === undefined || value === '') return fallback;
  if (typeof value !== 'string' || !/^\d{1,7}$/.test(value) || Number(value) < 1 || Number(value) > max) {
    throw serviceError('invalid_parameter', `${field}: a whole number from 1 to ${max}.`);
  }
  return Number(value);
}

/** Reads ?page, ?limit, ?config, ?from and ?to (400 with a note for a bad one). */
export function galleryQuery(query: Record<string, unknown>): GalleryQuery {
  const text = (k: string) => (typeof query[k] === 'string' ? (query[k] as string).trim() : '');
  const q = {
    page: pageNumber(query.page),
    limit: whole('limit', query.limit, PAGE_SIZE, MAX_LIMIT),
    config: text('config'),
    from: text('from'),
    to: text('to'),
  };
  if (q.config && !/^[A-Za-z0-9_-]{1,64}$/.test(q.config)) throw serviceError('invalid_parameter', 'config: a configuration id, as the filter lists them.');
  return q;
}

/** The lists' paging of a gallery query: `from` and `to` are whole UTC days, both included. */
export function pagingOf(q: GalleryQuery): Paging {
  const afterMs = q.from ? dayStart('from', q.from) - 1 : null;
  const beforeMs = q.to ? dayStart('to', q.to) + 86_400_000 : null;
  if (afterMs !== null && beforeMs !== null && afterMs >= beforeMs) throw serviceError('invalid_parameter', 'from: a date on or before to.');
  return { page: q.page, limit: q.limit, afterMs, beforeMs, order: 'DESC' };
}

/** The gallery's address for a query (only the fields that differ from the defaults). */
export function galleryHref(q: GalleryQuery): string {
  const params = new URLSearchParams();
  if (q.config) params.set('config', q.config);
  if (q.from) params.set('from', q.from);
  if (q.to) params.set('to', q.to);
  if (q.limit !== PAGE_SIZE) params.set('limit', String(q.limit));
  if (q.page > 1) params.set('page', String(q.page));
  const s = params.toString();
  return s ? `/console/captures?${s}` : '/console/captures';
}

/** What a configuration is called: its custom_title, else its URL, else its id. */
export function configName(view: Pick<ConfigView, 'config' | 'ids'> | undefined, fallback: string): string {
  const given = view?.config ?? {};
  const title = typeof given.custom_title === 'string' && given.custom_title.trim() ? given.custom_title : null;
  const url = typeof given.url === 'string' ? given.url : null;
  return title ?? url ?? fallback;
}

/** The thumbnails of `shots`, each a link to its capture's page; `configs` names their configurations where known. */
export function galleryItems(shots: ScreenshotRef[], configs: Map<string, ConfigView>): SafeHtml {
  return html`<ul class="gallery">${shots.map((s) => {
    const name = configName(configs.get(s.config_id), s.final_url ?? `Capture ${s.job_id}`);
    return html`<li><a href="/console/captures/${encodeURIComponent(s.job_id)}">
<img src="${safeUrl(s.direct_thumbnail_link)}" alt="" loading="lazy" width="320" height="240">
<div class="caption"><span class="name">${name}</span><br><span class="muted">${timeOf(s.taken_at_ms)}</span></div></a></li>`;
  })}</ul>`;
}

function filters(q: GalleryQuery, configs: ConfigView[]): SafeHtml {
  const listed = configs.some((c) => c.ids.screenshot_config_id === q.config);
  const option = (id: string, label: string) =>
    html`<option value="${id}"${id === q.config ? html` selected` : ''}>${label.length > 80 ? `${label.slice(0, 79)}…` : label}</option>`;
  return html`<form class="filters" method="get" action="/console/captures" role="search" aria-label="Filter captures">
<div class="field"><label for="f-config">Configuration</label>
<select id="f-config" name="config">${option('', 'Every configuration')}${q.config && !listed ? option(q.config, q.config) : ''}${configs.map((c) =>
    option(c.ids.screenshot_config_id, configName(c, c.ids.screenshot_config_id)),
  )}</select></div>
<div class="field"><label for="f-from">From (UTC)</label><input id="f-from" name="from" type="date" value="${q.from}"></div>
<div class="field"><label for="f-to">To (UTC)</label><input id="f-to" name="to" type="date" value="${q.to}"></div>
${q.limit !== PAGE_SIZE ? html`<input type="hidden" name="limit" value="${q.limit}">` : ''}
<button type="submit">Filter</button>
${q.config || q.from || q.to ? html`<a href="/console/captures">Clear</a>` : ''}
</form>`;
}

export async function capturesPage(ctx: ConsolePageContext): Promise<string> {
  const { broker, session } = ctx;
  const accountId = session.account.accountId;
  const q = galleryQuery((ctx.request.query ?? {}) as Record<string, unknown>);
  const paging = pagingOf(q);
  const newestConfigs = { page: 1, limit: FILTER_CONFIGS, afterMs: null, beforeMs: null, order: 'DESC' as const };
  const listed = call(broker, 'scheduler.list', { accountId, paging: newestConfigs });
  let list: { screenshots: ScreenshotRef[]; has_more: boolean };
  const known = new Map<string, ConfigView>();
  if (q.config) {
    // As the API: the account's configuration, or 404 (another account's is not told apart from none).
    const v = await call(broker, 'scheduler.get', { accountId, id: q.config });
    known.set(v.ids.screenshot_config_id, v);
    list = await call(broker, 'capture.listForConfig', { accountId, configId: v.ids.screenshot_config_id, paging });
  } else {
    list = await call(broker, 'capture.listForAccount', { accountId, paging });
  }
  const { configs } = await listed;
  for (const c of configs) known.set(c.ids.screenshot_config_id, c);
  const first = (q.page - 1) * q.limit + 1;
  const shown = list.screenshots.length;
  const pager = html`<nav class="pager" aria-label="Pages">
${q.page > 1 ? html`<a rel="prev" href="${galleryHref({ ...q, page: q.page - 1 })}">← Newer</a>` : ''}
<span>Page ${q.page}</span>
${list.has_more ? html`<a rel="next" href="${galleryHref({ ...q, page: q.page + 1 })}">Older →</a>` : ''}
</nav>`;
  return page({
    title: q.page > 1 ? `Captures, page ${q.page}` : 'Captures',
    session: { accountId, csrf: session.csrf },
    active: 'captures',
    body: html`<h1>Captures</h1>
${filters(q, configs)}
<p class="muted" role="status">${shown ? `Captures ${first} to ${first + shown - 1}, newest first.` : q.page > 1 ? 'No captures on this page.' : 'No captures match.'}</p>
${shown ? galleryItems(list.screenshots, known) : ''}
${pager}`,
  });
}
