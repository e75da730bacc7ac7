/**
 * One admission for every request that spends: the snap endpoints (/snap, /snap_html,
 * /snap_ai_analysis, /snap_real_location), configuration create, update and capture-now,
 * POST /ai/analyze and domain research creation. The same checks run in the same order
 * everywhere, so the same bad request gets the same error code wherever it is sent, and all
 * of them before any credit is reserved or anything is written or fetched (the spec's Errors
 * section):
 * 1. targets named literally that the egress policy refuses (webhook_url, a change step's url,
 *    an image's URL, a domain): a bad value like any other, so refused before a stored
 *    configuration is looked up;
 * 2. the plan and addon gates (own AI, own proxy): 402;
 * 3. the analysis: provider, model, structured fields (ai.check), or an analysis option
 *    named without analyze_image_with_ai;
 * 4. the route: an own proxy that is not stored (412), a real location that is not known (400);
 * 5. the schedule (an interval is named when scheduled);
 * 6. the credits: the month's room, when the request asks it now (`room`: research creation,
 *    every domain's credit); otherwise they are reserved next, around the work (withCaptureCredits),
 *    or by the service that does it (the AI credits of /ai/analyze, once each image's host is checked).
 * A route declares what its requests can name and spend (a Spending); its admission runs those
 * checks and no other, and the errors the route documents are taken from them.
 */
import type { ServiceBroker } from 'moleculer';
import { refuseLiteralTargets, refuseLiteralUrls, type TargetPolicy } from '../shared/address-policy';
import type { AccountContext, FeatureRequest, UsageAmounts, UsageKind } from '../shared/contracts';
import type { ErrorCode } from '../shared/errors';
import { EXHAUSTED_CODES, ensureRoom } from '../billing/public/credits';
import { checkFeatures, GATE_ERRORS } from '../billing/public/plan-gates';
import { type CaptureTargets, type ConfigOptions, requestedFeatures, scheduleOf } from '../shared/screenshot-options';
import { ANALYSIS_CHECK_ERRORS, checkAnalysis, STRUCTURED_FIELDS_ERRORS } from './analysis-checks';
import { checkRouteOptions, ROUTE_CHECK_ERRORS } from './route-options';

/** What a route's requests can name and spend: which checks its admission runs, and so which errors it answers. */
export interface Spending {
  /** The plan features its requests can ask for (gated: 402). */
  features: ReadonlyArray<keyof FeatureRequest>;
  /** Whether its analysis can carry structured fields. */
  structuredFields: boolean;
  /** Whether it can name a route (real_location, custom_proxy_id). */
  route: boolean;
  /** Whether it can name a schedule. */
  schedule: boolean;
  /** The credits it spends (each answers its 402 when the month's are used up). */
  credits: readonly UsageKind[];
}

/** What a capture will run with, as far as admission looks at it (snap options have no schedule or webhook). */
export type AdmittedOptions = Omit<ConfigOptions, 'url'> & { url?: string };

export interface AdmissionRequest {
  broker: ServiceBroker;
  account: AccountContext;
  policy: TargetPolicy;
  /**
   * The options this request names: a snap's or a new configuration's, a stored one's for
   * capture-now, a PATCH's changes; the analysis (and webhook_url) of /ai/analyze and research.
   */
  given: AdmittedOptions;
  /**
   * For a PATCH: the stored configuration's options (looked up once the request's own values
   * pass), under which `given` is merged into what the capture will run with. Only the
   * changes are gated and routed anew (a configuration whose stored proxy was removed can
   * still be changed; its next capture answers custom_proxy_not_found).
   */
  stored?: () => Promise<AdmittedOptions>;
  /** Addresses the request names besides its options' ([parameter, URL]: an image, a domain), checked first. */
  targets?: ReadonlyArray<readonly [string, string]>;
  /** Credits the month must have room for now, nothing held (kinds among the Spending's credits). */
  room?: UsageAmounts;
}

/** What an admitted request learnt on the way. */
export interface Admitted {
  /** What its store_to and custom_proxy_id point to now (none named, or a route it cannot name: empty). */
  targets: CaptureTargets;
}

export interface Admission {
  /** Everything the checks it runs can answer, in the order they run. */
  readonly errors: readonly ErrorCode[];
  admit(request: AdmissionRequest): Promise<Admitted>;
}

/** The admission of a route whose requests can name and spend `spending`. */
export function admission(spending: Spending): Admission {
  const errors = new Set<ErrorCode>([
    'url_not_allowed',
    ...spending.features.flatMap((feature) => GATE_ERRORS[feature]),
    ...ANALYSIS_CHECK_ERRORS,
    ...(spending.structuredFields ? STRUCTURED_FIELDS_ERRORS : []),
    ...(spending.route ? ROUTE_CHECK_ERRORS : []),
    ...(spending.schedule ? (['invalid_parameter'] as const) : []),
    ...spending.credits.map((kind) => EXHAUSTED_CODES[kind]),
  ]);
  return { errors: [...errors], admit: (request) => admit(spending, request) };
}

async function admit(spending: Spending, { broker, account, policy, given, stored, targets = [], room }: AdmissionRequest): Promise<Admitted> {
  refuseLiteralUrls(targets, policy);
  refuseLiteralTargets(given, policy);
  const asked = requestedFeatures(given);
  checkFeatures(account, Object.fromEntries(spending.features.map((feature) => [feature, asked[feature]])));
  const runs = stored ? { ...(await stored()), ...given } : given;
  await checkAnalysis(broker, account.accountId, runs, given);
  const routed = spending.route ? await checkRouteOptions(broker, account.accountId, given) : {};
  if (spending.schedule) scheduleOf(runs);
  if (room) {
    const undeclared = Object.keys(room).find((kind) => !spending.credits.includes(kind as UsageKind));
    if (undeclared) throw new Error(`admission: room asked for ${undeclared}, which this route does not declare it spends`);
    await ensureRoom(broker, { account, amounts: room });
  }
  return { targets: routed };
}
