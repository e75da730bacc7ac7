/**
 * The capture engine: takes a browser from the pool, runs one capture in a fresh context
 * within its time budget, and always gives the browser back. The budget
 * (CAPTURE_TIMEOUT_MS) counts from the moment a browser starts the capture: the wait for one
 * is bounded apart (CAPTURE_QUEUE_TIMEOUT_MS, the pool). A capture that overruns is
 * stopped (its context, and with it the page's renderer, is disposed) and answered with
 * capture_timeout; a browser that cannot even dispose a context is replaced. A browser that
 * dies under a capture is replaced and the capture taken again, once, on another browser.
 */
import { serviceError } from '../../shared/errors';
import { takeAgain } from '../../shared/take-again';
import type { SnapOptions } from '../../shared/screenshot-options';
import type { BrowserPool, Claim } from './browser-pool';
import { type BrowserSlot, type PreparedPage, withTimeout } from './browser-slot';
import type { BlockerSource } from '../page/blocking';
import type { EgressPolicy } from '../../shared/egress';
import type { GatewayCapture } from '../page/gateway';
import { BrowserHiccup, type CaptureOutput, capturePage } from '../page/page-capture';
import { PageSession, sleep, viewportOf } from '../page/page-session';
import { PageWatch } from '../page/page-watch';
import { statusRuleBefore } from '../page/capture-rules';

/** What a capture gives, as those who reach the page through the engine (jobs, research) see it. */
export type { CaptureOutput } from '../page/page-capture';
export type { PageLink, PageReading } from '../page/page-reading';

const DISPOSE_TIMEOUT_MS = 5_000;
/** A capture whose browser died is taken again only if at least this much of its budget is left. */
const MIN_RETRY_MS = 1_000;

/** The browser died under a capture; the capture itself may well be fine elsewhere. */
class BrowserLost extends Error {
  constructor(override readonly cause: Error) {
    super(`the browser was lost during the capture: ${cause.message}`);
  }
}

/** Why a capture the browser failed under is not taken again: it was already, too little time is left, or it has steps. */
type NotAgain = 'twice' | 'late' | 'actions';

/** What a capture the browser failed under is answered when it is not (or no longer) taken again. */
function browserFailure(err: BrowserLost | BrowserHiccup, why: NotAgain): Error {
  const what =
    err instanceof BrowserLost
      ? 'The browser stopped (crashed, or ran out of memory) while capturing the page'
      : err.kind === 'screenshot_failed'
        ? 'The browser failed to take the screenshot'
        : "The browser closed the page's tab under the capture";
  // A page that stops two browsers in a row is the page's doing; the rest is the browser's.
  if (why === 'twice' && err instanceof BrowserLost) {
    return serviceError('page_crashed', `${what}, twice, on two browsers; nothing was charged. Capture a lighter page.`);
  }
  const note = {
    twice: `${what}, twice; nothing was charged. Try again.`,
    late: `${what}, too late to try again within the time budget; nothing was charged. Try again.`,
    actions: `${what}; captures with multi_step_actions are not taken again by themselves, as the steps may already have acted on the site. Nothing was charged; try again if that is safe.`,
  }[why];
  return serviceError('browser_failed', note);
}

/** Each failure of the browser under a capture, by kind, and whether the capture was taken again (metrics.ts). */
export type BrowserFailureKind = 'browser_lost' | BrowserHiccup['kind'];
export interface BrowserFailureObserver {
  browserFailed(kind: BrowserFailureKind, retried: boolean): void;
}

/** How one capture gets its browser, and the time it spent waiting for one and holding one. */
export interface CaptureTurn {
  /** Who asks the pool: the priority class, and the ticket of the capture's account. */
  claim: Claim;
  /** A browser handed to this capture already (the job worker's); its first attempt runs on it. */
  slot: BrowserSlot | null;
  /** Filled in as the capture goes: whether it asked for a browser, ms spent waiting for one and holding one. */
  asked: boolean;
  waitedMs: number;
  heldMs: number;
}

/** A turn for a capture that waits for its browser as `claim`. */
export function turnOf(claim: Claim, slot: BrowserSlot | null = null): CaptureTurn {
  return { claim, slot, asked: false, waitedMs: 0, heldMs: 0 };
}

