/**
 * Per-account limits on captures: who may wait for a browser and who may start now, by the
 * counts of AccountSlots (every capture instance's), with the answers a client gets past its
 * own limits: 429 concurrency_limit_reached with Retry-After and a note naming the limit,
 * never the 503 that says the whole service is full.
 *
 * Each capture holds a ticket from its admission (a snap) or its claim (a job) to its end;
 * this instance renews the leases of the tickets it holds, so the counts stay exact while it
 * lives and let go of its captures when it dies.
 */
import type { AccountContext, PlanRecord } from '../../shared/contracts';
import { serviceError } from '../../shared/errors';
import type { AccountSlots, ConcurrencyLimits, Ticket } from './account-slots';

export function limitsOf(plan: Pick<PlanRecord, 'max_concurrent' | 'max_queued'>): ConcurrencyLimits {
  return { maxConcurrent: plan.max_concurrent, maxQueued: plan.max_queued };
}

/** A queued job's account limits are read from billing at most this often per account. */
const LIMITS_TTL_MS = 10_000;

export interface ConcurrencyAdmissionDeps {
  slots: AccountSlots;
  /** The lease of a ticket; renewed every third of it. */
  leaseMs: number;
  /** The account behind an id (billing.account), for jobs, which carry only the id. */
  accountOf(accountId: string): Promise<AccountContext>;
  /** About how long one capture holds a browser here lately, in seconds (the Retry-After of a refusal). */
  captureSeconds(): number;
  log: { warn(msg: string): void };
  now?: () => number;
}

export class ConcurrencyAdmission {
  /** The tickets this instance holds, renewed until finished. */
  private readonly live = new Map<string, Ticket>();
  private readonly limits = new Map<string, { limits: ConcurrencyLimits; at: number }>();
  private readonly finished: Array<(t: Ticket) => void> = [];
  private renewer: NodeJS.Timeout | null = null;
  private readonly now: () => number;

  constructor(private readonly deps: ConcurrencyAdmissionDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Renews the leases of the tickets held, every third of a lease. */
  startRenewing(): void {
    this.renewer = setInterval(
      () => {
        this.deps.slots.renew([...this.live.values()]).catch((err: Error) => this.deps.log.warn(`renewing the account capture counts failed: ${err.message}`));
      },
      Math.max(200, Math.floor(this.deps.leaseMs / 3)),
    );
    this.renewer.unref();
  }

  async stop(): Promise<void> {
    if (this.renewer) clearInterval(this.renewer);
    await this.deps.slots.close();
  }

  /** The fair-sharing state of these accounts now: captures running and waiting (over every instance when the counts are in Redis) and their last start. */
  async accountsNow(accountIds: string[]): Promise<Array<{ account_id: string; running: number; waiting: number; last_start_ms: number | null }>> {
    const [counts, lastStarts] = await Promise.all([
      Promise.all(accountIds.map((id) => this.deps.slots.counts(id))),
      accountIds.length ? this.deps.slots.lastStarts(accountIds) : Promise.resolve(new Map<string, number>()),
    ]);
    return accountIds.map((id, i) => ({ account_id: id, ...(counts[i] as { running: number; waiting: number }), last_start_ms: lastStarts.get(id) ?? null }));
  }

  /** Called with every ticket this instance finishes (its account may start another capture now). */
  onFinished(listener: (t: Ticket) => void): void {
    this.finished.push(listener);
  }

  ticket(id: string, account: Pick<AccountContext, 'accountId' | 'plan'>): Ticket {
    return { id, accountId: account.accountId, limits: limitsOf(account.plan) };
  }

  /** The limits of an account known by id only (a queued job's): its plan, read from billing, cached briefly. */
  async limitsFor(accountId: string): Promise<ConcurrencyLimits> {
    const cached = this.limits.get(accountId);
    if (cached && cached.at > this.now() - LIMITS_TTL_MS) return cached.limits;
    const limits = limitsOf((await this.deps.accountOf(accountId)).plan);
    if (this.limits.size > 10_000) this.limits.clear();
    this.limits.set(accountId, { limits, at: this.now() });
    return limits;
  }

  /** A new capture may wait for a browser; 429 concurrency_limit_reached when its account already has all it may have. */
  async admit(t: Ticket): Promise<void> {
    const outcome = await this.deps.slots.admit(t);
    if (!outcome.ok) {
      const { maxConcurrent, maxQueued } = t.limits;
      const retryAfter = this.retryAfter();
      throw serviceError(
        'concurrency_limit_reached',
        // In all, not split: between one capture's end and the next one's start a count may read 0 running, 9 waiting.
        `This account already has ${outcome.running + outcome.waiting} captures running or waiting for a browser, the most its plan allows ` +
          `(max_concurrent ${maxConcurrent} running and max_queued ${maxQueued} waiting); retry after ${retryAfter} seconds, or send fewer at once.`,
        { retryAfter },
      );
    }
    this.live.set(t.id, t);
  }

  /** Whether the capture may start now: false while its account runs max_concurrent captures. */
  async start(t: Ticket): Promise<boolean> {
    const started = await this.deps.slots.start(t);
    if (started) this.live.set(t.id, t);
    return started;
  }

  async finish(t: Ticket): Promise<void> {
    this.live.delete(t.id);
    try {
      await this.deps.slots.finish(t);
    } catch (err) {
      // Its lease runs out instead, since nothing renews it any more.
      this.deps.log.warn(`a capture's count could not be taken back (it lapses with its lease): ${(err as Error).message}`);
    }
    for (const listener of this.finished) listener(t);
  }

  /**
   * Gives back the place of a capture that no instance runs any more (its instance disappeared
   * and the api gave up on it), whoever held it, instead of leaving it to lapse with its lease.
   */
  async release(t: Pick<Ticket, 'id' | 'accountId'>): Promise<void> {
    this.live.delete(t.id);
    await this.deps.slots.finish(t);
  }

  lastStarts(accountIds: string[]): Promise<Map<string, number>> {
    return this.deps.slots.lastStarts(accountIds);
  }

  /**
   * The answer for a capture that waited CAPTURE_QUEUE_TIMEOUT_MS without a browser: 429 when
   * it waited behind its own account's running captures, null when the service was full (503).
   */
  async waitedOnOwnLimit(t: Ticket, waitedMs: number): Promise<Error | null> {
    const { running } = await this.deps.slots.counts(t.accountId).catch(() => ({ running: 0 }));
    if (running < t.limits.maxConcurrent) return null;
    const retryAfter = this.retryAfter();
    return serviceError(
      'concurrency_limit_reached',
      `This capture waited ${waitedMs} ms (CAPTURE_QUEUE_TIMEOUT_MS) behind this account's own ${running} running captures, the most its plan runs at once ` +
        `(max_concurrent ${t.limits.maxConcurrent}); retry after ${retryAfter} seconds, or send fewer at once.`,
      { retryAfter },
    );
  }

  /** About the time one capture takes here: by then one of the account's captures has ended. */
  private retryAfter(): number {
    return Math.min(60, Math.max(1, Math.ceil(this.deps.captureSeconds())));
  }
}
