/**
 * The claim loop, written once for leased work (the job worker, the webhook dispatcher): claims
 * work while this instance has room for it, runs each piece, and claims again when one ends.
 *
 * - pump(): claims now, one piece after another, until nothing is claimable or `concurrency`
 *   pieces run. Called when work may have arrived (an event), when a piece ends, and on a poll
 *   (work whose lease ran out on a dead instance, retries that came due).
 * - A pump that arrives while a claim round is under way is recorded, not dropped: one more
 *   round follows the current one (however many pumps arrived), and that pump's promise
 *   resolves with it. The current round may have looked before the work that caused the pump
 *   was committed; dropping the pump would leave that work to the next poll.
 * - `before` (optional): what a claim needs in hand, asked for before each claim (the job
 *   worker's browser, in the browser pool's fair order); handed to the work claimed with it,
 *   given back when nothing was claimed (or the claim failed, or the loop is stopping).
 * - wakeIn(ms): pumps once more after `ms`, for work this instance knows comes due then (a
 *   retry it scheduled), so the poll can be slow: it is left for what no instance announces
 *   (work a dead instance left, an event lost). Only once started with polling.
 * - stop(graceMs): claims no more, then waits up to `graceMs` for the claim under way and the
 *   running work; idle() waits for them without a limit.
 * - A failed claim is logged once per outage: the first failure, then only a failure with
 *   another message, and a line when claims work again (with how many failed), not one line per
 *   poll while the database or Redis is down.
 */
import type { LoggerInstance } from 'moleculer';

/** A wake asked for at most this many ms before one already asked for shares its round. */
const WAKE_COALESCE_MS = 50;
/** Wakes kept at most (the soonest); later ones are left to the poll. */
const MAX_WAKES = 10_000;
/** The longest delay setTimeout takes (2^31-1 ms). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** What the loop claims and runs. */
export interface ClaimWork<W, R> {
  /** The next piece of work, claimed with `held` in hand; null when none may start now. */
  claim(held: R): Promise<W | null>;
  /** Runs a claimed piece to its end; it owns `held` from now on. */
  run(work: W, held: R): Promise<void>;
}

/** A resource each claim needs in hand (a browser). */
export interface ClaimResource<R> {
  /** Waits for one (and rejects when none can come: shutting down). */
  acquire(): Promise<R>;
  giveBack(held: R): void;
}

export interface ClaimLoopOptions<R> {
  /** Pieces of work running at once, at most. */
  concurrency: number;
  /** pump() runs this often once started with polling. */
  pollMs: number;
  /** Asked for before each claim; given back when nothing was claimed. */
  before?: ClaimResource<R>;
  /** Where a failed claim is reported ("claiming <what> failed: ..."), unless the loop is stopping, and its recovery. */
  log: Pick<LoggerInstance, 'info' | 'warn' | 'error'>;
  /** What is claimed, for the log ("a job", "a webhook delivery"). */
  what: string;
}

export class ClaimLoop<W, R = undefined> {
  private readonly inFlight = new Set<Promise<void>>();
  private poller: NodeJS.Timeout | null = null;
  /** The claim round under way. */
  private claiming: Promise<void> | null = null;
  /** The round a pump that arrived during `claiming` waits for. */
  private again: Promise<void> | null = null;
  private stopped = false;
  /** When wakeIn() asked to pump (Date.now() ms), soonest first; one timer for the soonest. */
  private wakes: number[] = [];
  private waker: { at: number; timer: NodeJS.Timeout } | null = null;
  /** The claims failing since the last that worked: the message last logged and how many failed. */
  private failing: { message: string; count: number } | null = null;

  constructor(
    private readonly work: ClaimWork<W, R>,
    private readonly options: ClaimLoopOptions<R>,
  ) {}

  /** Claiming has stopped (shutdown has begun); what runs goes on. */
  get stopping(): boolean {
    return this.stopped;
  }

  /** Pieces of work running now. */
  get running(): number {
    return this.inFlight.size;
  }

  /** Claims now, and on every poll when `poll` (tests with a controllable clock pump by hand). */
  start(poll = true): void {
    if (poll && !this.poller) this.poller = setInterval(() => void this.pump(), this.options.pollMs);
    void this.pump();
  }

