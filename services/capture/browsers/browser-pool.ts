/**
 * Warm browser sessions (BrowserSlot), bounded by capacity, with a bounded wait. The pool
 * hands an idle slot to one capture at a time (preferring one whose next page is ready),
 * replaces a slot that misbehaves or whose browser is gone, pings idle ones so the Grid does
 * not reap them, and quits every session on shutdown, so no Grid slot is held until the
 * Grid's own timeout.
 *
 * Who gets the next free browser is the fair order of fair-queue.ts: /snap's captures
 * before the job worker's (at least one browser in four for jobs while both wait), account
 * by account in turn, and a capture starts only while its account runs fewer captures than
 * its plan allows over every instance (the TurnGate: ConcurrencyAdmission). A capture whose account is
 * at its limit waits, and the browser goes to the next account's.
 */
import { serviceError } from '../../shared/errors';
import type { Ticket } from '../fairness/account-slots';
import { type BrowserSlot, type LaunchOptions, launchSession } from './browser-slot';
import { FairQueue, type Waiting } from '../fairness/fair-queue';

export interface PoolOptions {
  sessions: number;
  queueMax: number;
  queueTimeoutMs: number;
  /** A WebDriver command is sent this often to idle sessions, so the Grid does not reap them. */
  keepAliveMs: number;
}

/** The pool's priority classes, highest first: a held /snap request, then queued jobs. */
export type PoolClass = 'snap' | 'jobs';
const POOL_CLASSES: readonly PoolClass[] = ['snap', 'jobs'];

/** Who asks for a browser. */
export interface Claim {
  cls: PoolClass;
  /** The capture's ticket in its account's counts; null for work of no account (the job worker asking for a browser to claim a job with). */
  ticket: Ticket | null;
  /** When it began waiting, if before it asked here (a snap taken again after its instance disappeared keeps its place). */
  since?: number;
  /**
   * A snap taken again after the instance that held it disappeared: it was let in there, so a
   * full queue here does not refuse it (the dead instance's waiting work moves here whole).
   */
  again?: boolean;
}

/** A capture of no account (tests, tools). */
const ANYONE: Claim = { cls: 'snap', ticket: null };

/** What lets a capture start: its account's running count (ConcurrencyAdmission). */
export interface TurnGate {
  /** True when the ticket's capture may start now; false while its account runs all it may. */
  start(ticket: Ticket): Promise<boolean>;
  /** The error for a capture that waited the whole queue timeout because of its own account's limit; null when the service was full. */
  waitedOnOwnLimit(ticket: Ticket, waitedMs: number): Promise<Error | null>;
}

const OPEN_GATE: TurnGate = { start: async () => true, waitedOnOwnLimit: async () => null };

/** A capture whose account is at its limit on another instance is tried again this often while a browser here is free. */
const BLOCKED_RETRY_MS = 100;
/** How long an account's plan holding its captures back counts as known (stats' waitingForBrowser). */
const HELD_FRESH_MS = 2_000;
/** While the gate fails (Redis unreachable), its warning is logged at most this often. */
const GATE_WARNING_EVERY_MS = 10_000;
/** Weight of the newest capture in the running average of how long captures hold a browser. */
const EWMA_WEIGHT = 0.2;

interface Waiter extends Waiting<PoolClass> {
  claim: Claim;
  resolve(slot: BrowserSlot): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout | null;
  /** Answered (a browser, or an error): nothing more happens to it. */
  settled: boolean;
}

const shuttingDown = () => serviceError('capacity_exhausted', 'The capture service is shutting down; retry shortly.', { retryAfter: 5 });

/** The job worker's ask for a browser: not a capture, so neither counted as waiting nor timed out. */
const isWorkerAsk = (claim: Claim) => claim.ticket === null && claim.cls === 'jobs';

