/**
 * The route options of a capture (real_location, custom_proxy_id), checked after the plan
 * gates (so a caller still learns what its plan lacks first) and before any credit: an
 * unknown location is 400 invalid_parameter pointing at GET /real_locations, an own proxy
 * that is not stored is 412 custom_proxy_not_found (it wins over real_location). The proxy
 * service owns both lists. store_to is checked here too (the proxy service owns storage
 * destinations): a name the account has no destination for is 400 storage_destination_not_found.
 */
import type { Context, ServiceBroker } from 'moleculer';
import { call } from '../shared/contracts';
import type { CaptureTargets, ScreenshotOptions } from '../shared/screenshot-options';

/** What checkRouteOptions refuses, for the errors of the routes that run it. */
/** What naming a route can answer (secret_unreadable: the named proxy's password or destination's credentials were sealed under another SECRETS_KEY). */
export const ROUTE_CHECK_ERRORS = ['invalid_parameter', 'custom_proxy_not_found', 'storage_destination_not_found', 'secret_unreadable'] as const;

/** Checks them, and answers what the store_to and own proxy named point to now (for the capture's ttl key). */
export async function checkRouteOptions(
  caller: ServiceBroker | Context,
  accountId: string,
  o: Pick<ScreenshotOptions, 'custom_proxy_id' | 'real_location' | 'store_to'>,
): Promise<CaptureTargets> {
  const targets: CaptureTargets = {};
  if (o.store_to !== undefined) targets.destination = (await call(caller, 'proxy.checkDestination', { accountId, name: o.store_to })).identity;
  if (o.custom_proxy_id !== undefined) {
    const { identity } = await call(caller, 'proxy.checkRoute', { accountId, customProxyId: o.custom_proxy_id });
    if (identity !== undefined) targets.proxy = identity;
  } else if (o.real_location !== undefined) await call(caller, 'proxy.checkRoute', { accountId, realLocation: o.real_location });
  return targets;
}
