/**
 * Monthly usage counters and request-rate windows behind one interface, with two backends:
 * Redis (full stack, shared by every billing instance) and in-process (embedded mode).
 *
 * Reserve-then-commit-or-refund: `reserve` checks every requested amount against its limit
 * and adds them all in one atomic step (a Lua script in Redis, a synchronous block in
 * memory), so concurrent requests can never push usage past a limit. The reservation is
 * remembered until it is committed or refunded; a refund gives the amounts back exactly
 * once, however often it is asked for. A reservation made with a deadline (`settleBy`: a
 * snap's, whose request settles it within its time budget) and still pending after it is
 * given back by `giveBackOverdue`: its holder stopped before settling it.
 */
import type Redis from 'ioredis';
import type { LoggerInstance } from 'moleculer';
import type { Limits, Reservation, UsageAmounts, UsageKind } from '../shared/contracts';
import { connectRedis } from '../shared/redis';
import { monthOf } from './limits';
import { type CounterChange, FLUSH_MS, type KeptReservation, type UsageLedger } from './usage-ledger';

export const USAGE_KINDS: UsageKind[] = ['screenshots', 'ai_credits', 'bandwidth_bytes', 'research_domains'];
/** The kinds as a Lua table literal: the counters' hash fields, in USAGE_KINDS order. */
const LUA_FIELDS = `{${USAGE_KINDS.map((k) => `'${k}'`).join(', ')}}`;

/** The in-process rate windows are swept of ended ones past this many. */
const RATE_WINDOWS_SWEPT_PAST = 10_000;

/**
 * A reservation is forgotten (neither refundable nor committable) after this long: longer than
 * its month's counter is kept (until the 8th of the next month, counterExpiry), so a job that
 * waits in the queue however long its month still counts is settled against what it reserved,
 * never reserved (and charged) a second time by its worker. Forgetting gives nothing back: a
 * reservation still pending then stays counted (a snap's is given back at its deadline before that).
 */
export const RESERVATION_TTL_SECONDS = 45 * 24 * 3600;

/** How long the ledger keeps a counter change whose counter's own expiry is not known here. */
const COUNTER_CHANGE_TTL_SECONDS = 24 * 3600;

/**
 * `heldIn`: the reservation id was pending already, counted in that month, not the one asked
 * (a job reserved before a month ended, reserved again by its worker after): it is settled there.
 */
export type ReserveOutcome = { ok: true; heldIn?: string } | { ok: false; exceeded: UsageKind; used: number; limit: number };

export interface RateOutcome {
  allowed: boolean;
  /** Seconds until the window resets. */
  retryAfter: number;
}

