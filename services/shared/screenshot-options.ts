/**
 * The spec's "Screenshot options" table, written once. The api's request schemas (ajv),
 * the OpenAPI document and the option types used by capture and scheduler are all
 * generated from OPTION_TABLE; nothing else lists the options.
 */

import crypto from 'node:crypto';
import { serviceError } from './errors';

type JsonSchema = Record<string, unknown>;

export type OptionKind = 'string' | 'boolean' | 'integer' | 'number' | 'json';

/** Where an option is accepted. */
export type Scope = 'capture' | 'snap' | 'config';

export interface OptionSpec {
  name: string;
  kind: OptionKind;
  description: string;
  default?: unknown;
  /** Extra JSON Schema keywords (range, enum, length, item shape). */
  schema?: JsonSchema;
  /** capture: everywhere (snap, create, update); snap: snap only; config: configurations only. */
  scope: Scope;
  /** Changes the captured result; part of the ttl cache key and of snap-configuration reuse. */
  affectsCapture: boolean;
  /** Error code for a bad value, when the spec names one (default invalid_parameter). */
  errorCode?: 'ai_provider_unsupported' | 'invalid_ai_structured_fields';
}

export const MAX_WAIT_MS = 20_000;
export const MAX_AI_PROMPT = 2500;
export const MAX_STRUCTURED_FIELDS = 50;
export const MAX_FIELD_OPTIONS = 100;
export const MAX_ACTIONS = 50;
export const AI_PROVIDERS = ['service', 'anthropic', 'openai', 'openrouter'] as const;
export const IMAGE_FORMATS = ['jpeg', 'png', 'webp', 'pdf'] as const;
export const SCHEDULE_INTERVALS = ['minutes', 'hours', 'days', 'weeks', 'months', 'years'] as const;
export const ACTION_TYPES = [
  'click',
  'hover',
  'change',
  'redirect',
  'javascript',
  'evaluateJs',
  'css',
  'text_field',
  'select',
  'checkbox',
  'submit',
  'wait',
  'wait_for_selector',
] as const;

const keyValueList = (extra: JsonSchema): JsonSchema => ({
  type: 'array',
  maxItems: 100,
  items: {
    type: 'object',
    required: ['key', 'value'],
    additionalProperties: false,
    properties: { key: { type: 'string', minLength: 1, maxLength: 256 }, value: { type: 'string', maxLength: 8192 }, ...extra },
  },
});

const text = (maxLength: number): JsonSchema => ({ maxLength });

