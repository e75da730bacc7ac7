/**
 * The api's request shapes and their validation, with the api's one ajv instance (and the
 * formats the option table uses). A shape (ParamShape) is what a route declares as its
 * params: http.ts documents its JSON Schema and runs its `parse` before the handler, which
 * receives the typed values or never runs (a 400 whose note names the parameter and the
 * rule). The option shapes (snap, configurations) are generated from the option table, so
 * their values' types are the table's (SnapOptions, ConfigOptions).
 *
 * GET and form values arrive as text, so before ajv runs: booleans accept true/false/1/0/
 * yes/no/on/off, JSON-valued options are parsed from strings, and empty strings count as
 * absent. What the official clients send besides the spec's forms is read here too
 * (docs/clients.md): an option's aliases (proxy_server for real_location), 0 for "not set"
 * where the option table says so, and the other forms of headers, cookies and
 * multi_step_actions (client-shapes.ts). ajv then coerces numbers.
 */
import type { Static, TObject } from '@sinclair/typebox';
import type { ErrorObject } from 'ajv';
import { checkActions } from '../shared/actions-schema';
import { type ErrorCode, serviceError } from '../shared/errors';
import { newAjv, noteFor } from '../shared/param-notes';
import {
  type ConfigOptions,
  OPTION_ALIASES,
  OPTION_DEFAULTS,
  OPTION_TABLE,
  OPTIONS_BY_NAME,
  type OptionSpec,
  type Scope,
  type SnapOptions,
  optionSchema,
  encoderOptionProblem,
  geolocationProblem,
  PATTERN_RULE,
  pdfOptionsProblem,
  pictureSizeProblem,
} from '../shared/screenshot-options';
import { invalidSelectorNote, SELECTOR_OPTIONS, selectorProblem } from '../shared/css-selectors';
import { actionList, keyValueList } from './client-shapes';

type JsonSchema = Record<string, unknown>;
export type RawParams = Record<string, unknown>;

/**
 * A route's declared parameters: the JSON Schema /openapi.json shows, and the validation
 * that turns the merged raw parameters into P (or throws the error the caller sees).
 */
export interface ParamShape<P> {
  readonly schema: JsonSchema;
  parse(raw: RawParams): P;
}

/**
 * A request shape: the option scopes it accepts, options it leaves out, and (when not the
 * table's) the options it requires.
 */
interface ShapeSpec {
  scopes: readonly Scope[];
  omit?: readonly string[];
  required?: readonly string[];
}

/** Request shapes. */
export const SHAPES = {
  snap: { scopes: ['capture', 'snap'] },
  /** /snap_html: a snap of the document given in html_content, so no url. */
  snapHtml: { scopes: ['capture', 'snap', 'html'], omit: ['url'], required: ['html_content'] },
  configCreate: { scopes: ['capture', 'config'] },
  /** PATCH: url may be left out (the stored one is kept). */
  configUpdate: { scopes: ['capture', 'config'], required: [] },
} as const satisfies Record<string, ShapeSpec>;
export type ShapeName = keyof typeof SHAPES;

/** The options a PATCH may carry: any configuration option, url included or not. */
export type ConfigChanges = Omit<ConfigOptions, 'url'> & { url?: string };
/** The options /snap_html takes: a snap's, with the document instead of a url. */
export type SnapHtmlOptions = Omit<SnapOptions, 'url' | 'html_content'> & { html_content: string };

/** The validated values of each request shape. */
export interface ShapeTypes {
  snap: SnapOptions;
  snapHtml: SnapHtmlOptions;
  configCreate: ConfigOptions;
  configUpdate: ConfigChanges;
}
export type ShapeValues<S extends ShapeName> = ShapeTypes[S];

/** Secrets that must never be accepted on capture requests: silently discarded (spec, Capture rules). */
const DISCARDED_SECRETS = ['api_key', 'password', 'proxy_password', 'proxy_username'];

export function shapeOptions(shape: ShapeName): OptionSpec[] {
  const spec: ShapeSpec = SHAPES[shape];
  return OPTION_TABLE.filter((o) => spec.scopes.includes(o.scope) && !spec.omit?.includes(o.name));
}

export function shapeSchema(shape: ShapeName): JsonSchema {
  const options = shapeOptions(shape);
  const spec: ShapeSpec = SHAPES[shape];
  return {
    type: 'object',
    additionalProperties: false,
    required: spec.required ? [...spec.required] : options.filter((o) => o.required).map((o) => o.name),
    properties: Object.fromEntries(options.map((o) => [o.name, optionSchema(o)])),
  };
}