export interface UsageStore {
  /** Idempotent for a reservation id that is still pending. With `settleBy`, given back by giveBackOverdue once that is past. */
  reserve(reservation: Reservation, limits: Limits, expiresAt: Date): Promise<ReserveOutcome>;
  /** Gives a pending reservation back, to the month it was counted in (the reservation's own month when that is not known). True when this call refunded it. */
  refund(reservation: Reservation): Promise<boolean>;
  /** Makes a pending reservation final. True when it was still pending. */
  commit(reservation: Reservation): Promise<boolean>;
  /** Gives back the reservations still pending past their `settleBy`; answers how many it gave back. */
  giveBackOverdue(now: number): Promise<number>;
  usage(accountId: string, month: string): Promise<Limits>;
  /** Counts one request in the account's fixed window. */
  hitRate(accountId: string, max: number, windowSeconds: number, now: Date): Promise<RateOutcome>;
  /** Notes that the account ran out of `kind` this month (a reservation refused for it); kept until `expiresAt`. */
  noteExhausted(kind: UsageKind, accountId: string, month: string, expiresAt: Date): Promise<void>;
  /**
   * How many accounts ran out of `kind` this month, over every instance: exact in process,
   * a HyperLogLog estimate (within about 1%) in Redis, so counting stays one small key.
   */
  exhaustedAccounts(kind: UsageKind, month: string): Promise<number>;
  /** Before the first call: reads what the store keeps on disk, if anything. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/** The month a Redis reservation recorded after its amounts ("a,b,c,d;2026-11"); null for one recorded before months were. */
function monthRecorded(held: string): string | null {
  const month = held.split(';')[1];
  return month ? month : null;
}

function amountsIn(amounts: UsageAmounts): number[] {
  return USAGE_KINDS.map((k) => Math.max(0, Math.floor(amounts[k] ?? 0)));
}

// KEYS[1] usage hash, KEYS[2] reservation key.
// ARGV: N amounts, N limits, expire-at (unix s), reservation ttl (s), month, N being the number
// of kinds. Returns 0 or the 1-based index of the first exceeded kind followed by its usage. A
// reservation id that is still pending is not counted twice (a job retried after its worker
// died): {0, 0, what it recorded}. The reservation records its amounts as "a,b,c,...", in the
// kinds' order, then ";" and the month it was counted in.
const RESERVE_LUA = `
local pending = redis.call('GET', KEYS[2])
if pending then return {0, 0, pending} end
local fields = ${LUA_FIELDS}
local n = #fields
for i = 1, n do
  local amount = tonumber(ARGV[i])
  if amount > 0 then
    local used = tonumber(redis.call('HGET', KEYS[1], fields[i]) or '0')
    if used + amount > tonumber(ARGV[i + n]) then return {i, used} end
  end
end
local held = {}
for i = 1, n do
  local amount = tonumber(ARGV[i])
  if amount > 0 then redis.call('HINCRBY', KEYS[1], fields[i], amount) end
  held[i] = ARGV[i]
end
redis.call('EXPIREAT', KEYS[1], ARGV[2 * n + 1])
redis.call('SET', KEYS[2], table.concat(held, ',') .. ';' .. ARGV[2 * n + 3], 'EX', ARGV[2 * n + 2])
return {0, 0}
`;

// KEYS[1] usage hash, KEYS[2] reservation key. ARGV[1]: what the reservation recorded, as read
// to find its month (nothing refunded when it changed since). Refunds what the reservation
// recorded (a reservation recorded before a kind was added simply holds fewer amounts).
const REFUND_LUA = `
local held = redis.call('GET', KEYS[2])
if not held or held ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[2])
held = string.match(held, '^([^;]*)')
local fields = ${LUA_FIELDS}
local i = 1
for amount in string.gmatch(held, '([^,]+)') do
  local n = tonumber(amount)
  if n > 0 and redis.call('EXISTS', KEYS[1]) == 1 then
    local left = redis.call('HINCRBY', KEYS[1], fields[i], -n)
    if left < 0 then redis.call('HSET', KEYS[1], fields[i], 0) end
  end
  i = i + 1
end
return 1
`;

// KEYS[1] rate key (one per window of the clock). ARGV: max, window seconds. Returns 1 when allowed.
const RATE_LUA = `
local n = redis.call('INCR', KEYS[1])
if redis.call('TTL', KEYS[1]) < 0 then redis.call('EXPIRE', KEYS[1], ARGV[2]) end
if n > tonumber(ARGV[1]) then return 0 end
return 1
`;

/** The most overdue reservations one pass of giveBackOverdue takes from Redis at a time. */
const OVERDUE_BATCH = 200;

type RedisWithScripts = Redis & {
  snapReserve(usageKey: string, resvKey: string, ...args: (string | number)[]): Promise<[number, number, string?]>;
  snapRefund(usageKey: string, resvKey: string, held: string): Promise<number>;
  snapRate(key: string, max: number, windowSeconds: number): Promise<number>;
};

export class RedisUsageStore implements UsageStore {
  private readonly redis: RedisWithScripts;