export interface CaptureEngineDeps {
  pool: BrowserPool;
  policy: EgressPolicy;
  blocker: BlockerSource;
  /** One capture's time budget, from the moment it has a browser. */
  timeoutMs: number;
  /** What runs on the page (capturePage by default); unit tests stand in for the browser here. */
  runPage?: typeof capturePage;
  /** Told of each failure of the browser under a capture. */
  observer?: BrowserFailureObserver | null;
}

/** How one capture runs, beyond its options. */
export interface CaptureHow {
  /** The proxy the capture goes out through (its slot's gateway chains to it). */
  upstream?: string | null;
  /** The caller's writes and answer: the used context is disposed after them. */
  answered?: Promise<unknown>;
  /** How it gets its browser; by default as a snap without a ticket. */
  turn?: CaptureTurn;
}

export class CaptureEngine {
  private readonly pool: BrowserPool;
  private readonly policy: EgressPolicy;
  private readonly blocker: BlockerSource;
  private readonly timeoutMs: number;
  private readonly runPage: typeof capturePage;
  private readonly observer: BrowserFailureObserver | null;

  constructor(deps: CaptureEngineDeps) {
    this.pool = deps.pool;
    this.policy = deps.policy;
    this.blocker = deps.blocker;
    this.timeoutMs = deps.timeoutMs;
    this.runPage = deps.runPage ?? capturePage;
    this.observer = deps.observer ?? null;
  }

  /**
   * Captures, then hands the output to `finish` (the thumbnail) before the used context is
   * disposed: disposing it alongside would compete with `finish` for the CPU and slow the
   * answer down. The browser is held until `finish` is done, so it should be short work
   * (no uploads). The disposal then waits for `answered` too, when given (the caller's
   * writes and answer), unless the browser is needed sooner (BrowserSlot.recycle).
   */
  capture<T>(options: SnapOptions, how: CaptureHow & { finish: (out: CaptureOutput) => Promise<T> }): Promise<T>;
  capture(options: SnapOptions, how?: CaptureHow): Promise<CaptureOutput>;
  async capture<T>(options: SnapOptions, how: CaptureHow & { finish?: (out: CaptureOutput) => Promise<T> } = {}): Promise<T | CaptureOutput> {
    const run = { finish: how.finish, upstream: how.upstream ?? null, answered: how.answered, turn: how.turn ?? turnOf({ cls: 'snap', ticket: null }) };
    // Set when the first browser starts the capture; a capture taken again keeps it.
    const budget = { deadline: 0 };
    // The browser failed under the capture, not the page: it died (a crash, the OOM killer,
    // its node gone), its screenshot call failed, or the tab went away. Once more, on a fresh
    // context (on another browser when this one died), within what is left of the time
    // budget. A page that kills browsers gets two and is then answered page_crashed. Not with
    // multi-step actions: their steps may already have acted on the site (a form sent), and
    // doing them again is not ours to decide.
    return takeAgain(() => this.attempt(options, budget, run), {
      lost: (err) => (err instanceof BrowserLost || err instanceof BrowserHiccup ? err : null),
      refuse: (_err, attempts): NotAgain | null =>
        attempts > 1 ? 'twice' : options.multi_step_actions?.length ? 'actions' : budget.deadline - Date.now() < MIN_RETRY_MS ? 'late' : null,
      answer: browserFailure,
      observed: (err, again) => this.observer?.browserFailed(err instanceof BrowserLost ? 'browser_lost' : err.kind, again),
    });
  }

