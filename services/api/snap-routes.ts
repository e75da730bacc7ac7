/**
 * GET and POST /snap: validate, gate, check the analysis asked for (ai.check), reuse a
 * capture within ttl (free), else reserve the credits through billing (the screenshot, and
 * an AI credit for the service's own AI), capture and analyse, then commit or refund (a
 * failed capture spends nothing; a failed analysis gives the AI credit back). Answers the image, the JSON record or the HTML; the bytes come from storage,
 * never through the transporter. Also GET /cdn/:name, the public file links.
 */
import { type ScreenshotRef, call } from '../shared/contracts';
import { billsAiCredits, NOT_ANALYSED } from '../shared/ai-record';
import { withCaptureCredits } from '../shared/credits';
import { serviceError } from '../shared/errors';
import { checkFeatures } from '../shared/plan-gates';
import { checkAnalysis } from './analysis-checks';
import { checkRouteOptions } from './route-options';
import { OPTION_DEFAULTS, type SnapOptions, captureKey, requestedFeatures } from '../shared/screenshot-options';
import type { FileStore } from '../shared/storage';
import { parseThumbnailName } from '../shared/thumbnail-names';
import { type RouteContext, type RouteDef, route } from './http';
import { SNAP_PARAMS } from './request-schemas';

/** The snap JSON record: exactly the spec's fields (plus success), `ai` when an analysis was asked for, the proxy fields when one was used. */
export function snapRecord(ref: ScreenshotRef, withAi: boolean): Record<string, unknown> {
  return {
    success: true,
    id: ref.id,
    embed_url: ref.embed_url,
    screenshot_configuration_id: ref.config_id,
    direct_link: ref.direct_link,
    direct_thumbnail_link: ref.direct_thumbnail_link,
    taken_at_timestamp: String(ref.taken_at_ms),
    taken_at: new Date(ref.taken_at_ms).toISOString().replace('Z', '+00:00'),
    job_id: ref.job_id,
    ...(withAi ? { ai: ref.ai ?? NOT_ANALYSED } : {}),
    ...egressFields(ref),
  };
}

/** How the capture went out, when not directly: an own proxy (custom_proxy, spec) or a real location. */
function egressFields(ref: ScreenshotRef): Record<string, unknown> {
  if (ref.custom_proxy !== null) return { custom_proxy: ref.custom_proxy, is_proxy_screenshot: false, proxy_server: null };
  if (ref.proxy_server !== null) return { is_proxy_screenshot: true, proxy_server: ref.proxy_server };
  return {};
}

async function readStored(store: FileStore, name: string | null): Promise<{ data: Buffer; contentType: string }> {
  const file = name ? await store.get(name) : null;
  if (!file) throw serviceError('internal_error', 'The stored capture could not be read.');
  return file;
}

async function answer(ctx: RouteContext, store: FileStore, ref: ScreenshotRef, options: SnapOptions, cache: 'HIT' | 'MISS'): Promise<unknown> {
  ctx.reply.header('X-Cache', cache);
  if (options.html_only) {
    const file = await readStored(store, ref.html_name);
    return { success: true, html: file.data.toString('utf8') };
  }
  if (options.json) return snapRecord(ref, options.analyze_image_with_ai === true);
  const file = await readStored(store, ref.image_name);
  return ctx.reply.header('content-type', file.contentType).header('content-length', String(file.data.length)).send(file.data);
}

function snapHandler(store: FileStore) {
  return async (ctx: RouteContext<SnapOptions>): Promise<unknown> => {
    const { broker, account } = ctx;
    const options = ctx.params;
    const features = requestedFeatures(options);
    checkFeatures(account, features);
    await checkRouteOptions(broker, account.accountId, options);
    await checkAnalysis(broker, account.accountId, options);
    const ttl = options.ttl ?? OPTION_DEFAULTS.ttl;
    if (ttl > 0) {
      const cached = await call(broker, 'capture.findRecent', { accountId: account.accountId, cacheKey: captureKey(options), since: Date.now() - ttl * 1000 });
      if (cached) return answer(ctx, store, cached, options, 'HIT');
    }
    const ref = await withCaptureCredits(broker, { account, amounts: { screenshots: 1 }, features }, billsAiCredits(options), () => call(broker, 'capture.take', { account, options }), {
      analysed: (taken) => taken.ai?.ai_analyzed === true,
    });
    return answer(ctx, store, ref, options, 'MISS');
  };
}

const SNAP_ERRORS = [
  'invalid_parameter',
  'custom_proxy_not_found',
  'ai_provider_unsupported',
  'ai_provider_not_configured',
  'ai_model_required',
  'ai_model_not_supported',
  'ai_provider_unavailable',
  'invalid_ai_structured_fields',
  'ai_service_not_configured',
  'url_not_allowed',
  'byok_plan_required',
  'byok_addon_required',
  'byo_proxy_plan_required',
  'byo_proxy_addon_required',
  'screenshot_limit_reached',
  'ai_credits_exhausted',
  'page_load_failed',
  'selector_not_found',
  'capacity_exhausted',
  'concurrency_limit_reached',
  'capture_timeout',
] as const;

export function snapRoutes(store: FileStore): RouteDef[] {
  const handler = snapHandler(store);
  const snap = (['GET', 'POST'] as const).map((method) =>
    route({
      method,
      url: '/snap',
      summary: 'Capture a page: the image (default), the JSON record (json=true) or the rendered HTML (html_only=true).',
      tag: 'capture',
      params: SNAP_PARAMS,
      response: { contentTypes: ['image/jpeg', 'image/png', 'image/webp', 'application/pdf', 'application/json'] },
      errors: [...SNAP_ERRORS],
      handler,
    }),
  );
  const cdn: RouteDef = {
    method: 'GET',
    url: '/cdn/:name',
    summary: 'A stored image, thumbnail or HTML file (public, no key; names are random).',
    tag: 'capture',
    auth: false,
    response: { contentTypes: ['image/jpeg', 'image/png', 'image/webp', 'application/pdf', 'text/html'] },
    errors: ['not_found'],
    handler: async ({ path, reply, broker }) => {
      const name = path.name ?? '';
      let file = /^[A-Za-z0-9_-]+\.[a-z]+$/.test(name) ? await store.get(name) : null;
      // An image's thumbnail is made when first asked for, by the capture service.
      if (!file && parseThumbnailName(name) && (await call(broker, 'capture.thumbnail', { name })).made) file = await store.get(name);
      if (!file) throw serviceError('not_found', `No stored file named "${name}".`);
      return reply
        .header('content-type', file.contentType)
        .header('cache-control', 'public, max-age=31536000, immutable')
        .header('x-content-type-options', 'nosniff')
        .send(file.data);
    },
  };
  return [...snap, cdn];
}
