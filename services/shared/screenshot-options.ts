/**
 * The spec's "Screenshot options" table, written once. Each option's value is a TypeBox
 * schema, plain JSON Schema that also carries its TypeScript type, so the api's request
 * schemas (ajv), the OpenAPI document, the option types used by capture and scheduler
 * (ScreenshotOptions, SnapOptions, ConfigOptions, ActionStep) and the defaults
 * (OPTION_DEFAULTS) all come from OPTION_TABLE; nothing else lists the options.
 */

import crypto from 'node:crypto';
import { type Static, type TProperties, type TSchema, Type } from '@sinclair/typebox';
import { findDevice } from './devices';
import { serviceError } from './errors';
import { DEFAULT_KEY_TEMPLATE, MAX_KEY_TEMPLATE, placeholderList } from './object-keys';
import { MAX_STATUS_LIST } from './status-codes';

type JsonSchema = Record<string, unknown>;

/** How a value sent as text (GET, forms) is read: `json` options arrive as JSON strings. */
export type OptionKind = 'string' | 'boolean' | 'integer' | 'number' | 'json';

/** Where an option is accepted: capture everywhere, snap on the snap endpoints, html on /snap_html only, config on configurations. */
export type Scope = 'capture' | 'snap' | 'html' | 'config';

/** One row of the table as written. */
interface OptionRow {
  name: string;
  /** JSON Schema of the value; its static type is the option's type. */
  schema: TSchema;
  description: string;
  default?: unknown;
  /** Required wherever the option is accepted. */
  required?: true;
  /** capture: everywhere (snap, create, update); snap: the snap endpoints; html: /snap_html only; config: configurations only. */
  scope: Scope;
  /**
   * Other names the official clients send for this option (docs/clients.md): each is read as
   * the option itself, and the two together with different values are refused.
   */
  aliases?: readonly string[];
  /** A list that may be sent as the parameter repeated in the query (`hide_selectors=.a&hide_selectors=.b`), its aliases too. */
  repeatable?: true;
  /**
   * 0 means "not set" (the default applies): the n8n node sends 0 for a number field left
   * empty. Only for options where 0 could mean nothing else (never a 0-wide image).
   */
  zeroIsUnset?: true;
  /** Changes the captured result; part of the ttl cache key and of snap-configuration reuse. */
  affectsCapture: boolean;
  /** Error code for a bad value, when the spec names one (default invalid_parameter). */
  errorCode?: 'ai_provider_unsupported' | 'invalid_ai_structured_fields';
  /**
   * Validated after the plan gates, the provider and the model (the spec's order of checks),
   * by its own check (services/ai/structured-fields.ts), not with the request's shape.
   */
  checkedAfterGates?: true;
}

export interface OptionSpec extends OptionRow {
  kind: OptionKind;
}

const SCALAR_KINDS: readonly unknown[] = ['string', 'boolean', 'integer', 'number'];

/**
 * A row of the table. The literal row type is kept (name, scope, schema) so the option
 * types can be derived from the table, and a default that does not fit the schema's type
 * does not compile.
 */
function option<const R extends OptionRow>(row: R & { default?: Static<R['schema']> }): R & { kind: OptionKind } {
  const type: unknown = row.schema.type;
  return { ...row, kind: SCALAR_KINDS.includes(type) ? (type as OptionKind) : 'json' };
}

export const MAX_WAIT_MS = 20_000;
export const MAX_AI_PROMPT = 2500;
export const MAX_STRUCTURED_FIELDS = 50;
export const MAX_FIELD_OPTIONS = 100;
export const MAX_ACTIONS = 50;
/** Longest html_content /snap_html renders (characters); the request body limit applies too. */
export const MAX_HTML_CONTENT = 2_000_000;
export const AI_PROVIDERS = ['service', 'anthropic', 'openai', 'openrouter'] as const;
export const IMAGE_FORMATS = ['jpeg', 'png', 'webp', 'pdf'] as const;
/** pdf_paper_format's papers, as Chromium's print dialog and other screenshot APIs name them. */
export const PDF_PAPER_FORMATS = ['letter', 'legal', 'tabloid', 'ledger', 'a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6'] as const;
/** The schema keyword that holds a pattern's rule in words (an OpenAPI extension, ignored by validation). */
export const PATTERN_RULE = 'x-rule';
/**
 * A text option checked by a pattern, with its rule in words: the schema carries the rule beside
 * the pattern (`x-rule`, shown in /openapi.json too), and a value that does not match is
 * refused with it (param-notes.ts), never with the raw regular expression.
 */
const patterned = (pattern: string, rule: string, options: JsonSchema = {}) => Type.String({ ...options, pattern, [PATTERN_RULE]: rule });
/** A PDF length (paper size, margin): a number and its unit, px (1/96 in), in, cm or mm. */
export const PDF_LENGTH_PATTERN = '^[0-9]{1,4}(\\.[0-9]{1,4})?(px|in|cm|mm)$';
const PDF_LENGTH_RULE = 'a length: a number (up to 4 decimals) followed by px, in, cm or mm, without spaces, e.g. 1.5cm';
/** pdf_page_ranges: page numbers and ranges, comma-separated (1-3,5). */
export const PDF_PAGE_RANGES_PATTERN = '^ *[1-9][0-9]{0,4}( *- *[1-9][0-9]{0,4})?( *, *[1-9][0-9]{0,4}( *- *[1-9][0-9]{0,4})?)* *$';
const PDF_PAGE_RANGES_RULE = 'page numbers (from 1) and ranges of them, separated by commas, e.g. 1-3,5';
/** A structured field's name: the key of the analysis' result. */
const FIELD_NAME_RULE = 'a name of letters, digits and underscores, starting with a letter, e.g. product_name';
export const SCHEDULE_INTERVALS = ['minutes', 'hours', 'days', 'weeks', 'months', 'years'] as const;
export const CHANGE_TARGETS = ['webhook', 'slack'] as const;
/** What a `change` step compares: the text of its selector (the default), or the picture (visual-alerts.ts in the notifier). */
export const CHANGE_MODES = ['text', 'visual'] as const;
/**
 * Why a request's PDF options (pdf_*) cannot be taken as given, or null when they can: they
 * shape a PDF only, so they need image_format=pdf (`format`: the format the capture will have;
 * a configuration's PATCH is checked with its stored options under it), and a paper is named by
 * its format or by both its sizes, not both ways.
 */
