/**
 * The api's calls to capture for a snap (/snap, /snap_html, and the MCP tools, which are REST
 * requests): its ttl lookup and its capture, each taken again on another capture instance when
 * the one it went to disappears (killed, its machine gone, the transporter restarting) before
 * its answer comes: within the request's own budget, a capture under the same job and the same
 * place in its account's counts and in the fair order, for the one credit reserved around it
 * (docs/operations.md, "Faults it survives").
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
import { type AccountContext, type ParamsOf, type ScreenshotRef, call } from '../shared/contracts';
import { isUnavailable, serviceError } from '../shared/errors';
import type { CaptureTargets, SnapOptions } from '../shared/screenshot-options';
import { randomId } from '../shared/secrets';
import { takeAgain } from '../shared/take-again';

/** How often a capture instance with calls waiting on it is pinged. */
export const PING_EVERY_MS = 500;
/** A ping unanswered this long: the instance is gone. */
export const PONG_WITHIN_MS = 1_500;
/** A snap is taken again only with at least this much of its budget left. */
const MIN_LEFT_MS = 2_000;
/** While no capture instance is there to take it, the next attempt waits this long. */
const NONE_THERE_PAUSE_MS = 500;
/**
 * How long after a capture instance was last heard of (it answered a call, or was lost under
 * one) none being known is waited out, within the budget: a transporter's restart drops every
 * instance from this node's registry until they reconnect and are found again (NATS down 2.2 s:
 * found again within 4 s). With none heard of for longer (no capture tier running at all), the
 * call is answered after NONE_THERE_ATTEMPTS, about a second.
 */
const NONE_THERE_PATIENCE_MS = 10_000;
const NONE_THERE_ATTEMPTS = 3;
/**
 * The most capture instances one call may be lost with: a request whose own work stops its
 * instance (the process runs out of memory on it) must not take down one instance after another
 * for the whole of its budget.
 */
const MAX_LOST = 3;
/** When a capture instance was last heard of by each broker's calls. */
const heardAt = new WeakMap<ServiceBroker, number>();
/** How long a give-up (capture.abandon) is asked again while no capture instance can take it. */
export const ABANDON_RETRY_MS = 30_000;

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

/**
 * Moleculer's answers for a call whose node went away under it, and for a service nobody offers
 * now, about capture's own action: the same answer about a call capture made (the scheduler or
 * billing missing under a capture) is that capture's answer, passed on as it is, not a sign
 * that no capture instance runs.
 */
function lossOf(err: unknown): Loss | null {
  const e = err as { type?: unknown; data?: { action?: unknown } } | null;
  const type = e?.type;
  if (typeof e?.data?.action !== 'string' || !e.data.action.startsWith('capture.')) return null;
  if (type === 'REQUEST_REJECTED') return 'gone';
  if (type === 'SERVICE_NOT_AVAILABLE' || type === 'SERVICE_NOT_FOUND') return 'none';
  return null;
}

/** Why a call to capture was given up: its budget ran out, no instance is known nor was lately, or MAX_LOST stopped under it. */
type GiveUp = 'late' | 'none' | 'lost';

/**
 * A call to capture taken again while what ran it disappears (at most MAX_LOST times) and
 * `deadline` leaves time for it, and while none is known if one was heard of lately.
 * `answer` is also told whether any attempt reached an instance (a job may exist there).
 */
function onSomeInstance<T>(
  broker: ServiceBroker,
  attempt: (n: number) => Promise<T>,
  deadline: number,
  answer: (loss: Loss, why: GiveUp, reached: boolean) => Error,
): Promise<T> {
  const watch = watchOf(broker);
  const heard = () => heardAt.set(broker, Date.now());
  const forgotten = () => Date.now() - (heardAt.get(broker) ?? Number.NEGATIVE_INFINITY) > NONE_THERE_PATIENCE_MS;
  let lost = 0;
  let reached = false;
  return takeAgain(
    (n) =>
      watch.follow(attempt(n)).then(
        (value) => {
          heard();
          return value;
        },
        (err: unknown) => {
          const loss = lossOf(err);
          if (loss !== 'none') reached = true;
          // Heard of: an instance that answered, or one lost under the call (it was there until then).
          if (loss === 'gone') {
            heard();
            lost++;
          }
          throw err;
        },
      ),
    {
      lost: lossOf,
      refuse: (loss, n): GiveUp | null => {
        if (deadline - Date.now() < MIN_LEFT_MS) return 'late';
        if (loss === 'gone' && lost >= MAX_LOST) return 'lost';
        return loss === 'none' && n >= NONE_THERE_ATTEMPTS && forgotten() ? 'none' : null;
      },
      pauseMs: (loss) => (loss === 'none' ? NONE_THERE_PAUSE_MS : 0),
      answer: (loss, why) => answer(loss, why, reached),
    },
  );
}

