/**
 * The spec's Limits section as pure functions: what an account may use this month, and
 * the UTC month its usage is counted in.
 */
import type { AccountContext, Limits } from '../shared/contracts';

export const MIB = 1024 * 1024;
export const GIB = 1024 * MIB;

/** Free plan and base of every plan: 32 MiB of real-location bandwidth, 25 AI credits. */
export const BASE_BANDWIDTH_BYTES = 32 * MIB;
export const BASE_AI_CREDITS = 25;
/** The ai_credits addon adds this many AI credits a month (paid plans only). */
export const AI_CREDITS_ADDON = 1000;
/** Each bandwidth_2gb addon unit adds this many bytes a month (paid plans only). */
export const BANDWIDTH_UNIT_BYTES = 2 * GIB;
/** Domains of domain research a month: free plan, and every paid plan (one credit per domain). */
export const FREE_RESEARCH_DOMAINS = 25;
export const PAID_RESEARCH_DOMAINS = 1000;

export function limitsFor(account: Pick<AccountContext, 'plan' | 'addons'>): Limits {
  const { plan, addons } = account;
  // Addons are sold on paid plans; on the free plan they are recorded but grant nothing.
  const extraAi = plan.paid && addons.ai_credits ? AI_CREDITS_ADDON * addons.ai_credits : 0;
  const extraBandwidth = plan.paid && addons.bandwidth_2gb ? BANDWIDTH_UNIT_BYTES * addons.bandwidth_2gb : 0;
  return {
    screenshots: plan.screenshot_limit,
    ai_credits: BASE_AI_CREDITS + extraAi,
    bandwidth_bytes: BASE_BANDWIDTH_BYTES + extraBandwidth,
    research_domains: plan.paid ? PAID_RESEARCH_DOMAINS : FREE_RESEARCH_DOMAINS,
  };
}

/** "YYYY-MM" of the UTC month that contains `at`. */
export function monthOf(at: Date): string {
  return at.toISOString().slice(0, 7);
}

/** When a month's counters may be dropped: a week after the month ends (for late reads). */
export function counterExpiry(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth() + 1, 8));
}
