/**
 * Leased work, written once: capture's jobs, the notifier's outbox and the scheduler's
 * pending slots are rows that one holder at a time works on under a lease (a random token and
 * a time). The holder renews the lease while it works; only the holder of the current lease
 * may end it (complete, fail, give back), so the work is recorded exactly once; a holder that
 * dies leaves its lease to run out, and the row is claimed again.
 *
 * Each owner keeps its own question of what is claimable (the jobs queue's fair order, the
 * oldest due delivery, the due schedules); what they share is here:
 * - a claim reads its candidate rows in a transaction with FOR UPDATE SKIP LOCKED on
 *   MySQL/MariaDB, so claimers on any number of instances pass each other's rows by instead of
 *   waiting on them or taking the same one (SQLite, embedded and one process, serialises
 *   writers anyway), and leases the rows it takes in that transaction;
 * - renewing and ending are updates guarded by the token; work written with the end (a
 *   screenshot, an attempt) runs in a transaction that first locks the row while the lease is
 *   still the holder's (whileHeld), or that ends the lease last and is rolled back when the
 *   lease was lost (endWith: one statement fewer, a capture's record).
 */
import type { Knex } from 'knex';
import { isMysql } from './database';
import { randomId } from './secrets';

/** Where a table keeps its leases. */
export interface LeaseColumns {
  table: string;
  /** The row's key (default 'id'). */
  id?: string;
  /** The holder's token (default 'lease_token'). */
  token?: string;
  /**
   * The lease's time: the column holding when it runs out (default `{ until: 'lease_until_ms' }`),
   * or when it was taken (`{ since }`: it runs out the lease's term later).
   */
  time?: { until: string } | { since: string };
  /** What a held row matches besides its key and token (e.g. `{ status: 'running' }`). */
  held?: Readonly<Record<string, string>>;
}

/** A row under a lease: its key and the token only its holder knows. */
export interface Held {
  id: string;
  leaseToken: string;
}

/**
 * Leases a row the claim read, in the claim's transaction: writes the token (a new one unless
 * given) and the lease's time, with `set` beside; returns the token.
 */
export type Grant = (id: string, set?: Record<string, unknown>, token?: string) => Promise<string>;

/** A new lease token. */
export function newLeaseToken(): string {
  return randomId(12);
}

/** Locks the rows a claim reads so other claimers skip them: FOR UPDATE SKIP LOCKED on MySQL/MariaDB. */
function skipLocked<R extends {}, T>(q: Knex.QueryBuilder<R, T>): Knex.QueryBuilder<R, T> {
  return isMysql(q) ? q.forUpdate().skipLocked() : q;
}

/** Checks and ends the leases of a table (a worker's, whoever granted them). */
export class LeasedRows {
  protected readonly table: string;
  protected readonly idColumn: string;
  protected readonly tokenColumn: string;
  protected readonly timeColumn: string;
  protected readonly since: boolean;
  private readonly heldWhere: Readonly<Record<string, string>>;

  constructor(
    protected readonly db: Knex,
    columns: LeaseColumns,
  ) {
    const time = columns.time ?? { until: 'lease_until_ms' };
    this.table = columns.table;
    this.idColumn = columns.id ?? 'id';
    this.tokenColumn = columns.token ?? 'lease_token';
    this.since = 'since' in time;
    this.timeColumn = 'since' in time ? time.since : time.until;
    this.heldWhere = columns.held ?? {};
  }

  /** The row, while `held` holds its lease. */
  protected heldRow(db: Knex | Knex.Transaction, held: Held): Knex.QueryBuilder {
    return db(this.table).where({ ...this.heldWhere, [this.idColumn]: held.id, [this.tokenColumn]: held.leaseToken });
  }

  /**
   * Runs `work` in a transaction only while `held` holds the lease: the row is locked first
   * (FOR UPDATE on MySQL), so no claimer takes it over until the transaction ends. `work` gets
   * the row's `columns` too. Null when the lease was lost.
   */
  async whileHeld<T>(
    held: Held,
    work: (trx: Knex.Transaction, row: Record<string, unknown>) => Promise<T>,
    columns: readonly string[] = [],
  ): Promise<T | null> {
    return this.db.transaction(async (trx) => {
      let query = this.heldRow(trx, held).first(this.idColumn, ...columns);
      if (isMysql(trx)) query = query.forUpdate();
      const row = (await query) as Record<string, unknown> | undefined;
      return row ? work(trx, row) : null;
    });
  }

