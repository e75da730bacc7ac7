/**
 * How many captures each account has running (holding a browser) and waiting for one, over
 * every capture instance: the counts a plan's max_concurrent and max_queued are checked
 * against. Like billing's usage counters, they live in Redis in the full stack (REDIS_URL,
 * shared by every instance, each check and change one atomic script) and in the process in
 * embedded mode.
 *
 * A capture is counted by a ticket (its job's id) held under a lease, renewed by the instance
 * that holds it while the capture lives. An instance that dies stops renewing, and its tickets
 * drop out of the counts when their leases run out (CAPTURE_JOB_LEASE_MS, the same lease as
 * its jobs', which another instance then takes over under the same ticket): a dead instance
 * never holds an account's places for good.
 */
import type Redis from 'ioredis';
import type { LoggerInstance } from 'moleculer';
import { connectRedis } from '../../shared/redis';

/** A plan's limits (PlanRecord.max_concurrent and max_queued). */
export interface ConcurrencyLimits {
  /** Captures the account may run at once. */
  maxConcurrent: number;
  /** Captures it may have waiting for a browser beyond those. */
  maxQueued: number;
}

/** One capture as the counts see it. */
export interface Ticket {
  id: string;
  accountId: string;
  limits: ConcurrencyLimits;
}

export type AdmitOutcome = { ok: true } | { ok: false; running: number; waiting: number };

export interface AccountSlots {
  /**
   * Counts a new capture as waiting, unless the account already has max_concurrent +
   * max_queued captures running or waiting. Idempotent for a ticket it holds.
   */
  admit(ticket: Ticket): Promise<AdmitOutcome>;
  /**
   * Counts the capture as running (whether it waited or not), unless the account already runs
   * max_concurrent captures; true when it runs. Idempotent for a running ticket (a job taken
   * over under the same ticket, a capture taken again after its browser died). Records the
   * account's last start.
   */
  start(ticket: Ticket): Promise<boolean>;
  /** The capture is over: it counts no more. */
  finish(ticket: Pick<Ticket, 'id' | 'accountId'>): Promise<void>;
  /** Extends the leases of the tickets this instance holds (only of those still counted). */
  renew(tickets: Ticket[]): Promise<void>;
  /** When each account last started a capture (ms), for the jobs queue's turn order. */
  lastStarts(accountIds: string[]): Promise<Map<string, number>>;
  /** The account's counts now. */
  counts(accountId: string): Promise<{ running: number; waiting: number }>;
  close(): Promise<void>;
}

/** How long an account's last start is kept: longer than any capture waits. */
const LAST_START_TTL_MS = 24 * 3600 * 1000;

// KEYS: running, waiting (sorted sets: ticket -> lease expiry). ARGV: ticket, now, expiry, most in flight.
const ADMIT_LUA = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[2])
if redis.call('ZSCORE', KEYS[1], ARGV[1]) or redis.call('ZSCORE', KEYS[2], ARGV[1]) then return {1, 0, 0} end
local running = redis.call('ZCARD', KEYS[1])
local waiting = redis.call('ZCARD', KEYS[2])
if running + waiting >= tonumber(ARGV[4]) then return {0, running, waiting} end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[1])
redis.call('PEXPIREAT', KEYS[2], ARGV[3])
return {1, running, waiting + 1}
`;

// KEYS: running, waiting, last start. ARGV: ticket, now, expiry, most running.
const START_LUA = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then return 0 end
  redis.call('SET', KEYS[3], ARGV[2], 'PX', ${LAST_START_TTL_MS})
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[1])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
return 1
`;

// KEYS: running, waiting. ARGV: ticket, expiry. Only a ticket still counted is extended (XX):
// one finished meanwhile must not come back.
const RENEW_LUA = `
for i = 1, 2 do
  if redis.call('ZADD', KEYS[i], 'XX', 'CH', ARGV[2], ARGV[1]) == 1 then redis.call('PEXPIREAT', KEYS[i], ARGV[2]) end
end
return 1
`;

type RedisWithScripts = Redis & {
  slotsAdmit(running: string, waiting: string, ticket: string, now: number, expiry: number, most: number): Promise<[number, number, number]>;
  slotsStart(running: string, waiting: string, last: string, ticket: string, now: number, expiry: number, most: number): Promise<number>;
  slotsRenew(running: string, waiting: string, ticket: string, expiry: number): Promise<number>;
};

export class RedisAccountSlots implements AccountSlots {
  private readonly redis: RedisWithScripts;

  constructor(
    url: string,
    private readonly prefix: string,
    private readonly leaseMs: number,
    log: Pick<LoggerInstance, 'error' | 'info'>,
    private readonly now: () => number = Date.now,
  ) {
    this.redis = connectRedis(url, 'account capture counts', log) as RedisWithScripts;
    this.redis.defineCommand('slotsAdmit', { numberOfKeys: 2, lua: ADMIT_LUA });
    this.redis.defineCommand('slotsStart', { numberOfKeys: 3, lua: START_LUA });
    this.redis.defineCommand('slotsRenew', { numberOfKeys: 2, lua: RENEW_LUA });
  }