/** The note of a snap given up on because no capture instance is known, nor was lately (none running). */
const NO_INSTANCE = 'No capture instance is running to take this capture; nothing was charged. Retry shortly.';

/**
 * The snap's ttl lookup (capture.findRecent), balanced over the capture instances like its
 * capture: one that disappears under it (killed, not yet dropped from the registry) is left
 * for another within the snap's budget, ending at `deadline`, rather than failing the snap.
 */
export function findRecentSnap(broker: ServiceBroker, params: ParamsOf<'capture.findRecent'>, deadline: number): Promise<ScreenshotRef | null> {
  return onSomeInstance(
    broker,
    () => call(broker, 'capture.findRecent', params),
    deadline,
    (_loss, why) =>
      serviceError(
        'capacity_exhausted',
        why === 'none' ? NO_INSTANCE : "No capture instance answered within this capture's time budget; nothing was charged. Retry shortly.",
        {
          retryAfter: 5,
        },
      ),
  );
}

/**
 * The snap's capture (capture.take), taken again while its instance disappears under it and
 * time is left; `budgetMs` is the request's (a capture's wait for a browser and its own time),
 * counted from `since` (the request's arrival, its place in the fair order).
 */
export function takeSnap(
  broker: ServiceBroker,
  snap: { account: AccountContext; options: SnapOptions; targets: CaptureTargets },
  budgetMs: number,
  since: number = Date.now(),
): Promise<ScreenshotRef> {
  const jobId = randomId(12);
  return onSomeInstance(
    broker,
    (attempt) => call(broker, 'capture.take', { ...snap, jobId, attempt, since }),
    since + budgetMs,
    (loss, why, reached) => {
      const what =
        loss === 'gone'
          ? 'The capture instance running this capture stopped'
          : 'No capture instance is running to take this capture, after one stopped under it';
      const note =
        why === 'none' && !reached
          ? NO_INSTANCE
          : why === 'lost'
            ? `${what}, and ${MAX_LOST} capture instances in turn stopped under it (this page may be what stops them); nothing was charged.`
            : `${what}, and no other could take it within its time budget; nothing was charged. Retry shortly.`;
      // No job to give up where no attempt reached an instance.
      if (reached) void abandon(broker, { accountId: snap.account.accountId, jobId, errorCode: 'capacity_exhausted', note });
      return serviceError('capacity_exhausted', note, { retryAfter: 5 });
    },
  );
}

/**
 * Its job fails with the answer given and its place in the account's counts is given back now
 * (not when its lease runs out); a capture that completed meanwhile is withdrawn, as its
 * request was told it failed and its credit is given back (SnapDesk.abandon). Asked again while
 * no capture instance can take it (the transporter restarting), for ABANDON_RETRY_MS; then the
 * job's lease ends it if its instance is gone. Never throws.
 */
function abandon(broker: ServiceBroker, params: ParamsOf<'capture.abandon'>): Promise<void> {
  const giveUpAt = Date.now() + ABANDON_RETRY_MS;
  return takeAgain(() => call(broker, 'capture.abandon', params), {
    lost: (err) => (isUnavailable(err) ? (err as Error) : null),
    refuse: () => (Date.now() >= giveUpAt ? 'late' : null),
    pauseMs: (_err, attempts) => Math.min(250 * 2 ** (attempts - 1), 4_000),
    answer: (err) => err,
  }).then(
    () => undefined,
    (err: Error) => broker.logger.error(`capture.abandon of snap job ${params.jobId} (account ${params.accountId}) failed: ${err.message}`),
  );
}
