/**
 * multi_step_actions: the steps a capture runs on the loaded page before it is captured,
 * in the order given. Steps act as a person would where the page can tell the difference:
 * clicks and hovers are real mouse events at the element's centre (trusted events, so
 * :hover styles and isTrusted checks behave), typing is real text input, Enter is a real
 * key press. A step that starts a navigation (a link, a form, a redirect, a script that
 * sets location) leaves the next page loaded before the next step runs.
 *
 * A step that cannot do what it says fails the capture with 422 action_failed, whose note
 * names the step (`multi_step_actions[3] (select): ...`); the caller refunds the credit as
 * for any failed capture. `change` steps only read the element's text here: storing it and
 * alerting on a difference belong to the notifier.
 */
import { type ActionStep, type ActionType, VISUAL_CHANGE_DEFAULTS, checkboxState, waitMilliseconds } from '../../shared/actions-schema';
import { serviceError } from '../../shared/errors';
import { type PageSession, browserGone, insertStyle, quote, sleep, waitForSelector } from './page-session';
import { urlNotAllowed } from './request-guard';
import type { ChangeReading } from '../../notifier/public/change-alerts';

/** The text a `change` step read, for change detection (the notifier's record of what it reads). */
export type { ChangeReading };

export interface ActionsResult {
  changes: ChangeReading[];
}

/** Navigation as the capture does it, so every step obeys the same egress policy. */
export interface NavigationHooks {
  /** Checks url against the egress policy, loads it, waits for its load event. */
  navigate(url: string): Promise<void>;
  /** The first main-document load the egress policy refused during this capture, if any. */
  refusedNavigation(): string | null;
}

/** How long evaluateJs waits for its promise at most (also bounded by the time budget). */
export const EVALUATE_TIMEOUT_MS = 20_000;
/** Longest text a change step returns. */
export const MAX_CHANGE_TEXT = 100_000;
/** After a click or submit, how long a navigation may take to begin before the step is over. */
const CLICK_NAVIGATION_GRACE_MS = 300;
/** The same for steps that navigate only when page script decides to (select, checkbox, scripts). */
const SCRIPT_NAVIGATION_GRACE_MS = 100;
/** Step failures are answered this long before the capture's own deadline (504) would be. */
const DEADLINE_MARGIN_MS = 250;
/** Let :hover styles and short transitions apply. */
const HOVER_SETTLE_MS = 150;

/** A step that could not do what it says; the runner adds which step it was. */
class StepFailure extends Error {}

// ---------------------------------------------------------------------------------------
// Functions run inside the page (serialised with toString, so they use nothing from here).

type Located = { status: 'invalid' | 'missing' } | { status: 'ok'; x: number; y: number; visible: boolean; reachable: boolean; tag: string };

/** Finds the element, scrolls it into view if needed, and says where to point at it. */
function pageLocate(selector: string): Located {
  let el: Element | null;
  try {
    el = document.querySelector(selector);
  } catch {
    return { status: 'invalid' };
  }
  if (!el) return { status: 'missing' };
  // Scrolled only when not already in full view, as a person would.
  let r = el.getBoundingClientRect();
  if (r.top < 0 || r.left < 0 || r.bottom > window.innerHeight || r.right > window.innerWidth) {
    el.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    r = el.getBoundingClientRect();
  }
  const x = r.left + r.width / 2;
  const y = r.top + r.height / 2;
  const visible = r.width >= 1 && r.height >= 1 && x >= 0 && y >= 0 && x < window.innerWidth && y < window.innerHeight;
  const hit = visible ? document.elementFromPoint(x, y) : null;
  // The point reaches the element itself, something inside it, or a label that forwards
  // the click to it (a styled checkbox hidden under its label).
  const reachable = !!hit && (hit === el || el.contains(hit) || hit.closest('label')?.control === el);
  return { status: 'ok', x, y, visible, reachable, tag: el.tagName.toLowerCase() };
}

function pageDomClick(selector: string): void {
  (document.querySelector(selector) as HTMLElement | null)?.click();
}

type FieldPrep =
  | { status: 'invalid' | 'missing' | 'disabled' | 'readonly' | 'unfocusable' }
  | { status: 'not-text'; what: string }
  | { status: 'ok'; editable: boolean };