export function pdfOptionsProblem(o: Readonly<Record<string, unknown>>, format: string): { param: string; note: string } | null {
  const given = Object.keys(o).filter((k) => k.startsWith('pdf_') && o[k] !== undefined);
  const first = given[0];
  if (first === undefined) return null;
  if (format !== 'pdf') {
    return { param: first, note: `${first}: shapes a PDF only; send image_format=pdf with it, or leave out ${given.join(', ')}.` };
  }
  const width = o.pdf_paper_width !== undefined;
  const height = o.pdf_paper_height !== undefined;
  if (width !== height) {
    const missing = width ? 'pdf_paper_height' : 'pdf_paper_width';
    return { param: missing, note: `${missing}: a paper size takes both pdf_paper_width and pdf_paper_height; send the other one too, or pdf_paper_format.` };
  }
  if (width && o.pdf_paper_format !== undefined) {
    return {
      param: 'pdf_paper_format',
      note: 'pdf_paper_format: the paper is named by its format or by pdf_paper_width and pdf_paper_height; send one of the two.',
    };
  }
  for (const side of ['pdf_paper_width', 'pdf_paper_height'] as const) {
    const given = o[side];
    const size = typeof given === 'string' ? pdfLengthInches(given) : null;
    if (size !== null && (size < PDF_PAPER_INCHES.min || size > PDF_PAPER_INCHES.max)) {
      return {
        param: side,
        note:
          `${side}: a paper side is at least ${PDF_PAPER_INCHES.min}in (96px, 2.54cm, 25.4mm) and at most ${PDF_PAPER_INCHES.max}in ` +
          `(the PDF format's largest page); got ${given}.`,
      };
    }
  }
  return null;
}

/** A paper side's bounds, inches: smaller sheets would print a page on thousands of them; PDF pages end at 14 400 points (200 in). */
export const PDF_PAPER_INCHES = { min: 1, max: 200 } as const;

const PER_INCH: Readonly<Record<string, number>> = { in: 1, px: 96, cm: 2.54, mm: 25.4 };

/** A PDF length as the options give it (PDF_LENGTH_PATTERN: 8.5in, 210mm, 1cm, 20px), in inches; null for another text. */
export function pdfLengthInches(length: string): number | null {
  const m = /^([0-9.]+)(px|in|cm|mm)$/.exec(length);
  return m ? Number(m[1]) / (PER_INCH[m[2] as string] as number) : null;
}

/**
 * optimize_for_speed given with a format it does not change (JPEG, WebP and PDF encode the
 * same either way), so it is refused rather than accepted and ignored (`format`: the format the
 * capture will have).
 */
export function encoderOptionProblem(o: Readonly<Record<string, unknown>>, format: string): { param: string; note: string } | null {
  if (o.optimize_for_speed === undefined || format === 'png') return null;
  return {
    param: 'optimize_for_speed',
    note: `optimize_for_speed: changes how a PNG is encoded only; ${format} is encoded the same either way. Send image_format=png with it, or leave it out.`,
  };
}

/**
 * The longest side of a picture in device pixels: the most sharp reads (its limit of 16 383 x
 * 16 383 pixels) and about the most a browser draws. A full page's height is cut to fit it; a
 * viewport larger than it, at its scale factor, is refused.
 */
export const MAX_PICTURE_SIDE_PX = 16_383;

/**
 * A viewport that, at its scale factor, makes a picture larger than MAX_PICTURE_SIDE_PX a side
 * (page_width 7680 at scale_factor 3): the browser fails to draw it or the picture cannot be
 * read, after the page's time is spent, so it is refused before. The sizes are the ones given,
 * else the device preset's, else the defaults.
 */
export function pictureSizeProblem(o: Readonly<Record<string, unknown>>): { param: string; note: string } | null {
  const device = typeof o.device === 'string' ? findDevice(o.device) : undefined;
  const scale = Number(o.scale_factor ?? device?.scale_factor ?? 1);
  for (const [name, side] of [
    ['page_width', o.page_width ?? device?.width ?? OPTION_DEFAULTS.page_width],
    ['page_height', o.page_height ?? device?.height ?? OPTION_DEFAULTS.page_height],
  ] as const) {
    const px = Number(side) * scale;
    if (px > MAX_PICTURE_SIDE_PX) {
      return {
        param: o.scale_factor !== undefined ? 'scale_factor' : name,
        note: `${name} ${side} at scale_factor ${scale} makes a picture ${Math.round(px)} px ${name === 'page_width' ? 'wide' : 'tall'}; the most is ${MAX_PICTURE_SIDE_PX} px: lower scale_factor or ${name}.`,
      };
    }
  }
  return null;
}

/**
 * Geolocation given in part: latitude and longitude name the position together (neither has a
 * default a page could be placed at), and accuracy is the accuracy of that position, so each is
 * refused without what it needs rather than accepted and ignored (or read as 0).
 */
