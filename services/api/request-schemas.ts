/**
 * One JSON Schema per request shape, generated from the option table, and the validation
 * that turns merged raw parameters (query, form, JSON) into typed values or a 400 whose
 * note names the parameter and the rule.
 *
 * GET and form values arrive as text, so before ajv runs: booleans accept true/false/1/0/
 * yes/no/on/off, JSON-valued options are parsed from strings, {name: value} maps become
 * [{key, value}] lists, and empty strings count as absent. ajv then coerces numbers.
 */
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { checkActions } from '../shared/actions-schema';
import { serviceError } from '../shared/errors';
import { OPTION_TABLE, OPTIONS_BY_NAME, type OptionSpec, type Scope, optionSchema } from '../shared/screenshot-options';

type JsonSchema = Record<string, unknown>;
export type RawParams = Record<string, unknown>;

/** Request shapes and the option scopes each accepts. */
export const SHAPES = {
  snap: { scopes: ['capture', 'snap'] as Scope[], required: ['url'] },
  configCreate: { scopes: ['capture', 'config'] as Scope[], required: ['url'] },
  configUpdate: { scopes: ['capture', 'config'] as Scope[], required: ['url'] },
} as const;
export type ShapeName = keyof typeof SHAPES;

/** Secrets that must never be accepted on capture requests: silently discarded (spec, Capture rules). */
const DISCARDED_SECRETS = ['api_key', 'password', 'proxy_password', 'proxy_username'];

export function shapeOptions(shape: ShapeName): OptionSpec[] {
  const scopes: readonly Scope[] = SHAPES[shape].scopes;
  return OPTION_TABLE.filter((o) => scopes.includes(o.scope));
}

export function shapeSchema(shape: ShapeName): JsonSchema {
  const options = shapeOptions(shape);
  return {
    type: 'object',
    additionalProperties: false,
    required: [...SHAPES[shape].required],
    properties: Object.fromEntries(options.map((o) => [o.name, optionSchema(o)])),
  };
}

/** An empty schema-less shape for endpoints that take only the key. */
export const KEY_ONLY_SCHEMA: JsonSchema = { type: 'object', additionalProperties: false, properties: {} };

function newAjv(): Ajv {
  // Coercion handles numbers given as text; defaults are filled by the consumers, so the
  // validated values stay "as given" for configurations that echo them.
  const ajv = new Ajv({ allErrors: false, coerceTypes: true, useDefaults: false, strict: false });
  ajv.addFormat('http-url', (value: string) => {
    try {
      const u = new URL(value);
      return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.length > 0;
    } catch {
      return false;
    }
  });
  ajv.addFormat('time-zone', (value: string) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: value });
      return true;
    } catch {
      return false;
    }
  });
  return ajv;
}

const ajv = newAjv();
const validators = new Map<string, ValidateFunction>();

function validatorFor(key: string, schema: JsonSchema): ValidateFunction {
  let v = validators.get(key);
  if (!v) {
    v = ajv.compile(schema);
    validators.set(key, v);
  }
  return v;
}

const TRUE = /^(true|1|yes|on)$/i;
const FALSE = /^(false|0|no|off)$/i;

/** Text-to-value normalisation that ajv does not do (see the header). */
function normalise(raw: RawParams, shape: ShapeName): RawParams {
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
  void shape;
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(value: unknown): string {
  const s = typeof value === 'string' ? `"${value}"` : JSON.stringify(value);
  return s === undefined ? String(value) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

function valueAt(data: unknown, pointer: string): unknown {
  let cur = data;
  for (const part of pointer.split('/').slice(1)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return cur;
}

/** Turns ajv's first error into a note that names the parameter and the rule. */
export function noteFor(error: ErrorObject, data: unknown, allowed: string[]): { param: string; note: string } {
  const path = error.instancePath.split('/').slice(1);
  const param = path[0] ?? '';
  const where = path.length ? path.map((p, i) => (i === 0 ? p : /^\d+$/.test(p) ? `[${p}]` : `.${p}`)).join('') : '';
  const got = valueAt(data, error.instancePath);
  const p = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required': {
      const missing = String(p.missingProperty);
      return where
        ? { param, note: `${where}: "${missing}" is required.` }
        : { param: missing, note: `${missing} is required.` };
    }
    case 'additionalProperties': {
      const extra = String(p.additionalProperty);
      if (!where) {
        return { param: extra, note: `Unknown parameter "${extra}". Accepted parameters: ${allowed.join(', ')}.` };
      }
      return { param, note: `${where}: unknown key "${extra}".` };
    }
    case 'type':
      return { param, note: `${where}: must be ${p.type === 'integer' ? 'a whole number' : `of type ${String(p.type).replace(',', ' or ')}`}, got ${describe(got)}.` };
    case 'enum':
      return { param, note: `${where}: must be one of ${(p.allowedValues as unknown[]).map((v) => String(v)).join(', ')}; got ${describe(got)}.` };
    case 'minimum':
    case 'maximum':
      return { param, note: `${where}: must be at ${error.keyword === 'minimum' ? 'least' : 'most'} ${p.limit}, got ${describe(got)}.` };
    case 'maxLength':
      return { param, note: `${where}: must be at most ${p.limit} characters long.` };
    case 'minLength':
      return { param, note: `${where}: must not be empty.` };
    case 'maxItems':
      return { param, note: `${where}: at most ${p.limit} items are allowed.` };
    case 'minItems':
      return { param, note: `${where}: needs at least ${p.limit} item(s).` };
    case 'pattern':
      return { param, note: `${where}: ${describe(got)} is not allowed; it must match ${p.pattern} (letters, digits and underscores, starting with a letter).` };
    case 'format':
      return {
        param,
        note:
          p.format === 'time-zone'
            ? `${where}: ${describe(got)} is not a known time zone; use an ICU id such as Europe/Paris.`
            : `${where}: must be a full http:// or https:// URL, got ${describe(got)}.`,
      };
    default:
      return { param, note: `${where || 'request'}: ${error.message ?? 'is invalid'}.` };
  }
}

/** Cross-option rules that a JSON Schema cannot say clearly. */
function checkRules(values: RawParams): void {
  if (values.hover_on_selected === true && values.selectors === undefined) {
    throw serviceError('invalid_parameter', 'hover_on_selected: requires selectors (the element to hover).');
  }
  if (Array.isArray(values.multi_step_actions)) checkActions(values.multi_step_actions, values);
}

/**
 * Validates one request shape. Returns the typed values (as given, after coercion) or
 * throws invalid_parameter (or the option's own error code) with a precise note.
 */
export function validateShape<T>(shape: ShapeName, raw: RawParams): T {
  const values = normalise(raw, shape);
  const validate = validatorFor(shape, shapeSchema(shape));
  if (!validate(values)) {
    const error = (validate.errors ?? [])[0] as ErrorObject;
    const { param, note } = noteFor(error, values, shapeOptions(shape).map((o) => o.name));
    const code = OPTIONS_BY_NAME.get(param)?.errorCode ?? 'invalid_parameter';
    throw serviceError(code, note, { param });
  }
  checkRules(values);
  return values as T;
}

/** Validates parameters of endpoints that take none besides the key. */
export function validateKeyOnly(raw: RawParams): void {
  const validate = validatorFor('keyOnly', KEY_ONLY_SCHEMA);
  const values = normalise(raw, 'snap');
  if (!validate(values)) {
    const { note } = noteFor((validate.errors ?? [])[0] as ErrorObject, values, ['access_token']);
    throw serviceError('invalid_parameter', note.replace(/Accepted parameters: .*/, 'This endpoint takes only access_token.'));
  }
}