  constructor(
    url: string,
    private readonly prefix: string,
    log: Pick<LoggerInstance, 'error' | 'info'>,
  ) {
    this.redis = connectRedis(url, 'usage counters', log) as RedisWithScripts;
    this.redis.defineCommand('snapReserve', { numberOfKeys: 2, lua: RESERVE_LUA });
    this.redis.defineCommand('snapRefund', { numberOfKeys: 2, lua: REFUND_LUA });
    this.redis.defineCommand('snapRate', { numberOfKeys: 1, lua: RATE_LUA });
  }

  // The hash tag {accountId} keeps an account's keys in one slot for Redis Cluster.
  private usageKey(accountId: string, month: string): string {
    return `${this.prefix}usage:{${accountId}}:${month}`;
  }

  private reservationKey(r: Pick<Reservation, 'accountId' | 'id'>): string {
    return `${this.prefix}resv:{${r.accountId}}:${r.id}`;
  }

  /**
   * The reservations with a deadline, scored by it (members: [account, id] as JSON). Written
   * beside the reservation, not in its script: one key for every account, which a Redis Cluster
   * keeps in another slot than the account's keys. Added before the reservation and removed after
   * its settlement, so no pending reservation with a deadline is ever missing from it; a member
   * whose reservation is gone is dropped by the next pass.
   */
  private get overdueKey(): string {
    return `${this.prefix}overdue`;
  }

  async reserve(r: Reservation, limits: Limits, expiresAt: Date): Promise<ReserveOutcome> {
    const member = r.settleBy === undefined ? null : JSON.stringify([r.accountId, r.id]);
    // Sent before the script on the same connection, so Redis has it first; not waited for apart (one round trip).
    const listed = member === null ? null : this.redis.zadd(this.overdueKey, r.settleBy as number, member);
    const reserved = this.redis.snapReserve(
      this.usageKey(r.accountId, r.month),
      this.reservationKey(r),
      ...amountsIn(r.amounts),
      ...USAGE_KINDS.map((k) => limits[k]),
      Math.floor(expiresAt.getTime() / 1000),
      RESERVATION_TTL_SECONDS,
      r.month,
    );
    const [[index, used, pending]] = await Promise.all([reserved, listed]);
    if (index === 0) {
      const heldIn = pending === undefined ? null : monthRecorded(pending);
      return heldIn !== null && heldIn !== r.month ? { ok: true, heldIn } : { ok: true };
    }
    if (member !== null) await this.redis.zrem(this.overdueKey, member);
    const exceeded = USAGE_KINDS[index - 1] as UsageKind;
    return { ok: false, exceeded, used, limit: limits[exceeded] };
  }

  async refund(r: Reservation): Promise<boolean> {
    const refunded = await this.refundHeld(r);
    if (r.settleBy !== undefined) await this.redis.zrem(this.overdueKey, JSON.stringify([r.accountId, r.id]));
    return refunded;
  }

  private async refundHeld(r: Pick<Reservation, 'accountId' | 'id' | 'month'>): Promise<boolean> {
    // Its month read first, so the refund goes to the month it was counted in; the script refunds only what was read.
    const held = await this.redis.get(this.reservationKey(r));
    if (held === null) return false;
    return (await this.redis.snapRefund(this.usageKey(r.accountId, monthRecorded(held) ?? r.month), this.reservationKey(r), held)) === 1;
  }

  async commit(r: Reservation): Promise<boolean> {
    if (r.settleBy === undefined) return (await this.redis.del(this.reservationKey(r))) === 1;
    const [deleted] = await Promise.all([this.redis.del(this.reservationKey(r)), this.redis.zrem(this.overdueKey, JSON.stringify([r.accountId, r.id]))]);
    return deleted === 1;
  }

