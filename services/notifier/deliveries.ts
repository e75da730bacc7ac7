/**
 * webhook_deliveries and webhook_attempts: the outbox as the notifier works it. A due
 * delivery is claimed under a lease (shared/lease.ts, as capture's jobs are), so with any number of notifier instances one of them makes each attempt; the
 * attempt is recorded, and the delivery moved on, only while that lease is held. A sender
 * that dies mid-attempt leaves the lease to run out, and the delivery is claimed again
 * (delivery is at least once; receivers de-duplicate by webhook-id).
 */
import type { Knex } from 'knex';
import type { DeliveryStatus, DeliveryView } from '../shared/contracts';
import type { DeliveryKind, DeliveryTarget } from './public/outbox';
import { type LeaseColumns, Leases } from '../shared/lease';
import { type Paging, pageOf, pageQuery } from '../shared/paging';

/** A delivery this instance holds the lease of. */
export interface ClaimedDelivery {
  id: string;
  accountId: string;
  sendTo: DeliveryTarget;
  url: string;
  body: string;
  /** Attempts made before this one. */
  attempts: number;
  /** A failed or delivered delivery sent once more by hand: this attempt does not start the schedule again. */
  lastChance: boolean;
  leaseToken: string;
}

export interface AttemptRecord {
  at_ms: number;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
}

interface DeliveryRow {
  id: string;
  account_id: string;
  config_id: string | null;
  kind: DeliveryKind;
  send_to: DeliveryTarget;
  target_url: string;
  body: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at_ms: number | string | null;
  last_error: string | null;
  job_id: string | null;
  created_at_ms: number | string;
}

/** A due delivery as its claim reads it. */
interface DueRow {
  id: string;
  account_id: string;
  send_to: DeliveryTarget;
  target_url: string;
  body: string;
  attempts: number | string;
  last_chance: boolean | number;
}

const iso = (ms: number | string) => new Date(Number(ms)).toISOString();

/** Where a delivery's lease is kept: only a pending delivery is held. */
const DELIVERY_LEASE: LeaseColumns = { table: 'webhook_deliveries', held: { status: 'pending' } };

export class DeliveryRepository {
  private readonly lease: Leases;

  /** `accountConcurrency`: the most attempts under way at once for one account, over every instance. */
  constructor(
    private readonly db: Knex,
    leaseMs: number,
    private readonly now: () => number,
    private readonly accountConcurrency: number,
  ) {
    this.lease = new Leases(db, DELIVERY_LEASE, leaseMs, now);
  }

  /**
   * The oldest due delivery (pending and due, or claimed under a lease that ran out) of an
   * account with fewer than `accountConcurrency` attempts under way, claimed; or null. So one
   * account's slow or dead receivers hold at most that many senders, whatever its backlog.
   */
  async claim(): Promise<ClaimedDelivery | null> {
    const now = this.now();
    return this.lease.claim(
      (trx) =>
        this.lease
          .unheld(trx('webhook_deliveries').where('status', 'pending').where('next_attempt_at_ms', '<=', now), now)
          .whereNotIn('account_id', (busy) =>
            this.lease
              .held(busy.from('webhook_deliveries').where('status', 'pending'), now)
              .groupBy('account_id')
              .havingRaw('count(*) >= ?', [this.accountConcurrency])
              .select('account_id'),
          )
          .orderBy('next_attempt_at_ms')
          .limit(1)
          .select('id', 'account_id', 'send_to', 'target_url', 'body', 'attempts', 'last_chance'),
      async ([row]: DueRow[], grant) => {
        if (!row) return null;
        const leaseToken = await grant(row.id);
        return {
          id: row.id,
          accountId: row.account_id,
          sendTo: row.send_to,
          url: row.target_url,
          body: row.body,
          attempts: Number(row.attempts),
          lastChance: Boolean(row.last_chance),
          leaseToken,
        };
      },
      now,
    );
  }

  /**
   * Records an attempt and where the delivery goes next (delivered, failed, or pending
   * again at `nextAt`), only while the lease is held; answers where it went (a retry asked
   * during the attempt makes the next one due at once), or null when the lease was lost.
   */
  async finish(
    d: ClaimedDelivery,
    attempt: AttemptRecord,
    planned: { status: DeliveryStatus; nextAt: number | null },
  ): Promise<{ status: DeliveryStatus; nextAt: number | null } | null> {
    let next = planned;
    const recorded = await this.lease.whileHeld(d, async (trx) => {
      const asked = await trx('webhook_deliveries').where({ id: d.id }).first('retry_asked');
      if (asked?.retry_asked && planned.status !== 'delivered') next = { status: 'pending', nextAt: this.now() };
      const number = d.attempts + 1;
      await trx('webhook_attempts').insert({
        delivery_id: d.id,
        number,
        attempted_at_ms: attempt.at_ms,
        status_code: attempt.status_code,
        duration_ms: attempt.duration_ms,
        error: attempt.error,
      });
      return this.lease.end(
        d,
        {
          status: next.status,
          attempts: number,
          next_attempt_at_ms: next.nextAt,
          last_error: attempt.error,
          finished_at_ms: next.status === 'pending' ? null : this.now(),
          last_chance: false,
          retry_asked: false,
        },
        trx,
      );
    });
    return recorded ? next : null;
  }

