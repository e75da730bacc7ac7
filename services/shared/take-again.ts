/**
 * Work taken again when what ran it went away, written once: a capture whose browser died or
 * failed under it (the capture engine: the Grid's node gone, a browser crash, a screenshot
 * call's internal error), and a snap whose capture instance disappeared (the api: the instance
 * killed, its node lost to the transporter). Each says which failures mean "what ran it went
 * away" (`lost`), when such a failure may not be taken again (no time left in the request's
 * budget, steps that may have acted on a site, attempts used up), and what the caller is then
 * answered. Anything else fails as it is.
 */

export interface TakeAgainRule<L, W extends string = string> {
  /** The failure as a loss of what ran the attempt, or null: any other failure is thrown as it is. */
  lost(err: unknown): L | null;
  /** Why the work may not be taken again after `attempts` attempts, or null when it may. */
  refuse(lost: L, attempts: number): W | null;
  /** What the caller is answered when the work is not (or no longer) taken again. */
  answer(lost: L, why: W): Error;
  /** Told of each loss, and whether the work is taken again after it. */
  observed?(lost: L, takenAgain: boolean): void;
  /** Waited before the next attempt (default none). */
  pauseMs?(lost: L, attempts: number): number;
}

/** Runs `attempt` (numbered from 1), again after each loss the rule lets it be taken again after. */
export async function takeAgain<T, L, W extends string>(attempt: (n: number) => Promise<T>, rule: TakeAgainRule<L, W>): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt(n);
    } catch (err) {
      const lost = rule.lost(err);
      if (lost === null) throw err;
      const why = rule.refuse(lost, n);
      rule.observed?.(lost, why === null);
      if (why !== null) throw rule.answer(lost, why);
      const pause = rule.pauseMs?.(lost, n) ?? 0;
      if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
    }
  }
}
