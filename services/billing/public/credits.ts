/**
 * Paid work, written once: reserve the credit through billing, do the work, then commit,
 * refund or leave the reservation pending. Every site that spends screenshot credits (a
 * snap, starting a configuration's job, the job worker) goes through withCredits, with AI
 * credits through withCaptureCredits; real-location bandwidth through `bandwidth` (its room
 * checked before the capture, its bytes charged once known).
 *
 * A failed piece of work spends nothing by default. Sites that share one reservation
 * between several runs (a job reserved under `job:<id>` when it is started, and again,
 * idempotently, by the worker that runs it) decide with `settle` and `onFailure` which run
 * settles it; a run that gives the work up without running it releases the reservation
 * (releaseCredits). Nothing here reserves only to give back: a question of room is asked
 * with ensureRoom.
 */
import type { Context, ServiceBroker } from 'moleculer';
import { type ParamsOf, type Reservation, type UsageAmounts, type UsageKind, call } from '../../shared/contracts';
import { isUnavailable } from '../../shared/errors';

/**
 * How long a commit or refund billing did not take (it was restarting, or unreachable) is
 * asked again, with a growing pause. Asking again is safe: billing settles a reservation id
 * once, and answers false to the same settlement asked again.
 */
export const SETTLE_RETRY_MS = 30_000;

/** The 402 each kind's exhaustion answers (billing throws them; the routes' error lists name them). */
export const EXHAUSTED_CODES = {
  screenshots: 'screenshot_limit_reached',
  ai_credits: 'ai_credits_exhausted',
  bandwidth_bytes: 'real_location_bandwidth_exhausted',
  research_domains: 'domain_research_limit_reached',
} as const satisfies Record<UsageKind, string>;

/** billing.reserve for a caller that has the account (gates checked), else billing.reserveFor. */
export type CreditRequest = ParamsOf<'billing.reserve'> | ParamsOf<'billing.reserveFor'>;

/** commit: charge it; refund: give it back; hold: leave it pending for another run to settle. */
export type Settlement = 'commit' | 'refund' | 'hold';

export interface CreditPolicy<T> {
  /** What a finished piece of work does with its credit (default: commit). */
  settle?: (value: T) => Settlement;
  /**
   * Called when the reservation or the work fails, before the error is rethrown; may record
   * the failure. Its answer settles a reservation made before the work failed (default:
   * refund).
   */
  onFailure?: (err: unknown) => Promise<Exclude<Settlement, 'commit'>>;
}

export async function withCredits<T>(
  caller: ServiceBroker | Context,
  request: CreditRequest,
  work: (reservation: Reservation) => Promise<T>,
  policy: CreditPolicy<T> = {},
): Promise<T> {
  let reservation: Reservation | null = null;
  let value: T;
  try {
    reservation = 'account' in request ? await call(caller, 'billing.reserve', request) : await call(caller, 'billing.reserveFor', request);
    value = await work(reservation);
  } catch (err) {
    const settlement = policy.onFailure ? await policy.onFailure(err) : 'refund';
    if (reservation && settlement === 'refund') await refund(caller, reservation);
    throw err;
  }
  const settlement = policy.settle ? policy.settle(value) : 'commit';
  // The work is done (a capture recorded): a commit that fails for good leaves the reservation
  // pending and charged, never an error to the caller, who would pay again for a retry.
  if (settlement === 'commit') await settle(caller, 'billing.commit', reservation);
  else if (settlement === 'refund') await refund(caller, reservation);
  return value;
}

/** A refund that fails for good leaves the reservation pending: never the caller's error. */
async function refund(caller: ServiceBroker | Context, reservation: Reservation): Promise<void> {
  await settle(caller, 'billing.refund', reservation);
}

/**
 * Commits or refunds, asked again for SETTLE_RETRY_MS while billing does not take it (a
 * restart, a lost node or transporter); then logged and left pending. Never throws.
 */
