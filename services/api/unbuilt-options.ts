/**
 * Options of the spec that this server does not carry out yet. They are refused with a
 * clear error after the plan gates (so a caller still learns what its plan lacks first)
 * and before any credit, never accepted and ignored. Each refusal goes when its feature
 * lands (the egress gateway's real locations and own proxies).
 */
import type { Context, ServiceBroker } from 'moleculer';
import { call } from '../shared/contracts';
import { serviceError } from '../shared/errors';
import type { ScreenshotOptions } from '../shared/screenshot-options';

export async function refuseUnbuiltOptions(caller: ServiceBroker | Context, accountId: string, o: ScreenshotOptions): Promise<void> {
  // An unknown location is refused here, before any credit (the proxy service's catalogue).
  if (o.real_location !== undefined && o.custom_proxy_id === undefined) await call(caller, 'proxy.checkRoute', { accountId, realLocation: o.real_location });
  if (o.custom_proxy_id !== undefined) {
    throw serviceError('custom_proxy_not_found', `custom_proxy_id: no stored proxy has id ${o.custom_proxy_id}; this server cannot store proxies yet. Leave custom_proxy_id out.`);
  }
}