export function geolocationProblem(o: Readonly<Record<string, unknown>>): { param: string; note: string } | null {
  const latitude = o.latitude !== undefined;
  const longitude = o.longitude !== undefined;
  if (latitude !== longitude) {
    const [given, missing] = latitude ? ['latitude', 'longitude'] : ['longitude', 'latitude'];
    return { param: missing, note: `${missing}: ${given} needs it; latitude and longitude give the emulated position together, so send both.` };
  }
  if (o.accuracy !== undefined && !latitude) {
    return { param: 'accuracy', note: 'accuracy: is the accuracy of an emulated position; send latitude and longitude with it, or leave it out.' };
  }
  return null;
}

/** The moments of a page's loading a capture can wait for (wait_until), as other screenshot APIs spell them. */
export const WAIT_UNTIL = ['load', 'domcontentloaded', 'networkidle'] as const;
/** navigation_timeout's range, ms: the page's time to reach wait_until before it is taken as drawn. */
export const MIN_NAVIGATION_TIMEOUT_MS = 1000;
export const MAX_NAVIGATION_TIMEOUT_MS = 30_000;
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

/** One of some words, as a bare `enum`: ajv answers "must be one of" for any other value, numbers too. */
const enumOf = <const T extends readonly string[]>(values: T) => Type.Unsafe<T[number]>({ enum: [...values] });
/** A string option that takes one of some words. */
export const textEnum = <const T extends readonly string[]>(values: T, options: JsonSchema = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
const text = (maxLength: number) => Type.String({ maxLength });
const pdfLength = () => patterned(PDF_LENGTH_PATTERN, PDF_LENGTH_RULE, { maxLength: 20 });
/** Most CSS selectors hide_selectors and remove_selectors take, each. */
export const MAX_SELECTORS = 50;
/** A list of CSS selectors (hide_selectors, remove_selectors); each is checked in the page before it loads. */
const selectorList = () => Type.Array(Type.String({ minLength: 1, maxLength: 1000 }), { minItems: 1, maxItems: MAX_SELECTORS });

/** headers or cookies: {key, value} items, each checked as the browser takes it (request-fields.ts, by the formats named). */
const keyValueList = <P extends TProperties>(kind: 'header' | 'cookie', extra: P) =>
  Type.Array(
    Type.Object(
      {
        key: Type.String({ minLength: 1, maxLength: 256, format: `${kind}-name` }),
        value: Type.String({ maxLength: 8192, format: `${kind}-value` }),
        ...extra,
      },
      { additionalProperties: false },
    ),
    { maxItems: 100 },
  );

/**
 * One `multi_step_actions` step as the JSON Schema checks it (the outer shape); the rules
 * per step type are in actions-schema.ts. Its static type is ActionStep.
 */
export const ACTION_STEP_SCHEMA = Type.Object({
  type: enumOf(ACTION_TYPES),
  selector: Type.Optional(Type.String({ minLength: 1, maxLength: 1000 })),
  value: Type.Optional(Type.Unsafe<string | number | boolean>({ type: ['string', 'number', 'boolean'] })),
  send_to: Type.Optional(enumOf(CHANGE_TARGETS)),
  url: Type.Optional(Type.String({ maxLength: 4096 })),
  /** A change step's own id (the MCP server's schema): kept with the step and shown in its alerts' `config`. */
  custom_id: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  /** A change step's mode: `visual` compares the capture's picture; its options follow (ranges in actions-schema.ts). */
  mode: Type.Optional(enumOf(CHANGE_MODES)),
  threshold: Type.Optional(Type.Number()),
  tolerance: Type.Optional(Type.Number()),
  repeat: Type.Optional(Type.Integer()),
  ignore_selectors: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 1000 }), { maxItems: MAX_SELECTORS })),
});

