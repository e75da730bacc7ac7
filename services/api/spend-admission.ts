/**
 * One admission path for every request that starts or stores a capture: the snap endpoints
 * (/snap, /snap_html, /snap_ai_analysis, /snap_real_location), configuration create, update
 * and capture-now. The same checks run in the same order everywhere, so the same bad
 * configuration gets the same error code wherever it is sent, and all of them before any
 * credit is reserved or anything is written (the spec's Errors section):
 * 1. targets named literally (webhook_url, a change step's url) that the egress policy
 *    refuses: a bad value like any other, so refused before a stored configuration is looked up;
 * 2. the plan and addon gates (own AI, own proxy): 402;
 * 3. the analysis: provider, model, structured fields (ai.check), or an analysis option
 *    named without analyze_image_with_ai;
 * 4. the route: an own proxy that is not stored (412), a real location that is not known (400);
 * 5. the schedule (an interval is named when scheduled).
 * The credits come next, reserved by the caller around its work (withCaptureCredits).
 */
import type { ServiceBroker } from 'moleculer';
import { refuseLiteralTargets, type TargetPolicy } from '../shared/address-policy';
import type { AccountContext } from '../shared/contracts';
import { checkFeatures } from '../billing/public/plan-gates';
import { type ConfigOptions, requestedFeatures, scheduleOf } from '../shared/screenshot-options';
import { checkAnalysis } from './analysis-checks';
import { checkRouteOptions } from './route-options';

/** What a capture will run with, as far as admission looks at it (snap options have no schedule or webhook). */
/** What the plan gates and the route check refuse (for the routes' documented errors). */
export const GATE_ERRORS = [
  'byok_plan_required',
  'byok_addon_required',
  'byo_proxy_plan_required',
  'byo_proxy_addon_required',
  'custom_proxy_not_found',
] as const;
/** What the AI checks refuse. */
export const AI_CHECK_ERRORS = [
  'ai_provider_not_configured',
  'ai_model_required',
  'ai_model_not_supported',
  'ai_provider_unavailable',
  'invalid_ai_structured_fields',
  'ai_service_not_configured',
] as const;

export type AdmittedOptions = Omit<ConfigOptions, 'url'> & { url?: string };

export interface Admission {
  broker: ServiceBroker;
  account: AccountContext;
  policy: TargetPolicy;
  /** The options this request names: a snap's or a new configuration's, a stored one's for capture-now, a PATCH's changes. */
  given: AdmittedOptions;
  /**
   * For a PATCH: the stored configuration's options (looked up once the request's own values
   * pass), under which `given` is merged into what the capture will run with. Only the
   * changes are gated and routed anew (a configuration whose stored proxy was removed can
   * still be changed; its next capture answers custom_proxy_not_found).
   */
  stored?: () => Promise<AdmittedOptions>;
}

export async function admitCapture({ broker, account, policy, given, stored }: Admission): Promise<void> {
  refuseLiteralTargets(given, policy);
  checkFeatures(account, requestedFeatures(given));
  const runs = stored ? { ...(await stored()), ...given } : given;
  await checkAnalysis(broker, account.accountId, runs, given);
  await checkRouteOptions(broker, account.accountId, given);
  scheduleOf(runs);
}
