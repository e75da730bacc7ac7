/**
 * The spec's plan and addon gates (Errors table), as a pure function of the caller's
 * account context. The api decides them before anything else happens for a request (no
 * extra hop: the context came with authentication); billing applies them again when it
 * reserves credits, so no path can skip them.
 */
import type { AccountContext, FeatureRequest } from '../../shared/contracts';
import { serviceError } from '../../shared/errors';

/** Whether the account may use its own AI keys (what the gates below let through). */
export function ownAiEnabled(account: AccountContext): boolean {
  return account.plan.paid && Boolean(account.addons.byo_ai);
}

/** What each feature's gate refuses (402), for the errors of the routes that gate it. */
export const GATE_ERRORS = {
  ownAi: ['byok_plan_required', 'byok_addon_required'],
  ownProxy: ['byo_proxy_plan_required', 'byo_proxy_addon_required'],
} as const satisfies Record<keyof FeatureRequest, readonly string[]>;

/**
 * `managing`: the request stores or tests the account's own AI keys or proxies (PUT /proxies,
 * PUT /ai/providers/...), not a capture that names one, so the note has no option to leave out.
 */
export function checkFeatures(account: AccountContext, features: FeatureRequest, { managing = false }: { managing?: boolean } = {}): void {
  if (features.ownAi) {
    const what = managing ? 'Storing or testing your own AI provider keys' : 'Using your own AI provider';
    const instead = managing ? '' : ', or use ai_provider=service';
    if (!account.plan.paid) throw serviceError('byok_plan_required', `${what} needs a paid screenshot plan; upgrade the plan${instead}.`);
    if (!account.addons.byo_ai) throw serviceError('byok_addon_required', `${what} needs the Bring Your Own AI addon; add it to your plan${instead}.`);
  }
  if (features.ownProxy) {
    const what = managing ? 'Storing or testing your own proxies' : 'Using your own proxy';
    const instead = managing ? '' : ', or leave out custom_proxy_id';
    if (!account.plan.paid) throw serviceError('byo_proxy_plan_required', `${what} needs a paid screenshot plan; upgrade the plan${instead}.`);
    if (!account.addons.byo_proxy) {
      throw serviceError('byo_proxy_addon_required', `${what} needs the Bring Your Own Proxy addon; add it to your plan${instead}.`);
    }
  }
}
