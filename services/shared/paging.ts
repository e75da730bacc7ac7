/**
 * Paging of list endpoints (spec, "Paging parameters"), as the services receive it after
 * the api validated it. `after`/`before` arrive in seconds or milliseconds and are told
 * apart by magnitude: below 10^11 they are seconds (10^11 s is the year 5138).
 *
 * The spec pages by number, so page N skips (N-1) x limit rows. Skipping them in the query
 * that reads whole rows makes MySQL/MariaDB read every skipped row in full (page 50 of 1000
 * took 84-175 ms with 100 000 screenshots). A page is therefore read as a deferred join: the
 * keys of the page, filtered, ordered, limited and offset in a subquery that an index
 * carrying the filter, the order and the key answers alone (a secondary index holds the
 * primary key in InnoDB and the rowid in SQLite), then only those rows joined back in full.
 */
import type { Knex } from 'knex';

export interface Paging {
  page: number;
  limit: number;
  afterMs: number | null;
  beforeMs: number | null;
  order: 'ASC' | 'DESC';
}

/**
 * How a list is ordered: its table, the creation-time column first, then tie-breakers whose
 * last one is unique (so equal times always list in the same order, page after page), and
 * the unique key its rows are joined back on.
 */
export interface ListOrder {
  table: string;
  columns: readonly [string, ...string[]];
  key: string;
}

export const MAX_PAGE_SIZE = 1000;

export function timestampToMs(value: number): number {
  return value < 1e11 ? Math.round(value * 1000) : Math.round(value);
}

/**
 * One page of `filtered` (a query on `order.table` carrying only its filters): the date
 * filter, the order (`order.columns`, all in the page's direction) and the page, as a
 * deferred join. Fetches one row more to tell has_more (pageOf).
 */
export function pageQuery(filtered: Knex.QueryBuilder, paging: Paging, order: ListOrder): Knex.QueryBuilder {
  const [created] = order.columns;
  const keys = filtered.clone().clearSelect().select(order.key);
  if (paging.afterMs !== null) keys.where(created, '>', paging.afterMs);
  if (paging.beforeMs !== null) keys.where(created, '<', paging.beforeMs);
  const direction = paging.order === 'ASC' ? 'asc' : 'desc';
  for (const column of order.columns) keys.orderBy(column, direction);
  keys.limit(paging.limit + 1).offset((paging.page - 1) * paging.limit);
  const page = filtered.client.queryBuilder() as Knex.QueryBuilder;
  page.select(`${order.table}.*`).from(keys.as('page_keys')).join(order.table, `${order.table}.${order.key}`, `page_keys.${order.key}`);
  for (const column of order.columns) page.orderBy(`${order.table}.${column}`, direction);
  return page;
}

/** Splits the extra row off: the page's rows and whether more follow. */
export function pageOf<R>(rows: R[], paging: Paging): { rows: R[]; has_more: boolean } {
  return { rows: rows.slice(0, paging.limit), has_more: rows.length > paging.limit };
}

/** One page of a list endpoint: the rows of `filtered` (newest first unless ASC), mapped, and has_more. */
export async function fetchPage<R, V>(
  filtered: Knex.QueryBuilder,
  paging: Paging,
  order: ListOrder,
  map: (row: R) => V,
): Promise<{ items: V[]; has_more: boolean }> {
  const page = pageOf((await pageQuery(filtered, paging, order)) as R[], paging);
  return { items: page.rows.map(map), has_more: page.has_more };
}
