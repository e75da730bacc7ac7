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
import { type ACTION_STEP_SCHEMA, ACTION_TYPES, CHANGE_MODES, CHANGE_TARGETS, MAX_ACTIONS, MAX_SELECTORS, MAX_WAIT_MS } from './screenshot-options';

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

/**
 * Keys a type may carry besides the ones it needs: a change step's own id, kept with it and
 * shown in its alerts, its mode, and the visual mode's options (refused in the text mode).
 */
const OPTIONAL: Partial<Record<ActionType, readonly string[]>> = { change: ['custom_id', 'mode', 'threshold', 'tolerance', 'repeat', 'ignore_selectors'] };

/** The visual change step's options and their defaults (docs/api.md, "Visual change detection"). */
export const VISUAL_CHANGE_DEFAULTS = { threshold: 1, tolerance: 0.1, repeat: 1 } as const;
/** Most consecutive differing captures a visual change step may wait for. */
export const MAX_CHANGE_REPEAT = 10;
const VISUAL_ONLY = ['threshold', 'tolerance', 'repeat', 'ignore_selectors'] as const;

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

/** The mode and visual options of a change step; `fail` throws. */
function checkVisualChange(step: Record<string, unknown>, options: { html_only?: unknown; image_format?: unknown }, fail: (problem: string) => void): void {
  if (step.mode !== undefined && !(CHANGE_MODES as readonly unknown[]).includes(step.mode))
    fail(`"mode" must be one of ${CHANGE_MODES.join(', ')} (text is the default); got ${shown(step.mode)}.`);
  if (step.mode !== 'visual') {
    const stray = VISUAL_ONLY.find((k) => step[k] !== undefined);
    if (stray) fail(`"${stray}" applies to a visual change step only; add "mode": "visual" or leave out "${stray}".`);
    return;
  }
  if (options.html_only === true) fail('a visual change step compares the captured image, and html_only=true captures none; leave out one of the two.');
  if (options.image_format === 'pdf') fail('a visual change step compares an image; image_format=pdf makes a PDF. Use png, jpeg or webp.');
  const { threshold, tolerance, repeat, ignore_selectors: masks } = step;
  if (threshold !== undefined && !(typeof threshold === 'number' && threshold > 0 && threshold <= 100))
    fail(`"threshold" must be the percentage of pixels that must differ, above 0 and at most 100 (such as 1 or 0.5), got ${shown(threshold)}.`);
  if (tolerance !== undefined && !(typeof tolerance === 'number' && tolerance >= 0 && tolerance <= 1))
    fail(
      `"tolerance" must be the per-pixel colour difference ignored, from 0 (exact) to 1 (default ${VISUAL_CHANGE_DEFAULTS.tolerance}), got ${shown(tolerance)}.`,
    );
  if (repeat !== undefined && !(Number.isInteger(repeat) && (repeat as number) >= 1 && (repeat as number) <= MAX_CHANGE_REPEAT))
    fail(`"repeat" must be a whole number of consecutive differing captures from 1 to ${MAX_CHANGE_REPEAT}, got ${shown(repeat)}.`);
  if (masks !== undefined) {
    if (!Array.isArray(masks) || masks.length === 0 || masks.length > MAX_SELECTORS)
      fail(`"ignore_selectors" must be a list of 1 to ${MAX_SELECTORS} CSS selectors of areas to mask, got ${shown(masks)}.`);
    const bad = (masks as unknown[]).find((m) => typeof m !== 'string' || m.trim() === '' || m.length > 1000);
    if (bad !== undefined) fail(`"ignore_selectors" takes non-blank CSS selectors (at most 1000 characters), got ${shown(bad)}.`);
  }
}

/**
 * Throws invalid_parameter naming the first bad step; returns nothing when all are fine.
 * `options` are the request's other values: script steps cannot run with disable_js.
 */
export function checkActions(actions: unknown[], options: { disable_js?: unknown; html_only?: unknown; image_format?: unknown } = {}): void {
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
    // A visual change step watches the whole capture unless it names a region (selector).
    const visual = type === 'change' && step.mode === 'visual';
    const needed = visual ? KEYS.change.filter((k) => k !== 'selector') : KEYS[type];
    const accepted: readonly string[] = [...needed, ...(visual ? ['selector'] : []), ...(OPTIONAL[type] ?? [])];
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
        checkVisualChange(step, options, (problem) => fail(type, problem));
        break;
      default:
        break;
    }
  });
}
