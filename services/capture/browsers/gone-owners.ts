/**
 * Ends the Grid sessions of a capture instance that is gone (DESIGN section 4: always release
 * Grid sessions). A capture instance ends its own sessions when it stops; one killed (SIGKILL,
 * the OOM killer, its host lost) cannot, and the Grid would keep each of its sessions, and the
 * slot under it, until its session timeout, while the new-session queue backs up behind them.
 *
 * Every session a capture instance starts on a Grid carries its owner, as the extension
 * capability SESSION_OWNER_CAPABILITY: the instance's Moleculer node id and its broker's
 * instance id (a process restarted under the same node id is another owner). When Moleculer
 * reports a node disconnected (it left, or sent no heartbeat for the heartbeat timeout), each
 * capture instance that sees it waits one more heartbeat timeout (a transporter restarted
 * brings every node back within it), then, if the node is still gone and this instance still
 * hears another node (it is not its own link to the transporter that failed), reads the
 * Grid's `/status` once and ends the sessions that node owned, as the node would have: the
 * browser closed over the session's CDP relay (`se:cdp`; ChromeDriver's quit leaves Debian's
 * headless shell running for about 20 s more), then the session deleted. Every surviving
 * instance may do it; ending a session twice is harmless.
 *
 * A node cut off from the transporter for longer, but still running, is taken for gone the same
 * way, as the api already takes it (its snaps are taken again elsewhere): its browsers are ended
 * under it, and it replaces them as it does after a browser crash.
 */
import { SESSION_OWNER_CAPABILITY, sessionOwner, withTimeout } from './browser-slot';
import { type GridSession, gridEndpoint } from '../public/grid-status';
import type { CdpSocket } from './grid-cdp';
import { readGridSessions } from './grid-drain';

/** How long opening a gone owner's browser's CDP relay, closing the browser over it, and deleting its session may each take. */
const END_TIMEOUT_MS = 5_000;

/** What this instance knows of the cluster (Moleculer's registry). */
export interface ClusterView {
  /** The node is connected again, as the same process (the same instance id). */
  isBack(nodeID: string, instanceID: string | null): boolean;
  /** Some other node is connected: this instance's own link to the transporter works. */
  hearsOthers(): boolean;
}

export interface GoneOwnersOptions {
  seleniumUrl: string;
  cluster: ClusterView;
  /** How long a node must stay gone before its sessions are ended (the heartbeat timeout). */
  graceMs: number;
  log: { info(...a: unknown[]): void; warn(...a: unknown[]): void };
  /** Opens a CDP WebSocket within timeoutMs (CdpConnection.open). */
  open(url: string, timeoutMs: number): Promise<CdpSocket>;
  fetchFn?: typeof fetch;
}

export class GoneOwners {
  private readonly fetchFn: typeof fetch;
  private readonly sweeps = new Set<Promise<unknown>>();
  private readonly waiting = new Set<NodeJS.Timeout>();
  private stopped = false;

  constructor(private readonly o: GoneOwnersOptions) {
    this.fetchFn = o.fetchFn ?? fetch;
  }

  /** Moleculer reported the node disconnected: after the grace, its sessions are ended if it is still gone. */
  nodeLeft(nodeID: string, instanceID: string | null): void {
    if (this.stopped) return;
    const timer = setTimeout(() => {
      this.waiting.delete(timer);
      if (this.o.cluster.isBack(nodeID, instanceID)) return;
      if (!this.o.cluster.hearsOthers()) {
        this.o.log.warn(
          `Node ${nodeID} left the transporter while this instance hears no other node either: the Grid sessions it may hold are left to the Grid's session timeout.`,
        );
        return;
      }
      void this.ownerGone(sessionOwner(nodeID, instanceID));
    }, this.o.graceMs);
    timer.unref();
    this.waiting.add(timer);
  }

  /** No more sweeps; resolves when those under way have finished (each within 3 x END_TIMEOUT_MS). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.waiting) clearTimeout(timer);
    this.waiting.clear();
    await Promise.all([...this.sweeps]);
  }

  /** The owner is gone: ends the sessions it holds on the Grid; answers how many it ended. */
  ownerGone(owner: string): Promise<number> {
    const sweep = this.sweep(owner);
    this.sweeps.add(sweep);
    void sweep.finally(() => this.sweeps.delete(sweep));
    return sweep;
  }

  private async sweep(owner: string): Promise<number> {
    let theirs: GridSession[];
    try {
      theirs = (await readGridSessions(this.o.seleniumUrl, this.fetchFn)).filter((s) => s.capabilities[SESSION_OWNER_CAPABILITY] === owner);
    } catch (err) {
      this.o.log.warn(
        `Could not read the Grid's sessions to end those of capture instance ${owner}, which is gone (${(err as Error).message}); the Grid ends them at its session timeout.`,
      );
      return 0;
    }
    if (!theirs.length) return 0;
    const ended = await Promise.all(
      theirs.map((s) =>
        this.end(s).then(
          () => true,
          () => false,
        ),
      ),
    );
    const count = ended.filter(Boolean).length;
    this.o.log.info(`Ended ${count} of the ${theirs.length} Grid session(s) of capture instance ${owner}, which is gone.`);
    return count;
  }

  /** As the owner would have ended it (BrowserSlot.quit): its browser closed over CDP, then the session deleted. */
  private async end(session: GridSession): Promise<void> {
    const relay = session.capabilities['se:cdp'];
    if (typeof relay === 'string') {
      const cdp = await this.o.open(relay, END_TIMEOUT_MS).catch(() => null);
      if (cdp) {
        await withTimeout(cdp.send('Browser.close'), END_TIMEOUT_MS, 'closing the browser').catch(() => undefined);
        cdp.close();
      }
    }
    const { url, headers } = gridEndpoint(this.o.seleniumUrl, `session/${encodeURIComponent(session.sessionId)}`);
    const res = await this.fetchFn(url, { method: 'DELETE', headers, signal: AbortSignal.timeout(END_TIMEOUT_MS) });
    // Another surviving instance may have ended it first: gone is what was asked.
    if (!res.ok && res.status !== 404) throw new Error(`the Grid answered ${res.status} to ending session ${session.sessionId}`);
  }
}
