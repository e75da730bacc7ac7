/**
 * The snap endpoints, GET and POST each: /snap, and the three the official clients call
 * besides it (docs/clients.md): /snap_html (a document given in html_content instead of a
 * url), /snap_ai_analysis (a snap with analyze_image_with_ai=true and ai_prompt required)
 * and /snap_real_location (a snap with real_location, or proxy_server, required). Each runs
 * the one admission path (spend-admission.ts), reuses a capture within ttl (free), else reserves
 * the credits through billing (the screenshot, and an AI credit for the service's own AI),
 * captures and analyses, then commits or refunds (a failed capture spends nothing; a failed
 * analysis gives the AI credit back). Answers the image, the JSON record or the HTML; the
 * bytes come from storage, never through the transporter. Also GET /cdn/:name, the public
 * file links.
 */
import type { TargetPolicy } from '../shared/address-policy';
import { type ScreenshotRef, call } from '../shared/contracts';
import { billsAiCredits } from '../ai/public/ai-record';
import { withCaptureCredits } from '../billing/public/credits';
import type { SnapTiming } from '../capture/public/snap-timing';
import { type ErrorCode, serviceError } from '../shared/errors';
import { INLINE_DOCUMENT_URL, OPTION_DEFAULTS, type SnapOptions, captureKey, requestedFeatures } from '../shared/screenshot-options';
import type { FileStore } from '../shared/storage';
import { parseThumbnailName } from '../capture/public/thumbnail-names';
import { PAGE_METADATA_SCHEMA, SNAP_ANSWER_SCHEMA, type SnapRecord, snapRecord } from '../capture/public/screenshot-records';
import { admission } from './spend-admission';
import { findRecentSnap, takeSnap } from './capture-call';
import { type RouteContext, type RouteDef, route } from './http';
import { type ParamShape, type RawParams, SNAP_HTML_PARAMS, SNAP_PARAMS, checkRules } from './request-schemas';

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
  if (options.json) {
    const record = snapRecord(ref, options.analyze_image_with_ai === true);
    // metadata=true: the saved metadata in the answer too (markdown stays behind markdown_url: it can be long).
    if (!options.metadata || !ref.metadata_name) return record;
    const metadata = JSON.parse((await readStored(store, ref.metadata_name)).data.toString('utf8')) as SnapRecord['metadata'];
    return { ...record, metadata };
  }
  const file = await readStored(store, ref.image_name);
  return ctx.reply.header('content-type', file.contentType).header('content-length', String(file.data.length)).send(file.data);
}

/** What a snap can name and spend: its admission's checks, and so its errors. */
const SNAP_ADMISSION = admission({
  features: ['ownAi', 'ownProxy'],
  structuredFields: true,
  route: true,
  schedule: false,
  credits: ['screenshots', 'ai_credits', 'bandwidth_bytes'],
});

/** A snap of `options`, through the one admission path (also GET /render's, signed-link-routes.ts). */
export async function snap(ctx: RouteContext<unknown>, store: FileStore, policy: TargetPolicy, timing: SnapTiming, options: SnapOptions): Promise<unknown> {
  const { broker, account } = ctx;
  // What its store_to and own proxy point to now is part of its ttl key, here and where the capture is recorded.
  const { targets } = await SNAP_ADMISSION.admit({ broker, account, policy, given: options });
  const features = requestedFeatures(options);
  const ttl = options.ttl ?? OPTION_DEFAULTS.ttl;
  // The snap's budget counts from here: a lookup taken again (its instance gone) spends of it.
  const since = Date.now();
  if (ttl > 0) {
    const cacheKey = captureKey(options, targets);
    const cached = await findRecentSnap(broker, { accountId: account.accountId, cacheKey, since: since - ttl * 1000 }, since + timing.budgetMs);
    if (cached) return answer(ctx, store, cached, options, 'HIT');
  }
  const ref = await withCaptureCredits(
    broker,
    // Settled within its deadline unless this request's process stopped; billing then gives it back.
    { account, amounts: { screenshots: 1 }, features, settleWithinMs: timing.settleWithinMs },
    billsAiCredits(options),
    () => takeSnap(broker, { account, options, targets }, timing.budgetMs, since),
    {
      analysed: (taken) => taken.ai?.ai_analyzed === true,
    },
  );
  return answer(ctx, store, ref, options, 'MISS');
}

/**
 * The snap shape of an endpoint that fixes some options (`fixed`: a value the caller may
 * repeat but not contradict) and requires others (`required`, any of their names).
 */