  async giveBackOverdue(now: number): Promise<number> {
    let given = 0;
    for (;;) {
      const members = await this.redis.zrangebyscore(this.overdueKey, '-inf', now, 'LIMIT', 0, OVERDUE_BATCH);
      for (const member of members) {
        const [accountId, id] = JSON.parse(member) as [string, string];
        // Every instance may pass at once: the refund script gives a reservation back once.
        if (await this.refundHeld({ accountId, id, month: monthOf(new Date(now)) })) given++;
        await this.redis.zrem(this.overdueKey, member);
      }
      if (members.length < OVERDUE_BATCH) return given;
    }
  }

  async usage(accountId: string, month: string): Promise<Limits> {
    const h = await this.redis.hgetall(this.usageKey(accountId, month));
    return Object.fromEntries(USAGE_KINDS.map((k) => [k, Number(h[k] ?? 0)])) as unknown as Limits;
  }

  async hitRate(accountId: string, max: number, windowSeconds: number, now: Date): Promise<RateOutcome> {
    const window = Math.floor(now.getTime() / 1000 / windowSeconds);
    const allowed = await this.redis.snapRate(`${this.prefix}rate:{${accountId}}:${window}`, max, windowSeconds);
    // The window is the clock's (its key names it): a refused request may retry when it ends, not a whole window after its key was made.
    return { allowed: allowed === 1, retryAfter: Math.max(1, Math.ceil((window + 1) * windowSeconds - now.getTime() / 1000)) };
  }

  private exhaustedKey(kind: UsageKind, month: string): string {
    return `${this.prefix}exhausted:${month}:${kind}`;
  }

  async noteExhausted(kind: UsageKind, accountId: string, month: string, expiresAt: Date): Promise<void> {
    const key = this.exhaustedKey(kind, month);
    await this.redis
      .multi()
      .pfadd(key, accountId)
      .expireat(key, Math.floor(expiresAt.getTime() / 1000))
      .exec();
  }

  async exhaustedAccounts(kind: UsageKind, month: string): Promise<number> {
    return this.redis.pfcount(this.exhaustedKey(kind, month));
  }

  async start(): Promise<void> {}

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

/**
 * Embedded mode: the same semantics in one process (JavaScript runs each call to completion).
 * With a ledger (the service's database: usage-ledger.ts) the counters and pending reservations
 * outlive a restart: what changed is written every FLUSH_MS and at close, read back at start.
 */
export class MemoryUsageStore implements UsageStore {
  private readonly usageByKey = new Map<string, { counts: Limits; expiresAt: number }>();
  /** Pending reservations by account and id (as Redis keys them: an id is only its account's to settle). */
  private readonly pending = new Map<string, KeptReservation>();
  private readonly rates = new Map<string, { count: number; resetAt: number }>();
  /** Month, then kind: the accounts that ran out of it. */
  private readonly exhausted = new Map<string, Map<UsageKind, Set<string>>>();
  /** What changed since the ledger's last write: counters by key, reservations made (pending) and settled (kept by an earlier write). */
  private changed = new Map<string, CounterChange>();
  private made = new Map<string, KeptReservation>();
  private settled = new Map<string, { accountId: string; id: string }>();
  /** The pending reservations the ledger holds, and those a write under way is adding. */
  private readonly kept = new Set<string>();
  private adding = new Set<string>();
  private timer: NodeJS.Timeout | null = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly now: () => number = Date.now,
    private readonly ledger: UsageLedger | null = null,
    private readonly onWriteError: (err: unknown) => void = () => undefined,
  ) {}

  async start(): Promise<void> {
    if (!this.ledger) return;
    const state = await this.ledger.load(this.now());
    for (const c of state.counters) this.usageByKey.set(`${c.accountId}:${c.month}`, { counts: c.counts, expiresAt: c.expiresAt });
    for (const r of state.pending) {
      const key = `${r.accountId}:${r.id}`;
      this.pending.set(key, r);
      this.kept.add(key);
    }
    this.timer = setInterval(() => void this.write(), FLUSH_MS);
    this.timer.unref();
  }