export const OPTION_TABLE: OptionSpec[] = [
  { name: 'url', kind: 'string', scope: 'capture', affectsCapture: true, description: 'Page to capture (http or https).', schema: { minLength: 1, maxLength: 4096, format: 'http-url' } },
  { name: 'time_zone', kind: 'string', scope: 'capture', affectsCapture: true, description: 'ICU time zone id such as Europe/Paris.', schema: { maxLength: 64, format: 'time-zone' } },
  { name: 'selectors', kind: 'string', scope: 'capture', affectsCapture: true, description: 'One CSS selector; captures only that element (with html_only, returns its outerHTML).', schema: text(1000) },
  { name: 'hover_on_selected', kind: 'boolean', scope: 'capture', affectsCapture: true, default: false, description: 'Requires selectors; shows the :hover styles of that element.' },
  { name: 'real_location', kind: 'string', scope: 'capture', affectsCapture: true, description: 'A value from /real_locations; the capture goes through the proxy network.', schema: text(100) },
  { name: 'custom_proxy_id', kind: 'integer', scope: 'capture', affectsCapture: true, description: 'Id of a stored proxy (Bring Your Own Proxy addon). Replaces real_location.', schema: { minimum: 1 } },
  { name: 'wait', kind: 'integer', scope: 'capture', affectsCapture: true, default: 1500, description: 'Milliseconds to wait before the capture.', schema: { minimum: 0, maximum: MAX_WAIT_MS } },
  { name: 'wait_for', kind: 'string', scope: 'capture', affectsCapture: true, description: 'CSS selector that must appear before the capture.', schema: text(1000) },
  { name: 'incremental_scroll', kind: 'boolean', scope: 'capture', affectsCapture: true, default: false, description: 'Scrolls slowly to trigger lazy loading (up to 10 seconds).' },
  { name: 'fullpage', kind: 'boolean', scope: 'capture', affectsCapture: true, default: false, description: 'Captures the whole page.' },
  { name: 'fullpage_advanced', kind: 'boolean', scope: 'capture', affectsCapture: true, default: false, description: 'Full page for lazy-loaded pages: scrolls content into view first; slower than fullpage.' },
  { name: 'page_width', kind: 'integer', scope: 'capture', affectsCapture: true, default: 1920, description: 'Viewport width in CSS pixels.', schema: { minimum: 100, maximum: 7680 } },
  { name: 'page_height', kind: 'integer', scope: 'capture', affectsCapture: true, default: 1000, description: 'Viewport height in CSS pixels.', schema: { minimum: 100, maximum: 7680 } },
  { name: 'image_format', kind: 'string', scope: 'capture', affectsCapture: true, default: 'jpeg', description: 'Image format.', schema: { enum: [...IMAGE_FORMATS] } },
  { name: 'placeholder_url', kind: 'string', scope: 'capture', affectsCapture: false, description: 'Image shown at the embed URL until the first capture exists.', schema: { maxLength: 4096, format: 'http-url' } },
  { name: 'quality', kind: 'integer', scope: 'capture', affectsCapture: true, default: 100, description: 'JPEG quality, 1 (lowest) to 100 (highest); ignored for png and webp.', schema: { minimum: 1, maximum: 100 } },
  { name: 'scale_factor', kind: 'number', scope: 'capture', affectsCapture: true, default: 1, description: 'Device scale factor; 2 gives a retina image.', schema: { minimum: 0.5, maximum: 4 } },
  { name: 'css_inject', kind: 'string', scope: 'capture', affectsCapture: true, description: 'CSS injected into the page.', schema: text(100_000) },
  { name: 'js_inject', kind: 'string', scope: 'capture', affectsCapture: true, description: 'JavaScript injected into the page.', schema: text(100_000) },
  { name: 'analyze_image_with_ai', kind: 'boolean', scope: 'capture', affectsCapture: true, default: false, description: 'Enables AI analysis of the capture.' },
  { name: 'ai_prompt', kind: 'string', scope: 'capture', affectsCapture: true, description: 'Prompt for the analysis; requires analyze_image_with_ai=true. Ignored in structured mode.', schema: text(MAX_AI_PROMPT) },
  { name: 'ai_prompt_mode', kind: 'string', scope: 'capture', affectsCapture: true, default: 'simple', description: 'simple: free text; structured: an object matching ai_structured_fields.', schema: { enum: ['simple', 'structured'] } },
  { name: 'ai_structured_instructions', kind: 'string', scope: 'capture', affectsCapture: true, description: 'Optional context for structured mode.', schema: text(5000) },
  {
    name: 'ai_structured_fields',
    kind: 'json',
    scope: 'capture',
    affectsCapture: true,
    errorCode: 'invalid_ai_structured_fields',
    description: 'JSON array of structured field definitions (a JSON string on GET and forms).',
    schema: {
      type: 'array',
      maxItems: MAX_STRUCTURED_FIELDS,
      items: {
        type: 'object',
        required: ['name', 'type'],
        additionalProperties: false,
        properties: {
          name: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]*$', maxLength: 64 },
          type: { enum: ['string', 'number', 'boolean', 'enum', 'multi'] },
          description: { type: 'string', maxLength: 1000 },
          options: { type: 'array', minItems: 1, maxItems: MAX_FIELD_OPTIONS, items: { type: 'string', maxLength: 200 } },
        },
        if: { properties: { type: { enum: ['enum', 'multi'] } } },
        // biome-ignore lint/suspicious/noThenProperty: a JSON Schema keyword, not a thenable
        then: { required: ['options'] },
      },
    },
  },
  { name: 'ai_provider', kind: 'string', scope: 'capture', affectsCapture: true, default: 'service', errorCode: 'ai_provider_unsupported', description: 'service (AI credits), or anthropic, openai, openrouter with your own key.', schema: { enum: [...AI_PROVIDERS] } },
  { name: 'ai_model', kind: 'string', scope: 'capture', affectsCapture: true, description: 'Model id for an own provider.', schema: text(200) },
  {
    name: 'headers',
    kind: 'json',
    scope: 'capture',
    affectsCapture: true,
    description: 'Extra HTTP headers: JSON array of {"key","value"} (or a {"name": "value"} map); a JSON string on GET and forms.',
    schema: keyValueList({}),
  },
  {
    name: 'cookies',
    kind: 'json',
    scope: 'capture',
    affectsCapture: true,
    description: 'Cookies: JSON array of {"key","value"} with optional domain, path, secure, httpOnly (or a {"name": "value"} map); a JSON string on GET and forms.',
    schema: keyValueList({ domain: { type: 'string', maxLength: 255 }, path: { type: 'string', maxLength: 1024 }, secure: { type: 'boolean' }, httpOnly: { type: 'boolean' } }),
  },
  { name: 'accept_language', kind: 'string', scope: 'capture', affectsCapture: true, description: 'Accept-Language the browser sends.', schema: text(500) },
  { name: 'user_agent', kind: 'string', scope: 'capture', affectsCapture: true, description: 'User agent string.', schema: text(1000) },
  { name: 'latitude', kind: 'number', scope: 'capture', affectsCapture: true, description: 'Geolocation latitude.', schema: { minimum: -90, maximum: 90 } },
  { name: 'longitude', kind: 'number', scope: 'capture', affectsCapture: true, description: 'Geolocation longitude.', schema: { minimum: -180, maximum: 180 } },
  { name: 'accuracy', kind: 'number', scope: 'capture', affectsCapture: true, description: 'Geolocation accuracy in metres.', schema: { minimum: 0, maximum: 1_000_000 } },
  { name: 'no_ads', kind: 'boolean', scope: 'capture', affectsCapture: true, default: false, description: 'Blocks ads.' },
  { name: 'no_tracking', kind: 'boolean', scope: 'capture', affectsCapture: true, default: false, description: 'Blocks tracking scripts.' },
  { name: 'no_cookie_banners', kind: 'boolean', scope: 'capture', affectsCapture: true, default: false, description: 'Hides cookie consent banners.' },
  { name: 'disable_js', kind: 'boolean', scope: 'capture', affectsCapture: true, default: false, description: 'Disables all JavaScript.' },
  { name: 'disable_third_party_js', kind: 'boolean', scope: 'capture', affectsCapture: true, default: false, description: "Discards scripts from outside the page's own registrable domain." },
  { name: 'custom_title', kind: 'string', scope: 'capture', affectsCapture: false, description: 'Title of the configuration.', schema: text(500) },
  { name: 'custom_description', kind: 'string', scope: 'capture', affectsCapture: false, description: 'Description of the configuration.', schema: text(5000) },
  {
    name: 'multi_step_actions',
    kind: 'json',
    scope: 'capture',
    affectsCapture: true,
    description: 'Ordered actions run before the capture (a JSON string on GET and forms).',
    schema: {
      type: 'array',
      maxItems: MAX_ACTIONS,
      items: {
        type: 'object',
        required: ['type'],
        properties: {
          type: { enum: [...ACTION_TYPES] },
          selector: { type: 'string', minLength: 1, maxLength: 1000 },
          value: { type: ['string', 'number', 'boolean'] },
          send_to: { enum: ['webhook', 'slack'] },
          url: { type: 'string', maxLength: 4096 },
        },
      },
    },
  },
  { name: 'thumb_width', kind: 'integer', scope: 'capture', affectsCapture: true, default: 400, description: 'Thumbnail width in pixels.', schema: { minimum: 16, maximum: 2000 } },
  { name: 'thumb_height', kind: 'integer', scope: 'capture', affectsCapture: true, description: 'Thumbnail height in pixels (default keeps the aspect ratio).', schema: { minimum: 16, maximum: 2000 } },
  { name: 'html_only', kind: 'boolean', scope: 'snap', affectsCapture: true, description: 'Returns the rendered HTML instead of an image (1 screenshot credit).' },
  { name: 'json', kind: 'boolean', scope: 'snap', affectsCapture: false, description: 'Answers with the JSON screenshot record instead of the image.' },
  { name: 'ttl', kind: 'integer', scope: 'snap', affectsCapture: false, default: 86_400, description: 'Seconds a saved capture with the same URL and options is reused without spending a credit; 0 always captures fresh.', schema: { minimum: 0, maximum: 30 * 86_400 } },
  { name: 'scheduled_screenshot', kind: 'boolean', scope: 'config', affectsCapture: false, description: 'true makes the configuration recurring.' },
  { name: 'scheduled_every', kind: 'integer', scope: 'config', affectsCapture: false, description: 'Interval count, at least 1.', schema: { minimum: 1, maximum: 100_000 } },
  { name: 'scheduled_interval', kind: 'string', scope: 'config', affectsCapture: false, description: 'Interval unit.', schema: { enum: [...SCHEDULE_INTERVALS] } },
  { name: 'webhook_url', kind: 'string', scope: 'config', affectsCapture: false, description: 'Capture deliveries are POSTed here.', schema: { maxLength: 4096, format: 'http-url' } },
];