function snapVariant(fixed: Partial<SnapOptions>, required: Array<keyof SnapOptions>, why: string): ParamShape<SnapOptions> {
  const base = SNAP_PARAMS.schema as { properties: Record<string, Record<string, unknown>>; required: string[] };
  const properties = { ...base.properties };
  for (const [name, value] of Object.entries(fixed))
    properties[name] = {
      ...properties[name],
      default: value,
      description: `${String(properties[name]?.description ?? '')} Always ${JSON.stringify(value)} here.`,
    };
  return {
    schema: { ...base, properties, required: [...base.required, ...required] },
    parse(raw: RawParams) {
      const values = SNAP_PARAMS.parse(raw) as Record<string, unknown>;
      for (const [name, value] of Object.entries(fixed)) {
        if (values[name] !== undefined && values[name] !== value) {
          throw serviceError('invalid_parameter', `${name}: ${why}, so it is always ${JSON.stringify(value)} here; leave it out.`, { param: name });
        }
        values[name] = value;
      }
      for (const name of required) {
        if (values[name] === undefined) throw serviceError('invalid_parameter', `${name} is required: ${why}.`, { param: name });
      }
      // The cross-option rules again, with the fixed values in; html_only is the one that can meet the fixed analysis.
      if (fixed.analyze_image_with_ai === true && values.html_only === true) {
        throw serviceError('invalid_parameter', `html_only: ${why}, reading the captured image, and html_only=true captures none; leave html_only out.`, {
          param: 'html_only',
        });
      }
      checkRules(values);
      return values as SnapOptions;
    },
  };
}

/** What a capture (a snap's, or a configuration's job's) can fail with once it runs (docs/api.md, "Capture errors"). */
export const CAPTURE_FAILURES: ErrorCode[] = [
  'page_load_failed',
  'page_crashed',
  'page_unresponsive',
  'selector_not_found',
  'action_failed',
  'capture_rule_failed',
  'url_not_allowed',
  'capture_timeout',
  'browser_failed',
  'storage_upload_failed',
];

/** The parameters' errors, the admission's, then the capture's. */
export const SNAP_ERRORS: ErrorCode[] = [
  ...new Set<ErrorCode>([
    'invalid_parameter',
    'ai_provider_unsupported',
    ...SNAP_ADMISSION.errors,
    ...CAPTURE_FAILURES,
    'capacity_exhausted',
    'concurrency_limit_reached',
  ]),
];

/** The image, or (json=true, html_only=true) the record or the HTML. */
export const SNAP_ANSWERS = { contentTypes: ['image/jpeg', 'image/png', 'image/webp', 'application/pdf', 'application/json'], json: SNAP_ANSWER_SCHEMA };

/** A snap endpoint, GET and POST (no HEAD: it would capture and spend). */
function snapEndpoint<P>(url: string, summary: string, params: ParamShape<P>, handler: (ctx: RouteContext<P>) => Promise<unknown>): RouteDef[] {
  return (['GET', 'POST'] as const).map((method) =>
    route({ method, url, noHead: true, summary, tag: 'capture', params, response: SNAP_ANSWERS, errors: [...SNAP_ERRORS], handler }),
  );
}

/** `timing`: a snap's budget and its credit's deadline (capture/public/snap-timing.ts). */
export function snapRoutes(store: FileStore, policy: TargetPolicy, timing: SnapTiming): RouteDef[] {
  const snapOf = (ctx: RouteContext<SnapOptions>) => snap(ctx, store, policy, timing, ctx.params);
  const snaps = [
    ...snapEndpoint('/snap', 'Capture a page: the image (default), the JSON record (json=true) or the rendered HTML (html_only=true).', SNAP_PARAMS, snapOf),
    ...snapEndpoint(
      '/snap_html',
      'Render the HTML document given in html_content, with the snap options: the image, the JSON record (json=true) or the rendered HTML (html_only=true). ' +
        '1 screenshot credit.',
      SNAP_HTML_PARAMS,
      (ctx) => snap(ctx, store, policy, timing, { ...ctx.params, url: INLINE_DOCUMENT_URL }),
    ),
    ...snapEndpoint(
      '/snap_ai_analysis',
      'A snap analysed by AI: /snap with analyze_image_with_ai=true; ai_prompt is required.',
      snapVariant({ analyze_image_with_ai: true }, ['ai_prompt'], 'this endpoint analyses the capture with the prompt given in ai_prompt'),
      snapOf,
    ),
    ...snapEndpoint(
      '/snap_real_location',
      'A snap from a real location: /snap with real_location (or proxy_server) required.',
      snapVariant({}, ['real_location'], 'this endpoint captures from the real location named in real_location (or proxy_server), one of GET /real_locations'),
      snapOf,
    ),
  ];
  const cdn: RouteDef = {
    method: 'GET',
    url: '/cdn/:name',
    summary: 'A stored image, thumbnail, HTML, Markdown or metadata file (public, no key; names are random).',
    tag: 'capture',
    auth: false,
    // A metadata file (metadata=true) is the one JSON file stored.
    response: {
      contentTypes: ['image/jpeg', 'image/png', 'image/webp', 'application/pdf', 'text/html', 'text/markdown', 'application/json'],
      json: PAGE_METADATA_SCHEMA,
    },
    errors: ['not_found'],
    handler: async ({ path, reply, broker }) => {
      const name = path.name ?? '';
      // <random>.<ext>, and metadata=true's <random>.metadata.json.
      let file = /^[A-Za-z0-9_-]+(\.metadata)?\.[a-z]+$/.test(name) ? await store.get(name) : null;
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
  return [...snaps, cdn];
}
