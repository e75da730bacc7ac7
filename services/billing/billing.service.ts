/**
 * billing: owns accounts, API keys, link signing secrets (link-secrets.ts), the plan
 * catalogue, addons and the monthly usage counters. Authenticates keys and signed links (and counts request rates), gates plans and addons,
 * reserves, commits, refunds and releases credits, and answers what room a month has left.
 * Every other service asks billing; none reads its tables.
 */
import type { Config } from '../shared/config';
import { type AccountContext, type ConsoleSession, type Limits, type Reservation, type UsageAmounts, type UsageKind, broadcast } from '../shared/contracts';
import { defineService, ServiceDatabase } from '../shared/define-service';
import { serviceError } from '../shared/errors';
import { EXHAUSTED_CODES } from './public/credits';
import { checkFeatures } from './public/plan-gates';
import { hashApiKey, randomId } from '../shared/secrets';
import type { ServiceUnit } from '../shared/service-unit';
import { AccountCache, type AccountChange } from './account-cache';
import { AccountRepository } from './accounts';
import { ConsoleSessions, consoleSessionPolicy } from './console-sessions';
import { LinkSecrets } from './link-secrets';
import { SecretBox } from '../shared/secrets';
import { answeringUnavailable } from '../shared/redis';
import { counterExpiry, limitsFor, monthOf } from './limits';
import { BillingMetrics } from './metrics';
import { DatabaseUsageLedger } from './usage-ledger';
import { MemoryUsageStore, RedisUsageStore, type ReserveOutcome, USAGE_KINDS, type UsageStore } from './usage-store';

export interface BillingDeps {
  config: Readonly<Config>;
  /** Injected for tests; defaults to Redis when REDIS_URL is set, else in-process. */
  store?: UsageStore;
  now?: () => Date;
}

const EXHAUSTED_WHAT: Record<UsageKind, string> = {
  screenshots: 'screenshots',
  ai_credits: 'AI Analysis credits',
  bandwidth_bytes: 'bytes of real-location bandwidth',
  research_domains: 'domain research credits',
};

interface BillingState {
  accounts: AccountRepository;
  /** Keys' accounts kept for ACCOUNT_CACHE_MS, cleared on every change (account-cache.ts). */
  cache: AccountCache;
  links: LinkSecrets;
  sessions: ConsoleSessions;
  store: UsageStore;
  now: () => Date;
}

/** How often the reservations left pending past their deadline are looked for (giveBackOverdue). */
export const OVERDUE_SWEEP_MS = 30_000;

