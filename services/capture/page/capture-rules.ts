/**
 * The fail-on rules of a capture (fail_on_status, fail_if_selector_missing,
 * fail_if_selector_present, fail_if_content_contains, fail_if_content_missing), and what every
 * capture records of its page: the main document's final HTTP status and URL.
 *
 * Looked at once, in one call into the page, after the page has loaded, its steps have run
 * and the wait is over, and before the screenshot (a page a rule fails costs no image). The
 * status is the one of the document the page ended on (after redirects, and after the
 * navigations of the page itself or of a redirect step), as the browser's navigation timing
 * tells it. A matching rule fails the capture with 422 capture_rule_failed, whose note names
 * the rule and what was seen; the capture is refunded like any failed one. Text is matched
 * ignoring case, in the text a person sees (document.body.innerText), as ScreenshotOne does.
 */
import { serviceError } from '../../shared/errors';
import type { SnapOptions } from '../../shared/screenshot-options';
import { parseStatusCodes, statusMatches } from '../../shared/status-codes';
import { type PageSession, inPageCall, quote, sleep } from './page-session';

/** What the capture records of its page. */
export interface PageOutcome {
  /** The main document's final HTTP status; null when the browser does not know it. */
  statusCode: number | null;
  /** The address the page ended on. */
  finalUrl: string;
}

/** The rules as the page is asked about them. */
interface Asked {
  selectorMissing?: string;
  selectorPresent?: string;
  contains?: string;
  lacks?: string;
}

/** What the page answered. */
interface Seen {
  status: number | null;
  url: string;
  /** A selector the page could not read: the option and the browser's message. */
  invalid?: [string, string];
  /** fail_if_selector_missing: an element matches. */
  found?: boolean;
  /** fail_if_selector_present: the first matching element, described (tag#id.class). */
  present?: string | null;
  /** fail_if_content_contains: the text as the page shows it, or null. */
  contained?: string | null;
  /** fail_if_content_missing: the text is there. */
  holds?: boolean;
}

/** Runs in the page: the document's status and address, and each rule's observation. */
function lookAtPage(r: Asked): Seen {
  const nav = performance.getEntriesByType('navigation')[0] as (PerformanceEntry & { responseStatus?: number }) | undefined;
  const code = nav?.responseStatus;
  const seen: Seen = { status: typeof code === 'number' && code > 0 ? code : null, url: location.href };
  const find = (option: string, selector: string): Element | null | undefined => {
    try {
      return document.querySelector(selector);
    } catch (err) {
      seen.invalid = [option, String((err as Error).message).split('\n')[0] ?? ''];
      return undefined;
    }
  };
  if (r.selectorMissing !== undefined) {
    const el = find('fail_if_selector_missing', r.selectorMissing);
    if (el !== undefined) seen.found = el !== null;
  }
  if (r.selectorPresent !== undefined) {
    const el = find('fail_if_selector_present', r.selectorPresent);
    if (el !== undefined) {
      seen.present = el
        ? el.tagName.toLowerCase() +
          (el.id ? `#${el.id}` : '') +
          (typeof el.className === 'string' && el.className.trim() ? `.${el.className.trim().split(/\s+/).join('.')}` : '')
        : null;
    }
  }
  if (r.contains !== undefined || r.lacks !== undefined) {
    // biome-ignore lint/performance/useDomNodeTextContent: the text a person sees is what the rules match, not hidden elements' or scripts'
    const text = document.body ? document.body.innerText : '';
    const lower = text.toLowerCase();
    if (r.contains !== undefined) {
      const at = lower.indexOf(r.contains.toLowerCase());
      seen.contained = at < 0 ? null : text.slice(at, at + r.contains.length);
    }
    if (r.lacks !== undefined) seen.holds = lower.includes(r.lacks.toLowerCase());
  }
  return seen;
}

const failed = (rule: string, what: string, url: string, when = 'the capture was stopped before its image') =>
  serviceError('capture_rule_failed', `${rule}: ${what} (at ${url}); ${when} and nothing was charged.`);

