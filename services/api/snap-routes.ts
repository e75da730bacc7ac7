/**
 * GET and POST /snap: validate, gate and reserve through billing, capture, then commit or
 * refund. A failed capture spends no credit.
 */
import { call } from '../shared/contracts';
import { type SnapOptions, requestedFeatures } from '../shared/screenshot-options';
import type { RouteContext, RouteDef } from './http';
import { shapeSchema, validateShape } from './request-schemas';

async function snap(ctx: RouteContext): Promise<unknown> {
  const { broker, account } = ctx;
  const options = validateShape<SnapOptions>('snap', ctx.params);
  const reservation = await call(broker, 'billing.reserve', {
    account,
    amounts: { screenshots: 1 },
    features: requestedFeatures(options),
  });
  try {
    const result = await call(broker, 'capture.take', { account, options, reservation });
    await call(broker, 'billing.commit', { reservation });
    return result;
  } catch (err) {
    await call(broker, 'billing.refund', { reservation }).catch(() => undefined);
    throw err;
  }
}

const SNAP_ERRORS = [
  'invalid_parameter',
  'invalid_ai_structured_fields',
  'ai_provider_unsupported',
  'byok_plan_required',
  'byok_addon_required',
  'byo_proxy_plan_required',
  'byo_proxy_addon_required',
  'screenshot_limit_reached',
  'capacity_exhausted',
] as const;

export const SNAP_ROUTES: RouteDef[] = (['GET', 'POST'] as const).map((method) => ({
  method,
  url: '/snap',
  summary: 'Capture a page: the image (default), the JSON record (json=true) or the rendered HTML (html_only=true).',
  tag: 'capture',
  params: shapeSchema('snap'),
  response: { contentTypes: ['image/jpeg', 'image/png', 'image/webp', 'application/pdf', 'application/json'] },
  errors: [...SNAP_ERRORS],
  handler: snap,
}));