/** Focuses a text field and empties it, as select-all and delete would. */
function pagePrepareField(selector: string): FieldPrep {
  let el: Element | null;
  try {
    el = document.querySelector(selector);
  } catch {
    return { status: 'invalid' };
  }
  if (!el) return { status: 'missing' };
  const textTypes = ['text', 'search', 'email', 'url', 'tel', 'password', 'number', 'date', 'datetime-local', 'month', 'time', 'week'];
  if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) {
    if (el instanceof HTMLInputElement && !textTypes.includes(el.type)) return { status: 'not-text', what: `an <input type="${el.type}">` };
    if (el.disabled) return { status: 'disabled' };
    if (el.readOnly) return { status: 'readonly' };
    el.focus();
    if (document.activeElement !== el) return { status: 'unfocusable' };
    // The native setter, so frameworks that track the value (React) see the change.
    const proto = el instanceof HTMLInputElement ? HTMLInputElement.prototype : HTMLTextAreaElement.prototype;
    Object.getOwnPropertyDescriptor(proto, 'value')?.set?.call(el, '');
    el.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'deleteContentBackward' }));
    return { status: 'ok', editable: false };
  }
  if (el instanceof HTMLElement && el.isContentEditable) {
    el.focus();
    const range = document.createRange();
    range.selectNodeContents(el);
    const selection = window.getSelection();
    selection?.removeAllRanges();
    selection?.addRange(range);
    return { status: 'ok', editable: true };
  }
  return { status: 'not-text', what: `a <${el.tagName.toLowerCase()}>` };
}

/** After typing: fields that ignore text input (date pickers) get the value set; then change. */
function pageFinishField(selector: string, text: string): void {
  const el = document.querySelector(selector);
  if (el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement) {
    if (text !== '' && el.value === '') {
      const proto = el instanceof HTMLInputElement ? HTMLInputElement.prototype : HTMLTextAreaElement.prototype;
      Object.getOwnPropertyDescriptor(proto, 'value')?.set?.call(el, text);
      el.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'insertText', data: text }));
    }
    el.dispatchEvent(new Event('change', { bubbles: true }));
  } else if (el instanceof HTMLElement && el.isContentEditable && text === '') {
    el.textContent = '';
    el.dispatchEvent(new InputEvent('input', { bubbles: true, inputType: 'deleteContentBackward' }));
  }
}

type SelectOutcome =
  | { status: 'invalid' | 'missing' | 'disabled' | 'option-disabled' | 'ok' }
  | { status: 'not-select'; tag: string }
  | { status: 'no-option'; options: string[] };

/** Selects the option whose value, or else whose visible text, is `wanted`. */
function pageSelect(selector: string, wanted: string): SelectOutcome {
  let el: Element | null;
  try {
    el = document.querySelector(selector);
  } catch {
    return { status: 'invalid' };
  }
  if (!el) return { status: 'missing' };
  if (!(el instanceof HTMLSelectElement)) return { status: 'not-select', tag: el.tagName.toLowerCase() };
  if (el.disabled) return { status: 'disabled' };
  const options = Array.from(el.options);
  const text = wanted.trim();
  const option = options.find((o) => o.value === wanted) ?? options.find((o) => o.text.trim() === text || o.label.trim() === text);
  if (!option)
    return { status: 'no-option', options: options.slice(0, 20).map((o) => (o.value === o.text.trim() ? o.value : `${o.value} (${o.text.trim()})`)) };
  if (option.disabled) return { status: 'option-disabled' };
  el.focus();
  if (el.multiple) option.selected = true;
  else el.selectedIndex = option.index;
  el.dispatchEvent(new Event('input', { bubbles: true }));
  el.dispatchEvent(new Event('change', { bubbles: true }));
  return { status: 'ok' };
}

type CheckState = { status: 'invalid' | 'missing' | 'disabled' } | { status: 'not-checkbox'; tag: string } | { status: 'ok'; checked: boolean; radio: boolean };

