/**
 * The contracts between services: every action's name, params and result, written once.
 * `call(broker, 'billing.reserve', params)` is checked against this table, so a caller can
 * neither misname an action nor pass the wrong shape. Events are named in the past tense.
 */
import type { ServiceBroker, Context } from 'moleculer';
import type { SnapOptions } from './screenshot-options';

export type UsageKind = 'screenshots' | 'ai_credits' | 'bandwidth_bytes';
export type UsageAmounts = Partial<Record<UsageKind, number>>;

export const ADDONS = ['byo_ai', 'byo_proxy', 'ai_credits', 'bandwidth_2gb'] as const;
export type Addon = (typeof ADDONS)[number];

export interface PlanRecord {
  name: string;
  /** Paid plans unlock the addons; the free plan does not. */
  paid: boolean;
  screenshot_limit: number;
}

/** What every authenticated request knows about its caller. */
export interface AccountContext {
  accountId: string;
  plan: PlanRecord;
  /** Addon name to quantity (1 for on/off addons; units for bandwidth_2gb). */
  addons: Partial<Record<Addon, number>>;
}

export interface Limits {
  screenshots: number;
  ai_credits: number;
  bandwidth_bytes: number;
}

/** Features that need an addon; checked before any credit is reserved. */
export interface FeatureRequest {
  ownAi?: boolean;
  ownProxy?: boolean;
}

export interface Reservation {
  id: string;
  accountId: string;
  month: string;
  amounts: UsageAmounts;
}

/** The exact shape of GET /account_limits `results`. */
export interface AccountLimitsResult {
  screenshot_limit: number;
  screenshot_current_month_usage: number;
  real_location_bandwidth_limit_in_bytes: number;
  real_location_bandwidth_current_month_usage_in_bytes: number;
  ai_analysis_requests_limit: number;
  ai_analysis_requests_current_month_usage: number;
  bring_your_own_ai_enabled: boolean;
  bring_your_own_ai_providers: string[];
  bring_your_own_proxy_enabled: boolean;
  bring_your_own_proxies: Array<{ id: number; label: string; verified: boolean }>;
}

export interface AccountSummary {
  account_id: string;
  plan: string;
  addons: Partial<Record<Addon, number>>;
  created_at: string;
  active_keys: number;
}

/** A stored capture, as capture hands it to the api (the files stay in storage). */
export interface ScreenshotRef {
  id: string;
  job_id: string;
  config_id: string;
  embed_url: string;
  direct_link: string;
  direct_thumbnail_link: string;
  taken_at_ms: number;
  /** Storage object names, for the api to stream. */
  image_name: string | null;
  html_name: string | null;
  content_type: string | null;
}

/** Action name -> [params, result]. */
export interface Actions {
  'billing.authenticate': [{ token: string }, AccountContext];
  'billing.checkFeatures': [{ account: AccountContext; features: FeatureRequest }, { ok: true }];
  'billing.reserve': [{ account: AccountContext; amounts: UsageAmounts; features?: FeatureRequest }, Reservation];
  'billing.commit': [{ reservation: Reservation }, { committed: boolean }];
  'billing.refund': [{ reservation: Reservation }, { refunded: boolean }];
  'billing.usage': [{ account: AccountContext }, { limits: Limits; usage: Limits; month: string }];
  'billing.createAccount': [{ plan: string; addons?: Partial<Record<Addon, number>> }, { account_id: string; access_token: string }];
  'billing.listAccounts': [Record<string, never>, AccountSummary[]];
  'billing.setPlan': [{ accountId: string; plan: string; addons?: Partial<Record<Addon, number>> }, AccountSummary];
  'billing.rotateKey': [{ accountId: string }, { account_id: string; access_token: string }];
  'billing.listPlans': [Record<string, never>, PlanRecord[]];
  'billing.upsertPlan': [PlanRecord, PlanRecord];
  'capture.take': [{ account: AccountContext; options: SnapOptions }, ScreenshotRef];
  'capture.findRecent': [{ accountId: string; cacheKey: string; since: number }, ScreenshotRef | null];
  'scheduler.snapConfig': [{ accountId: string; options: SnapOptions; snapKey: string }, { id: string; embed_url: string }];
  'ai.verifiedProviders': [{ accountId: string }, string[]];
  'proxy.summaries': [{ accountId: string }, Array<{ id: number; label: string; verified: boolean }>];
}

export type ActionName = keyof Actions;
export type ParamsOf<A extends ActionName> = Actions[A][0];
export type ResultOf<A extends ActionName> = Actions[A][1];

/** A typed broker.call. */
export function call<A extends ActionName>(
  caller: ServiceBroker | Context,
  action: A,
  params: ParamsOf<A>,
  opts?: { timeout?: number; meta?: Record<string, unknown>; nodeID?: string },
): Promise<ResultOf<A>> {
  return (caller as ServiceBroker).call(action, params, opts) as Promise<ResultOf<A>>;
}

/** Typed handler signature for a service's action table. */
export type Handler<A extends ActionName> = (ctx: Context<ParamsOf<A>>) => Promise<ResultOf<A>>;