export const OPTION_TABLE = [
  option({
    name: 'url',
    schema: Type.String({ minLength: 1, maxLength: 4096, format: 'http-url' }),
    required: true,
    scope: 'capture',
    affectsCapture: true,
    description: 'Page to capture (http or https).',
  }),
  option({
    name: 'time_zone',
    schema: Type.String({ maxLength: 64, format: 'time-zone' }),
    scope: 'capture',
    affectsCapture: true,
    description: 'ICU time zone id such as Europe/Paris.',
  }),
  option({
    name: 'selectors',
    schema: text(1000),
    scope: 'capture',
    affectsCapture: true,
    description: 'One CSS selector; captures only that element (with html_only, returns its outerHTML).',
  }),
  option({
    name: 'hover_on_selected',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description: 'Requires selectors; shows the :hover styles of that element.',
  }),
  option({
    name: 'real_location',
    schema: text(100),
    scope: 'capture',
    affectsCapture: true,
    aliases: ['proxy_server'],
    description: 'A value from /real_locations; the capture goes through the proxy network. Also accepted as proxy_server.',
  }),
  option({
    name: 'custom_proxy_id',
    schema: Type.Integer({ minimum: 1 }),
    scope: 'capture',
    affectsCapture: true,
    description: 'Id of a stored proxy (Bring Your Own Proxy addon). Replaces real_location.',
  }),
  option({
    name: 'store_to',
    schema: Type.String({ minLength: 1, maxLength: 64 }),
    scope: 'capture',
    // A capture reused within ttl was uploaded to the same destination under the same template.
    affectsCapture: true,
    description:
      'Name of a storage destination of the account (POST /storage_destinations: an S3-compatible or GCS bucket); the capture is also uploaded ' +
      "there and the record's stored_to says where (bucket, key, location, etag). An upload that fails fails the capture (storage_upload_failed, not charged).",
  }),
  option({
    name: 'store_key',
    schema: Type.String({ minLength: 1, maxLength: MAX_KEY_TEMPLATE, format: 'object-key-template' }),
    scope: 'capture',
    affectsCapture: true,
    description: `With store_to: the object key template; placeholders ${placeholderList()}. Default ${DEFAULT_KEY_TEMPLATE}.`,
  }),
  option({
    name: 'wait',
    schema: Type.Integer({ minimum: 0, maximum: MAX_WAIT_MS }),
    scope: 'capture',
    affectsCapture: true,
    default: 1500,
    description: 'Milliseconds to wait before the capture.',
  }),
  option({ name: 'wait_for', schema: text(1000), scope: 'capture', affectsCapture: true, description: 'CSS selector that must appear before the capture.' }),
  option({
    name: 'wait_until',
    schema: textEnum(WAIT_UNTIL),
    scope: 'capture',
    affectsCapture: true,
    default: 'load',
    description:
      "The moment of the page's loading the capture waits for: load (the load event), domcontentloaded (the document parsed) or networkidle (the load " +
      'event, then no request for 500 ms). Bounded by navigation_timeout.',
  }),
  option({
    name: 'navigation_timeout',
    schema: Type.Integer({ minimum: MIN_NAVIGATION_TIMEOUT_MS, maximum: MAX_NAVIGATION_TIMEOUT_MS }),
    scope: 'capture',
    affectsCapture: true,
    zeroIsUnset: true,
    default: 10_000,
    description:
      'Milliseconds the page has to reach wait_until. A page that has drawn something by then is captured as it is (the JSON record says ' +
      'load_finished: false); one that has drawn nothing, or whose server has not answered, fails with page_load_failed.',
  }),
  option({
    name: 'fail_on_status',
    schema: Type.String({ minLength: 1, maxLength: MAX_STATUS_LIST, format: 'status-codes' }),
    scope: 'capture',
    affectsCapture: true,
    description:
      "Fails the capture (422 capture_rule_failed, nothing charged) when the page's main document answers one of these HTTP statuses: codes, " +
      'ranges and classes separated by commas, e.g. 404,500-599 or 4xx,5xx (Urlbox: fail_on_4xx, fail_on_5xx).',
  }),
  option({
    name: 'fail_if_selector_missing',
    schema: Type.String({ minLength: 1, maxLength: 1000 }),
    scope: 'capture',
    affectsCapture: true,
    description: 'Fails the capture (422 capture_rule_failed, nothing charged) when no element matches this CSS selector once the page is loaded.',
  }),
  option({
    name: 'fail_if_selector_present',
    schema: Type.String({ minLength: 1, maxLength: 1000 }),
    scope: 'capture',
    affectsCapture: true,
    description: 'Fails the capture (422 capture_rule_failed, nothing charged) when an element matches this CSS selector once the page is loaded (a captcha).',
  }),
  option({
    name: 'fail_if_content_contains',
    schema: Type.String({ minLength: 1, maxLength: 1000 }),
    scope: 'capture',
    affectsCapture: true,
    description:
      "Fails the capture (422 capture_rule_failed, nothing charged) when the page's visible text (document.body.innerText) contains this text, " +
      'ignoring case (as ScreenshotOne).',
  }),
  option({
    name: 'fail_if_content_missing',
    schema: Type.String({ minLength: 1, maxLength: 1000 }),
    scope: 'capture',
    affectsCapture: true,
    description:
      "Fails the capture (422 capture_rule_failed, nothing charged) when the page's visible text (document.body.innerText) does not contain this " +
      'text, ignoring case (as ScreenshotOne).',
  }),
  option({
    name: 'incremental_scroll',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description: 'Scrolls slowly to trigger lazy loading (up to 10 seconds).',
  }),
  option({ name: 'fullpage', schema: Type.Boolean(), scope: 'capture', affectsCapture: true, default: false, description: 'Captures the whole page.' }),
  option({
    name: 'fullpage_advanced',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description: 'Full page for lazy-loaded pages: scrolls content into view first; slower than fullpage.',
  }),
  option({
    name: 'page_width',
    schema: Type.Integer({ minimum: 100, maximum: 7680 }),
    scope: 'capture',
    affectsCapture: true,
    zeroIsUnset: true,
    default: 1920,
    description: 'Viewport width in CSS pixels.',
  }),
  option({
    name: 'page_height',
    schema: Type.Integer({ minimum: 100, maximum: 7680 }),
    scope: 'capture',
    affectsCapture: true,
    zeroIsUnset: true,
    default: 1000,
    description: 'Viewport height in CSS pixels.',
  }),
  option({ name: 'image_format', schema: textEnum(IMAGE_FORMATS), scope: 'capture', affectsCapture: true, default: 'jpeg', description: 'Image format.' }),
  option({
    name: 'placeholder_url',
    schema: Type.String({ maxLength: 4096, format: 'http-url' }),
    scope: 'capture',
    affectsCapture: false,
    description: 'Image shown at the embed URL until the first capture exists.',
  }),
  option({
    name: 'quality',
    schema: Type.Integer({ minimum: 1, maximum: 100 }),
    scope: 'capture',
    affectsCapture: true,
    zeroIsUnset: true,
    default: 100,
    description: 'JPEG quality, 1 (lowest) to 100 (highest); ignored for png and webp.',
  }),
  option({
    name: 'optimize_for_speed',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: true,
    description:
      'PNG only: encode for speed (about a third of the CPU) at the cost of a larger file (1.1x to 2.2x on the bench pages); false gives the smallest PNG. JPEG and WebP encode the same either way, so it is refused with them.',
  }),
  option({
    name: 'scale_factor',
    schema: Type.Number({ minimum: 0.5, maximum: 4 }),
    scope: 'capture',
    affectsCapture: true,
    default: 1,
    description: 'Device scale factor; 2 gives a retina image.',
  }),
  option({
    name: 'pdf_paper_format',
    schema: textEnum(PDF_PAPER_FORMATS),
    scope: 'capture',
    affectsCapture: true,
    description:
      'image_format=pdf: prints the page on sheets of this paper, the whole document, lazy content loaded first. Without it (or ' +
      'pdf_paper_width and pdf_paper_height) a PDF is printed at the viewport width.',
  }),
  option({
    name: 'pdf_paper_width',
    schema: pdfLength(),
    scope: 'capture',
    affectsCapture: true,
    description: 'image_format=pdf: paper width, with pdf_paper_height (such as 8.5in, 210mm); 1in to 200in.',
  }),
  option({
    name: 'pdf_paper_height',
    schema: pdfLength(),
    scope: 'capture',
    affectsCapture: true,
    description: 'image_format=pdf: paper height, with pdf_paper_width; 1in to 200in.',
  }),
  option({
    name: 'pdf_landscape',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description: 'image_format=pdf: prints the paper turned sideways.',
  }),
  option({
    name: 'pdf_margin',
    schema: pdfLength(),
    scope: 'capture',
    affectsCapture: true,
    description: 'image_format=pdf: the four margins (such as 1cm, 0.5in, 20px); 0 when not given.',
  }),
  option({
    name: 'pdf_margin_top',
    schema: pdfLength(),
    scope: 'capture',
    affectsCapture: true,
    description: 'image_format=pdf: the top margin, over pdf_margin.',
  }),
  option({
    name: 'pdf_margin_right',
    schema: pdfLength(),
    scope: 'capture',
    affectsCapture: true,
    description: 'image_format=pdf: the right margin, over pdf_margin.',
  }),
  option({
    name: 'pdf_margin_bottom',
    schema: pdfLength(),
    scope: 'capture',
    affectsCapture: true,
    description: 'image_format=pdf: the bottom margin, over pdf_margin.',
  }),
  option({
    name: 'pdf_margin_left',
    schema: pdfLength(),
    scope: 'capture',
    affectsCapture: true,
    description: 'image_format=pdf: the left margin, over pdf_margin.',
  }),
  option({
    name: 'pdf_scale',
    schema: Type.Number({ minimum: 0.1, maximum: 2 }),
    scope: 'capture',
    affectsCapture: true,
    default: 1,
    description: 'image_format=pdf: scale of the page on the paper, 0.1 to 2.',
  }),
  option({
    name: 'pdf_print_background',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: true,
    description: 'image_format=pdf: prints background colours and images; false prints them as a printer would by default (left out).',
  }),
  option({
    name: 'pdf_page_ranges',
    schema: patterned(PDF_PAGE_RANGES_PATTERN, PDF_PAGE_RANGES_RULE, { maxLength: 200 }),
    scope: 'capture',
    affectsCapture: true,
    description:
      "image_format=pdf: the pages to keep, such as 1-3,5 (numbered from 1); a range may run past the document's last page (2-999: from 2 on), a page or range starting past it is refused.",
  }),
  option({
    name: 'pdf_header_template',
    schema: text(20_000),
    scope: 'capture',
    affectsCapture: true,
    description:
      'image_format=pdf: HTML printed at the top of every page, in the top margin; elements of class date, title, url, pageNumber and ' +
      'totalPages are filled in. Give the margin room for it.',
  }),
  option({
    name: 'pdf_footer_template',
    schema: text(20_000),
    scope: 'capture',
    affectsCapture: true,
    description: 'image_format=pdf: HTML printed at the bottom of every page, as pdf_header_template.',
  }),
  option({ name: 'css_inject', schema: text(100_000), scope: 'capture', affectsCapture: true, description: 'CSS injected into the page.' }),
  option({ name: 'js_inject', schema: text(100_000), scope: 'capture', affectsCapture: true, description: 'JavaScript injected into the page.' }),
  option({
    name: 'analyze_image_with_ai',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description: 'Enables AI analysis of the capture.',
  }),
  option({
    name: 'ai_prompt',
    schema: text(MAX_AI_PROMPT),
    scope: 'capture',
    affectsCapture: true,
    description: 'Prompt for the analysis; requires analyze_image_with_ai=true. Ignored in structured mode.',
  }),
  option({
    name: 'ai_prompt_mode',
    schema: textEnum(['simple', 'structured']),
    scope: 'capture',
    affectsCapture: true,
    default: 'simple',
    description: 'simple: free text; structured: an object matching ai_structured_fields.',
  }),
  option({
    name: 'ai_structured_instructions',
    schema: text(5000),
    scope: 'capture',
    affectsCapture: true,
    description: 'Optional context for structured mode.',
  }),
  option({
    name: 'ai_structured_fields',
    scope: 'capture',
    affectsCapture: true,
    errorCode: 'invalid_ai_structured_fields',
    checkedAfterGates: true,
    description: 'JSON array of structured field definitions (a JSON string on GET and forms).',
    schema: Type.Array(
      Type.Object(
        {
          name: patterned('^[A-Za-z][A-Za-z0-9_]*$', FIELD_NAME_RULE, { maxLength: 64 }),
          type: enumOf(['string', 'number', 'boolean', 'enum', 'multi']),
          description: Type.Optional(Type.String({ maxLength: 1000 })),
          options: Type.Optional(Type.Array(Type.String({ maxLength: 200 }), { minItems: 1, maxItems: MAX_FIELD_OPTIONS })),
        },
        {
          additionalProperties: false,
          if: { properties: { type: { enum: ['enum', 'multi'] } } },
          // biome-ignore lint/suspicious/noThenProperty: a JSON Schema keyword, not a thenable
          then: { required: ['options'] },
        },
      ),
      { maxItems: MAX_STRUCTURED_FIELDS },
    ),
  }),
  option({
    name: 'ai_provider',
    schema: textEnum(AI_PROVIDERS),
    scope: 'capture',
    affectsCapture: true,
    default: 'service',
    errorCode: 'ai_provider_unsupported',
    description: 'service (AI credits), or anthropic, openai, openrouter with your own key.',
  }),
  option({ name: 'ai_model', schema: text(200), scope: 'capture', affectsCapture: true, description: 'Model id for an own provider.' }),
  option({
    name: 'headers',
    scope: 'capture',
    affectsCapture: true,
    description: 'Extra HTTP headers: JSON array of {"key","value"} (or a {"name": "value"} map); a JSON string on GET and forms.',
    schema: keyValueList('header', {}),
  }),
  option({
    name: 'cookies',
    scope: 'capture',
    affectsCapture: true,
    description:
      'Cookies: JSON array of {"key","value"} with optional domain, path, secure, httpOnly (or a {"name": "value"} map); a JSON string on GET and forms.',
    schema: keyValueList('cookie', {
      domain: Type.Optional(Type.String({ maxLength: 255, format: 'cookie-domain' })),
      path: Type.Optional(Type.String({ maxLength: 1024, format: 'cookie-path' })),
      secure: Type.Optional(Type.Boolean()),
      httpOnly: Type.Optional(Type.Boolean()),
    }),
  }),
  // Sent as headers: a line break or another control character is refused as a header's value is (the browser refuses it).
  option({
    name: 'accept_language',
    schema: Type.String({ maxLength: 500, format: 'header-value' }),
    scope: 'capture',
    affectsCapture: true,
    description: 'Accept-Language the browser sends.',
  }),
  option({
    name: 'user_agent',
    schema: Type.String({ maxLength: 1000, format: 'header-value' }),
    scope: 'capture',
    affectsCapture: true,
    description: 'User agent string.',
  }),
  option({
    name: 'device',
    schema: Type.String({ maxLength: 100, format: 'device' }),
    scope: 'capture',
    affectsCapture: true,
    description:
      'A device preset from GET /devices (such as "iPhone 15 Pro" or "Pixel 7"; any case): its viewport, scale factor, user agent, client hints, ' +
      'touch and mobile emulation together. page_width, page_height, scale_factor and user_agent given too override the preset.',
  }),
  option({
    name: 'dark_mode',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description: 'Emulates prefers-color-scheme: dark, so pages with a dark theme show it.',
  }),
  option({
    name: 'reduced_motion',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description: 'Emulates prefers-reduced-motion: reduce, so pages that honour it stop their animations.',
  }),
  option({
    name: 'media_type',
    schema: textEnum(['screen', 'print']),
    scope: 'capture',
    affectsCapture: true,
    description: "CSS media type the page is rendered for: screen or print. Unset: the browser's own (screen; print styles for PDF output).",
  }),
  option({
    name: 'latitude',
    schema: Type.Number({ minimum: -90, maximum: 90 }),
    scope: 'capture',
    affectsCapture: true,
    description: 'Geolocation latitude the page is told; with longitude (each needs the other).',
  }),
  option({
    name: 'longitude',
    schema: Type.Number({ minimum: -180, maximum: 180 }),
    scope: 'capture',
    affectsCapture: true,
    description: 'Geolocation longitude the page is told; with latitude (each needs the other).',
  }),
  option({
    name: 'accuracy',
    schema: Type.Number({ minimum: 0, maximum: 1_000_000 }),
    scope: 'capture',
    affectsCapture: true,
    description: 'Accuracy in metres of the emulated position (default 100); needs latitude and longitude.',
  }),
  option({ name: 'no_ads', schema: Type.Boolean(), scope: 'capture', affectsCapture: true, default: false, description: 'Blocks ads.' }),
  option({ name: 'no_tracking', schema: Type.Boolean(), scope: 'capture', affectsCapture: true, default: false, description: 'Blocks tracking scripts.' }),
  option({
    name: 'no_cookie_banners',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description: 'Hides cookie consent banners.',
  }),
  option({
    name: 'hide_selectors',
    schema: selectorList(),
    repeatable: true,
    scope: 'capture',
    affectsCapture: true,
    aliases: ['hide_selector', 'hide'],
    description:
      'CSS selectors of elements to hide (visibility: hidden: their area shows what is behind, the layout stays): a JSON array, or one selector ' +
      '(a selector list such as ".a, .b" is one selector), or the parameter repeated. Also accepted as hide_selector and hide.',
  }),
  option({
    name: 'remove_selectors',
    schema: selectorList(),
    repeatable: true,
    scope: 'capture',
    affectsCapture: true,
    aliases: ['remove'],
    description:
      'CSS selectors of elements to remove (display: none: the layout closes up behind them); the same forms as hide_selectors. Also accepted as remove.',
  }),
  option({
    name: 'block_chats',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description:
      'Blocks the scripts of the common chat widgets (Intercom, Drift, Crisp, Zendesk, HubSpot, Tawk.to, LiveChat, Tidio, Olark…) and hides their bubbles.',
  }),
  option({
    name: 'block_overlays',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description:
      "Removes what covers the page (a fixed or sticky element over 30% of the viewport, on top at its centre, over the page's content, with the " +
      "page's scrolling locked or a backdrop: newsletter and sign-up modals) and restores scrolling; fixed headers and sticky navigation stay.",
  }),
  option({
    name: 'press_escape',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description: 'Presses the Escape key once before the capture (many modals close on it).',
  }),
  option({ name: 'disable_js', schema: Type.Boolean(), scope: 'capture', affectsCapture: true, default: false, description: 'Disables all JavaScript.' }),
  option({
    name: 'disable_third_party_js',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description: "Discards scripts from outside the page's own registrable domain.",
  }),
  option({ name: 'custom_title', schema: text(500), scope: 'capture', affectsCapture: false, description: 'Title of the configuration.' }),
  option({ name: 'custom_description', schema: text(5000), scope: 'capture', affectsCapture: false, description: 'Description of the configuration.' }),
  option({
    name: 'multi_step_actions',
    scope: 'capture',
    affectsCapture: true,
    description: 'Ordered actions run before the capture (a JSON string on GET and forms).',
    schema: Type.Array(ACTION_STEP_SCHEMA, { maxItems: MAX_ACTIONS }),
  }),
  option({
    name: 'thumb_width',
    schema: Type.Integer({ minimum: 16, maximum: 2000 }),
    scope: 'capture',
    affectsCapture: true,
    zeroIsUnset: true,
    default: 400,
    description: 'Thumbnail width in pixels.',
  }),
  option({
    name: 'thumb_height',
    schema: Type.Integer({ minimum: 16, maximum: 2000 }),
    scope: 'capture',
    affectsCapture: true,
    zeroIsUnset: true,
    description: 'Thumbnail height in pixels (default keeps the aspect ratio).',
  }),
  option({
    name: 'markdown',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description:
      "Also saves the page's main content (what a reader view keeps: no navigation, sidebars or footer) as Markdown, from the same page load as the " +
      'image, in the same credit; the record links it as markdown_url.',
  }),
  option({
    name: 'metadata',
    schema: Type.Boolean(),
    scope: 'capture',
    affectsCapture: true,
    default: false,
    description:
      "Also saves the page's metadata as JSON (title, description, language, canonical URL, Open Graph and Twitter tags, icons, the final status, " +
      'response headers and redirect chain of its main document, the web fonts it loaded), from the same page load, in the same credit; the record ' +
      'links it as metadata_url (and json=true answers it as metadata).',
  }),
  option({
    name: 'html_only',
    schema: Type.Boolean(),
    scope: 'snap',
    affectsCapture: true,
    aliases: ['html'],
    description: 'Returns the rendered HTML instead of an image (1 screenshot credit). Also accepted as html.',
  }),
  option({
    name: 'html_content',
    schema: Type.String({ minLength: 1, maxLength: MAX_HTML_CONTENT }),
    scope: 'html',
    affectsCapture: true,
    description:
      "The HTML document to render (/snap_html). Its sub-resources are fetched like any page's; relative URLs resolve against no site, so give absolute ones.",
  }),
  option({
    name: 'json',
    schema: Type.Boolean(),
    scope: 'snap',
    affectsCapture: false,
    description: 'Answers with the JSON screenshot record instead of the image.',
  }),
  option({
    name: 'ttl',
    schema: Type.Integer({ minimum: 0, maximum: 30 * 86_400 }),
    scope: 'snap',
    affectsCapture: false,
    default: 86_400,
    description: 'Seconds a saved capture with the same URL and options is reused without spending a credit; 0 always captures fresh.',
  }),
  option({
    name: 'scheduled_screenshot',
    schema: Type.Boolean(),
    scope: 'config',
    affectsCapture: false,
    description: 'true makes the configuration recurring.',
  }),
  option({
    name: 'scheduled_every',
    schema: Type.Integer({ minimum: 1, maximum: 100_000 }),
    scope: 'config',
    affectsCapture: false,
    description: 'Interval count, at least 1.',
  }),
  option({ name: 'scheduled_interval', schema: textEnum(SCHEDULE_INTERVALS), scope: 'config', affectsCapture: false, description: 'Interval unit.' }),
  option({
    name: 'webhook_url',
    schema: Type.String({ maxLength: 4096, format: 'http-url' }),
    scope: 'config',
    affectsCapture: false,
    description: 'Capture deliveries are POSTed here.',
  }),
] as const;

