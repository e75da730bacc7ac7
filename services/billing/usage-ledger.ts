/**
 * The in-process usage store's copy on disk (MemoryUsageStore, the embedded default's store):
 * without it a restart gave every account its month back. The counters stay in memory, where
 * every reservation is checked and counted synchronously; what changed is written here once a
 * second (FLUSH_MS) and when the store closes, and read back when it starts.
 *
 * What is written is the change, not the value: each counter row grows by what this process
 * added since its last write, so another process adding to the same database (the admin CLI)
 * loses nothing of its own or of the server's. A reservation made and settled between two
 * writes (a snap: reserved, captured and committed within one second) never reaches the
 * database; one still pending at a write is kept as a row until it is settled, so a queued
 * job's reservation can still be committed or refunded after a restart.
 *
 * A crash loses at most the last second's changes: the guarantee the full stack's Redis gives
 * with `appendfsync everysec` (docs/operations.md, "Redis persistence").
 */
import type { Knex } from 'knex';
import type { Limits, UsageKind } from '../shared/contracts';

/** How often what changed is written. */
export const FLUSH_MS = 1_000;

const COUNTERS = 'usage_counters';
const RESERVATIONS = 'usage_reservations';

/** A counter's change since the last write: its key's account and month, the amounts added (a refund subtracts), and when it may be forgotten. */
export interface CounterChange {
  accountId: string;
  month: string;
  added: Record<UsageKind, number>;
  expiresAt: number;
}

/** A pending reservation as kept: its account, id, month counted in, amounts (in the kinds' order) and when it is forgotten. */
export interface KeptReservation {
  accountId: string;
  id: string;
  /** null for a row written before reservations kept their month. */
  month: string | null;
  amounts: number[];
  expiresAt: number;
  /** When it is given back unless settled before (a snap's: its request stopped); null: never. */
  settleBy: number | null;
}

/** What changed since the last write. */
export interface LedgerChanges {
  counters: CounterChange[];
  /** Reservations still pending, made since the last write. */
  pending: KeptReservation[];
  /** Reservations settled (committed or refunded) that an earlier write kept. */
  settled: Array<{ accountId: string; id: string }>;
}

/** What the store starts from. */
export interface LedgerState {
  counters: Array<{ accountId: string; month: string; counts: Limits; expiresAt: number }>;
  pending: KeptReservation[];
}

export interface UsageLedger {
  /** The counters and pending reservations not yet expired at `now`. */
  load(now: number): Promise<LedgerState>;
  /** Adds the changes, in one transaction; forgets rows expired at `now`. */
  write(changes: LedgerChanges, now: number): Promise<void>;
}

/** The ledger in the service's SQL database (SQLite or MySQL), in the kinds' order of `kinds`. */
export class DatabaseUsageLedger implements UsageLedger {
  constructor(
    private readonly knex: Knex,
    private readonly kinds: readonly UsageKind[],
  ) {}

  async load(now: number): Promise<LedgerState> {
    const [counters, pending] = await Promise.all([
      this.knex(COUNTERS).where('expires_at_ms', '>', now).select(),
      this.knex(RESERVATIONS).where('expires_at_ms', '>', now).select(),
    ]);
    return {
      counters: counters.map((row: Record<string, unknown>) => ({
        accountId: String(row.account_id),
        month: String(row.month),
        counts: Object.fromEntries(this.kinds.map((k) => [k, Number(row[k])])) as unknown as Limits,
        expiresAt: Number(row.expires_at_ms),
      })),
      pending: pending.map((row: Record<string, unknown>) => ({
        accountId: String(row.account_id),
        id: String(row.id),
        month: row.month === null || row.month === undefined ? null : String(row.month),
        amounts: String(row.amounts).split(',').map(Number),
        expiresAt: Number(row.expires_at_ms),
        settleBy: row.settle_by_ms === null || row.settle_by_ms === undefined ? null : Number(row.settle_by_ms),
      })),
    };
  }

  async write(changes: LedgerChanges, now: number): Promise<void> {
    // Each kind grows by what was added: SQLite names the row not inserted `excluded`, MySQL `VALUES(column)`.
    const sqlite = this.knex.client.config.client === 'better-sqlite3';
    const grown = (k: UsageKind) => this.knex.raw(sqlite ? `${COUNTERS}.${k} + excluded.${k}` : `${COUNTERS}.${k} + VALUES(${k})`);
    await this.knex.transaction(async (trx) => {
      for (const c of changes.counters) {
        await trx(COUNTERS)
          .insert({ account_id: c.accountId, month: c.month, ...c.added, expires_at_ms: c.expiresAt })
          .onConflict(['account_id', 'month'])
          .merge({ ...Object.fromEntries(this.kinds.map((k) => [k, grown(k)])), expires_at_ms: c.expiresAt });
      }
      if (changes.pending.length) {
        await trx(RESERVATIONS)
          .insert(
            changes.pending.map((r) => ({
              account_id: r.accountId,
              id: r.id,
              month: r.month,
              amounts: r.amounts.join(','),
              expires_at_ms: r.expiresAt,
              settle_by_ms: r.settleBy,
            })),
          )
          .onConflict(['account_id', 'id'])
          .merge();
      }
      for (const r of changes.settled) await trx(RESERVATIONS).where({ account_id: r.accountId, id: r.id }).delete();
      await trx(COUNTERS).where('expires_at_ms', '<=', now).delete();
      await trx(RESERVATIONS).where('expires_at_ms', '<=', now).delete();
    });
  }
}