export class BrowserPool {
  private readonly slots: BrowserSlot[] = [];
  private readonly queue = new FairQueue<PoolClass, Waiter>(POOL_CLASSES);
  /** When each busy slot was handed out, for the running average below. */
  private readonly grantedAt = new Map<BrowserSlot, number>();
  /** Seconds a capture holds a browser, lately (null before the first). */
  private holdSeconds: number | null = null;
  private dispatching = false;
  private dispatchAgain = false;
  private blockedRetry: NodeJS.Timeout | null = null;
  private gateWarnedAt = 0;
  /** Accounts whose turn came with a browser free and whose plan let no more start then, and when (stats). */
  private readonly heldByOwnLimit = new Map<string, number>();
  private starting = 0;
  private nextId = 1;
  private closed = false;
  /** Shutting down: the slots there are finish their captures, none is started or replaced. */
  private draining = false;
  /** Sessions being started; stop() waits for them, so none is left behind. */
  private readonly launching = new Set<Promise<void>>();
  private keepAlive: NodeJS.Timeout | null = null;
  private lastLaunchError: Error | null = null;

  private readonly log: { warn(...a: unknown[]): void; info(...a: unknown[]): void };
  private readonly launcher: (opts: LaunchOptions, id: number) => Promise<BrowserSlot>;
  private readonly gate: TurnGate;

  constructor(
    private readonly launch: LaunchOptions,
    private readonly opts: PoolOptions,
    deps: {
      log: { warn(...a: unknown[]): void; info(...a: unknown[]): void };
      /** Starts one browser session (launchSession by default; unit tests stand in for the browser). */
      launcher?: (opts: LaunchOptions, id: number) => Promise<BrowserSlot>;
      /** Whose turn it is to start, over every capture instance (admission.ts); open by default. */
      gate?: TurnGate;
    },
  ) {
    this.log = deps.log;
    this.launcher = deps.launcher ?? launchSession;
    this.gate = deps.gate ?? OPEN_GATE;
  }

  /**
   * Opens every session now, so the first captures find warm browsers. Waits a bounded
   * time: on a saturated Grid the service starts anyway and sessions join as they come.
   */
  async start(maxWaitMs = 15_000): Promise<void> {
    const launches = Array.from({ length: this.opts.sessions }, () => this.addSlot());
    await Promise.race([Promise.allSettled(launches), new Promise((r) => setTimeout(r, maxWaitMs).unref())]);
    this.keepAlive = setInterval(() => this.pingIdle(), this.opts.keepAliveMs);
    this.keepAlive.unref();
  }

  /** `queued`: the captures waiting here (not the job worker's ask), what CAPTURE_QUEUE_MAX bounds (/pressure). */
  get stats(): { sessions: number; busy: number; queued: number } {
    return { sessions: this.slots.length, busy: this.slots.filter((s) => s.busy).length, queued: this.queue.count((w) => !isWorkerAsk(w.claim)) };
  }

  /**
   * The captures waiting here that another browser would start (capture_queue_depth; an
   * autoscaler reads it): not those of an account its own plan held back when a browser was
   * free for it within HELD_FRESH_MS, which wait for their account's captures. A browser free
   * tries such an account again every BLOCKED_RETRY_MS, so the mark stays fresh while one is;
   * with every browser busy it lapses, and they count again.
   */
  get waitingForBrowser(): number {
    const now = Date.now();
    const held = (w: Waiter) => now - (this.heldByOwnLimit.get(w.accountId) ?? Number.NEGATIVE_INFINITY) < HELD_FRESH_MS;
    return this.queue.count((w) => !isWorkerAsk(w.claim) && !held(w));
  }

  /** Sessions whose CDP socket goes straight to their browser, not through the Grid's relay (GRID_CDP). */
  get directSessions(): number {
    return this.slots.filter((s) => s.cdpRoute === 'direct').length;
  }

  /** About how long a capture holds a browser here lately, in seconds (2 before the first). */
  get captureSeconds(): number {
    return this.holdSeconds ?? 2;
  }