export const OPTIONS_BY_NAME: ReadonlyMap<string, OptionSpec> = new Map(OPTION_TABLE.map((o) => [o.name, o]));

/** The JSON Schema of one option's value. */
export function optionSchema(o: OptionSpec): JsonSchema {
  const base: JsonSchema =
    o.kind === 'json' ? {} : { type: o.kind };
  return { ...base, ...(o.schema ?? {}), description: o.description, ...(o.default !== undefined ? { default: o.default } : {}) };
}

/** Values after validation: what capture and scheduler receive. */
export interface ScreenshotOptions {
  url: string;
  time_zone?: string;
  selectors?: string;
  hover_on_selected?: boolean;
  real_location?: string;
  custom_proxy_id?: number;
  wait?: number;
  wait_for?: string;
  incremental_scroll?: boolean;
  fullpage?: boolean;
  fullpage_advanced?: boolean;
  page_width?: number;
  page_height?: number;
  image_format?: (typeof IMAGE_FORMATS)[number];
  placeholder_url?: string;
  quality?: number;
  scale_factor?: number;
  css_inject?: string;
  js_inject?: string;
  analyze_image_with_ai?: boolean;
  ai_prompt?: string;
  ai_prompt_mode?: 'simple' | 'structured';
  ai_structured_instructions?: string;
  ai_structured_fields?: Array<{ name: string; type: string; description?: string; options?: string[] }>;
  ai_provider?: (typeof AI_PROVIDERS)[number];
  ai_model?: string;
  headers?: Array<{ key: string; value: string }>;
  cookies?: Array<{ key: string; value: string; domain?: string; path?: string; secure?: boolean; httpOnly?: boolean }>;
  accept_language?: string;
  user_agent?: string;
  latitude?: number;
  longitude?: number;
  accuracy?: number;
  no_ads?: boolean;
  no_tracking?: boolean;
  no_cookie_banners?: boolean;
  disable_js?: boolean;
  disable_third_party_js?: boolean;
  custom_title?: string;
  custom_description?: string;
  multi_step_actions?: Array<{ type: (typeof ACTION_TYPES)[number]; selector?: string; value?: string | number | boolean; send_to?: string; url?: string }>;
  thumb_width?: number;
  thumb_height?: number;
}