/** A native checkbox or radio, or an ARIA one (role="checkbox"/"switch", aria-checked). */
function pageCheckState(selector: string): CheckState {
  let el: Element | null;
  try {
    el = document.querySelector(selector);
  } catch {
    return { status: 'invalid' };
  }
  if (!el) return { status: 'missing' };
  if (el instanceof HTMLInputElement && (el.type === 'checkbox' || el.type === 'radio')) {
    if (el.disabled) return { status: 'disabled' };
    return { status: 'ok', checked: el.checked, radio: el.type === 'radio' };
  }
  const role = el.getAttribute('role');
  if (role === 'checkbox' || role === 'switch' || el.hasAttribute('aria-checked')) {
    if (el.getAttribute('aria-disabled') === 'true') return { status: 'disabled' };
    return { status: 'ok', checked: el.getAttribute('aria-checked') === 'true', radio: role === 'radio' };
  }
  const tag = el instanceof HTMLInputElement ? `input type="${el.type}"` : el.tagName.toLowerCase();
  return { status: 'not-checkbox', tag };
}

type SubmitPlan = { how: 'enter' | 'request-submit' | 'no-form' } | { how: 'invalid'; field: string; message: string };

/**
 * What pressing Enter would do: in a focused field, Enter submits its form (implicit
 * submission), except when the form has no submit button, where browsers may ignore it:
 * then the form is submitted as its button would. With nothing focused, the first form.
 */
function pageSubmitPlan(): SubmitPlan {
  const active = document.activeElement;
  const focused = active && active !== document.body && active !== document.documentElement ? active : null;
  let form: HTMLFormElement | null = null;
  if (focused) {
    if (!(focused instanceof HTMLInputElement)) return { how: 'enter' };
    form = focused.form;
    if (!form) return { how: 'enter' };
  } else {
    form = document.forms[0] ?? null;
    if (!form) return { how: 'no-form' };
  }
  if (!form.noValidate && !form.checkValidity()) {
    const bad = form.querySelector(':invalid') as HTMLInputElement | null;
    return { how: 'invalid', field: bad ? bad.name || bad.id || bad.tagName.toLowerCase() : 'a field', message: bad?.validationMessage ?? '' };
  }
  const hasButton = !!form.querySelector('button:not([type]), button[type="submit"], input[type="submit"], input[type="image"]');
  if (focused && hasButton) return { how: 'enter' };
  form.setAttribute('data-snap-submit', '1');
  return { how: 'request-submit' };
}

function pageRequestSubmit(): void {
  const form = document.querySelector('form[data-snap-submit]') as HTMLFormElement | null;
  form?.removeAttribute('data-snap-submit');
  form?.requestSubmit();
}

function pageReadText(selector: string, max: number): { text: string } | 'invalid' | 'missing' {
  let el: Element | null;
  try {
    el = document.querySelector(selector);
  } catch {
    return 'invalid';
  }
  if (!el) return 'missing';
  // The text as shown (no script or hidden text, line breaks as rendered): what a person
  // watching the element would call a change.
  // biome-ignore lint/performance/useDomNodeTextContent: rendered text is the point
  const text = el instanceof HTMLElement ? el.innerText : (el.textContent ?? '');
  return { text: text.trim().slice(0, max) };
}

// ---------------------------------------------------------------------------------------
// Navigation that a step may start.

interface NavigationWatch {
  /** Waits up to graceMs for a navigation to begin; if one did, until the page loaded. */
  settle(graceMs: number, deadline: number): Promise<boolean>;
  stop(): void;
}

async function watchNavigation(page: PageSession): Promise<NavigationWatch> {
  const mainFrame = page.mainFrameId;
  let started = false;
  let loaded = false;
  let wake: (() => void) | null = null;
  const mine = (sessionId: string | undefined) => sessionId === page.sessionId;
  const offs = [
    page.cdp.on('Page.frameStartedLoading', (p, sid) => {
      if (!mine(sid) || p.frameId !== mainFrame) return;
      started = true;
      loaded = false;
      wake?.();
    }),
    page.cdp.on('Page.loadEventFired', (_p, sid) => {
      if (!mine(sid) || !started) return;
      loaded = true;
      wake?.();
    }),
    // Also ends navigations that load nothing (204, a download, a same-document jump).
    page.cdp.on('Page.frameStoppedLoading', (p, sid) => {
      if (!mine(sid) || p.frameId !== mainFrame || !started) return;
      loaded = true;
      wake?.();
    }),
  ];
  const until = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(
        () => {
          wake = null;
          resolve();
        },
        Math.max(0, ms),
      );
      wake = () => {
        clearTimeout(timer);
        wake = null;
        resolve();
      };
    });
  return {
    async settle(graceMs, deadline) {
      const graceEnd = Date.now() + graceMs;
      while (!started && Date.now() < graceEnd) await until(graceEnd - Date.now());
      if (!started) return false;
      for (;;) {
        while (!loaded && Date.now() < deadline) await until(deadline - Date.now());
        // A page that moves on at once (a script or meta refresh redirect) is followed too.
        const quietEnd = Math.min(deadline, Date.now() + 100);
        while (loaded && Date.now() < quietEnd) await until(quietEnd - Date.now());
        if (loaded || Date.now() >= deadline) return true;
      }
    },
    stop() {
      for (const off of offs) off();
    },
  };
}

