/**
 * The accounts behind keys, kept for a short time (ACCOUNT_CACHE_MS) so that a request
 * does not read its key, plan and add-ons from the database each time (issue 46). Keyed by
 * the key's hash (never the key). An unknown or revoked key is not kept: it is read each
 * time, so a new key works at once.
 *
 * A change to what an entry holds clears it at once in the instance that made it (a key
 * rotated, a plan or add-ons set: the account's entries; a plan of the catalogue changed:
 * every entry), and the other billing instances hear of it by the broadcast
 * 'billing.accountsChanged'. A read that began before a change is not kept when it ends
 * after it (the generation moved on), so a cleared entry cannot come back stale.
 */
import type { AccountContext } from '../shared/contracts';

/** What changed: one account's key, plan or add-ons, or a plan of the catalogue (every account on it). */
export type AccountChange = { accountId: string } | { plan: string };

interface Entry {
  account: AccountContext;
  until: number;
}

export class AccountCache {
  private readonly entries = new Map<string, Entry>();
  private generation = 0;

  constructor(
    /** How long an entry is kept (0: nothing is kept). */
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    /** At most this many entries; the oldest goes first beyond it. */
    private readonly maxEntries = 10_000,
  ) {}

  /**
   * The account of a key hash: kept, or read by `read` (and kept when it is an account and no
   * change came while it was read).
   */
  async get(keyHash: string, read: () => Promise<AccountContext | null>): Promise<AccountContext | null> {
    if (this.ttlMs <= 0) return read();
    const at = this.now();
    const kept = this.entries.get(keyHash);
    if (kept && kept.until > at) return kept.account;
    if (kept) this.entries.delete(keyHash);
    const generation = this.generation;
    const account = await read();
    if (account && generation === this.generation) {
      if (this.entries.size >= this.maxEntries) {
        const oldest = this.entries.keys().next().value;
        if (oldest !== undefined) this.entries.delete(oldest);
      }
      this.entries.set(keyHash, { account, until: at + this.ttlMs });
    }
    return account;
  }

  /** Forgets what the change makes stale. */
  invalidate(change: AccountChange): void {
    this.generation += 1;
    if ('plan' in change) {
      for (const [hash, entry] of this.entries) if (entry.account.plan.name === change.plan) this.entries.delete(hash);
      return;
    }
    for (const [hash, entry] of this.entries) if (entry.account.accountId === change.accountId) this.entries.delete(hash);
  }

  /** Entries kept now (expired ones included until they are next asked for). */
  get size(): number {
    return this.entries.size;
  }
}
