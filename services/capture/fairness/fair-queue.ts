/**
 * The order in which waiting work gets a browser, written once for /snap's wait on a capture
 * instance (BrowserPool) and for the jobs queue shared by every instance (JobQueue.claim).
 *
 * - Between priority classes: strict priority, but no starvation. The higher class is served
 *   first; a lower class that wanted a browser and was passed over PASS_LIMIT times in a row
 *   gets the next one. So under a flood of interactive captures, work below still gets at
 *   least one browser in PASS_LIMIT + 1.
 * - Between accounts within a class: round robin. The next browser goes to the account that
 *   has waited longest for its turn: the one whose turn began earliest, a turn beginning when
 *   the account's oldest waiting capture arrived or when the account was last served, whichever
 *   is later. An account that queued a thousand captures gets one turn in each round, like an
 *   account that queued one.
 * - Within an account: first come, first served (by when each began waiting: work taken again
 *   after its instance disappeared keeps the place it had).
 */

/** A lower class passed over this many times in a row, while it waited, gets the next turn. */
export const PASS_LIMIT = 3;

/** Strict priority between classes (highest first), with the starvation guard above. */
export class ClassTurns<C extends string> {
  private readonly passed = new Map<C, number>();

  constructor(private readonly order: readonly C[]) {}

  /** The class whose turn it is among those waiting, or null when none waits. */
  pick(waiting: ReadonlySet<C>): C | null {
    // The most starved first: the lowest class that reached the limit.
    for (let i = this.order.length - 1; i > 0; i--) {
      const c = this.order[i] as C;
      if (waiting.has(c) && (this.passed.get(c) ?? 0) >= PASS_LIMIT) return c;
    }
    return this.order.find((c) => waiting.has(c)) ?? null;
  }

  /** Records that `served` got a turn while the classes in `waiting` also waited. */
  served(served: C, waiting: ReadonlySet<C>): void {
    this.passed.set(served, 0);
    for (const c of waiting) if (c !== served) this.passed.set(c, (this.passed.get(c) ?? 0) + 1);
  }
}

/** When an account's turn began: its oldest waiting capture's arrival, or its last turn if later. */
export function turnBegan(oldestWaitingSince: number, lastServed: number | undefined): number {
  return lastServed === undefined ? oldestWaitingSince : Math.max(oldestWaitingSince, lastServed);
}

/** Accounts in the order they get browsers: earliest turn first, then the older wait. */
export function inTurnOrder<A extends { accountId: string; since: number }>(accounts: A[], lastServed: (accountId: string) => number | undefined): A[] {
  const began = new Map(accounts.map((a) => [a, turnBegan(a.since, lastServed(a.accountId))]));
  return [...accounts].sort((x, y) => (began.get(x) as number) - (began.get(y) as number) || x.since - y.since);
}

/** One piece of work waiting in a FairQueue. */
export interface Waiting<C extends string> {
  cls: C;
  /** The account it belongs to ('' for work of no account yet: the job worker's request). */
  accountId: string;
  /** When it began waiting (ms). */
  since: number;
}

/** The waiting work of one capture instance, served in the order above. */
export class FairQueue<C extends string, W extends Waiting<C>> {
  /** In arrival order. */
  private readonly waiting = new Set<W>();
  private readonly lastServed = new Map<string, number>();
  private readonly classes: ClassTurns<C>;

  constructor(order: readonly C[]) {
    this.classes = new ClassTurns(order);
  }

  get size(): number {
    return this.waiting.size;
  }

  count(filter: (w: W) => boolean): number {
    let n = 0;
    for (const w of this.waiting) if (filter(w)) n++;
    return n;
  }

  add(w: W): void {
    this.waiting.add(w);
  }

  /**
   * When the queue is full and `accountId` asks to wait: the waiter (of those `counted`) that
   * gives way to it, the newest of the account with the most waiting, if that account has at
   * least two more waiting than `accountId` has. Null when no account has so many more: the
   * newcomer is then the one turned away. So one account's waiting captures never fill the
   * queue against an account with fewer.
   */
  giveWay(counted: (w: W) => boolean, accountId: string): W | null {
    const perAccount = new Map<string, { n: number; newest: W }>();
    for (const w of this.waiting) {
      if (!counted(w)) continue;
      const seen = perAccount.get(w.accountId);
      perAccount.set(w.accountId, { n: (seen?.n ?? 0) + 1, newest: w });
    }
    const mine = perAccount.get(accountId)?.n ?? 0;
    let busiest: { n: number; newest: W } | null = null;
    for (const [id, entry] of perAccount) if (id !== accountId && (!busiest || entry.n > busiest.n)) busiest = entry;
    return busiest && busiest.n >= mine + 2 ? busiest.newest : null;
  }

  /** Takes work out without serving it (it gave up: a timeout, shutdown). */
  remove(w: W): boolean {
    return this.waiting.delete(w);
  }

  /** Takes everything out (shutdown). */
  drain(): W[] {
    const all = [...this.waiting];
    this.waiting.clear();
    return all;
  }

  /** Whose turn it is among the work `eligible` lets through, or null. Does not take it out. */
  next(eligible: (w: W) => boolean = () => true): W | null {
    const oldest = new Map<string, W>();
    const classes = new Set<C>();
    for (const w of this.waiting) {
      if (!eligible(w)) continue;
      classes.add(w.cls);
      const key = `${w.cls}\u0000${w.accountId}`;
      const first = oldest.get(key);
      if (!first || w.since < first.since) oldest.set(key, w);
    }
    const cls = this.classes.pick(classes);
    if (cls === null) return null;
    const heads = [...oldest.values()].filter((w) => w.cls === cls);
    return inTurnOrder(heads, (a) => this.lastServed.get(a))[0] ?? null;
  }

  /**
   * Takes `w` out as served at `now`: its account's next turn begins now, and the classes
   * that waited beside it (as `eligible` saw them) were passed over once more.
   */
  serve(w: W, now: number, eligible: (w: W) => boolean = () => true): void {
    const classes = new Set<C>();
    for (const other of this.waiting) if (eligible(other)) classes.add(other.cls);
    this.waiting.delete(w);
    this.classes.served(w.cls, classes);
    this.lastServed.set(w.accountId, now);
    this.forgetOldTurns();
  }

  /** A last turn older than every waiting capture no longer decides anything. */
  private forgetOldTurns(): void {
    if (this.lastServed.size < 1_000) return;
    let oldestWait = Number.POSITIVE_INFINITY;
    for (const w of this.waiting) oldestWait = Math.min(oldestWait, w.since);
    for (const [account, at] of this.lastServed) if (at < oldestWait) this.lastServed.delete(account);
  }
}