type Row = (typeof OPTION_TABLE)[number];
type Simplify<T> = { [K in keyof T]: T[K] } & {};
type RowsIn<S extends Scope> = Extract<Row, { scope: S }>;

/** Values after validation of the options accepted in the scopes S: what capture and scheduler receive. */
export type OptionValues<S extends Scope> = Simplify<
  { [R in RowsIn<S> as R extends { required: true } ? R['name'] : never]: Static<R['schema']> } & {
    [R in RowsIn<S> as R extends { required: true } ? never : R['name']]?: Static<R['schema']>;
  }
>;

export type ScreenshotOptions = OptionValues<'capture'>;
/** The options an analysis reads (any capture's, whatever its page). */
export type AnalysisOptions = Omit<ScreenshotOptions, 'url'>;
/** What a capture runs with: a snap's options, html_content included when /snap_html rendered a given document. */
export type SnapOptions = OptionValues<'capture' | 'snap' | 'html'>;
export type ConfigOptions = OptionValues<'capture' | 'config'>;

/** The options that have a default, with it. */
export type OptionDefaults = { readonly [R in Row as R extends { default: unknown } ? R['name'] : never]: Static<R['schema']> };

/** The table's rows as plain OptionSpecs, in table order, for code that walks them. */
const ROWS: readonly OptionSpec[] = OPTION_TABLE;