/** The api's one ajv instance: every request shape is compiled by it. */
export const ajv = newAjv();
export { noteFor };

const TRUE = /^(true|1|yes|on)$/i;
const FALSE = /^(false|0|no|off)$/i;

/** A value parsed from its JSON text (JSON-valued options arrive as text on GET and forms). */
function parsedJson(spec: OptionSpec, value: unknown): unknown {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch (err) {
    throw serviceError(
      spec.errorCode ?? 'invalid_parameter',
      `${spec.name}: must be valid JSON (a JSON array, sent as a JSON string on GET and forms); parsing failed: ${(err as Error).message}.`,
    );
  }
}

/**
 * hide_selectors, remove_selectors: a JSON array of selectors, or one selector as text (`.a, .b` is
 * one selector list, never split at its commas; `[data-popup]` is a selector, not JSON).
 */
function selectorList(value: unknown): unknown {
  if (typeof value !== 'string') return value;
  if (value.trimStart().startsWith('[')) {
    try {
      const list: unknown = JSON.parse(value);
      if (Array.isArray(list)) return list;
    } catch {
      // An attribute selector.
    }
  }
  return [value];
}

/** One option's value, read from the forms it may arrive in. */
function readValue(spec: OptionSpec, value: unknown): unknown {
  if (spec.kind === 'boolean' && typeof value === 'string') return TRUE.test(value) ? true : FALSE.test(value) ? false : value;
  if (spec.name === 'headers' || spec.name === 'cookies') return keyValueList(spec.name, value);
  if (spec.name === 'multi_step_actions') return actionList(parsedJson(spec, value));
  if (spec.name === 'hide_selectors' || spec.name === 'remove_selectors') return selectorList(value);
  if (spec.kind === 'json') return parsedJson(spec, value);
  return value;
}

const isZero = (value: unknown) => value === 0 || (typeof value === 'string' && /^\s*0+\s*$/.test(value));

/**
 * Text-to-value normalisation that ajv does not do (see the header). `accepted`: the
 * options of the request's shape (an alias is read as its option only where that is taken).
 */
function normalise(raw: RawParams, accepted: ReadonlySet<string> = new Set()): RawParams {
  const out: RawParams = {};
  /** The name each option arrived under, for a clash between an option and its alias. */
  const sentAs = new Map<string, string>();
  for (const [sent, value] of Object.entries(raw)) {
    if (DISCARDED_SECRETS.includes(sent)) continue;
    if (value === '' || value === null || value === undefined) continue;
    const alias = OPTION_ALIASES.get(sent);
    const spec = OPTIONS_BY_NAME.get(sent) ?? (alias && accepted.has(alias.name) ? alias : undefined);
    if (!spec) {
      out[sent] = value;
      continue;
    }
    if (spec.zeroIsUnset && isZero(value)) continue;
    const read = readValue(spec, value);
    const other = sentAs.get(spec.name);
    if (other !== undefined && JSON.stringify(out[spec.name]) !== JSON.stringify(read)) {
      throw serviceError('invalid_parameter', `${other} and ${sent} are the same option and were given different values; send one of them.`, {
        param: spec.name,
      });
    }
    sentAs.set(spec.name, sent);
    out[spec.name] = read;
  }
  return out;
}

/**
 * Cross-option rules that a JSON Schema cannot say clearly, and the CSS selectors' syntax, on
 * the options a capture will run with: a snap's, a new configuration's, or a configuration's
 * after a PATCH (its stored options with the changes over them: checkConfigChanges), so what
 * would fail every capture is refused before anything is stored.
 */
