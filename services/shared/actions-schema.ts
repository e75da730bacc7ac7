/**
 * The per-type rules of `multi_step_actions` that the option table's JSON Schema cannot
 * say clearly: which keys each step type needs and accepts, what its value must look
 * like, and the bounds on the whole list (number of steps, total waiting). It runs after
 * the JSON Schema (which checks the outer shape) from the api's cross-option rules, so
 * snaps and configurations are held to the same rules before any credit is reserved.
 *
 * Every note names the step as `multi_step_actions[i] (type)` and says what to send.
 */
import type { Static } from '@sinclair/typebox';
import { serviceError } from './errors';
import { type ACTION_STEP_SCHEMA, ACTION_TYPES, CHANGE_TARGETS, MAX_ACTIONS, MAX_WAIT_MS } from './screenshot-options';

export type ActionType = (typeof ACTION_TYPES)[number];

/** One validated step, as the capture service receives it: the type of the option table's step schema. */
export type ActionStep = Static<typeof ACTION_STEP_SCHEMA>;

/** Longest code (javascript, evaluateJs) or CSS of one step; the same bound as js_inject. */
export const MAX_ACTION_CODE = 100_000;
/** Longest text typed into a field or option named in a select. */
export const MAX_ACTION_TEXT = 10_000;
/** Sum of every `wait` step's milliseconds. */
export const MAX_ACTIONS_WAIT_MS = MAX_WAIT_MS;

type Key = 'selector' | 'value' | 'send_to' | 'url';

/** Keys a type may carry besides the ones it needs: a change step's own id, kept with it and shown in its alerts. */
const OPTIONAL: Partial<Record<ActionType, readonly string[]>> = { change: ['custom_id'] };

/** Keys each type needs (besides `type`); every other key (but OPTIONAL's) is refused. */
const KEYS: Record<ActionType, readonly Key[]> = {
  click: ['selector'],
  hover: ['selector'],
  change: ['selector', 'send_to', 'url'],
  redirect: ['value'],
  javascript: ['value'],
  evaluateJs: ['value'],
  css: ['value'],
  text_field: ['selector', 'value'],
  select: ['selector', 'value'],
  checkbox: ['selector', 'value'],
  submit: [],
  wait: ['value'],
  wait_for_selector: ['selector'],
};

/** What to send for a missing key, by type. */
const NEEDS: Record<ActionType, Partial<Record<Key, string>>> = {
  click: { selector: 'a CSS selector of the element to click' },
  hover: { selector: 'a CSS selector of the element to hover' },
  change: {
    selector: 'a CSS selector of the element whose text is watched',
    send_to: `where alerts go: ${CHANGE_TARGETS.join(' or ')}`,
    url: 'the http(s) URL alerts are sent to',
  },
  redirect: { value: 'the http(s) URL to go to' },
  javascript: { value: 'the JavaScript code to run' },
  evaluateJs: { value: 'the JavaScript expression or (async) function to evaluate' },
  css: { value: 'the CSS to insert' },
  text_field: { selector: 'a CSS selector of the text field', value: 'the text to type (a string)' },
  select: { selector: 'a CSS selector of the <select> element', value: 'the value or visible text of the option to select' },
  checkbox: { selector: 'a CSS selector of the checkbox', value: 'true or false' },
  submit: {},
  wait: { value: `milliseconds to wait, 0 to ${MAX_WAIT_MS}, such as "500"` },
  wait_for_selector: { selector: 'a CSS selector of the element to wait for' },
};

function isHttpUrl(value: unknown): boolean {
  if (typeof value !== 'string' || value.length > 4096) return false;
  try {
    const u = new URL(value);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.hostname.length > 0;
  } catch {
    return false;
  }
}

function shown(value: unknown): string {
  const s = typeof value === 'string' ? `"${value}"` : JSON.stringify(value);
  return s === undefined ? String(value) : s.length > 60 ? `${s.slice(0, 57)}...` : s;
}

/** Milliseconds of a `wait` step, or null when the value is not a whole number in range. */
export function waitMilliseconds(value: unknown): number | null {
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\s*\d{1,6}\s*$/.test(value) ? Number(value) : Number.NaN;
  return Number.isInteger(n) && n >= 0 && n <= MAX_WAIT_MS ? n : null;
}

/** A checkbox step's wanted state, or null when the value is neither a boolean nor "true"/"false". */
export function checkboxState(value: unknown): boolean | null {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value.trim())) return value.trim().toLowerCase() === 'true';
  return null;
}

