/**
 * Paging of list endpoints (spec, "Paging parameters"), as the services receive it after
 * the api validated it. `after`/`before` arrive in seconds or milliseconds and are told
 * apart by magnitude: below 10^11 they are seconds (10^11 s is the year 5138).
 */
import type { Knex } from 'knex';

export interface Paging {
  page: number;
  limit: number;
  afterMs: number | null;
  beforeMs: number | null;
  order: 'ASC' | 'DESC';
}

export const MAX_PAGE_SIZE = 1000;

export function timestampToMs(value: number): number {
  return value < 1e11 ? Math.round(value * 1000) : Math.round(value);
}

/** Applies filter, order and page to a query on `table.createdColumn`; fetches one row more to tell has_more. */
export function pageQuery<T extends Knex.QueryBuilder>(query: T, paging: Paging, createdColumn: string, idColumn: string): T {
  if (paging.afterMs !== null) query.where(createdColumn, '>', paging.afterMs);
  if (paging.beforeMs !== null) query.where(createdColumn, '<', paging.beforeMs);
  const direction = paging.order === 'ASC' ? 'asc' : 'desc';
  return query
    .orderBy(createdColumn, direction)
    .orderBy(idColumn, direction)
    .limit(paging.limit + 1)
    .offset((paging.page - 1) * paging.limit) as T;
}

/** Splits the extra row off: the page's rows and whether more follow. */
export function pageOf<R>(rows: R[], paging: Paging): { rows: R[]; has_more: boolean } {
  return { rows: rows.slice(0, paging.limit), has_more: rows.length > paging.limit };
}

/** One page of a list endpoint: the rows of `query` (newest first unless ASC), mapped, and has_more. */
export async function fetchPage<R, V>(query: Knex.QueryBuilder, paging: Paging, map: (row: R) => V): Promise<{ items: V[]; has_more: boolean }> {
  const page = pageOf((await pageQuery(query, paging, 'created_at_ms', 'id')) as R[], paging);
  return { items: page.rows.map(map), has_more: page.has_more };
}