/** fail_on_status's failure for what the page answered, or null when the status is not one it lists. */
function statusFailure(o: SnapOptions, seen: Seen, when?: string): Error | null {
  if (o.fail_on_status === undefined || seen.status === null) return null;
  const read = parseStatusCodes(o.fail_on_status);
  if (!('ranges' in read) || !statusMatches(read.ranges, seen.status)) return null;
  return failed('fail_on_status', `the page answered HTTP ${seen.status}, which ${quote(o.fail_on_status)} lists`, seen.url, when);
}

/**
 * When the capture could not go on (wait_for found nothing, a step failed, the time budget ran
 * out) on a page whose status fail_on_status lists: that rule's failure, the likelier cause (an
 * error page lacks what the page it stands for has), or null. The rules are checked at their
 * place in the order of work (after the steps: a 503 page may navigate to the real one), so this
 * is the answer only when the capture stops before it.
 */
export async function statusRuleBefore(page: PageSession, o: SnapOptions, step: string): Promise<Error | null> {
  if (o.fail_on_status === undefined) return null;
  // Asked for at most STATUS_READ_MS: a renderer kept busy by the page's script leaves the capture's own answer standing.
  const seen = await Promise.race([page.run(lookAtPage, {}).catch(() => null), sleep(STATUS_READ_MS).then(() => null)]);
  return seen ? statusFailure(o, seen, `the capture was stopped while ${step}`) : null;
}

/** How long statusRuleBefore waits for the page to say its status. */
const STATUS_READ_MS = 1_000;

/**
 * In the page, when no rule is asked: only the document's status and address. A capture
 * without rules folds this into a call into the page it makes anyway (the wait for its web
 * fonts, painting.ts) rather than spending a round trip of its own; outcomeOf reads the answer.
 */
export const OUTCOME_IN_PAGE = inPageCall(lookAtPage, {});

/** The outcome in what the page answered to OUTCOME_IN_PAGE. */
export function outcomeOf(answer: unknown): PageOutcome {
  const seen = answer as Seen;
  return { statusCode: seen.status, finalUrl: seen.url };
}

/** Whether the options name a fail-on rule (the step's name in a timeout's note says so). */
export function hasRules(o: SnapOptions): boolean {
  return (
    o.fail_on_status !== undefined ||
    o.fail_if_selector_missing !== undefined ||
    o.fail_if_selector_present !== undefined ||
    o.fail_if_content_contains !== undefined ||
    o.fail_if_content_missing !== undefined
  );
}

/**
 * Reads the page's outcome and checks the capture's fail-on rules against it: throws
 * capture_rule_failed for the first rule that matches (status, then selectors, then text), or
 * invalid_parameter for a selector the browser cannot read.
 */
export async function checkRules(page: PageSession, o: SnapOptions): Promise<PageOutcome> {
  const asked: Asked = {
    ...(o.fail_if_selector_missing !== undefined ? { selectorMissing: o.fail_if_selector_missing } : {}),
    ...(o.fail_if_selector_present !== undefined ? { selectorPresent: o.fail_if_selector_present } : {}),
    ...(o.fail_if_content_contains !== undefined ? { contains: o.fail_if_content_contains } : {}),
    ...(o.fail_if_content_missing !== undefined ? { lacks: o.fail_if_content_missing } : {}),
  };
  const seen = await page.run(lookAtPage, asked);
  const status = statusFailure(o, seen);
  if (status) throw status;
  if (seen.invalid) {
    const [option, message] = seen.invalid;
    const selector = option === 'fail_if_selector_missing' ? o.fail_if_selector_missing : o.fail_if_selector_present;
    throw serviceError('invalid_parameter', `${option}: ${quote(selector ?? '')} is not a valid CSS selector (${message}).`, { param: option });
  }
  if (seen.found === false) throw failed('fail_if_selector_missing', `no element matches ${quote(o.fail_if_selector_missing ?? '')}`, seen.url);
  if (seen.present) throw failed('fail_if_selector_present', `an element matches ${quote(o.fail_if_selector_present ?? '')} (${seen.present})`, seen.url);
  if (typeof seen.contained === 'string') {
    throw failed('fail_if_content_contains', `the page's text contains ${quote(o.fail_if_content_contains ?? '')} (as ${quote(seen.contained)})`, seen.url);
  }
  if (seen.holds === false) throw failed('fail_if_content_missing', `the page's text does not contain ${quote(o.fail_if_content_missing ?? '')}`, seen.url);
  return { statusCode: seen.status, finalUrl: seen.url };
}