  private async attempt<T>(
    options: SnapOptions,
    budget: { deadline: number },
    run: { finish: ((out: CaptureOutput) => Promise<T>) | undefined; upstream: string | null; answered: Promise<unknown> | undefined; turn: CaptureTurn },
  ): Promise<T | CaptureOutput> {
    const { finish, upstream, answered, turn } = run;
    const asked = performance.now();
    turn.asked = true;
    let slot: BrowserSlot;
    try {
      slot = turn.slot ?? (await this.pool.acquire(turn.claim));
    } finally {
      turn.waitedMs += performance.now() - asked;
    }
    turn.slot = null;
    const granted = performance.now();
    if (!budget.deadline) budget.deadline = Date.now() + this.timeoutMs;
    const { deadline } = budget;
    const unwatch = slot.watch();
    let page: PreparedPage | null = null;
    let egress: GatewayCapture | null = null;
    try {
      let out: CaptureOutput;
      try {
        page = await withTimeout(slot.takePage(), 15_000, 'preparing a browser context');
        // The slot's next page is prepared for this viewport: a client's captures mostly share one.
        slot.nextViewport = viewportOf(options);
        if (upstream && !slot.gateway) {
          throw serviceError(
            'internal_error',
            'This capture goes through a proxy, which needs the egress gateway; the operator has turned it off (EGRESS_GATEWAY=off).',
          );
        }
        egress = slot.gateway?.bind(upstream) ?? null;
        out = await this.runWithBudget(slot, page, options, deadline, egress);
        // The capture's traffic ends here: its gateway connections are closed and counted.
        if (egress && slot.gateway) out.egressBytes = slot.gateway.unbind(egress);
      } catch (err) {
        if (slot.lost) {
          slot.broken = true;
          throw new BrowserLost(err as Error);
        }
        // An error without a domain code is the browser's own failure, not the page's: the
        // session is replaced rather than trusted with the next capture. A hiccup of a browser
        // that still answers costs only the capture's context (disposed below).
        if (!(err as { type?: unknown }).type && !(err instanceof BrowserHiccup)) slot.broken = true;
        throw err;
      }
      return finish ? await finish(out) : out;
    } finally {
      unwatch();
      if (egress && slot.gateway) slot.gateway.unbind(egress);
      turn.heldMs += performance.now() - granted;
      // The used context is disposed off the answer's path (once it is answered, when the
      // caller says when), then the next page is prepared; the slot is free at once (a capture
      // that takes it waits for that page). A browser that cannot dispose a context within
      // the limit is retired.
      slot.recycle(page, DISPOSE_TIMEOUT_MS, answered).catch(() => this.pool.retire(slot));
      this.pool.release(slot);
    }
  }

  private async runWithBudget(
    slot: BrowserSlot,
    page: PreparedPage,
    options: SnapOptions,
    deadline: number,
    gateway: GatewayCapture | null,
  ): Promise<CaptureOutput> {
    const session = new PageSession(slot.cdp, page.sessionId, page.contextId, page.targetId, page.mainFrameId, page.viewport);
    const watch = PageWatch.start(session, this.timeoutMs);
    let timer: NodeJS.Timeout | undefined;
    // From the deadline on, the answer is the timeout's, whatever the page's work says while its note is made.
    let late = false;
    const overrun = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => {
          late = true;
          overrunAnswer(session, watch, this.timeoutMs, options).then(reject);
        },
        Math.max(0, deadline - Date.now()),
      );
    });
    const work = this.runPage({ page: session, userAgent: slot.userAgent, policy: this.policy, blocker: this.blocker, deadline, gateway, watch }, options);
    const inTime = work.then(
      (out) => (late ? overrun : out),
      (err: unknown) => (late ? overrun : Promise.reject(err)),
    );
    inTime.catch(() => undefined);
    try {
      return await Promise.race([inTime, overrun, watch.failed]);
    } finally {
      clearTimeout(timer);
      watch.stop();
    }
  }
}

/** How long the page may take to answer a trivial script before its renderer counts as busy. */
const BUSY_PROBE_MS = 1_000;

/**
 * The answer of a capture that ran out of time: on a page whose status fail_on_status lists,
 * that rule's failure (an error page never shows what wait_for or a step waits for); otherwise
 * capture_timeout, whose note says what it was doing.
 */
async function overrunAnswer(page: PageSession, watch: PageWatch, timeoutMs: number, options: SnapOptions): Promise<Error> {
  const rule = await statusRuleBefore(page, options, watch.step);
  return rule ?? serviceError('capture_timeout', await overrunNote(page, watch, timeoutMs));
}

/**
 * The note of a capture that ran out of time: what it was doing, and whether the page's own
 * script kept its renderer busy (a trivial script left unanswered).
 */
async function overrunNote(page: PageSession, watch: PageWatch, timeoutMs: number): Promise<string> {
  const step = watch.step;
  // Any answer, an error included, is the renderer answering.
  const probe = Promise.resolve().then(() => page.evaluate<number>('1', false));
  const busy = !(await Promise.race([
    probe.then(
      () => true,
      () => true,
    ),
    sleep(BUSY_PROBE_MS).then(() => false),
  ]));
  const cause = busy ? "; the page's own script kept its renderer busy (it did not answer a trivial script within a second)" : '';
  return (
    `The capture took longer than ${Math.round(timeoutMs / 1000)} seconds and was stopped while ${step}${cause}. ` +
    'Nothing was charged; see docs/api.md (wait_until, navigation_timeout) for what bounds each step.'
  );
}
