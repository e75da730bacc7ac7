/**
 * Moves this instance's browsers off Grid nodes that are draining, between captures, so a
 * node being taken away (a scale-down's preStop, an operator's `POST /se/grid/node/drain`)
 * ends its sessions within about one capture and shuts down without cutting one.
 *
 * A draining Selenium node takes no new session and stops once its sessions have ended; the
 * capture instances hold their sessions warm for as long as they run, so without this a
 * draining node would wait out its grace period and be killed under whatever capture it
 * was running. Every DRAIN_CHECK_MS the Grid's `/status` is read; a browser whose session is
 * on a node marked DRAINING is retired (at once when idle, after its capture when busy) and
 * the pool starts its replacement, which the Grid places on a node that is up.
 *
 * The Grid's `/status` is read by ../public/grid-status.ts (for gone-owners.ts and the operator view too).
 */

import { type GridSession, readGridNodes } from '../public/grid-status';

/** How often the Grid's node list is read. */
export const DRAIN_CHECK_MS = 5_000;

/** The part of the pool this needs. */
export interface SessionRetirer {
  /** Retires the browsers whose WebDriver session is one of `ids`; answers how many it retired. */
  retireSessions(ids: ReadonlySet<string>): number;
}

/** Every live session on the Grid, from its `/status` (none when it gives no node list). */
export async function readGridSessions(seleniumUrl: string, fetchFn: typeof fetch = fetch): Promise<GridSession[]> {
  return (await readGridNodes(seleniumUrl, { fetchFn })).flatMap((node) => node.sessions);
}

/** The session ids on the Grid's draining nodes (none when the Grid gives no node list: a standalone server). */
export async function drainingSessions(seleniumUrl: string, fetchFn: typeof fetch = fetch): Promise<Set<string>> {
  return new Set((await readGridSessions(seleniumUrl, fetchFn)).filter((s) => s.draining).map((s) => s.sessionId));
}

export interface GridDrainWatchOptions {
  seleniumUrl: string;
  pool: SessionRetirer;
  log: { info(...a: unknown[]): void; warn(...a: unknown[]): void };
  everyMs?: number;
  fetchFn?: typeof fetch;
}

export class GridDrainWatch {
  private timer: NodeJS.Timeout | null = null;
  private checking = false;
  /** The last failure said, so an unreachable Grid is reported once, not every few seconds. */
  private lastError = '';

  constructor(private readonly opts: GridDrainWatchOptions) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.check(), this.opts.everyMs ?? DRAIN_CHECK_MS);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** One look at the Grid; resolves when the browsers found on draining nodes are retired. */
  async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      const ids = await drainingSessions(this.opts.seleniumUrl, this.opts.fetchFn);
      this.lastError = '';
      if (!ids.size) return;
      const moved = this.opts.pool.retireSessions(ids);
      if (moved) this.opts.log.info(`${moved} browser session(s) are on a draining Grid node; moving them to other nodes between captures.`);
    } catch (err) {
      const message = (err as Error).message;
      if (message !== this.lastError) this.opts.log.warn(`Could not read the Grid's node list to find draining nodes (${message}); trying again.`);
      this.lastError = message;
    } finally {
      this.checking = false;
    }
  }
}
