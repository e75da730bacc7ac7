/**
 * The capture engine: takes a browser from the pool, runs one capture in a fresh context
 * within its time budget, and always gives the browser back. The budget
 * (CAPTURE_TIMEOUT_MS) counts from the moment a browser starts the capture: the wait for one
 * is bounded apart (CAPTURE_QUEUE_TIMEOUT_MS, the pool). A capture that overruns is
 * stopped (its context, and with it the page's renderer, is disposed) and answered with
 * capture_timeout; a browser that cannot even dispose a context is replaced. A browser that
 * dies under a capture is replaced and the capture taken again, once, on another browser.
 */
import { serviceError } from '../shared/errors';
import type { SnapOptions } from '../shared/screenshot-options';
import type { BrowserPool, Claim } from './browser-pool';
import { type BrowserSlot, type PreparedPage, withTimeout } from './browser-slot';
import type { BlockerSource } from './blocking';
import type { EgressPolicy } from '../shared/egress';
import type { GatewayCapture } from './gateway';
import { type CaptureOutput, capturePage } from './page-capture';
import { PageSession, viewportOf } from './page-session';

const DISPOSE_TIMEOUT_MS = 5_000;
/** A capture whose browser died is taken again only if at least this much of its budget is left. */
const MIN_RETRY_MS = 1_000;

/** The browser died under a capture; the capture itself may well be fine elsewhere. */
class BrowserLost extends Error {
  constructor(override readonly cause: Error) {
    super(`the browser was lost during the capture: ${cause.message}`);
  }

  /** What the client is told when the capture is not (or no longer) taken again. */
  answer(why: 'twice' | 'late' | 'actions'): Error {
    const stopped = 'The browser stopped (crashed or ran out of memory) while capturing the page';
    const note = {
      twice: `${stopped}, twice, on two browsers; capture a lighter page, or try again later.`,
      late: `${stopped}, too late to try again within the time budget; try again.`,
      actions:
        `${stopped}; captures with multi_step_actions are not taken again by themselves, as the steps may already have acted on the site. Try again ` +
        `if that is safe.`,
    }[why];
    return serviceError('page_load_failed', note);
  }
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

  constructor(deps: CaptureEngineDeps) {
    this.pool = deps.pool;
    this.policy = deps.policy;
    this.blocker = deps.blocker;
    this.timeoutMs = deps.timeoutMs;
    this.runPage = deps.runPage ?? capturePage;
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
    const attempt = () => this.attempt(options, budget, run);
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof BrowserLost)) throw err;
      // The browser died under the capture (a crash, the OOM killer, its node gone): once
      // more on another browser, within what is left of the time budget. A page that kills
      // browsers gets two and is then answered page_load_failed. Not with multi-step
      // actions: their steps may already have acted on the site (a form sent), and doing
      // them again is not ours to decide.
      if (options.multi_step_actions?.length) throw err.answer('actions');
      if (budget.deadline - Date.now() < MIN_RETRY_MS) throw err.answer('late');
      try {
        return await attempt();
      } catch (again) {
        throw again instanceof BrowserLost ? again.answer('twice') : again;
      }
    }
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
        // session is replaced rather than trusted with the next capture.
        if (!(err as { type?: unknown }).type) slot.broken = true;
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
    let timer: NodeJS.Timeout | undefined;
    const overrun = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            serviceError(
              'capture_timeout',
              `The capture took longer than ${Math.round(this.timeoutMs / 1000)} seconds and was stopped; lower wait, avoid incremental_scroll, or capture ` +
                `a lighter page.`,
            ),
          ),
        Math.max(0, deadline - Date.now()),
      );
    });
    const work = this.runPage(
      {
        page: new PageSession(slot.cdp, page.sessionId, page.contextId, page.mainFrameId, page.viewport),
        userAgent: slot.userAgent,
        policy: this.policy,
        blocker: this.blocker,
        deadline,
        gateway,
      },
      options,
    );
    work.catch(() => undefined);
    try {
      return await Promise.race([work, overrun]);
    } finally {
      clearTimeout(timer);
    }
  }
}
