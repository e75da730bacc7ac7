/**
 * A Moleculer middleware that forgets a remote call once it has timed out.
 *
 * Moleculer's Timeout middleware answers the caller with RequestTimeoutError but leaves the
 * call itself pending: the request stays in the transit's pending requests and its context
 * in the broker's tracked contexts for good (the answer it gave up on never comes, e.g. when
 * NATS restarted under it). broker.stop() then waits its whole shutdown timeout (30 s) for
 * calls nobody waits for any more, and every such call leaks a little memory. Here, once the
 * caller has its timeout, both are dropped. (Tracked contexts and pending requests are
 * Moleculer internals: `broker._trackedContexts`, `transit.removePendingRequest`, 0.14.)
 */
import type { Context, Middleware } from 'moleculer';

interface Internals {
  _trackedContexts?: Context[];
  transit?: { removePendingRequest?(id: string): void };
}

function forget(ctx: Context): void {
  const broker = ctx.broker as unknown as Internals;
  broker.transit?.removePendingRequest?.(ctx.id);
  const tracked = broker._trackedContexts;
  const i = tracked ? tracked.indexOf(ctx) : -1;
  if (tracked && i >= 0) tracked.splice(i, 1);
}

/**
 * On broker.call (and ctx.call, which goes through it): the outermost wrapper, so it sees
 * the caller's RequestTimeoutError (a remoteAction hook would sit inside the Timeout
 * middleware, under the promise that never settles).
 */
export const forgetTimedOutCalls = {
  name: 'ForgetTimedOutCalls',
  call(next: (...a: unknown[]) => Promise<unknown> & { ctx?: Context }) {
    return (...args: unknown[]) => {
      const p = next(...args);
      const ctx = p.ctx;
      p.catch((err: { type?: string } | null) => {
        if (ctx && !ctx.service && err?.type === 'REQUEST_TIMEOUT') forget(ctx);
      });
      return p;
    };
  },
} as unknown as Middleware;
