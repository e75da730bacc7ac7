/**
 * Paid work, written once: reserve the credit through billing, do the work, then commit,
 * refund or leave the reservation pending. Every site that spends screenshot credits (a
 * snap, starting a configuration's job, the job worker) goes through withCredits, and AI
 * credits and real-location bandwidth are meant to join them here.
 *
 * A failed piece of work spends nothing by default. Sites that share one reservation
 * between several runs (a job reserved under `job:<id>` when it is started, and again,
 * idempotently, by the worker that runs it) decide with `settle` and `onFailure` which run
 * settles it.
 */
import type { Context, ServiceBroker } from 'moleculer';
import { type ParamsOf, type Reservation, call } from './contracts';

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
  // A commit that fails leaves the reservation pending (it is not the work that failed).
  if (settlement === 'commit') await call(caller, 'billing.commit', { reservation });
  else if (settlement === 'refund') await refund(caller, reservation);
  return value;
}

/** A refund that fails leaves the reservation pending until it expires: never the caller's error. */
async function refund(caller: ServiceBroker | Context, reservation: Reservation): Promise<void> {
  await call(caller, 'billing.refund', { reservation }).catch(() => undefined);
}