export function checkRules(values: RawParams, changed?: ReadonlySet<string>): void {
  const format = (values.image_format ?? OPTION_DEFAULTS.image_format) as string;
  for (const problem of [pdfOptionsProblem(values, format), encoderOptionProblem(values, format), geolocationProblem(values)]) {
    if (problem) throw serviceError('invalid_parameter', problem.note, { param: problem.param });
  }
  // Rules a configuration stored before them may break: a PATCH is held to them only when it
  // changes an option they read (a PATCH removes no option, so one that does not could never pass).
  const touches = (...names: string[]) => !changed || names.some((name) => changed.has(name));
  const size = touches('page_width', 'page_height', 'scale_factor', 'device') ? pictureSizeProblem(values) : null;
  if (size) throw serviceError('invalid_parameter', size.note, { param: size.param });
  if (format === 'pdf' && values.selectors !== undefined && touches('image_format', 'selectors')) {
    throw serviceError(
      'invalid_parameter',
      'selectors: a PDF prints the page, not one element; send image_format png, jpeg or webp for an element, or leave selectors out.',
      { param: 'selectors' },
    );
  }
  if (values.disable_js === true && values.js_inject !== undefined && touches('disable_js', 'js_inject')) {
    throw serviceError('invalid_parameter', "js_inject: runs in the page, and disable_js=true turns the page's scripts off; send one of the two.", {
      param: 'js_inject',
    });
  }
  if (values.hover_on_selected === true && values.selectors === undefined) {
    throw serviceError('invalid_parameter', 'hover_on_selected: requires selectors (the element to hover).', { param: 'hover_on_selected' });
  }
  if (values.store_key !== undefined && values.store_to === undefined) {
    throw serviceError('invalid_parameter', 'store_key: requires store_to (the storage destination the key is in).', { param: 'store_key' });
  }
  if (values.analyze_image_with_ai === true && values.html_only === true) {
    throw serviceError(
      'invalid_parameter',
      'analyze_image_with_ai: an analysis reads the captured image, and html_only=true captures none; leave out one of the two.',
      { param: 'analyze_image_with_ai' },
    );
  }
  for (const name of SELECTOR_OPTIONS) {
    const given = values[name];
    for (const selector of Array.isArray(given) ? given : given === undefined ? [] : [given]) {
      const reason = typeof selector === 'string' ? selectorProblem(selector) : null;
      if (reason) throw serviceError('invalid_parameter', invalidSelectorNote(name, selector as string, reason), { param: name });
    }
  }
  if (Array.isArray(values.multi_step_actions)) checkActions(values.multi_step_actions, values);
}

/**
 * A PATCH's changes, checked as the configuration will run with them: the stored options with
 * the changes over them (as the scheduler merges them). Throws invalid_parameter naming the option.
 */
export function checkConfigChanges(stored: Readonly<Record<string, unknown>>, changes: ConfigChanges): void {
  checkRules({ ...stored, ...changes }, new Set(Object.keys(changes)));
}

/** A number as text: decimal, with an optional sign, fraction and exponent (not 0x10, 0b1 or 0o7, which JavaScript's Number reads too). */
const DECIMAL = /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/;

/** What each scalar JSON Schema type is called in a note. */
const KIND_WORDS: Readonly<Record<string, string>> = { integer: 'a whole number', number: 'a number', string: 'text' };

/**
 * What ajv would take, coercing, though the caller meant something else, or answer second,
 * among the top-level parameters (values inside lists and objects are the option's own checks'):
 * - an unknown parameter, named before a missing one (ajv checks `required` first);
 * - a JSON `true`/`false` for a number or text (ajv would store 1 or "true");
 * - a whole number beyond 2^53 (JSON's doubles hold it rounded: 9007199254740993 is read
 *   as ...992);
 * - text for a number that reads as Infinity ("Infinity", "1e309"), which ajv coerces and
 *   then checks against no minimum or maximum, or that is not decimal ("0x10", read as 16).
 * The second and third come only from JSON bodies (text is read as a boolean only for a boolean
 * option); the last only from text. The unknown parameter comes back as ajv's error, so its note
 * is the one ajv's would be; the others as a note.
 */
export function looseValue(values: RawParams, properties: Record<string, unknown>, closed: boolean): ErrorObject | { param: string; note: string } | null {
  for (const [name, value] of Object.entries(values)) {
    const schema = properties[name] as { type?: unknown } | undefined;
    if (!schema) {
      if (!closed) continue;
      return { keyword: 'additionalProperties', instancePath: '', schemaPath: '#/additionalProperties', params: { additionalProperty: name } };
    }
    const words = typeof schema.type === 'string' ? KIND_WORDS[schema.type] : undefined;
    if (words === undefined) continue;
    if (typeof value === 'boolean') return { param: name, note: `${name}: must be ${words}, got ${value}.` };
    // ajv coerces "Infinity" and "1e309" to Infinity and then skips its minimum and maximum, and
    // reads "0x10" as 16 (JavaScript's Number): a number as text is decimal here.
    if (typeof value === 'string' && schema.type !== 'string') {
      const n = Number(value.trim());
      if (!Number.isNaN(n) && !Number.isFinite(n)) return { param: name, note: `${name}: must be a finite number, got "${value.slice(0, 40)}".` };
      if (!Number.isNaN(n) && !DECIMAL.test(value)) {
        return { param: name, note: `${name}: must be ${words} written in decimal digits, got "${value.slice(0, 40)}".` };
      }
    }
    if (typeof value === 'number' && Number.isInteger(value) && !Number.isSafeInteger(value)) {
      return {
        param: name,
        note: `${name}: ${value} is beyond the whole numbers JSON holds exactly (2^53); send a smaller one${schema.type === 'string' ? ', or send it as text' : ''}.`,
      };
    }
  }
  return null;
}

