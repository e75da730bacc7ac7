/**
 * Validation of option values with ajv, and the notes its errors become: one place, so the
 * api (request shapes) and the ai service (structured field definitions, checked after the
 * plan gates) word the same rule the same way. A note names the parameter and the rule.
 */
import Ajv, { type ErrorObject } from 'ajv';
import { closeDeviceNames, findDevice } from './devices';
import { keyTemplateProblem } from './object-keys';
import { PATTERN_RULE } from './screenshot-options';
import { cookieDomainProblem, cookieNameProblem, cookiePathProblem, cookieValueProblem, headerNameProblem, headerValueProblem } from './request-fields';
import { STATUS_CODES_EXAMPLE, statusCodesProblem } from './status-codes';

/** An ajv instance with the formats the option table uses. */
export function newAjv(): Ajv {
  // Coercion handles numbers given as text; defaults are filled by the consumers, so the
  // validated values stay "as given" for configurations that echo them. Verbose: an error
  // carries the schema it failed (a pattern's rule in words, PATTERN_RULE).
  // strictNumbers: Infinity and NaN (text "Infinity" coerces to one) are no number a parameter takes.
  const instance = new Ajv({ allErrors: false, coerceTypes: true, useDefaults: false, strict: false, strictNumbers: true, verbose: true });
  instance.addFormat('http-url', (value: string) => {
    try {
      const u = new URL(value);
      return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.length > 0;
    } catch {
      return false;
    }
  });
  instance.addFormat('time-zone', (value: string) => {
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: value });
      return true;
    } catch {
      return false;
    }
  });
  // fail_on_status: codes, ranges and classes (status-codes.ts).
  instance.addFormat('status-codes', (value: string) => statusCodesProblem(value) === null);
  // device: a name GET /devices lists (devices.ts).
  instance.addFormat('device', (value: string) => findDevice(value) !== undefined);
  // store_key: a key template whose placeholders are known (object-keys.ts).
  instance.addFormat('object-key-template', (value: string) => keyTemplateProblem(value) === null);
  // headers and cookies: what the browser takes (request-fields.ts).
  for (const [format, problem] of Object.entries(FIELD_PROBLEMS)) instance.addFormat(format, (value: string) => problem(value) === null);
  return instance;
}

/** The formats of a capture's headers and cookies, and what each finds wrong. */
const FIELD_PROBLEMS: Record<string, (value: string) => string | null> = {
  'header-name': headerNameProblem,
  'header-value': headerValueProblem,
  'cookie-name': cookieNameProblem,
  'cookie-value': cookieValueProblem,
  'cookie-domain': cookieDomainProblem,
  'cookie-path': cookiePathProblem,
};

function describe(value: unknown): string {
  let s: string | undefined;
  try {
    s = typeof value === 'string' ? `"${value}"` : JSON.stringify(value);
  } catch {
    // A value too deep to write out (the body's own depth is bounded where it is read: http.ts).
    return Array.isArray(value) ? 'a list' : 'an object';
  }
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
      return where ? { param, note: `${where}: "${missing}" is required.` } : { param: missing, note: `${missing} is required.` };
    }
    case 'additionalProperties': {
      const extra = String(p.additionalProperty);
      if (!where) {
        return { param: extra, note: `Unknown parameter "${extra}". Accepted parameters: ${allowed.join(', ')}.` };
      }
      return { param, note: `${where}: unknown key "${extra}".` };
    }
    case 'type':
      return {
        param,
        note: `${where}: must be ${
          p.type === 'integer'
            ? 'a whole number'
            : `of type ${String(p.type)
                .split(',')
                .join(', ')
                .replace(/, ([^,]+)$/, ' or $1')}`
        }, got ${describe(got)}.`,
      };
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
    case 'pattern': {
      // The rule in words the schema gives beside its pattern (screenshot-options.ts); the pattern itself only where none is given.
      const rule = (error.parentSchema as Record<string, unknown> | undefined)?.[PATTERN_RULE];
      return { param, note: `${where}: ${describe(got)} must be ${typeof rule === 'string' ? rule : `text matching ${p.pattern}`}.` };
    }
    case 'format':
      if (p.format === 'device') {
        const close = closeDeviceNames(String(got));
        const hint = close.length ? `did you mean ${close.join(', ')}? ` : '';
        return { param, note: `${where}: ${describe(got)} is not a known device; ${hint}GET /devices lists the names (such as iPhone 15 Pro, Pixel 7).` };
      }
      if (p.format === 'object-key-template') {
        return { param, note: `${where}: ${describe(got)} ${keyTemplateProblem(String(got)) ?? 'is not a key template'}.` };
      }
      if (typeof p.format === 'string' && FIELD_PROBLEMS[p.format]) {
        return { param, note: `${where}: ${describe(got)} ${FIELD_PROBLEMS[p.format]?.(String(got)) ?? 'is not taken'}.` };
      }
      if (p.format === 'status-codes') {
        // The problem quotes the entry at fault once; the note adds one example.
        const problem = statusCodesProblem(String(got)) ?? `${describe(got)} is not a list of HTTP statuses`;
        return { param, note: `${where}: ${problem}; e.g. ${STATUS_CODES_EXAMPLE}.` };
      }
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
