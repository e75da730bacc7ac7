/**
 * The api's call to capture for a snap (/snap, /snap_html, and the MCP tools, which are REST
 * requests), taken again on another capture instance when the one running it disappears
 * (killed, its machine gone) before its answer comes: within the request's own budget, under
 * the same job and the same place in its account's counts and in the fair order, for the one
 * credit reserved around it (docs/operations.md, "Faults it survives").
 *
 * Found out fast: while a call waits on a capture instance in another process, that instance
 * is pinged (Moleculer's PING, answered by its transit layer whatever its captures are doing)
 * every PING_EVERY_MS; one that leaves a ping unanswered for PONG_WITHIN_MS is taken for gone:
 * it is dropped from this node's registry as a missed heartbeat would drop it, which fails
 * every call waiting on it at once (REQUEST_REJECTED) and keeps the next attempt off it. The
 * transporter's own heartbeat takes 10 to 20 s to tell. An instance that was only slow comes
 * back with its next heartbeat; what it was capturing is then superseded (its job's lease was
 * taken over), never recorded twice.
 */
import type { Context, ServiceBroker } from 'moleculer';
import { type AccountContext, type ScreenshotRef, call } from '../shared/contracts';
import { serviceError } from '../shared/errors';
import type { CaptureTargets, SnapOptions } from '../shared/screenshot-options';
import { randomId } from '../shared/secrets';
import { takeAgain } from '../shared/take-again';

/** How often a capture instance with calls waiting on it is pinged. */
export const PING_EVERY_MS = 500;
/** A ping unanswered this long: the instance is gone. */
export const PONG_WITHIN_MS = 1_500;
/** A snap is taken again only with at least this much of its budget left. */
const MIN_LEFT_MS = 2_000;
/** The most attempts of one snap (instances dying one after another). */
const MAX_ATTEMPTS = 3;
/** While no capture instance is there to take it, the next attempt waits this long. */
const NONE_THERE_PAUSE_MS = 500;

/** Moleculer's node catalog, as far as used here (0.14: `broker.registry.nodes`, untyped). */
interface NodeCatalog {
  disconnected(nodeID: string, unexpected: boolean): void;
}

/** The remote nodes that have calls waiting on them, each pinged while it has. */
export class NodeWatch {
  private readonly watched = new Map<string, { calls: number; timer: NodeJS.Timeout | null }>();

  constructor(private readonly broker: ServiceBroker) {}

  /** Watches the node the call went to (none for a local call) until the call settles. */
  follow<T>(pending: Promise<T> & { ctx?: Pick<Context, 'nodeID'> }): Promise<T> {
    const nodeID = pending.ctx?.nodeID;
    if (!nodeID || nodeID === this.broker.nodeID) return pending;
    const entry = this.watched.get(nodeID) ?? { calls: 0, timer: null };
    entry.calls++;
    if (!entry.timer) entry.timer = this.schedule(nodeID);
    this.watched.set(nodeID, entry);
    const done = () => {
      entry.calls--;
      if (entry.calls === 0) this.forget(nodeID);
    };
    pending.then(done, done);
    return pending;
  }

  private schedule(nodeID: string): NodeJS.Timeout {
    const timer = setTimeout(() => void this.ping(nodeID), PING_EVERY_MS);
    timer.unref();
    return timer;
  }

  private async ping(nodeID: string): Promise<void> {
    const pong = await this.broker.ping(nodeID, PONG_WITHIN_MS).catch(() => null);
    const entry = this.watched.get(nodeID);
    if (!entry) return;
    if (pong) {
      entry.timer = this.schedule(nodeID);
      return;
    }
    this.forget(nodeID);
    this.broker.logger.warn(`capture instance ${nodeID} left a ping unanswered for ${PONG_WITHIN_MS} ms: taken for gone, its snaps are taken again`);
    (this.broker.registry.nodes as NodeCatalog).disconnected(nodeID, true);
  }

  private forget(nodeID: string): void {
    const entry = this.watched.get(nodeID);
    if (entry?.timer) clearTimeout(entry.timer);
    this.watched.delete(nodeID);
  }
}

/** One watch per broker (a process runs one; tests run several). */
const watches = new WeakMap<ServiceBroker, NodeWatch>();

function watchOf(broker: ServiceBroker): NodeWatch {
  let watch = watches.get(broker);
  if (!watch) {
    watch = new NodeWatch(broker);
    watches.set(broker, watch);
  }
  return watch;
}

/** Why a call to capture did not reach an answer: its instance went away, or none is there. */
type Loss = 'gone' | 'none';

/** Moleculer's answers for a call whose node went away under it, and for a service nobody offers now. */
function lossOf(err: unknown): Loss | null {
  const type = (err as { type?: unknown } | null)?.type;
  if (type === 'REQUEST_REJECTED') return 'gone';
  if (type === 'SERVICE_NOT_AVAILABLE' || type === 'SERVICE_NOT_FOUND') return 'none';
  return null;
}

/**
 * The snap's capture (capture.take), taken again while its instance disappears under it and
 * time is left; `budgetMs` is the request's (a capture's wait for a browser and its own time).
 */
export function takeSnap(
  broker: ServiceBroker,
  snap: { account: AccountContext; options: SnapOptions; targets: CaptureTargets },
  budgetMs: number,
): Promise<ScreenshotRef> {
  const watch = watchOf(broker);
  const jobId = randomId(12);
  const since = Date.now();
  const deadline = since + budgetMs;
  return takeAgain((attempt) => watch.follow(call(broker, 'capture.take', { ...snap, jobId, attempt, since })), {
    lost: lossOf,
    refuse: (_loss, attempts) => (attempts >= MAX_ATTEMPTS ? 'attempts' : deadline - Date.now() < MIN_LEFT_MS ? 'late' : null),
    pauseMs: (loss) => (loss === 'none' ? NONE_THERE_PAUSE_MS : 0),
    answer: (loss, why) => {
      const what =
        loss === 'gone'
          ? 'The capture instance running this capture stopped'
          : 'No capture instance is running to take this capture, after one stopped under it';
      const note = `${what}, and no other could take it ${why === 'late' ? 'within its time budget' : `in ${MAX_ATTEMPTS} attempts`}; nothing was charged. Retry shortly.`;
      // Its job fails with this answer and its place in the account's counts is given back now
      // (not when its lease runs out); if no instance is there to do it, the lease does.
      void call(broker, 'capture.abandon', { accountId: snap.account.accountId, jobId, errorCode: 'capacity_exhausted', note }).catch(() => undefined);
      return serviceError('capacity_exhausted', note, { retryAfter: 5 });
    },
  });
}