  private counts(accountId: string, month: string): Limits {
    const key = `${accountId}:${month}`;
    const entry = this.usageByKey.get(key);
    if (entry && entry.expiresAt > this.now()) return entry.counts;
    const fresh = { counts: Object.fromEntries(USAGE_KINDS.map((k) => [k, 0])) as unknown as Limits, expiresAt: Number.POSITIVE_INFINITY };
    this.usageByKey.set(key, fresh);
    return fresh.counts;
  }

  /** Notes a counter's change for the ledger (`sign` -1 for a refund). */
  private noteChange(accountId: string, month: string, amounts: number[], sign: 1 | -1): void {
    if (!this.ledger) return;
    const key = `${accountId}:${month}`;
    let change = this.changed.get(key);
    if (!change) {
      change = { accountId, month, added: Object.fromEntries(USAGE_KINDS.map((k) => [k, 0])) as Record<UsageKind, number>, expiresAt: 0 };
      this.changed.set(key, change);
    }
    USAGE_KINDS.forEach((kind, i) => {
      (change as CounterChange).added[kind] += sign * (amounts[i] ?? 0);
    });
    const expiresAt = this.usageByKey.get(key)?.expiresAt ?? 0;
    change.expiresAt = Number.isFinite(expiresAt) ? expiresAt : this.now() + COUNTER_CHANGE_TTL_SECONDS * 1000;
  }

  /** Notes a reservation settled: unwritten, it never reaches the ledger; kept there, its row goes. */
  private noteSettled(key: string, r: Reservation): void {
    if (!this.ledger) return;
    if (this.made.delete(key)) return;
    if (this.kept.delete(key) || this.adding.has(key)) this.settled.set(key, { accountId: r.accountId, id: r.id });
  }

  /** Writes what changed (one write at a time); a failed write's changes are taken again by the next. */
  private write(): Promise<void> {
    const ledger = this.ledger;
    if (!ledger || (!this.changed.size && !this.made.size && !this.settled.size)) return this.writing;
    const changes = { counters: [...this.changed.values()], pending: [...this.made.values()], settled: [...this.settled.values()] };
    const made = this.made;
    this.changed = new Map();
    this.made = new Map();
    this.settled = new Map();
    this.writing = this.writing.then(async () => {
      // A reservation settled while its row is being written is deleted by the next write.
      this.adding = new Set(made.keys());
      try {
        await ledger.write(changes, this.now());
        for (const key of made.keys()) if (!this.settled.has(key)) this.kept.add(key);
      } catch (err) {
        this.onWriteError(err);
        for (const c of changes.counters)
          this.noteChange(
            c.accountId,
            c.month,
            USAGE_KINDS.map((k) => c.added[k]),
            1,
          );
        for (const [key, r] of made) {
          if (this.pending.has(key)) this.made.set(key, r);
          else this.settled.delete(key);
        }
        for (const r of changes.settled) this.settled.set(`${r.accountId}:${r.id}`, r);
      } finally {
        this.adding = new Set();
      }
    });
    return this.writing;
  }

  private pendingKey(r: Reservation): string {
    return `${r.accountId}:${r.id}`;
  }

  async reserve(r: Reservation, limits: Limits, expiresAt: Date): Promise<ReserveOutcome> {
    const held = this.pending.get(this.pendingKey(r));
    if (held && held.expiresAt > this.now()) return held.month !== null && held.month !== r.month ? { ok: true, heldIn: held.month } : { ok: true };
    const counts = this.counts(r.accountId, r.month);
    const amounts = amountsIn(r.amounts);
    for (const [i, kind] of USAGE_KINDS.entries()) {
      const amount = amounts[i] ?? 0;
      if (amount > 0 && counts[kind] + amount > limits[kind]) {
        return { ok: false, exceeded: kind, used: counts[kind], limit: limits[kind] };
      }
    }
    USAGE_KINDS.forEach((kind, i) => {
      counts[kind] += amounts[i] ?? 0;
    });
    const entry = this.usageByKey.get(`${r.accountId}:${r.month}`);
    if (entry) entry.expiresAt = expiresAt.getTime();
    const key = this.pendingKey(r);
    const kept = {
      accountId: r.accountId,
      id: r.id,
      month: r.month,
      amounts,
      expiresAt: this.now() + RESERVATION_TTL_SECONDS * 1000,
      settleBy: r.settleBy ?? null,
    };
    this.pending.set(key, kept);
    this.noteChange(r.accountId, r.month, amounts, 1);
    if (this.ledger) this.made.set(key, kept);
    this.sweep();
    return { ok: true };
  }