/** The shape of the options a request kind accepts; its values are the table's types. */
/** Where each shape's options are sent, for a note naming another shape's option. */
const SHAPE_ENDPOINTS: Record<ShapeName, string> = {
  snap: '/snap',
  snapHtml: '/snap_html',
  configCreate: 'POST /screenshot_configs',
  configUpdate: 'PATCH /screenshot_configs/:id',
};

/** The note for an option of other endpoints sent to this one: which take it, rather than "unknown". */
function elsewhereNote(shape: ShapeName, name: string, accepted: string[]): string | null {
  const taking = (Object.keys(SHAPES) as ShapeName[]).filter((other) => other !== shape && shapeOptions(other).some((o) => o.name === name));
  if (!taking.length) return null;
  return `${name} is not taken by ${SHAPE_ENDPOINTS[shape]}: it is an option of ${taking.map((t) => SHAPE_ENDPOINTS[t]).join(' and ')}. Accepted parameters: ${accepted.join(', ')}.`;
}

function optionParams<S extends ShapeName>(shape: S): ParamShape<ShapeValues<S>> {
  const schema = shapeSchema(shape);
  // Options checked after the gates (structured field definitions) pass the shape as any JSON.
  const properties = schema.properties as Record<string, JsonSchema>;
  const deferred = shapeOptions(shape).filter((o) => o.checkedAfterGates);
  const parseSchema = { ...schema, properties: { ...properties, ...Object.fromEntries(deferred.map((o) => [o.name, {}])) } };
  const validate = ajv.compile<ShapeValues<S>>(parseSchema);
  const accepted = shapeOptions(shape).map((o) => o.name);
  const acceptedSet = new Set(accepted);
  return {
    schema,
    parse(raw) {
      const values = normalise(raw, acceptedSet);
      const loose = looseValue(values, properties, schema.additionalProperties === false);
      if (loose && 'note' in loose) throw serviceError(OPTIONS_BY_NAME.get(loose.param)?.errorCode ?? 'invalid_parameter', loose.note, { param: loose.param });
      if (loose || !validate(values)) {
        const error = loose ?? ((validate.errors ?? [])[0] as ErrorObject);
        const { param, note } = noteFor(error, values, accepted);
        const elsewhere = error.keyword === 'additionalProperties' && !error.instancePath ? elsewhereNote(shape, param, accepted) : null;
        if (elsewhere) throw serviceError('invalid_parameter', elsewhere, { param });
        const code = OPTIONS_BY_NAME.get(param)?.errorCode ?? 'invalid_parameter';
        throw serviceError(code, note, { param });
      }
      // A PATCH's rules are checked on the configuration it makes (checkConfigChanges, once the stored options are read).
      if (shape !== 'configUpdate') checkRules(values);
      return values;
    },
  };
}

export const SNAP_PARAMS = optionParams('snap');
export const SNAP_HTML_PARAMS = optionParams('snapHtml');
export const CONFIG_CREATE_PARAMS = optionParams('configCreate');
export const CONFIG_UPDATE_PARAMS = optionParams('configUpdate');
const OPTION_PARAMS: { [S in ShapeName]: ParamShape<ShapeValues<S>> } = {
  snap: SNAP_PARAMS,
  snapHtml: SNAP_HTML_PARAMS,
  configCreate: CONFIG_CREATE_PARAMS,
  configUpdate: CONFIG_UPDATE_PARAMS,
};

/**
 * Validates one request shape. Returns the typed values (as given, after coercion) or
 * throws invalid_parameter (or the option's own error code) with a precise note.
 */
