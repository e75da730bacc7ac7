/**
 * The api's request shapes and their validation, with the api's one ajv instance (and the
 * formats the option table uses). A shape (ParamShape) is what a route declares as its
 * params: http.ts documents its JSON Schema and runs its `parse` before the handler, which
 * receives the typed values or never runs (a 400 whose note names the parameter and the
 * rule). The option shapes (snap, configurations) are generated from the option table, so
 * their values' types are the table's (SnapOptions, ConfigOptions).
 *
 * GET and form values arrive as text, so before ajv runs: booleans accept true/false/1/0/
 * yes/no/on/off, JSON-valued options are parsed from strings, {name: value} maps become
 * [{key, value}] lists, and empty strings count as absent. ajv then coerces numbers.
 */
import type { Static, TObject } from '@sinclair/typebox';
import type { ErrorObject } from 'ajv';
import { checkActions } from '../shared/actions-schema';
import { type ErrorCode, serviceError } from '../shared/errors';
import { newAjv, noteFor } from '../shared/param-notes';
import { OPTION_TABLE, OPTIONS_BY_NAME, type OptionSpec, type OptionValues, type Scope, optionSchema } from '../shared/screenshot-options';

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

/** Request shapes and the option scopes each accepts. */
export const SHAPES = {
  snap: ['capture', 'snap'],
  configCreate: ['capture', 'config'],
  configUpdate: ['capture', 'config'],
} as const satisfies Record<string, readonly Scope[]>;
export type ShapeName = keyof typeof SHAPES;
/** The validated values of a request shape. */
export type ShapeValues<S extends ShapeName> = OptionValues<(typeof SHAPES)[S][number]>;

/** Secrets that must never be accepted on capture requests: silently discarded (spec, Capture rules). */
const DISCARDED_SECRETS = ['api_key', 'password', 'proxy_password', 'proxy_username'];

export function shapeOptions(shape: ShapeName): OptionSpec[] {
  const scopes: readonly Scope[] = SHAPES[shape];
  return OPTION_TABLE.filter((o) => scopes.includes(o.scope));
}

export function shapeSchema(shape: ShapeName): JsonSchema {
  const options = shapeOptions(shape);
  return {
    type: 'object',
    additionalProperties: false,
    required: options.filter((o) => o.required).map((o) => o.name),
    properties: Object.fromEntries(options.map((o) => [o.name, optionSchema(o)])),
  };
}

/** The api's one ajv instance: every request shape is compiled by it. */
export const ajv = newAjv();
export { noteFor };

const TRUE = /^(true|1|yes|on)$/i;
const FALSE = /^(false|0|no|off)$/i;

/** Text-to-value normalisation that ajv does not do (see the header). */
function normalise(raw: RawParams): RawParams {
  const out: RawParams = {};
  for (const [name, value] of Object.entries(raw)) {
    if (DISCARDED_SECRETS.includes(name)) continue;
    if (value === '' || value === null || value === undefined) continue;
    const spec = OPTIONS_BY_NAME.get(name);
    if (!spec) {
      out[name] = value;
      continue;
    }
    if (spec.kind === 'boolean' && typeof value === 'string') {
      out[name] = TRUE.test(value) ? true : FALSE.test(value) ? false : value;
    } else if (spec.kind === 'json' && typeof value === 'string') {
      try {
        out[name] = JSON.parse(value);
      } catch (err) {
        throw serviceError(
          spec.errorCode ?? 'invalid_parameter',
          `${name}: must be valid JSON (a JSON array, sent as a JSON string on GET and forms); parsing failed: ${(err as Error).message}.`,
        );
      }
    } else out[name] = value;
    // {name: value} maps are accepted for headers and cookies (DESIGN section 3).
    if ((name === 'headers' || name === 'cookies') && isPlainObject(out[name])) {
      out[name] = Object.entries(out[name] as Record<string, unknown>).map(([key, v]) => ({ key, value: String(v) }));
    }
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Cross-option rules that a JSON Schema cannot say clearly. */
function checkRules(values: RawParams): void {
  if (values.hover_on_selected === true && values.selectors === undefined) {
    throw serviceError('invalid_parameter', 'hover_on_selected: requires selectors (the element to hover).');
  }
  if (values.analyze_image_with_ai === true && values.html_only === true) {
    throw serviceError('invalid_parameter', 'analyze_image_with_ai: an analysis reads the captured image, and html_only=true captures none; leave out one of the two.', { param: 'analyze_image_with_ai' });
  }
  if (Array.isArray(values.multi_step_actions)) checkActions(values.multi_step_actions, values);
}

/** The shape of the options a request kind accepts; its values are the table's types. */
function optionParams<S extends ShapeName>(shape: S): ParamShape<ShapeValues<S>> {
  const schema = shapeSchema(shape);
  // Options checked after the gates (structured field definitions) pass the shape as any JSON.
  const properties = schema.properties as Record<string, JsonSchema>;
  const deferred = shapeOptions(shape).filter((o) => o.checkedAfterGates);
  const parseSchema = { ...schema, properties: { ...properties, ...Object.fromEntries(deferred.map((o) => [o.name, {}])) } };
  const validate = ajv.compile<ShapeValues<S>>(parseSchema);
  const accepted = shapeOptions(shape).map((o) => o.name);
  return {
    schema,
    parse(raw) {
      const values = normalise(raw);
      if (!validate(values)) {
        const { param, note } = noteFor((validate.errors ?? [])[0] as ErrorObject, values, accepted);
        const code = OPTIONS_BY_NAME.get(param)?.errorCode ?? 'invalid_parameter';
        throw serviceError(code, note, { param });
      }
      checkRules(values);
      return values;
    },
  };
}

export const SNAP_PARAMS = optionParams('snap');
export const CONFIG_CREATE_PARAMS = optionParams('configCreate');
export const CONFIG_UPDATE_PARAMS = optionParams('configUpdate');
const OPTION_PARAMS: { [S in ShapeName]: ParamShape<ShapeValues<S>> } = { snap: SNAP_PARAMS, configCreate: CONFIG_CREATE_PARAMS, configUpdate: CONFIG_UPDATE_PARAMS };

/**
 * Validates one request shape. Returns the typed values (as given, after coercion) or
 * throws invalid_parameter (or the option's own error code) with a precise note.
 */
export function validateShape<T>(shape: ShapeName, raw: RawParams): T {
  return OPTION_PARAMS[shape].parse(raw) as T;
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
      if (validate(values)) return values;
      const error = (validate.errors ?? [])[0] as ErrorObject;
      const { param, note } = noteFor(error, values, accepted);
      if (param === opts.secret && error.keyword !== 'required') {
        throw serviceError('invalid_parameter', `${param}: must be text of at most ${schema.properties[param]?.maxLength ?? 'a few hundred'} characters.`, { param });
      }
      throw serviceError((values[param] !== undefined && opts.codes?.[param]) || 'invalid_parameter', note, { param });
    },
  };
}