/**
 * Throws invalid_parameter naming the first bad step; returns nothing when all are fine.
 * `options` are the request's other values: script steps cannot run with disable_js.
 */
export function checkActions(actions: unknown[], options: { disable_js?: unknown } = {}): void {
  if (actions.length > MAX_ACTIONS) {
    throw serviceError('invalid_parameter', `multi_step_actions: at most ${MAX_ACTIONS} steps are allowed, got ${actions.length}.`, {
      param: 'multi_step_actions',
    });
  }
  let totalWait = 0;
  actions.forEach((raw, i) => {
    const fail = (type: string, problem: string) => {
      throw serviceError('invalid_parameter', `multi_step_actions[${i}]${type ? ` (${type})` : ''}: ${problem}`, { param: 'multi_step_actions' });
    };
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      fail('', `must be an object such as {"type": "click", "selector": "#buy"}, got ${shown(raw)}.`);
    const step = raw as Record<string, unknown>;
    const type = step.type as ActionType;
    if (typeof type !== 'string' || !Object.hasOwn(KEYS, type)) {
      fail('', `"type" must be one of ${ACTION_TYPES.join(', ')}; got ${shown(step.type)}.`);
    }
    const needed = KEYS[type];
    const accepted: readonly string[] = [...needed, ...(OPTIONAL[type] ?? [])];
    for (const key of Object.keys(step)) {
      if (key === 'type' || accepted.includes(key)) continue;
      fail(
        type,
        accepted.length
          ? `unknown key "${key}"; a ${type} step takes only ${accepted.map((k) => `"${k}"`).join(', ')}.`
          : `unknown key "${key}"; a ${type} step takes no other key.`,
      );
    }
    for (const key of needed) {
      const v = step[key];
      if (v === undefined || v === null || (v === '' && !(type === 'text_field' && key === 'value'))) fail(type, `needs "${key}", ${NEEDS[type][key]}.`);
    }
    if (step.selector !== undefined && (typeof step.selector !== 'string' || step.selector.trim() === '')) {
      fail(type, `"selector" must be a non-blank CSS selector, got ${shown(step.selector)}.`);
    }
    const value = step.value;
    switch (type) {
      case 'redirect':
        if (!isHttpUrl(value)) fail(type, `"value" must be a full http:// or https:// URL, got ${shown(value)}.`);
        break;
      case 'javascript':
      case 'evaluateJs':
      case 'css':
        if (typeof value !== 'string' || value.trim() === '')
          fail(type, `"value" must be ${type === 'css' ? 'CSS' : 'JavaScript code'} as a non-empty string, got ${shown(value)}.`);
        else if (value.length > MAX_ACTION_CODE) fail(type, `"value" must be at most ${MAX_ACTION_CODE} characters long.`);
        // With scripts disabled the page's timers and events never run: a script step
        // would half work (and an awaited one never finish).
        if (type !== 'css' && options.disable_js === true) fail(type, 'cannot run with disable_js=true; drop disable_js or this step.');
        break;
      case 'text_field':
      case 'select':
        if (typeof value !== 'string' && typeof value !== 'number') fail(type, `"value" must be a string, got ${shown(value)}.`);
        else if (String(value).length > MAX_ACTION_TEXT) fail(type, `"value" must be at most ${MAX_ACTION_TEXT} characters long.`);
        break;
      case 'checkbox':
        if (checkboxState(value) === null) fail(type, `"value" must be true or false (a boolean, or "true"/"false"), got ${shown(value)}.`);
        break;
      case 'wait': {
        const ms = waitMilliseconds(value);
        if (ms === null) fail(type, `"value" must be whole milliseconds from 0 to ${MAX_WAIT_MS} (such as "500"), got ${shown(value)}.`);
        totalWait += ms ?? 0;
        if (totalWait > MAX_ACTIONS_WAIT_MS) {
          fail(type, `the wait steps add up to ${totalWait} ms; all wait steps together may wait at most ${MAX_ACTIONS_WAIT_MS} ms.`);
        }
        break;
      }
      case 'change':
        if (!(CHANGE_TARGETS as readonly unknown[]).includes(step.send_to))
          fail(type, `"send_to" must be one of ${CHANGE_TARGETS.join(', ')}; got ${shown(step.send_to)}.`);
        if (!isHttpUrl(step.url)) fail(type, `"url" must be a full http:// or https:// URL, got ${shown(step.url)}.`);
        break;
      default:
        break;
    }
  });
}