  // The hash tag {accountId} keeps an account's keys in one slot for Redis Cluster.
  private key(accountId: string, what: 'run' | 'wait' | 'last'): string {
    return `${this.prefix}slots:{${accountId}}:${what}`;
  }

  async admit(t: Ticket): Promise<AdmitOutcome> {
    const now = this.now();
    const most = t.limits.maxConcurrent + t.limits.maxQueued;
    const [ok, running, waiting] = await this.redis.slotsAdmit(
      this.key(t.accountId, 'run'),
      this.key(t.accountId, 'wait'),
      t.id,
      now,
      now + this.leaseMs,
      most,
    );
    return ok === 1 ? { ok: true } : { ok: false, running, waiting };
  }

  async start(t: Ticket): Promise<boolean> {
    const now = this.now();
    const k = (w: 'run' | 'wait' | 'last') => this.key(t.accountId, w);
    return (await this.redis.slotsStart(k('run'), k('wait'), k('last'), t.id, now, now + this.leaseMs, t.limits.maxConcurrent)) === 1;
  }

  async finish(t: Pick<Ticket, 'id' | 'accountId'>): Promise<void> {
    await this.redis.multi().zrem(this.key(t.accountId, 'run'), t.id).zrem(this.key(t.accountId, 'wait'), t.id).exec();
  }

  async renew(tickets: Ticket[]): Promise<void> {
    if (!tickets.length) return;
    const expiry = this.now() + this.leaseMs;
    await Promise.all(tickets.map((t) => this.redis.slotsRenew(this.key(t.accountId, 'run'), this.key(t.accountId, 'wait'), t.id, expiry)));
  }

  async lastStarts(accountIds: string[]): Promise<Map<string, number>> {
    const values = await Promise.all(accountIds.map((a) => this.redis.get(this.key(a, 'last'))));
    const out = new Map<string, number>();
    accountIds.forEach((a, i) => {
      if (values[i] != null) out.set(a, Number(values[i]));
    });
    return out;
  }

  async counts(accountId: string): Promise<{ running: number; waiting: number }> {
    const now = this.now();
    const [running, waiting] = await Promise.all([
      this.redis.zcount(this.key(accountId, 'run'), `(${now}`, '+inf'),
      this.redis.zcount(this.key(accountId, 'wait'), `(${now}`, '+inf'),
    ]);
    return { running, waiting };
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

/** Embedded mode: the same counts in the process (JavaScript runs each call to completion). */
export class MemoryAccountSlots implements AccountSlots {
  /** Per account: ticket -> its lease expiry, running and waiting apart. */
  private readonly accounts = new Map<string, { running: Map<string, number>; waiting: Map<string, number>; lastStart?: number }>();

  constructor(
    private readonly leaseMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  private of(accountId: string) {
    let a = this.accounts.get(accountId);
    if (!a) {
      this.sweep();
      a = { running: new Map(), waiting: new Map() };
      this.accounts.set(accountId, a);
    }
    const now = this.now();
    for (const held of [a.running, a.waiting]) for (const [id, until] of held) if (until <= now) held.delete(id);
    return a;
  }

  async admit(t: Ticket): Promise<AdmitOutcome> {
    const a = this.of(t.accountId);
    if (a.running.has(t.id) || a.waiting.has(t.id)) return { ok: true };
    if (a.running.size + a.waiting.size >= t.limits.maxConcurrent + t.limits.maxQueued) return { ok: false, running: a.running.size, waiting: a.waiting.size };
    a.waiting.set(t.id, this.now() + this.leaseMs);
    return { ok: true };
  }

  async start(t: Ticket): Promise<boolean> {
    const a = this.of(t.accountId);
    if (!a.running.has(t.id)) {
      if (a.running.size >= t.limits.maxConcurrent) return false;
      a.lastStart = this.now();
    }
    a.waiting.delete(t.id);
    a.running.set(t.id, this.now() + this.leaseMs);
    return true;
  }

  async finish(t: Pick<Ticket, 'id' | 'accountId'>): Promise<void> {
    const a = this.accounts.get(t.accountId);
    if (!a) return;
    a.running.delete(t.id);
    a.waiting.delete(t.id);
  }

  /** Drops accounts with nothing in flight whose last start no longer matters, so a long-running process stays small. */
  private sweep(): void {
    if (this.accounts.size < 10_000) return;
    const old = this.now() - LAST_START_TTL_MS;
    for (const [id, a] of this.accounts) if (!a.running.size && !a.waiting.size && (a.lastStart ?? 0) < old) this.accounts.delete(id);
  }

  async renew(tickets: Ticket[]): Promise<void> {
    const until = this.now() + this.leaseMs;
    for (const t of tickets) {
      const a = this.accounts.get(t.accountId);
      for (const held of a ? [a.running, a.waiting] : []) if (held.has(t.id)) held.set(t.id, until);
    }
  }

  async lastStarts(accountIds: string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const id of accountIds) {
      const at = this.accounts.get(id)?.lastStart;
      if (at !== undefined && at > this.now() - LAST_START_TTL_MS) out.set(id, at);
    }
    return out;
  }

  async counts(accountId: string): Promise<{ running: number; waiting: number }> {
    const a = this.of(accountId);
    return { running: a.running.size, waiting: a.waiting.size };
  }

  async close(): Promise<void> {}
}