  async refund(r: Reservation): Promise<boolean> {
    const held = this.pending.get(this.pendingKey(r));
    if (!held || held.expiresAt <= this.now()) return false;
    const key = this.pendingKey(r);
    this.pending.delete(key);
    this.noteSettled(key, r);
    const month = held.month ?? r.month;
    const counts = this.counts(r.accountId, month);
    const given = USAGE_KINDS.map((kind, i) => {
      const back = Math.min(counts[kind], held.amounts[i] ?? 0);
      counts[kind] -= back;
      return back;
    });
    this.noteChange(r.accountId, month, given, -1);
    return true;
  }

  async commit(r: Reservation): Promise<boolean> {
    const key = this.pendingKey(r);
    if (!this.pending.delete(key)) return false;
    this.noteSettled(key, r);
    return true;
  }

  async giveBackOverdue(now: number): Promise<number> {
    let given = 0;
    for (const held of [...this.pending.values()]) {
      if (
        held.settleBy !== null &&
        held.settleBy <= now &&
        (await this.refund({ accountId: held.accountId, id: held.id, month: held.month ?? monthOf(new Date(now)), amounts: {} }))
      )
        given++;
    }
    return given;
  }

  async usage(accountId: string, month: string): Promise<Limits> {
    return { ...this.counts(accountId, month) };
  }

  async hitRate(accountId: string, max: number, windowSeconds: number, now: Date): Promise<RateOutcome> {
    const t = now.getTime();
    let entry = this.rates.get(accountId);
    if (!entry || entry.resetAt <= t) {
      const windowMs = windowSeconds * 1000;
      entry = { count: 0, resetAt: (Math.floor(t / windowMs) + 1) * windowMs };
      // Windows that ended are dropped once there are many (keys and sign-in addresses come and go).
      if (this.rates.size >= RATE_WINDOWS_SWEPT_PAST) for (const [key, old] of this.rates) if (old.resetAt <= t) this.rates.delete(key);
      this.rates.set(accountId, entry);
    }
    entry.count += 1;
    return { allowed: entry.count <= max, retryAfter: Math.max(1, Math.ceil((entry.resetAt - t) / 1000)) };
  }

  async noteExhausted(kind: UsageKind, accountId: string, month: string): Promise<void> {
    let kinds = this.exhausted.get(month);
    if (!kinds) {
      // A new month: the months before it are never read again.
      this.exhausted.clear();
      kinds = new Map();
      this.exhausted.set(month, kinds);
    }
    kinds.set(kind, (kinds.get(kind) ?? new Set()).add(accountId));
  }

  async exhaustedAccounts(kind: UsageKind, month: string): Promise<number> {
    return this.exhausted.get(month)?.get(kind)?.size ?? 0;
  }

  /** Drops forgotten reservations and past months so a long-running process stays small. */
  private sweep(): void {
    if (this.pending.size < 10_000) return;
    const t = this.now();
    for (const [id, held] of this.pending) {
      if (held.expiresAt > t) continue;
      // Forgotten here; the ledger forgets its row by the same expiry.
      this.pending.delete(id);
      this.kept.delete(id);
    }
    for (const [key, entry] of this.usageByKey) if (entry.expiresAt <= t) this.usageByKey.delete(key);
  }

  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.write();
  }
}
