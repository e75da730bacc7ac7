/**
 * The value shapes the official clients send (docs/clients.md), read into the one shape the
 * option table validates. Each reader handles one option's forms and throws the envelope's
 * invalid_parameter, naming the option and the forms it takes, for anything else:
 * - `headers`: a JSON array of {"key","value"} items (the spec's form), a {"Name": "value"}
 *   map, an array of such maps (n8n 1.x: `[{"X-A": "1", "X-B": "2"}]`), or "Name: value"
 *   lines, one string or one string per item (n8n 0.1: `headers[0]=X-A: 1`);
 * - `cookies`: the same, with cookie strings instead of header lines (`"a=1; b=2"`, and a
 *   Set-Cookie-like `"sid=abc; Path=/; HttpOnly"` whose attributes go to the cookie before);
 * - `multi_step_actions`: an array whose items may each be one step's JSON text (n8n 0.1:
 *   `multi_step_actions[0]={"type":"click",...}`).
 * Indexed keys (`headers[0]=...&headers[1]=...`, as n8n 0.1 sends lists on GET) are folded
 * into arrays first, for every parameter (foldIndexedKeys).
 */
import { serviceError } from '../shared/errors';

type Item = { key: string; value: string; domain?: string; path?: string; secure?: boolean; httpOnly?: boolean };

const INDEXED = /^([A-Za-z_][A-Za-z0-9_]*)\[(\d{1,3})\]$/;

/**
 * `name[0]=a&name[1]=b` becomes `name: ['a', 'b']` (in index order). The same parameter sent
 * both plain and indexed is refused: it would have two values.
 */
export function foldIndexedKeys(params: Record<string, unknown>): Record<string, unknown> {
  const indexed = new Map<string, Array<[number, unknown]>>();
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(params)) {
    const m = INDEXED.exec(key);
    if (!m) {
      out[key] = value;
      continue;
    }
    const [, name, index] = m as unknown as [string, string, string];
    indexed.set(name, [...(indexed.get(name) ?? []), [Number(index), value]]);
  }
  for (const [name, items] of indexed) {
    if (name in out) throw serviceError('invalid_parameter', `${name}: sent both as ${name} and as ${name}[N]; send it one way.`, { param: name });
    out[name] = items.sort((a, b) => a[0] - b[0]).map(([, v]) => v);
  }
  return out;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

const FORMS = {
  headers: 'a JSON array of {"key": "...", "value": "..."} items, a {"Name": "value"} map (or an array of them), or "Name: value" lines',
  cookies: 'a JSON array of {"key": "...", "value": "..."} items, a {"name": "value"} map (or an array of them), or cookie strings such as "a=1; b=2"',
} as const;

function invalid(name: keyof typeof FORMS, problem: string): never {
  throw serviceError('invalid_parameter', `${name}: ${problem}; send ${FORMS[name]}.`, { param: name });
}

/** "Name: value" lines (blank lines skipped). */
function headerLines(text: string): Item[] {
  return text
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '')
    .map((line) => {
      const colon = line.indexOf(':');
      const key = colon > 0 ? line.slice(0, colon).trim() : '';
      if (!key) invalid('headers', `the line ${JSON.stringify(line.slice(0, 60))} has no "Name: value"`);
      return { key, value: line.slice(colon + 1).trim() };
    });
}

/** Cookie attributes that describe the cookie before them rather than name another one. */
const COOKIE_FLAGS: Record<string, 'secure' | 'httpOnly'> = { secure: 'secure', httponly: 'httpOnly' };
const COOKIE_ATTRIBUTES: Record<string, 'path' | 'domain'> = { path: 'path', domain: 'domain' };
/** Attributes about a cookie's lifetime: a capture's cookies live as long as the capture, so these would do nothing. */
const LIFETIME_ATTRIBUTES = new Set(['expires', 'max-age', 'samesite', 'priority', 'partitioned']);

/** "a=1; b=2" (several cookies) or "sid=abc; Path=/; HttpOnly" (attributes of the cookie before them). */
function cookieString(text: string): Item[] {
  const items: Item[] = [];
  for (const part of text
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p !== '')) {
    const eq = part.indexOf('=');
    const name = (eq < 0 ? part : part.slice(0, eq)).trim();
    const value = eq < 0 ? '' : part.slice(eq + 1).trim();
    const lower = name.toLowerCase();
    const last = items[items.length - 1];
    if (eq < 0 && COOKIE_FLAGS[lower]) {
      if (!last) invalid('cookies', `"${name}" comes before any cookie`);
      last[COOKIE_FLAGS[lower]] = true;
    } else if (eq >= 0 && COOKIE_ATTRIBUTES[lower]) {
      if (!last) invalid('cookies', `"${name}" comes before any cookie`);
      last[COOKIE_ATTRIBUTES[lower]] = value;
    } else if (LIFETIME_ATTRIBUTES.has(lower)) {
      invalid('cookies', `the attribute "${name}" is not taken (a capture's cookies last for that capture only; Path, Domain, Secure and HttpOnly are)`);
    } else if (eq <= 0) {
      invalid('cookies', `"${part.slice(0, 60)}" is not name=value`);
    } else {
      items.push({ key: name, value });
    }
  }
  return items;
}

/** One item of a headers or cookies list, in any accepted form, as {key, value} items. */
function itemsOf(name: keyof typeof FORMS, item: unknown): unknown[] {
  if (typeof item === 'string') return name === 'headers' ? headerLines(item) : cookieString(item);
  // {"key": "X", "value": "Y"} (with cookie attributes) is the spec's form; any other object maps names to values,
  // except one with a "value" and no "key": an item written with another name for key ({"name": "X", "value": "Y"},
  // as CDP and Puppeteer write cookies), which read as a map would send "name" and "value" themselves.
  if (isPlainObject(item) && !('key' in item) && 'value' in item) {
    const other = Object.keys(item).find((k) => k !== 'value');
    invalid(name, `an item has "value" but no "key"${other ? ` (it has "${other.slice(0, 40)}")` : ''}: write each as {"key": "<name>", "value": "<value>"}`);
  }
  if (isPlainObject(item) && !('key' in item)) return Object.entries(item).map(([key, v]) => ({ key, value: String(v) }));
  return [item];
}

/**
 * headers or cookies in any accepted form, as the option table's list of {key, value}
 * items (which then validates them). A string is JSON when it reads as JSON, else text.
 */
export function keyValueList(name: keyof typeof FORMS, value: unknown): unknown {
  let v = value;
  if (typeof v === 'string') {
    const text = v.trim();
    if (text.startsWith('[') || text.startsWith('{')) {
      try {
        v = JSON.parse(text);
      } catch (err) {
        invalid(name, `the JSON could not be parsed (${(err as Error).message})`);
      }
    }
  }
  if (typeof v === 'string' || isPlainObject(v)) return itemsOf(name, v);
  if (Array.isArray(v)) return v.flatMap((item) => itemsOf(name, item));
  return v;
}

/** multi_step_actions whose items may each be one step's JSON text. */
export function actionList(value: unknown): unknown {
  if (!Array.isArray(value)) return value;
  return value.map((item, i) => {
    if (typeof item !== 'string') return item;
    try {
      return JSON.parse(item);
    } catch (err) {
      throw serviceError(
        'invalid_parameter',
        `multi_step_actions[${i}]: must be one step as a JSON object, such as {"type": "click", "selector": "#buy"}; parsing ` +
          `failed: ${(err as Error).message}.`,
        { param: 'multi_step_actions' },
      );
    }
  });
}