  /**
   * Runs `work` in a transaction and ends the lease in it, writing `set(result)` beside, only
   * while `held` holds the lease: the end's update, guarded by the token, is the transaction's
   * last statement (it locks the row), and when it finds the lease lost the transaction is
   * rolled back, `work`'s writes with it. Null then. What whileHeld followed by end does, with
   * no read of the row first: one statement fewer.
   */
  async endWith<T>(held: Held, work: (trx: Knex.Transaction) => Promise<T>, set: (result: T) => Record<string, unknown>): Promise<T | null> {
    const lost = new Error('lease lost');
    try {
      return await this.db.transaction(async (trx) => {
        const result = await work(trx);
        if (!(await this.end(held, set(result), trx))) throw lost;
        return result;
      });
    } catch (err) {
      if (err === lost) return null;
      throw err;
    }
  }

  /**
   * Ends the lease (the token and time cleared), writing `set` beside (the row's outcome: done,
   * failed, queued again), only while `held` holds it: false when it was lost.
   */
  async end(held: Held, set: Record<string, unknown> = {}, db: Knex | Knex.Transaction = this.db): Promise<boolean> {
    const n = await this.heldRow(db, held).update({ ...set, [this.tokenColumn]: null, [this.timeColumn]: null });
    return n === 1;
  }
}

/** Claims rows of a table under leases of `ms`, and checks, renews and ends them. */
export class Leases extends LeasedRows {
  constructor(
    db: Knex,
    columns: LeaseColumns,
    private readonly ms: number,
    private readonly now: () => number = Date.now,
  ) {
    super(db, columns);
  }

  /** The lease's time column for a lease taken or renewed at `at`. */
  private stamp(at: number): number {
    return this.since ? at : at + this.ms;
  }

  /**
   * One claim at `at`, in one transaction: `pick` reads the candidate rows (no more than the
   * claim may take), locked with SKIP LOCKED as above; `take` leases the ones it takes with
   * `grant` and returns what the claim gives out (reading or writing more in `trx`, the claim's
   * transaction, where it needs to). A row `take` does not grant stays as it was.
   */
  claim<R, T>(
    pick: (trx: Knex.Transaction) => Knex.QueryBuilder,
    take: (rows: R[], grant: Grant, trx: Knex.Transaction) => Promise<T>,
    at: number = this.now(),
  ): Promise<T> {
    return this.db.transaction(async (trx) => {
      const rows = (await skipLocked(pick(trx))) as R[];
      const grant: Grant = async (id, set = {}, token = newLeaseToken()) => {
        await trx(this.table)
          .where(this.idColumn, id)
          .update({ ...set, [this.tokenColumn]: token, [this.timeColumn]: this.stamp(at) });
        return token;
      };
      return take(rows, grant, trx);
    });
  }

  /** The lease's time for a lease taken at `at`, as the column to write: for a row written already held (a snap's job). */
  timeOf(at: number = this.now()): Record<string, number> {
    return { [this.timeColumn]: this.stamp(at) };
  }

  /** Narrows `q` to rows whose lease ran out by `at` (a row never leased, or given back, has none). */
  lapsed(q: Knex.QueryBuilder, at: number): Knex.QueryBuilder {
    return this.since ? q.where(this.timeColumn, '<', at - this.ms) : q.where(this.timeColumn, '<', at);
  }

  /** Narrows `q` to rows someone holds at `at`: leased, and not lapsed. */
  held(q: Knex.QueryBuilder, at: number): Knex.QueryBuilder {
    return q.where(this.timeColumn, '>=', this.since ? at - this.ms : at);
  }

  /** Narrows `q` to rows nobody holds at `at`: never leased, given back, or lapsed. */
  unheld(q: Knex.QueryBuilder, at: number): Knex.QueryBuilder {
    return q.where((w) => w.whereNull(this.timeColumn).orWhere((l) => this.lapsed(l, at)));
  }

  /** Extends the lease from now; false when it was lost (another holder took the row over, or it ended). */
  async renew(held: Held): Promise<boolean> {
    const n = await this.heldRow(this.db, held).update({ [this.timeColumn]: this.stamp(this.now()) });
    return n === 1;
  }
}