  /**
   * A browser for `claim`, as soon as it is its turn (fair-queue.ts) and its account may start
   * a capture. Past CAPTURE_QUEUE_MAX captures waiting here, 503 at once; after
   * CAPTURE_QUEUE_TIMEOUT_MS without a browser, 503, or 429 when it waited behind its own
   * account's captures. The job worker's ask waits as long as it takes. Shutting down, or once
   * draining with no browser left and none starting, 503 at once.
   */
  acquire(claim: Claim = ANYONE): Promise<BrowserSlot> {
    if (this.closed || this.stranded) return Promise.reject(shuttingDown());
    const counted = (w: Waiter) => !isWorkerAsk(w.claim);
    const waiting = this.queue.count(counted);
    if (!isWorkerAsk(claim) && !claim.again && !this.pickFree() && waiting >= this.opts.queueMax) {
      // A full queue: the newest capture of an account with at least two more waiting gives way.
      const gives = this.queue.giveWay(counted, claim.ticket?.accountId ?? '');
      if (!gives) {
        return Promise.reject(
          serviceError('capacity_exhausted', `All ${this.opts.sessions} browsers are busy and ${waiting} captures are waiting; retry shortly.`, {
            retryAfter: 2,
          }),
        );
      }
      this.giveUpPlace(
        gives,
        serviceError(
          'capacity_exhausted',
          `All ${this.opts.sessions} browsers are busy and the ${waiting} places to wait are shared between accounts: this capture gave its place to another account's; retry shortly.`,
          { retryAfter: 2 },
        ),
      );
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        cls: claim.cls,
        accountId: claim.ticket?.accountId ?? '',
        since: claim.since ?? Date.now(),
        claim,
        resolve,
        reject,
        timer: null,
        settled: false,
      };
      if (!isWorkerAsk(claim)) waiter.timer = setTimeout(() => void this.giveUp(waiter), this.opts.queueTimeoutMs);
      this.queue.add(waiter);
      this.dispatch();
    });
  }

  /** Takes a waiter out of the queue and answers it `err` (as a timeout does; a ticket it started is its owner's to finish). */
  private giveUpPlace(waiter: Waiter, err: Error): void {
    if (waiter.settled || !this.queue.remove(waiter)) return;
    waiter.settled = true;
    if (waiter.timer) clearTimeout(waiter.timer);
    waiter.reject(err);
  }

  /** A capture that waited CAPTURE_QUEUE_TIMEOUT_MS is answered: 429 when its own account's limit held it, else 503. */
  private async giveUp(waiter: Waiter): Promise<void> {
    if (waiter.settled || !this.queue.remove(waiter)) return;
    waiter.settled = true;
    const own = waiter.claim.ticket ? await this.gate.waitedOnOwnLimit(waiter.claim.ticket, this.opts.queueTimeoutMs) : null;
    const why = this.slots.length === 0 && this.lastLaunchError ? ` (no browser could be started: ${this.lastLaunchError.message})` : '';
    waiter.reject(
      own ?? serviceError('capacity_exhausted', `No browser became free within ${this.opts.queueTimeoutMs} ms${why}; retry shortly.`, { retryAfter: 5 }),
    );
  }

  /**
   * Pairs free browsers with waiting work, one pair at a time (the gate may ask Redis). A
   * waiter whose account is at its limit is passed by in this round; the browser goes to the
   * next account's. Runs again when anything changed meanwhile.
   */
  private dispatch(): void {
    if (this.dispatching) {
      this.dispatchAgain = true;
      return;
    }
    this.dispatching = true;
    void this.dispatchRounds();
  }

  private async dispatchRounds(): Promise<void> {
    // The flag is cleared in the same turn as the last check for more to do: a dispatch()
    // between the two would otherwise be lost.
    try {
      do {
        this.dispatchAgain = false;
        const blocked = new Set<string>();
        const eligible = (w: Waiter) => !blocked.has(w.accountId);
        for (;;) {
          const slot = this.closed ? undefined : this.pickFree();
          const waiter = slot ? this.queue.next(eligible) : null;
          if (!slot || !waiter) break;
          // Held while the gate answers, so no other waiter takes it meanwhile.
          slot.busy = true;
          const ticket = waiter.claim.ticket;
          const may = ticket
            ? await this.gate.start(ticket).catch((err: Error) => {
                // Tried again every BLOCKED_RETRY_MS while it fails: said once in a while, not each time.
                if (Date.now() - this.gateWarnedAt > GATE_WARNING_EVERY_MS) {
                  this.gateWarnedAt = Date.now();
                  this.log.warn(`could not check the account's running captures (${err.message}); trying again shortly`);
                }
                return null;
              })
            : true;
          if (may === false) this.heldByOwnLimit.set(waiter.accountId, Date.now());
          else if (may) this.heldByOwnLimit.delete(waiter.accountId);
          if (waiter.settled || !may || this.closed || slot.broken) {
            this.unhold(slot);
            if (!may) blocked.add(waiter.accountId);
            // A waiter that gave up after its ticket started: its owner finishes the ticket.
            continue;
          }
          this.queue.serve(waiter, Date.now(), eligible);
          this.grant(waiter, slot);
        }
        for (const [accountId, at] of this.heldByOwnLimit) {
          if (Date.now() - at >= HELD_FRESH_MS || this.queue.count((w) => w.accountId === accountId) === 0) this.heldByOwnLimit.delete(accountId);
        }
        // Its account's captures may end on another instance, which tells no one here.
        if (blocked.size && !this.blockedRetry && this.pickFree()) {
          this.blockedRetry = setTimeout(() => {
            this.blockedRetry = null;
            this.dispatch();
          }, BLOCKED_RETRY_MS);
          this.blockedRetry.unref();
        }
      } while (this.dispatchAgain);
    } finally {
      this.dispatching = false;
    }
  }

  private grant(waiter: Waiter, slot: BrowserSlot): void {
    if (waiter.timer) clearTimeout(waiter.timer);
    waiter.settled = true;
    this.grantedAt.set(slot, Date.now());
    waiter.resolve(slot);
  }

  /** A slot held for a hand-over that did not happen is free again (or replaced, if it broke meanwhile). */
  private unhold(slot: BrowserSlot): void {
    slot.busy = false;
    if (slot.broken || this.closed) {
      if (this.slots.includes(slot)) this.remove(slot);
    }
  }

  /** Something changed outside the pool (an account's capture ended): waiting work may start now. */
  wake(): void {
    this.dispatch();
  }

  /**
   * The idle slot to use next: one whose page is ready, least recently used first (so at low
   * concurrency every browser gets idle time to prepare its next context), else any idle one.
   */
  private pickFree(): BrowserSlot | undefined {
    let best: BrowserSlot | undefined;
    for (const s of this.slots) {
      if (s.busy || s.broken) continue;
      if (!best || (s.hasReadyPage && !best.hasReadyPage) || (s.hasReadyPage === best.hasReadyPage && s.lastUsed < best.lastUsed)) best = s;
    }
    return best;
  }

  /** Gives a slot back after a capture; a broken one is replaced. */
  release(slot: BrowserSlot): void {
    const at = this.grantedAt.get(slot);
    this.grantedAt.delete(slot);
    if (at !== undefined) {
      const held = (Date.now() - at) / 1000;
      this.holdSeconds = this.holdSeconds === null ? held : this.holdSeconds + EWMA_WEIGHT * (held - this.holdSeconds);
    }
    slot.busy = false;
    slot.lastUsed = Date.now();
    if (slot.broken || this.closed) {
      this.remove(slot);
      return;
    }
    slot.prepareNext();
    this.dispatch();
  }

  /** Gives back a slot that was handed out and not used (the job worker found no job to claim). */
  giveBack(slot: BrowserSlot): void {
    this.grantedAt.delete(slot);
    this.unhold(slot);
    this.dispatch();
  }

  /** Takes a misbehaving slot out of service: now if idle, else when it is released. */
  retire(slot: BrowserSlot): void {
    slot.broken = true;
    if (!slot.busy && this.slots.includes(slot)) this.remove(slot);
  }

  /** Retires the browsers whose WebDriver session is one of `ids` (their Grid node is draining: grid-drain.ts). */
  retireSessions(ids: ReadonlySet<string>): number {
    const leaving = this.slots.filter((s) => !s.broken && ids.has(s.sessionId));
    for (const slot of leaving) this.retire(slot);
    return leaving.length;
  }

  private remove(slot: BrowserSlot): void {
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    void slot.quit();
    void this.addSlot();
    this.turnAwayIfStranded();
  }

  /**
   * From now on no session is started or replaced; the running captures finish on the slots
   * they have. Called the moment shutdown begins: a supervisor's SIGTERM to the process group
   * also reaches the ChromeDrivers, and a pool still replacing the sessions it sees die would
   * start browsers that outlive the service.
   */
  drain(): void {
    this.draining = true;
    this.turnAwayIfStranded();
  }

  /** Draining with no browser left and none starting: nothing waiting here can ever get one. */
  private get stranded(): boolean {
    return this.draining && this.slots.length === 0 && this.starting === 0;
  }

  /**
   * Once stranded, what waits is answered now rather than at its queue timeout; the job
   * worker's ask, which has none, would otherwise hold the service's stop for the time it
   * gives running captures (a browser that died just before shutdown, its replacement
   * discarded as it came).
   */
  private turnAwayIfStranded(): void {
    if (this.stranded) this.turnAway();
  }

  /** Answers every waiter: the service is shutting down. */
  private turnAway(): void {
    for (const w of this.queue.drain()) {
      if (w.timer) clearTimeout(w.timer);
      w.settled = true;
      w.reject(shuttingDown());
    }
  }

  private addSlot(attempt = 0): Promise<void> {
    if (this.closed || this.draining || this.slots.length + this.starting >= this.opts.sessions) return Promise.resolve();
    const launch = this.launchSlot(attempt);
    this.launching.add(launch);
    void launch.finally(() => this.launching.delete(launch));
    return launch;
  }

  private async launchSlot(attempt: number): Promise<void> {
    this.starting++;
    try {
      const slot = await this.launcher(this.launch, this.nextId++);
      this.starting--;
      if (this.closed || this.draining) {
        this.turnAwayIfStranded();
        await slot.quit();
        return;
      }
      this.lastLaunchError = null;
      this.slots.push(slot);
      // A closed socket (the Grid or the browser gone, or the watchdog) retires the slot at once.
      slot.onLost((err) => {
        if (this.closed || !this.slots.includes(slot)) return;
        this.log.warn(`Browser session ${slot.id} is gone (${err.message}); replacing it.`);
        this.retire(slot);
      });
      // The Grid no longer knows the session (its hub restarted): its slot there counts as free,
      // so the browser is ended (quit closes it over CDP) and replaced, after its capture when busy.
      slot.onSessionUnknown((err) => {
        if (this.closed || !this.slots.includes(slot)) return;
        const when = slot.busy ? ' once its capture ends' : '';
        const server = this.launch.seleniumUrl ? 'the Grid' : 'its ChromeDriver';
        this.log.warn(`Browser session ${slot.id} is no longer known to ${server} (${err.message.split('\n')[0]}); closing and replacing it${when}.`);
        this.retire(slot);
      });
      slot.prepareNext();
      this.dispatch();
    } catch (err) {
      this.starting--;
      this.lastLaunchError = err as Error;
      this.turnAwayIfStranded();
      const delay = Math.min(30_000, 500 * 2 ** attempt);
      this.log.warn(`Could not start a browser session (retrying in ${delay} ms): ${(err as Error).message}`);
      if (!this.closed && !this.draining) setTimeout(() => void this.addSlot(attempt + 1), delay).unref();
    }
  }

  private pingIdle(): void {
    for (const slot of this.slots) {
      if (slot.busy || slot.broken || Date.now() - slot.lastActive < this.opts.keepAliveMs) continue;
      slot.lastUsed = Date.now();
      slot.ping().catch((err: Error) => {
        // An unknown session is said and retired by its own listener (launchSlot).
        if (slot.unknown) return;
        this.log.warn(`Browser session ${slot.id} stopped answering (${err.message}); replacing it.`);
        this.retire(slot);
      });
    }
  }

  async stop(): Promise<void> {
    this.closed = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    if (this.blockedRetry) clearTimeout(this.blockedRetry);
    this.turnAway();
    await Promise.all([...this.slots.splice(0).map((s) => s.quit()), ...this.launching]);
  }
}