// ---------------------------------------------------------------------------------------
// Input.

async function mouseMove(page: PageSession, x: number, y: number): Promise<void> {
  await page.send('Input.dispatchMouseEvent', { type: 'mouseMoved', x, y });
}

async function mouseClick(page: PageSession, x: number, y: number): Promise<void> {
  await mouseMove(page, x, y);
  await page.send('Input.dispatchMouseEvent', { type: 'mousePressed', x, y, button: 'left', buttons: 1, clickCount: 1 });
  await page.send('Input.dispatchMouseEvent', { type: 'mouseReleased', x, y, button: 'left', buttons: 0, clickCount: 1 });
}

const ENTER = { key: 'Enter', code: 'Enter', windowsVirtualKeyCode: 13, nativeVirtualKeyCode: 13 };

async function pressEnter(page: PageSession): Promise<void> {
  // A keyDown that carries text also produces the keypress, which triggers implicit submission.
  await page.send('Input.dispatchKeyEvent', { type: 'keyDown', ...ENTER, text: '\r', unmodifiedText: '\r' });
  await page.send('Input.dispatchKeyEvent', { type: 'keyUp', ...ENTER });
}

function elementProblem(status: string, selector: string): never {
  if (status === 'invalid') throw new StepFailure(`${quote(selector)} is not a valid CSS selector.`);
  if (status === 'missing') throw new StepFailure(`no element matches ${quote(selector)} on the page.`);
  if (status === 'disabled') throw new StepFailure(`the element ${quote(selector)} is disabled.`);
  throw new StepFailure(`the element ${quote(selector)} cannot be used (${status}).`);
}

async function locate(page: PageSession, selector: string): Promise<Extract<Located, { status: 'ok' }>> {
  const at = await page.run(pageLocate, selector);
  if (at.status !== 'ok') elementProblem(at.status, selector);
  return at;
}

/** Real mouse click at the element's centre; a DOM click when nothing there can be pointed at. */
async function clickElement(page: PageSession, selector: string): Promise<void> {
  const at = await locate(page, selector);
  if (at.reachable) await mouseClick(page, at.x, at.y);
  else await page.runAsVisitor(pageDomClick, selector);
}

interface RemoteObject {
  type: string;
  subtype?: string;
  objectId?: string;
}

interface ExceptionDetails {
  text: string;
  exception?: { description?: string; value?: unknown };
}

function exceptionText(d: ExceptionDetails): string {
  const thrown = d.exception?.description ?? (d.exception && 'value' in d.exception ? String(d.exception.value) : d.text);
  return (thrown.split('\n')[0] ?? thrown).trim();
}

const TIMEOUT_MARKER = '__snap_evaluate_timeout__';

/** Calls the value if it is a function, awaits it if it is a promise; rejects after ms. */
const SETTLE_IN_PAGE = `function (ms, marker) {
  const target = this;
  const result = Promise.resolve().then(() => (typeof target === 'function' ? target() : target));
  return Promise.race([result, new Promise((_, reject) => setTimeout(() => reject(new Error(marker)), ms))]).then(() => undefined);
}`;

type Evaluated = { result: RemoteObject; exceptionDetails?: ExceptionDetails };

/**
 * Evaluates the code and waits for it: an expression's value, a function's result (the
 * value is called), or a promise's settlement. `function () {...}` and `async function
 * () {...}` count as function expressions, not (invalid) statements; statements may use
 * a top-level await.
 */