export const OPTIONS_BY_NAME: ReadonlyMap<string, OptionSpec> = new Map(ROWS.map((o) => [o.name, o]));

/** Every option's default, the one place consumers read them (validated values stay as given). */
export const OPTION_DEFAULTS = Object.freeze(Object.fromEntries(ROWS.filter((o) => o.default !== undefined).map((o) => [o.name, o.default]))) as OptionDefaults;

/** The JSON Schema of one option's value. */
export function optionSchema(o: OptionSpec): JsonSchema {
  const description = o.zeroIsUnset ? `${o.description} 0 means the default.` : o.description;
  return { ...o.schema, description, ...(o.default !== undefined ? { default: o.default } : {}) };
}

/** The parameters a query may repeat: the repeatable options' names and aliases (every other parameter has one value). */
export const REPEATABLE_PARAMS: ReadonlySet<string> = new Set(ROWS.filter((o) => o.repeatable).flatMap((o) => [o.name, ...(o.aliases ?? [])]));

/** Each alias (docs/clients.md) and the option it stands for. */
export const OPTION_ALIASES: ReadonlyMap<string, OptionSpec> = new Map(ROWS.flatMap((o) => (o.aliases ?? []).map((alias) => [alias, o] as const)));

/**
 * The address a /snap_html document is served at inside the capture's browser (never on the
 * network: the capture answers the request for it with html_content). A `.localhost` name
 * (RFC 6761) makes the document a secure context, as a site's page over https is (geolocation,
 * crypto.subtle and the other secure-only APIs work in it), while its http subresources are
 * no mixed content, as they would be from https; nothing on the network answers for it (the
 * egress policy refuses loopback, its other requests included).
 */
