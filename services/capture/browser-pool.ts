/**
 * Warm browser sessions (BrowserSlot), bounded by capacity, with a bounded wait queue. The
 * pool hands an idle slot to one capture at a time (preferring one whose next page is
 * ready), replaces a slot that misbehaves or whose browser is gone, pings idle ones so the
 * Grid does not reap them, and quits every session on shutdown, so no Grid slot is held
 * until the Grid's own timeout.
 */
import { serviceError } from '../shared/errors';
import { type BrowserSlot, type LaunchOptions, launchSession } from './browser-slot';

export interface PoolOptions {
  sessions: number;
  queueMax: number;
  queueTimeoutMs: number;
  /** A WebDriver command is sent this often to idle sessions, so the Grid does not reap them. */
  keepAliveMs: number;
}

interface Waiter {
  resolve(slot: BrowserSlot): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout;
}

export class BrowserPool {
  private readonly slots: BrowserSlot[] = [];
  private readonly queue: Waiter[] = [];
  private starting = 0;
  private nextId = 1;
  private closed = false;
  /** Shutting down: the slots there are finish their captures, none is started or replaced. */
  private draining = false;
  /** Sessions being started; stop() waits for them, so none is left behind. */
  private readonly launching = new Set<Promise<void>>();
  private keepAlive: NodeJS.Timeout | null = null;
  private lastLaunchError: Error | null = null;

  constructor(
    private readonly launch: LaunchOptions,
    private readonly opts: PoolOptions,
    private readonly log: { warn(...a: unknown[]): void; info(...a: unknown[]): void },
    private readonly launcher: (opts: LaunchOptions, id: number) => Promise<BrowserSlot> = launchSession,
  ) {}

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

  get stats(): { sessions: number; busy: number; queued: number } {
    return { sessions: this.slots.length, busy: this.slots.filter((s) => s.busy).length, queued: this.queue.length };
  }

  /** A free slot, waiting in the bounded queue if none is free; past the queue, 503. */
  acquire(): Promise<BrowserSlot> {
    if (this.closed) return Promise.reject(serviceError('capacity_exhausted', 'The capture service is shutting down; retry shortly.', { retryAfter: 5 }));
    const free = this.pickFree();
    if (free) {
      free.busy = true;
      return Promise.resolve(free);
    }
    if (this.queue.length >= this.opts.queueMax) {
      return Promise.reject(
        serviceError('capacity_exhausted', `All ${this.opts.sessions} browsers are busy and ${this.queue.length} captures are waiting; retry shortly.`, { retryAfter: 2 }),
      );
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          const i = this.queue.indexOf(waiter);
          if (i >= 0) this.queue.splice(i, 1);
          const why = this.slots.length === 0 && this.lastLaunchError ? ` (no browser could be started: ${this.lastLaunchError.message})` : '';
          reject(serviceError('capacity_exhausted', `No browser became free within ${this.opts.queueTimeoutMs} ms${why}; retry shortly.`, { retryAfter: 5 }));
        }, this.opts.queueTimeoutMs),
      };
      this.queue.push(waiter);
    });
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

  /** Gives a slot back; a broken one is replaced. */
  release(slot: BrowserSlot): void {
    slot.busy = false;
    slot.lastUsed = Date.now();
    if (slot.broken || this.closed) {
      this.remove(slot);
      return;
    }
    slot.prepareNext();
    this.handOver(slot);
  }

  /** Takes a misbehaving slot out of service: now if idle, else when it is released. */
  retire(slot: BrowserSlot): void {
    slot.broken = true;
    if (!slot.busy && this.slots.includes(slot)) this.remove(slot);
  }

  private handOver(slot: BrowserSlot): void {
    const waiter = this.queue.shift();
    if (!waiter) return;
    clearTimeout(waiter.timer);
    slot.busy = true;
    waiter.resolve(slot);
  }

  private remove(slot: BrowserSlot): void {
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    void slot.quit();
    void this.addSlot();
  }

  /**
   * From now on no session is started or replaced; the running captures finish on the slots
   * they have. Called the moment shutdown begins: a supervisor's SIGTERM to the process group
   * also reaches the ChromeDrivers, and a pool still replacing the sessions it sees die would
   * start browsers that outlive the service.
   */
  drain(): void {
    this.draining = true;
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
      slot.prepareNext();
      this.handOver(slot);
    } catch (err) {
      this.starting--;
      this.lastLaunchError = err as Error;
      const delay = Math.min(30_000, 500 * 2 ** attempt);
      this.log.warn(`Could not start a browser session (retrying in ${delay} ms): ${(err as Error).message}`);
      if (!this.closed && !this.draining) setTimeout(() => void this.addSlot(attempt + 1), delay).unref();
    }
  }

  private pingIdle(): void {
    for (const slot of this.slots) {
      if (slot.busy || slot.broken || Date.now() - slot.lastUsed < this.opts.keepAliveMs) continue;
      slot.lastUsed = Date.now();
      slot.ping().catch((err: Error) => {
        this.log.warn(`Browser session ${slot.id} stopped answering (${err.message}); replacing it.`);
        this.retire(slot);
      });
    }
  }

  async stop(): Promise<void> {
    this.closed = true;
    if (this.keepAlive) clearInterval(this.keepAlive);
    for (const w of this.queue.splice(0)) {
      clearTimeout(w.timer);
      w.reject(serviceError('capacity_exhausted', 'The capture service is shutting down; retry shortly.', { retryAfter: 5 }));
    }
    await Promise.all([...this.slots.splice(0).map((s) => s.quit()), ...this.launching]);
  }
}