async function evaluateAndWait(page: PageSession, code: string, deadline: number): Promise<void> {
  // One time limit for the whole step. The page's own timer ends the wait first (so the
  // page is left with nothing pending); the backstop covers a page whose timers do not
  // run, and still answers before the capture's deadline.
  const ms = Math.max(0, Math.min(EVALUATE_TIMEOUT_MS, deadline - Date.now() - 2 * DEADLINE_MARGIN_MS));
  const until = Date.now() + ms;
  const late = () => new StepFailure(`the result did not settle within ${ms} ms.`);
  let timer: NodeJS.Timeout | undefined;
  const backstop = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(late()), ms + DEADLINE_MARGIN_MS);
  });
  backstop.catch(() => undefined);
  const bounded = <T>(p: Promise<T>): Promise<T> => {
    p.catch(() => undefined);
    return Promise.race([p, backstop]);
  };
  const evaluate = (expression: string, replMode = false) =>
    bounded(
      page.send<Evaluated>('Runtime.evaluate', { expression, awaitPromise: false, returnByValue: false, userGesture: true, ...(replMode ? { replMode } : {}) }),
    );
  try {
    let first: Evaluated | null = null;
    if (/^\s*(async\s+)?function\b/.test(code)) {
      first = await evaluate(`(${code}\n)`);
      // Not a lone function after all (a declaration followed by statements): run as written.
      if (first.exceptionDetails && /SyntaxError/.test(exceptionText(first.exceptionDetails))) first = null;
    }
    first ??= await evaluate(code);
    // Statements with a top-level await: evaluated as the DevTools console does.
    if (first.exceptionDetails && /await is only valid/.test(exceptionText(first.exceptionDetails))) first = await evaluate(code, true);
    if (first.exceptionDetails) throw new StepFailure(`the code threw: ${exceptionText(first.exceptionDetails)}.`);
    const { result } = first;
    if (!result.objectId || (result.type !== 'function' && result.subtype !== 'promise')) return;
    const settled = await bounded(
      page.send<{ exceptionDetails?: ExceptionDetails }>('Runtime.callFunctionOn', {
        functionDeclaration: SETTLE_IN_PAGE,
        objectId: result.objectId,
        arguments: [{ value: Math.max(0, until - Date.now()) }, { value: TIMEOUT_MARKER }],
        awaitPromise: true,
        returnByValue: true,
        userGesture: true,
      }),
    );
    if (settled.exceptionDetails) {
      const text = exceptionText(settled.exceptionDetails);
      if (text.includes(TIMEOUT_MARKER)) throw late();
      throw new StepFailure(`the code threw: ${text}.`);
    }
  } finally {
    clearTimeout(timer);
  }
}

/** Errors that mean the script's page went away because it navigated: not a failure. */
const CONTEXT_GONE = /Execution context was destroyed|Cannot find context|Inspected target navigated|Promise was collected/i;

// ---------------------------------------------------------------------------------------
// Steps.

interface StepEnv {
  page: PageSession;
  deadline: number;
  hooks: NavigationHooks;
  index: number;
  /** The step's selector ('' for the types that take none). */
  selector: string;
  /** Where `change` steps put what they read. */
  changes: ChangeReading[];
}

/** What one type of step does; a step that cannot do what it says throws a StepFailure. */
type StepHandler = (env: StepEnv, step: ActionStep) => Promise<void>;

/** Runs a step that may start a navigation, and leaves the next page loaded. */
async function mayNavigate(env: StepEnv, graceMs: number, act: () => Promise<void>): Promise<void> {
  const { page, deadline, hooks } = env;
  const refusedBefore = hooks.refusedNavigation();
  const watch = await watchNavigation(page);
  try {
    try {
      await act();
    } catch (err) {
      // A script that navigates loses its context before it can answer.
      if (!(err instanceof Error && CONTEXT_GONE.test(err.message))) throw err;
    }
    if (!(await watch.settle(graceMs, deadline))) return;
    const refused = hooks.refusedNavigation();
    if (refused && refused !== refusedBefore) {
      throw urlNotAllowed(`the page it led to may not be captured: ${refused}`);
    }
    const href = await page.evaluate<string>('location.href', false);
    if (href.startsWith('chrome-error:')) throw new StepFailure('the page it led to could not be loaded.');
  } finally {
    watch.stop();
  }
}