export const INLINE_DOCUMENT_URL = 'http://snap-html.localhost/';

/**
 * Features of a request that the billing gates decide on. Naming an own AI provider asks
 * for the own-AI feature even before analysis is switched on, so a configuration cannot be
 * stored with a feature its plan would refuse later.
 */
export function requestedFeatures(o: Partial<ScreenshotOptions>): { ownAi: boolean; ownProxy: boolean } {
  return {
    ownAi: o.ai_provider !== undefined && o.ai_provider !== 'service',
    ownProxy: o.custom_proxy_id !== undefined,
  };
}

/**
 * What a capture's store_to and custom_proxy_id point to when it is asked for (the proxy
 * service's identities of the destination and the proxy): a name or an id is not enough, as a
 * destination can be deleted and created again under its name for another bucket, and a proxy
 * changed in place for another host.
 */
export interface CaptureTargets {
  destination?: string;
  proxy?: string;
}

/** The options that make a capture what it is, by name (so the rows' order changes no key). */
const AFFECTS_CAPTURE = ROWS.filter((x) => x.affectsCapture)
  .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  .map((x) => ({ name: x.name, defaultText: JSON.stringify(x.default ?? null) }));

/**
 * Identity of a capture: the URL and every capture-affecting option whose value is not its
 * default (one given at its default is the same capture as one left out), by name, and (for
 * ttl reuse) what its store_to and custom_proxy_id point to. Equal keys mean interchangeable
 * captures (ttl reuse); equal keys without targets, the same snap configuration. An option
 * added later, at its default, changes no key (db/migrations/20261130230001_capture_keys_by_difference.ts
 * moved the keys stored before to this form).
 */