  /**
   * Pumps after `ms` too (work this instance knows comes due then), sooner than the poll would.
   * A time at most WAKE_COALESCE_MS before one already asked for shares its round (never one
   * earlier: the work would not be due yet); past MAX_WAKES the latest are left to the poll.
   * Nothing when not started with polling, or stopping. A timer that fires early (the event
   * loop's clock is a little behind) is set again; a wake is taken only once its time has come.
   */
  wakeIn(ms: number): void {
    if (this.stopped || !this.poller) return;
    const at = Date.now() + Math.max(0, ms);
    const i = this.wakes.findIndex((w) => w >= at);
    if (i >= 0 && this.wakes[i]! <= at + WAKE_COALESCE_MS) return;
    if (i < 0) this.wakes.push(at);
    else this.wakes.splice(i, 0, at);
    if (this.wakes.length > MAX_WAKES) this.wakes.length = MAX_WAKES;
    this.armWaker();
  }

  /** The timer for the soonest wake asked for. */
  private armWaker(): void {
    const next = this.wakes[0];
    if (this.waker && (next === undefined || this.waker.at !== next)) {
      clearTimeout(this.waker.timer);
      this.waker = null;
    }
    if (next === undefined || this.waker || this.stopped) return;
    const timer = setTimeout(
      () => {
        this.waker = null;
        const now = Date.now();
        if (this.wakes.length && this.wakes[0]! <= now) {
          while (this.wakes.length && this.wakes[0]! <= now) this.wakes.shift();
          void this.pump();
        }
        this.armWaker();
      },
      // setTimeout takes at most 2^31-1 ms (24.8 days); longer, it would fire at once, again and
      // again. A later wake is re-armed when this timer fires.
      Math.min(MAX_TIMER_MS, Math.max(0, next - Date.now())),
    );
    timer.unref();
    this.waker = { at: next, timer };
  }

  /**
   * Claims while there is room; resolves once a claim round that began at or after this call
   * has claimed what it could (the work claimed runs on).
   */
  pump(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.claiming) {
      this.again ??= this.claiming.then(() => {
        this.again = null;
        return this.pump();
      });
      return this.again;
    }
    this.claiming = this.round().finally(() => {
      this.claiming = null;
    });
    return this.claiming;
  }

  /** Claims no more (shutdown has begun): no round starts, the one under way ends at its next claim. */
  stopClaiming(): void {
    this.stopped = true;
    if (this.poller) clearInterval(this.poller);
    this.poller = null;
    if (this.waker) clearTimeout(this.waker.timer);
    this.waker = null;
    this.wakes = [];
  }

  /**
   * Claims no more, and waits up to `graceMs` (no limit by default) for the claim under way
   * and the running work. What still runs then goes on; idle() waits for it.
   */
  async stop(graceMs = Number.POSITIVE_INFINITY): Promise<void> {
    this.stopClaiming();
    if (graceMs === Number.POSITIVE_INFINITY) return this.idle();
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
      timer.unref();
    });
    try {
      await Promise.race([this.idle(), grace]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Waits until no claim is under way and no work runs. */
  async idle(): Promise<void> {
    while (this.inFlight.size || this.claiming || this.again) {
      await Promise.allSettled([...this.inFlight, this.claiming, this.again]);
    }
  }

  /** Claims one piece after another until none comes or there is no room. */
  private async round(): Promise<void> {
    try {
      while (!this.stopped && this.inFlight.size < this.options.concurrency) {
        const before = this.options.before;
        const held = before ? await before.acquire() : (undefined as R);
        let work: W | null = null;
        try {
          work = this.stopped ? null : await this.work.claim(held);
        } finally {
          if (work === null && before) before.giveBack(held);
        }
        this.recovered();
        if (work === null) break;
        this.launch(work, held);
      }
    } catch (err) {
      if (!this.stopped) this.claimFailed((err as Error).message);
    }
  }

  /** A failed claim: logged when it begins an outage or fails otherwise than the last one logged. */
  private claimFailed(message: string): void {
    const count = (this.failing?.count ?? 0) + 1;
    if (this.failing?.message !== message) this.options.log.warn(`claiming ${this.options.what} failed: ${message}`);
    this.failing = { message, count };
  }

  /** A claim that worked after failed ones ends the outage, logged once. */
  private recovered(): void {
    if (!this.failing) return;
    const { count } = this.failing;
    this.failing = null;
    this.options.log.info(`claiming ${this.options.what} works again, after ${count} failed ${count === 1 ? 'claim' : 'claims'}`);
  }

  private launch(work: W, held: R): void {
    const run: Promise<void> = this.work
      .run(work, held)
      .catch((err: unknown) => this.options.log.error(`running ${this.options.what} failed`, err))
      .finally(() => {
        this.inFlight.delete(run);
        void this.pump();
      });
    this.inFlight.add(run);
  }
}