export function billingService(deps: BillingDeps): ServiceUnit {
  const { config } = deps;
  const database = new ServiceDatabase(config.database);
  let state: BillingState;
  let metrics: BillingMetrics;
  let sweep: NodeJS.Timeout | null = null;

  const authenticate = async (token: string): Promise<AccountContext> => {
    const keyHash = hashApiKey(token);
    const account = await state.cache.get(keyHash, () => state.accounts.byKeyHash(keyHash));
    if (!account) {
      throw serviceError('access_token_invalid', 'The access_token is unknown or was revoked; use the key shown when the account was created or last rotated.');
    }
    await countRate(account.accountId);
    return account;
  };

  /** One sign-in attempt of the client address counted (CONSOLE_SIGNIN_*), for customers and the operator view alike. */
  async function countSignIn(client: string): Promise<void> {
    const { signInMax, signInWindowSeconds } = config.console;
    // In the rate windows' store (Redis in the full stack), under a name no account id can take.
    const attempt = await state.store.hitRate(`console-signin:${client}`, signInMax, signInWindowSeconds, state.now());
    if (!attempt.allowed) {
      throw serviceError(
        'rate_limited',
        `Too many sign-in attempts from this address: at most ${signInMax} per ${signInWindowSeconds} seconds. Retry after ${attempt.retryAfter} seconds.`,
        { retryAfter: attempt.retryAfter },
      );
    }
  }

  /**
   * Web console sign-in: the attempt counted, the key authenticated, a session opened. A
   * session reopened for a key its signed-in session just rotated (`signIn` false) is not an
   * attempt: refusing it at the sign-in limit would leave the new key shown to no one.
   */
  async function openSession(token: string, client: string, signIn = true): Promise<ConsoleSession & { session: string }> {
    if (signIn) await countSignIn(client);
    const keyHash = hashApiKey(token);
    const account = await state.cache.get(keyHash, () => state.accounts.byKeyHash(keyHash));
    if (!account) {
      throw serviceError(
        'access_token_invalid',
        'That API key is unknown or was revoked; sign in with the key shown when the account was created or last rotated.',
      );
    }
    const opened = await state.sessions.open(account.accountId, keyHash);
    return { session: opened.session, csrf: opened.csrf, expires_at_ms: opened.expiresAtMs, account };
  }

  /** The account of a console session, mapped through its key as authenticate maps a key, and the request counted as authenticate counts it. */
  async function sessionAccount(session: string): Promise<ConsoleSession> {
    const ended = () => serviceError('access_token_invalid', 'The console session has ended (signed out, expired, or its API key was revoked); sign in again.');
    const found = await state.sessions.find(session);
    if (!found) throw ended();
    const account = await state.cache.get(found.keyHash, () => state.accounts.byKeyHash(found.keyHash));
    if (!account) {
      await state.sessions.close(session);
      throw ended();
    }
    await countRate(account.accountId);
    return { account, csrf: found.csrf, expires_at_ms: found.expiresAtMs };
  }

  /** Counts one request against the account's rate limit (RATE_LIMIT_*): 429 rate_limited beyond it. */
  async function countRate(accountId: string): Promise<void> {
    const { max, windowSeconds } = config.rateLimit;
    if (max > 0) {
      const rate = await state.store.hitRate(accountId, max, windowSeconds, state.now());
      if (!rate.allowed) {
        throw serviceError(
          'rate_limited',
          `Too many requests: at most ${max} per ${windowSeconds} seconds per account. Retry after ${rate.retryAfter} seconds.`,
          {
            retryAfter: rate.retryAfter,
          },
        );
      }
    }
  }

  /** The 402 of amounts that do not fit in the month (a reservation or a room check refused), counted for the operator. */
  function refusal(accountId: string, month: string, at: Date, amounts: UsageAmounts, outcome: Extract<ReserveOutcome, { ok: false }>): Error {
    metrics.refused(outcome.exceeded);
    // Counted for the operator's view (metrics); the refusal is answered whatever this does.
    void state.store.noteExhausted(outcome.exceeded, accountId, month, counterExpiry(at)).catch(() => undefined);
    const what = EXHAUSTED_WHAT[outcome.exceeded];
    const left = Math.max(0, outcome.limit - outcome.used);
    // A request for several (AI credits per prompt, research domains) may find some left.
    return serviceError(
      EXHAUSTED_CODES[outcome.exceeded],
      left === 0
        ? `This month's ${what} are used up (${outcome.used} of ${outcome.limit}); the limit resets on the 1st (UTC). Upgrade the plan or add an ` +
            `addon for more.`
        : `This request needs ${amounts[outcome.exceeded]} ${what}; ${left} of this month's ${outcome.limit} are left. Ask for fewer; the limit resets on ` +
            `the 1st (UTC).`,
    );
  }

  async function reserveFor(
    account: AccountContext,
    amounts: UsageAmounts,
    reservationId?: string,
    month?: string,
    settleWithinMs?: number,
  ): Promise<Reservation> {
    const at = state.now();
    const reservation: Reservation = { id: reservationId ?? randomId(12), accountId: account.accountId, month: month ?? monthOf(at), amounts };
    if (settleWithinMs !== undefined) reservation.settleBy = at.getTime() + settleWithinMs;
    const limits = limitsFor(account);
    const outcome = await state.store.reserve(reservation, limits, counterExpiry(at));
    if (!outcome.ok) throw refusal(account.accountId, reservation.month, at, amounts, outcome);
    // Pending already, counted in an earlier month: settled there.
    return outcome.heldIn ? { ...reservation, month: outcome.heldIn } : reservation;
  }

  /**
   * The month's room, read and compared as a reservation would compare it (kind by kind, in
   * order), with nothing added: no usage, no reservation, no counter made. Not a hold: work
   * that must be sure of its credit reserves it.
   */
  async function checkRoom(account: AccountContext, amounts: UsageAmounts): Promise<{ left: Limits; month: string }> {
    const at = state.now();
    const month = monthOf(at);
    const limits = limitsFor(account);
    const used = await state.store.usage(account.accountId, month);
    for (const kind of USAGE_KINDS) {
      const amount = Math.max(0, Math.floor(amounts[kind] ?? 0));
      if (amount > 0 && used[kind] + amount > limits[kind]) {
        throw refusal(account.accountId, month, at, amounts, { ok: false, exceeded: kind, used: used[kind], limit: limits[kind] });
      }
    }
    const left = Object.fromEntries(USAGE_KINDS.map((kind) => [kind, Math.max(0, limits[kind] - used[kind])])) as unknown as Limits;
    return { left, month };
  }

  const accountById = async (accountId: string): Promise<AccountContext> => {
    const account = await state.accounts.byId(accountId);
    if (!account) throw serviceError('not_found', `No account "${accountId}".`);
    return account;
  };

  /**
   * A signed link's account: the signature first (a wrong one, or an unknown account, is 403
   * without saying which), then its expiry, then the account's rate limit, as its key's requests.
   */
  async function verifyLink(link: { account: string; canonical: string; signature: string; expires: number | null }): Promise<AccountContext> {
    const account = await state.accounts.byId(link.account);
    if (!account || !(await state.links.verify(account.accountId, link.canonical, link.signature))) {
      throw serviceError(
        'invalid_signature',
        'The link\'s signature does not verify: sign the canonical query (every parameter but signature, RFC 3986-encoded, sorted by name, joined with "&") ' +
          'with HMAC-SHA256 under the current signing secret of the account named in `account` (GET /signing_secret), or get a signed link from POST /signed_links.',
      );
    }
    if (link.expires !== null && link.expires * 1000 <= state.now().getTime()) {
      throw serviceError('link_expired', `The link expired at ${new Date(link.expires * 1000).toISOString()}; sign a new one (POST /signed_links).`);
    }
    await countRate(account.accountId);
    return account;
  }

  /** Usage that must be counted whatever the limit (it was used already): reserved against no limit, then committed. */
  const charge = async (accountId: string, amounts: UsageAmounts): Promise<{ charged: true }> => {
    const at = state.now();
    const reservation = { id: randomId(12), accountId, month: monthOf(at), amounts };
    const unlimited = {
      screenshots: Number.MAX_SAFE_INTEGER,
      ai_credits: Number.MAX_SAFE_INTEGER,
      bandwidth_bytes: Number.MAX_SAFE_INTEGER,
      research_domains: Number.MAX_SAFE_INTEGER,
    };
    await state.store.reserve(reservation, unlimited, counterExpiry(at));
    await state.store.commit(reservation);
    return { charged: true as const };
  };

  /**
   * Runs a change of keys, plans or add-ons; whatever its outcome, what it may have changed is
   * forgotten here at once and on every other billing instance (the broadcast; an instance it
   * misses forgets it within ACCOUNT_CACHE_MS).
   */
  async function changing<T>(ctx: Parameters<typeof broadcast>[0], change: AccountChange, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } finally {
      state.cache.invalidate(change);
      await broadcast(ctx, 'billing.accountsChanged', change, ['billing']).catch(() => undefined);
    }
  }

  const schema = defineService('billing', {
    database,
    actions: {
      authenticate: (ctx) => authenticate(ctx.params.token),
      openSession: (ctx) => openSession(ctx.params.token, ctx.params.client, ctx.params.signIn !== false),
      session: (ctx) => sessionAccount(ctx.params.session),
      closeSession: async (ctx) => ({ closed: await state.sessions.close(ctx.params.session) }),
      countSignIn: async (ctx) => {
        await countSignIn(ctx.params.client);
        return { ok: true as const };
      },
      checkFeatures: async (ctx) => {
        checkFeatures(ctx.params.account, ctx.params.features);
        return { ok: true as const };
      },
      reserve: async (ctx) => {
        const { account, amounts, features, reservationId, settleWithinMs } = ctx.params;
        if (features) checkFeatures(account, features);
        return reserveFor(account, amounts, reservationId, undefined, settleWithinMs);
      },
      reserveFor: async (ctx) => reserveFor(await accountById(ctx.params.accountId), ctx.params.amounts, ctx.params.reservationId, ctx.params.month),
      commit: async (ctx) => ({ committed: await state.store.commit(ctx.params.reservation) }),
      refund: async (ctx) => ({ refunded: await state.store.refund(ctx.params.reservation) }),
      // The store gives back what it recorded under the id (the amounts are its own), so the id is enough.
      release: async (ctx) => {
        const { accountId, reservationId, month } = ctx.params;
        return { released: await state.store.refund({ id: reservationId, accountId, month: month ?? monthOf(state.now()), amounts: {} }) };
      },
      checkRoom: async (ctx) => {
        const account = 'account' in ctx.params ? ctx.params.account : await accountById(ctx.params.accountId);
        return checkRoom(account, ctx.params.amounts ?? {});
      },
      usage: async (ctx) => {
        const month = monthOf(state.now());
        return { limits: limitsFor(ctx.params.account), usage: await state.store.usage(ctx.params.account.accountId, month), month };
      },
      account: (ctx) => accountById(ctx.params.accountId),
      linkSecret: async (ctx) => ({ secret: await state.links.current(ctx.params.accountId), account: ctx.params.accountId }),
      rotateLinkSecret: async (ctx) => ({
        ...(await state.links.rotate(ctx.params.accountId, ctx.params.revokePrevious)),
        account: ctx.params.accountId,
      }),
      signLink: async (ctx) => ({ signature: await state.links.sign(ctx.params.accountId, ctx.params.canonical) }),
      verifyLink: (ctx) => verifyLink(ctx.params),
      charge: (ctx) => charge(ctx.params.accountId, ctx.params.amounts),
      createAccount: async (ctx) => state.accounts.create(ctx.params.plan, ctx.params.addons ?? {}),
      listAccounts: async () => state.accounts.list(),
      setPlan: (ctx) =>
        changing(ctx, { accountId: ctx.params.accountId }, () => state.accounts.setPlan(ctx.params.accountId, ctx.params.plan, ctx.params.addons)),
      rotateKey: (ctx) => changing(ctx, { accountId: ctx.params.accountId }, () => state.accounts.rotateKey(ctx.params.accountId)),
      listPlans: async () => state.accounts.listPlans(),
      upsertPlan: (ctx) => changing(ctx, { plan: ctx.params.name }, () => state.accounts.upsertPlan(ctx.params)),
      metrics: () => metrics.snapshot(),
    },
    events: {
      // Another instance's change (or this one's, heard again): forgotten here too.
      'billing.accountsChanged': (ctx) => state.cache.invalidate(ctx.params),
    },
    created() {
      const now = deps.now ?? (() => new Date());
      state = {
        accounts: new AccountRepository(database.knex),
        cache: new AccountCache(config.accountCacheMs, () => now().getTime()),
        links: new LinkSecrets(database.knex, new SecretBox(config), () => now().getTime()),
        sessions: new ConsoleSessions(database.knex, consoleSessionPolicy(config), () => now().getTime()),
        // Without Redis the counters are this process's, kept on disk in its database (usage-ledger.ts).
        // While Redis cannot be reached, what needs it answers 503 service_unavailable (shared/redis.ts).
        store:
          deps.store ??
          (config.redisUrl
            ? answeringUnavailable(new RedisUsageStore(config.redisUrl, config.redisPrefix, this.logger))
            : new MemoryUsageStore(Date.now, new DatabaseUsageLedger(database.knex, USAGE_KINDS), (err) =>
                this.logger.warn(`writing the usage counters to the database failed (taken again in a second): ${(err as Error).message}`),
              )),
        now,
      };
      metrics = new BillingMetrics(
        () => state.store,
        () => monthOf(state.now()),
        this.logger,
      );
    },
    async started() {
      await state.store.start();
      // A reservation its holder did not settle in time (its process stopped mid-request): given
      // back now (what a restart finds in the ledger) and every OVERDUE_SWEEP_MS.
      // One pass at a time (a slow Redis may make one outlast the interval).
      let passing = false;
      const giveBack = async () => {
        if (passing) return;
        passing = true;
        const given = await state.store
          .giveBackOverdue(state.now().getTime())
          .catch((err: Error) => {
            this.logger.warn(`giving back overdue reservations failed (tried again in ${OVERDUE_SWEEP_MS / 1000} s): ${err.message}`);
            return 0;
          })
          .finally(() => {
            passing = false;
          });
        if (given > 0) this.logger.warn(`gave back ${given} reservation(s) not settled by their deadline (the request holding each stopped before it ended)`);
      };
      await giveBack();
      sweep = setInterval(() => void giveBack(), OVERDUE_SWEEP_MS);
      sweep.unref();
    },
    async stopped() {
      if (sweep) clearInterval(sweep);
      sweep = null;
      await state.store.close();
    },
  });
  return { schema, handle: {} };
}
