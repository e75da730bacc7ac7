/**
 * Options of the spec that this server does not carry out yet. They are refused with a
 * clear error after the plan gates (so a caller still learns what its plan lacks first)
 * and before any credit, never accepted and ignored. Each refusal goes when its feature
 * lands (the egress gateway's real locations and own proxies).
 */
import { serviceError } from '../shared/errors';
import type { ScreenshotOptions } from '../shared/screenshot-options';

export function refuseUnbuiltOptions(o: ScreenshotOptions): void {
  if (o.real_location !== undefined) {
    throw serviceError('invalid_parameter', `real_location: "${o.real_location}" is not a location of this server; it has no real locations configured yet (GET /real_locations is not available). Leave real_location out.`);
  }
  if (o.custom_proxy_id !== undefined) {
    throw serviceError('custom_proxy_not_found', `custom_proxy_id: no stored proxy has id ${o.custom_proxy_id}; this server cannot store proxies yet. Leave custom_proxy_id out.`);
  }
}