async function settle(caller: ServiceBroker | Context, action: 'billing.commit' | 'billing.refund', reservation: Reservation): Promise<void> {
  const deadline = Date.now() + SETTLE_RETRY_MS;
  for (let pause = 250; ; pause = Math.min(pause * 2, 4_000)) {
    try {
      await call(caller, action, { reservation });
      return;
    } catch (err) {
      // Only billing's absence is waited out (restarting, unreachable); any other error would answer the same again.
      if (!isUnavailable(err) || Date.now() + pause >= deadline) {
        const logger = ('params' in caller ? caller.broker : caller).logger;
        logger.error(
          `${action} of reservation ${reservation.id} (account ${reservation.accountId}) failed${isUnavailable(err) ? ` for ${SETTLE_RETRY_MS / 1000} s` : ''}; it stays pending: ${(err as Error).message}`,
        );
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}

/**
 * That the month still has room for `amounts`, nothing reserved: 402 with the code and note a
 * reservation of them would get. For work that reserves later or is charged after (research
 * creation, a real location's bandwidth); work that must be sure of its credit reserves it.
 */
export async function ensureRoom(caller: ServiceBroker | Context, request: ParamsOf<'billing.checkRoom'> & { amounts: UsageAmounts }): Promise<void> {
  await call(caller, 'billing.checkRoom', request);
}

/**
 * Gives back the reservations a capture's credits were held under (`<id>`, and `<id>:ai` with
 * the service's AI, as withCaptureCredits names them) for work given up without running:
 * nothing is reserved to do it, and none pending is nothing to give back. Never the caller's
 * error (a reservation not given back expires).
 */
export async function releaseCredits(caller: ServiceBroker | Context, accountId: string, reservationId: string, billAi = false): Promise<void> {
  const ids = billAi ? [reservationId, aiReservationId(reservationId)] : [reservationId];
  await Promise.all(ids.map((id) => call(caller, 'billing.release', { accountId, reservationId: id }).catch(() => undefined)));
}

/**
 * Real-location bandwidth, which only the capture knows the size of: its room checked before the
 * capture (402 real_location_bandwidth_exhausted when no byte is left, nothing held), the bytes
 * charged once known, whatever the limit (they went through the provider).
 */
export const bandwidth = {
  ensureRoom: (caller: ServiceBroker | Context, accountId: string) => ensureRoom(caller, { accountId, amounts: { bandwidth_bytes: 1 } }),
  charge: async (caller: ServiceBroker | Context, accountId: string, bytes: number): Promise<void> => {
    await call(caller, 'billing.charge', { accountId, amounts: { bandwidth_bytes: bytes } });
  },
};

const aiReservationId = (reservationId: string) => `${reservationId}:ai`;

/**
 * A capture's credits: the screenshot credit, and for an analysis by the service's own AI
 * (`billAi`) an AI credit, both reserved before the capture (402 screenshot_limit_reached or
 * ai_credits_exhausted, nothing spent). The AI credit follows the screenshot credit's
 * settlement, except that a capture whose analysis did not run (`analysed` false) gives it
 * back while the screenshot is charged (DESIGN section 3). A reservation id, when given,
 * names both: `<id>` and `<id>:ai`.
 */
export async function withCaptureCredits<T>(
  caller: ServiceBroker | Context,
  request: CreditRequest,
  billAi: boolean,
  work: () => Promise<T>,
  policy: CreditPolicy<T> & { analysed: (value: T) => boolean },
): Promise<T> {
  if (!billAi) return withCredits(caller, request, work, policy);
  const aiRequest: CreditRequest = {
    ...request,
    amounts: { ai_credits: 1 },
    ...(request.reservationId ? { reservationId: aiReservationId(request.reservationId) } : {}),
  };
  let aiHeld: Reservation | null = null;
  const settleAi = (value: T): Settlement => {
    const settlement = policy.settle ? policy.settle(value) : 'commit';
    return settlement === 'commit' && !policy.analysed(value) ? 'refund' : settlement;
  };
  return withCredits(
    caller,
    request,
    () =>
      withCredits(
        caller,
        aiRequest,
        (reservation) => {
          aiHeld = reservation;
          return work();
        },
        // A failure is settled once, by the screenshot credit's policy below.
        { settle: settleAi, onFailure: async () => 'hold' },
      ),
    {
      settle: policy.settle,
      onFailure: async (err) => {
        const settlement = policy.onFailure ? await policy.onFailure(err) : 'refund';
        if (aiHeld && settlement === 'refund') await refund(caller, aiHeld);
        return settlement;
      },
    },
  );
}