  /** Gives a claimed delivery back without an attempt (this instance is stopping). */
  async release(d: ClaimedDelivery): Promise<void> {
    await this.lease.end(d);
  }

  /** When the next pending delivery is due (for the poll), or null. */
  async nextDueAt(): Promise<number | null> {
    const row = await this.db('webhook_deliveries').where('status', 'pending').min({ at: 'next_attempt_at_ms' }).first();
    return row?.at === null || row?.at === undefined ? null : Number(row.at);
  }

  async list(
    accountId: string,
    filter: { configId?: string; status?: DeliveryStatus },
    paging: Paging,
  ): Promise<{ deliveries: DeliveryView[]; has_more: boolean }> {
    const query = this.db('webhook_deliveries').where({ account_id: accountId });
    if (filter.configId) query.where({ config_id: filter.configId });
    if (filter.status) query.where({ status: filter.status });
    const page = pageOf(
      (await pageQuery(query, paging, { table: 'webhook_deliveries', columns: ['created_at_ms', 'id'], key: 'id' })) as DeliveryRow[],
      paging,
    );
    const ids = page.rows.map((r) => r.id);
    const attempts = ids.length ? await this.db('webhook_attempts').whereIn('delivery_id', ids).orderBy('number') : [];
    return {
      deliveries: page.rows.map((r) =>
        this.view(
          r,
          attempts.filter((a) => a.delivery_id === r.id),
        ),
      ),
      has_more: page.has_more,
    };
  }

  /**
   * Makes a delivery due at once (POST /webhook_deliveries/:id/retry); null when unknown. A
   * pending one keeps its schedule after this attempt; a failed or delivered one gets this
   * one attempt more, its earlier attempts staying in the log.
   */
  /**
   * One more attempt at once. A failed or delivered delivery gets that one attempt (last_chance:
   * it does not start the schedule again); a pending one is due now and then keeps its schedule;
   * one whose attempt is under way is marked, and its next attempt is due once that one is
   * recorded (retry_asked).
   */
  async retry(accountId: string, id: string): Promise<DeliveryView | null> {
    const now = this.now();
    await this.db.transaction(async (trx) => {
      const row = (await trx('webhook_deliveries').where({ id, account_id: accountId }).first('status', 'last_chance')) as
        | { status: DeliveryStatus; last_chance: boolean | number }
        | undefined;
      if (!row) return;
      const lastChance = row.status !== 'pending' || Boolean(row.last_chance);
      const free = await this.lease
        .unheld(trx('webhook_deliveries').where({ id, account_id: accountId }), now)
        .update({ status: 'pending', next_attempt_at_ms: now, finished_at_ms: null, last_chance: lastChance });
      if (!free) await trx('webhook_deliveries').where({ id, account_id: accountId }).update({ retry_asked: true });
    });
    const row = (await this.db('webhook_deliveries').where({ id, account_id: accountId }).first()) as DeliveryRow | undefined;
    if (!row) return null;
    return this.view(row, await this.db('webhook_attempts').where({ delivery_id: id }).orderBy('number'));
  }

  /** Deletes a configuration's deliveries with their attempts, inside the caller's transaction. */
  async deleteForConfig(trx: Knex.Transaction, accountId: string, configId: string): Promise<void> {
    const ids = (await trx('webhook_deliveries').where({ account_id: accountId, config_id: configId }).select('id')).map((r) => r.id as string);
    if (ids.length) await trx('webhook_attempts').whereIn('delivery_id', ids).delete();
    await trx('webhook_deliveries').where({ account_id: accountId, config_id: configId }).delete();
  }

  private view(
    r: DeliveryRow,
    attempts: Array<{ attempted_at_ms: number | string; status_code: number | null; duration_ms: number; error: string | null }>,
  ): DeliveryView {
    return {
      id: r.id,
      screenshot_configuration_id: r.config_id,
      kind: r.kind,
      send_to: r.send_to,
      url: r.target_url,
      status: r.status,
      job_id: r.job_id,
      created_at: iso(r.created_at_ms),
      next_attempt_at: r.status === 'pending' && r.next_attempt_at_ms !== null ? iso(r.next_attempt_at_ms) : null,
      last_error: r.last_error,
      payload: JSON.parse(r.body),
      attempts: attempts.map((a) => ({
        attempted_at: iso(a.attempted_at_ms),
        status_code: a.status_code === null ? null : Number(a.status_code),
        duration_ms: Number(a.duration_ms),
        error: a.error,
      })),
    };
  }
}