const STEPS: Record<ActionType, StepHandler> = {
  click: (env) => mayNavigate(env, CLICK_NAVIGATION_GRACE_MS, () => clickElement(env.page, env.selector)),

  async hover({ page, selector }) {
    const at = await locate(page, selector);
    if (!at.visible) throw new StepFailure(`the element ${quote(selector)} has no visible box to hover over.`);
    await mouseMove(page, at.x, at.y);
    await sleep(HOVER_SETTLE_MS);
  },

  async text_field({ page, selector }, { value }) {
    const text = String(value ?? '');
    const prep = await page.runAsVisitor(pagePrepareField, selector);
    if (prep.status === 'not-text') throw new StepFailure(`the element ${quote(selector)} is ${prep.what}, not a text field.`);
    if (prep.status === 'readonly') throw new StepFailure(`the field ${quote(selector)} is read-only.`);
    if (prep.status === 'unfocusable') throw new StepFailure(`the field ${quote(selector)} cannot be focused (is it hidden?).`);
    if (prep.status !== 'ok') elementProblem(prep.status, selector);
    if (text !== '') await page.send('Input.insertText', { text });
    await page.runAsVisitor(pageFinishField, selector, text);
  },

  async select(env, { value }) {
    const { page, selector } = env;
    const wanted = String(value ?? '');
    await mayNavigate(env, SCRIPT_NAVIGATION_GRACE_MS, async () => {
      const r = await page.runAsVisitor(pageSelect, selector, wanted);
      if (r.status === 'no-option') throw new StepFailure(`no option ${quote(wanted)} in ${selector} (options: ${r.options.join(', ') || 'none'}).`);
      if (r.status === 'not-select') throw new StepFailure(`the element ${quote(selector)} is a <${r.tag}>, not a <select>.`);
      if (r.status === 'option-disabled') throw new StepFailure(`the option ${quote(wanted)} in ${selector} is disabled.`);
      if (r.status !== 'ok') elementProblem(r.status, selector);
    });
  },

  async checkbox(env, { value }) {
    const { page, selector } = env;
    const wanted = checkboxState(value);
    if (wanted === null) throw new StepFailure(`"value" must be true or false.`);
    const before = await page.run(pageCheckState, selector);
    if (before.status === 'not-checkbox') throw new StepFailure(`the element ${quote(selector)} is a <${before.tag}>, not a checkbox.`);
    if (before.status !== 'ok') elementProblem(before.status, selector);
    if (before.checked === wanted) return;
    if (before.radio && !wanted)
      throw new StepFailure(`${quote(selector)} is a radio button, which cannot be unchecked; check another radio button of its group instead.`);
    await mayNavigate(env, SCRIPT_NAVIGATION_GRACE_MS, () => clickElement(page, selector));
    const after = await page.run(pageCheckState, selector);
    if (after.status === 'ok' && after.checked !== wanted) {
      throw new StepFailure(
        `the checkbox ${quote(selector)} stayed ${after.checked ? 'checked' : 'unchecked'} after a click (a script on the page may prevent it).`,
      );
    }
  },

  async submit(env) {
    const { page } = env;
    const plan = await page.run(pageSubmitPlan);
    if (plan.how === 'no-form')
      throw new StepFailure('nothing is focused and the page has no form to submit; fill a field with text_field first, or click the submit button.');
    if (plan.how === 'invalid') {
      throw new StepFailure(`the form was not submitted: its field "${plan.field}" is invalid${plan.message ? ` (${plan.message.replace(/\.$/, '')})` : ''}.`);
    }
    await mayNavigate(env, CLICK_NAVIGATION_GRACE_MS, async () => {
      if (plan.how === 'enter') await pressEnter(page);
      else await page.runAsVisitor(pageRequestSubmit);
    });
  },

  redirect: ({ hooks }, { value }) => hooks.navigate(String(value)),

  // Started, not awaited: a promise the script returns is left to run on its own.
  javascript: (env, { value }) =>
    mayNavigate(env, SCRIPT_NAVIGATION_GRACE_MS, async () => {
      const r = await env.page.send<{ exceptionDetails?: ExceptionDetails }>('Runtime.evaluate', {
        expression: String(value),
        awaitPromise: false,
        returnByValue: false,
        userGesture: true,
      });
      if (r.exceptionDetails) throw new StepFailure(`the script threw: ${exceptionText(r.exceptionDetails)}.`);
    }),

  evaluateJs: (env, { value }) => mayNavigate(env, SCRIPT_NAVIGATION_GRACE_MS, () => evaluateAndWait(env.page, String(value), env.deadline)),

  css: ({ page, index }, { value }) => page.run(insertStyle, String(value), 'data-injected', `multi_step_actions[${index}]`),

  async wait({ deadline }, { value }) {
    const ms = waitMilliseconds(value);
    if (ms === null) throw new StepFailure('"value" must be whole milliseconds.');
    await sleep(Math.min(ms, deadline - Date.now()));
  },

  async wait_for_selector({ page, selector, deadline }) {
    const started = Date.now();
    const found = await waitForSelector(page, selector, deadline - DEADLINE_MARGIN_MS);
    if (found === 'present') return;
    if (found !== 'timed-out') elementProblem('invalid', selector);
    throw new StepFailure(`no element matches ${quote(selector)} on the page (waited ${Date.now() - started} ms, until the capture's time budget ran out).`);
  },

  async change({ page, selector, index, changes }, step) {
    if (step.mode === 'visual') {
      // The picture is compared once taken; its region and masks are measured then (visual-regions.ts).
      changes.push({
        index,
        selector,
        text: '',
        send_to: step.send_to ?? '',
        url: step.url ?? '',
        ...(step.custom_id ? { custom_id: step.custom_id } : {}),
        visual: {
          threshold: step.threshold ?? VISUAL_CHANGE_DEFAULTS.threshold,
          tolerance: step.tolerance ?? VISUAL_CHANGE_DEFAULTS.tolerance,
          repeat: step.repeat ?? VISUAL_CHANGE_DEFAULTS.repeat,
          ignore_selectors: step.ignore_selectors ?? [],
          region: null,
          masks: [],
          frameWidth: 0,
        },
      });
      return;
    }
    const read = await page.run(pageReadText, selector, MAX_CHANGE_TEXT);
    if (typeof read === 'string') elementProblem(read, selector);
    changes.push({
      index,
      selector,
      text: read.text,
      send_to: step.send_to ?? '',
      url: step.url ?? '',
      ...(step.custom_id ? { custom_id: step.custom_id } : {}),
    });
  },
};