export function captureKey(o: SnapOptions, targets: CaptureTargets = {}): string {
  const values: unknown[] = [];
  for (const x of AFFECTS_CAPTURE) {
    const value = (o as Record<string, unknown>)[x.name];
    // Left out, or given at its default: the same capture.
    if (value !== undefined && value !== null && JSON.stringify(value) !== x.defaultText) values.push([x.name, value]);
  }
  // Appended only when named, so a capture with neither keeps the key it always had.
  if (targets.destination !== undefined) values.push(['store_to→', targets.destination]);
  if (targets.proxy !== undefined) values.push(['custom_proxy_id→', targets.proxy]);
  return crypto.createHash('sha256').update(JSON.stringify(values)).digest('hex');
}

/**
 * The schedule a configuration asks for, or null when it is not recurring. The schema
 * cannot say "interval required when scheduled", so the api (before it spends a credit)
 * and the scheduler (which stores the schedule) both ask here.
 */
/**
 * A new configuration naming scheduled_every or scheduled_interval without
 * scheduled_screenshot=true would be one-time with its schedule stored and never run: refused
 * (an option is never accepted and ignored). A PATCH is not refused so: the spec has a PATCH
 * without scheduled_screenshot=true make the configuration one-time, and the official Python
 * client's own example changes scheduled_every alone (docs/api.md, Configurations).
 */
export function refuseUnusedSchedule(o: Partial<ConfigOptions>): void {
  if (o.scheduled_screenshot === true) return;
  const named = (['scheduled_every', 'scheduled_interval'] as const).filter((name) => o[name] !== undefined);
  if (named.length) {
    throw serviceError(
      'invalid_parameter',
      `${named.join(' and ')} only take effect with scheduled_screenshot=true: add it to schedule the configuration, or leave ${named.length > 1 ? 'them' : 'it'} out for a one-time one.`,
      { param: named[0] },
    );
  }
}

export function scheduleOf(o: Partial<ConfigOptions>): { every: number; interval: (typeof SCHEDULE_INTERVALS)[number] } | null {
  if (o.scheduled_screenshot !== true) return null;
  if (!o.scheduled_interval) {
    throw serviceError('invalid_parameter', `scheduled_interval is required with scheduled_screenshot=true: one of ${SCHEDULE_INTERVALS.join(', ')}.`, {
      param: 'scheduled_interval',
    });
  }
  return { every: o.scheduled_every ?? 1, interval: o.scheduled_interval };
}