export interface SnapOptions extends ScreenshotOptions {
  html_only?: boolean;
  json?: boolean;
  ttl?: number;
}

export interface ConfigOptions extends ScreenshotOptions {
  scheduled_screenshot?: boolean;
  scheduled_every?: number;
  scheduled_interval?: (typeof SCHEDULE_INTERVALS)[number];
  webhook_url?: string;
}

/**
 * Features of a request that the billing gates decide on. Naming an own AI provider asks
 * for the own-AI feature even before analysis is switched on, so a configuration cannot be
 * stored with a feature its plan would refuse later.
 */
export function requestedFeatures(o: ScreenshotOptions): { ownAi: boolean; ownProxy: boolean } {
  return {
    ownAi: o.ai_provider !== undefined && o.ai_provider !== 'service',
    ownProxy: o.custom_proxy_id !== undefined,
  };
}

/**
 * Identity of a capture: the URL and every capture-affecting option, defaults filled in.
 * Equal keys mean interchangeable captures (ttl reuse) and the same snap configuration.
 */
export function captureKey(o: SnapOptions): string {
  const values = OPTION_TABLE.filter((x) => x.affectsCapture).map((x) => [x.name, (o as unknown as Record<string, unknown>)[x.name] ?? x.default ?? null]);
  return crypto.createHash('sha256').update(JSON.stringify(values)).digest('hex');
}

/**
 * The schedule a configuration asks for, or null when it is not recurring. The schema
 * cannot say "interval required when scheduled", so the api (before it spends a credit)
 * and the scheduler (which stores the schedule) both ask here.
 */
export function scheduleOf(o: ConfigOptions): { every: number; interval: (typeof SCHEDULE_INTERVALS)[number] } | null {
  if (o.scheduled_screenshot !== true) return null;
  if (!o.scheduled_interval) {
    throw serviceError('invalid_parameter', `scheduled_interval is required with scheduled_screenshot=true: one of ${SCHEDULE_INTERVALS.join(', ')}.`);
  }
  return { every: o.scheduled_every ?? 1, interval: o.scheduled_interval };
}