export function validateShape<T>(shape: ShapeName, raw: RawParams): T {
  return OPTION_PARAMS[shape].parse(raw) as T;
}

/**
 * The options as the caller gave them, for a configuration to echo (get and list): known
 * options only, under their own names (an alias under the option it stands for), values as
 * sent, without what counts as absent (empty values, 0 where it means "not set").
 */
export function givenOptions(raw: RawParams): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [sent, value] of Object.entries(raw)) {
    const spec = OPTIONS_BY_NAME.get(sent) ?? OPTION_ALIASES.get(sent);
    if (!spec || value === '' || value === undefined || value === null) continue;
    if (spec.zeroIsUnset && isZero(value)) continue;
    out[spec.name] = value;
  }
  return out;
}

/** The values of an endpoint that takes no parameter besides the key. */
export type NoParams = Record<string, never>;

const KEY_ONLY_SCHEMA: JsonSchema = { type: 'object', additionalProperties: false, properties: {} };
const validateKeyOnly = ajv.compile<NoParams>(KEY_ONLY_SCHEMA);

/** Endpoints that take no parameter besides the key. */
export const KEY_ONLY_PARAMS: ParamShape<NoParams> = {
  schema: KEY_ONLY_SCHEMA,
  parse(raw) {
    const values = normalise(raw);
    if (!validateKeyOnly(values)) {
      const { note } = noteFor((validateKeyOnly.errors ?? [])[0] as ErrorObject, values, ['access_token']);
      throw serviceError('invalid_parameter', note.replace(/Accepted parameters: .*/, 'This endpoint takes only access_token.'));
    }
    return values;
  },
};

/**
 * The list parameters `names` as GET and forms send them: a JSON array as text, or one value
 * alone (a list of one); a JSON body's arrays and indexed keys (`urls[0]=…`, folded by
 * client-shapes.ts) arrive as arrays already. Text that starts like a JSON array and is not
 * one is refused with the parser's reason.
 */
export function withLists(raw: RawParams, names: readonly string[]): RawParams {
  const out = { ...raw };
  for (const name of names) {
    const value = out[name];
    if (typeof value !== 'string' || value.trim() === '') continue;
    const text = value.trim();
    if (!text.startsWith('[')) {
      out[name] = [value];
      continue;
    }
    try {
      out[name] = JSON.parse(text);
    } catch (err) {
      throw serviceError(
        'invalid_parameter',
        `${name}: must be a JSON array (sent as a JSON string on GET and forms); parsing failed: ${(err as Error).message}.`,
        { param: name },
      );
    }
  }
  return out;
}

/**
 * The shape of an endpoint whose parameters are one TypeBox object: empty values count as
 * absent, text is trimmed (pasted keys carry spaces and newlines), ajv checks the rest.
 * `codes` gives a parameter the spec's own error code for a bad value; a `secret`
 * parameter's value is never quoted in a note.
 */
export function objectParams<T extends TObject>(schema: T, opts: { codes?: Record<string, ErrorCode>; secret?: string } = {}): ParamShape<Static<T>> {
  const validate = ajv.compile<Static<T>>(schema);
  const accepted = Object.keys(schema.properties);
  return {
    schema,
    parse(raw) {
      const values = Object.fromEntries(
        Object.entries(raw)
          .map(([k, v]) => [k, typeof v === 'string' ? v.trim() : v] as const)
          .filter(([, v]) => v !== '' && v !== undefined && v !== null),
      );
      const loose = looseValue(values, schema.properties, schema.additionalProperties === false);
      if (loose && 'note' in loose) throw serviceError(opts.codes?.[loose.param] || 'invalid_parameter', loose.note, { param: loose.param });
      if (!loose && validate(values)) return values;
      const error = loose ?? ((validate.errors ?? [])[0] as ErrorObject);
      const { param, note } = noteFor(error, values, accepted);
      if (param === opts.secret && error.keyword !== 'required') {
        // Never quoted: the rule only.
        const rule = (schema.properties[param] as Record<string, unknown> | undefined)?.[PATTERN_RULE];
        const must =
          error.keyword === 'pattern' && typeof rule === 'string'
            ? rule
            : `text of at most ${schema.properties[param]?.maxLength ?? 'a few hundred'} characters`;
        throw serviceError('invalid_parameter', `${param}: must be ${must}.`, { param });
      }
      throw serviceError((values[param] !== undefined && opts.codes?.[param]) || 'invalid_parameter', note, { param });
    },
  };
}