/** The handler of a step's type (own keys only: a type named like an Object method is unknown too). */
function handlerOf(step: ActionStep): StepHandler {
  if (Object.hasOwn(STEPS, step.type)) return STEPS[step.type];
  throw new StepFailure(`unknown step type ${quote(String((step as { type: unknown }).type))}.`);
}

function stepError(err: unknown, index: number, type: string): unknown {
  const where = `multi_step_actions[${index}] (${type})`;
  if (err instanceof StepFailure) return serviceError('action_failed', `${where}: ${err.message}`, { step: index });
  // Browser failures are not the step's fault: they keep their own error (the tab crashed).
  if (browserGone(err)) return err;
  const e = err as { type?: unknown; message?: unknown };
  const message = String(e?.message ?? err);
  // The egress policy answers the same way for a step as for the main URL.
  if (e?.type === 'url_not_allowed') return serviceError('url_not_allowed', `${where}: ${message}`, { step: index });
  const reason = (message.split('\n')[0] ?? message).replace(/\.$/, '');
  return serviceError('action_failed', `${where}: ${reason}.`, { step: index });
}

/**
 * Runs the steps in order on the loaded page. Stops at the first failing step with
 * action_failed (or url_not_allowed for a navigation the egress policy refuses). When
 * the time budget runs out between steps, returns what it has: the capture's own
 * timeout answers.
 */
export async function runActions(page: PageSession, actions: readonly ActionStep[], deadline: number, hooks: NavigationHooks): Promise<ActionsResult> {
  const changes: ChangeReading[] = [];
  // The page behaves as the focused tab (focus events, document.hasFocus()) even when
  // another window of the browser has the focus.
  await page.send('Emulation.setFocusEmulationEnabled', { enabled: true }).catch(() => undefined);
  for (const [index, step] of actions.entries()) {
    if (Date.now() >= deadline) break;
    try {
      await handlerOf(step)({ page, deadline, hooks, index, selector: step.selector ?? '', changes }, step);
    } catch (err) {
      throw stepError(err, index, step.type);
    }
  }
  return { changes };
}
