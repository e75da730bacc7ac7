/**
 * `no_cookie_banners`: consent banners are refused (opt-out) or hidden by DuckDuckGo's
 * autoconsent, with the rules that ship in its npm package (nothing fetched at run time).
 *
 * How it is driven over CDP, on the page's own session, before navigation:
 * - its content script (dist/autoconsent.playwright.js) runs in every frame of the page from
 *   document start, in an isolated world of its own (`Page.addScriptToEvaluateOnNewDocument`
 *   with worldName): page scripts can neither see nor call it;
 * - it talks to us through a binding that exists only in that world (`Runtime.addBinding`
 *   with executionContextName); we answer with `Runtime.evaluate` in the same context: the
 *   configuration and the compact rules for the frame's URL (`init`), and the results of
 *   the few rule steps that must run in the page's main world (`eval`).
 *
 * Configuration: opt-out automatically; the CMP containers are pre-hidden from document
 * start until the rule has dealt with them; cosmetic rules (CMPs that can only be hidden) and
 * the heuristic detector (reject, or acknowledge a notice that offers nothing else; never
 * "accept all") are on. If a banner was found but not dismissed by capture time, the
 * pre-hiding stylesheet autoconsent built for the page is put back (the cosmetic fallback);
 * if none was found in time, the pre-hiding is lifted so the page is captured as it is.
 *
 * Time is bounded: after the load event we wait for autoconsent's first detection pass to
 * have run (it starts when the page is idle after DOMContentLoaded, usually before load;
 * at most START_MS), for a detected CMP to show its popup (at most POPUP_MS) and for the
 * opt-out to finish (at most ACTION_MS), always within the capture's deadline. A page
 * without a banner costs one round trip to the page after load. Detection goes on in the
 * page meanwhile: a banner that appears later is still handled during `wait`.
 *
 * Frames in renderers of their own (cross-site frames under site isolation, where a consent
 * platform often draws its wall) are separate CDP targets: the page watch attaches each as it
 * starts, paused, and the same script and binding are installed on its session before its
 * document runs (PageWatch.onFrame), so a wall drawn there is handled the same way. Contexts
 * are told apart by session and id (ids are per session).
 */
import fs from 'node:fs';
import path from 'node:path';
import { type PageSession, insertStyle } from './page-session';
import type { PageWatch } from './page-watch';

const WORLD = '__snap_consent';
const BINDING = '__snapConsentSend';

/** Longest wait after load for autoconsent to start detecting (a page busy after load). */
const START_MS = 2000;
/** Longest wait after load for a detected CMP to show its popup. */
const POPUP_MS = 1500;
/** Longest wait after load for an opt-out to complete. */
const ACTION_MS = 5000;
/**
 * autoconsent's second detection pass, where its heuristic rule runs, comes 500 ms after the
 * first: a capture that waits at least this long after the consent handling (its `wait`) lets
 * it run then, and need not hold the handling for it.
 */
const HEURISTIC_PASS_MS = 600;
/** Time left for the screenshot itself, whatever the consent handling still does. */
const SAFETY_MS = 1500;

type Params = Record<string, unknown>;

/** An execution context: ids are per session, so a context is its session and its id. */
interface Ctx {
  sid: string;
  id: number;
}
const keyOf = (c: Ctx): string => `${c.sid}/${c.id}`;

interface CompactRules {
  v: number;
  s: string[];
  r: unknown[];
  index: unknown;
}

interface Assets {
  source: string;
  rules: CompactRules;
  filter(rules: CompactRules, ctx: { url: string; mainFrame: boolean }): unknown;
}

let assets: Assets | null = null;

/** The content script and rules, read once per process. */
function loadAssets(): Assets {
  if (assets) return assets;
  const mainFile = require.resolve('@duckduckgo/autoconsent');
  const script = fs.readFileSync(path.join(path.dirname(mainFile), 'autoconsent.playwright.js'), 'utf8');
  const rules = JSON.parse(fs.readFileSync(require.resolve('@duckduckgo/autoconsent/rules/compact-rules.json'), 'utf8')) as CompactRules;
  const lib = require('@duckduckgo/autoconsent') as { filterCompactRules: Assets['filter'] };
  // Runs in the isolated world before the content script: messages go out through the
  // binding as JSON (a binding takes one string), tagged with whether this is the top
  // frame; the pre-hiding stylesheet is remembered when autoconsent removes it, for the
  // fallback. Element.prototype here is the isolated world's own: page scripts are unaffected.
  const prelude = `(() => {
    const send = globalThis[${JSON.stringify(BINDING)}];
    if (typeof send !== 'function') return;
    const top = window === window.top;
    window.autoconsentSendMessage = (m) => { try { send(JSON.stringify({ top, m })); } catch (e) {} return Promise.resolve(); };
    const remove = Element.prototype.remove;
    Element.prototype.remove = function () {
      if (this.id === 'autoconsent-prehide') window.__snapPrehideCss = this.textContent;
      return remove.call(this);
    };
  })();`;
  assets = { source: `${prelude}\n${script}`, rules, filter: lib.filterCompactRules };
  return assets;
}

const CONFIG = {
  enabled: true,
  autoAction: 'optOut',
  disabledCmps: [],
  enablePrehide: true,
  enableCosmeticRules: true,
  enableGeneratedRules: true,
  enableHeuristicDetection: true,
  heuristicMode: 'tier1',
  enablePopupMutationObserver: false,
  detectRetries: 20,
  isMainWorld: false,
  // Pre-hiding lasts as long as a capture can; autoconsent lifts it itself when it finds
  // nothing or once the opt-out has run.
  prehideTimeout: 120_000,
  visualTest: false,
  performanceLoggingEnabled: false,
  logs: { lifecycle: false, rulesteps: false, detectionsteps: false, evals: false, errors: false, messages: false, waits: false },
};

interface Message {
  type: string;
  id?: string;
  code?: string;
  url?: string;
  cmp?: string;
  result?: boolean;
  isCosmetic?: boolean;
  state?: { lifecycle?: string; findCmpAttempts?: number };
}

export interface ConsentOutcome {
  /** The CMP rule that found a popup (the first one), if any. */
  cmp: string | null;
  popupFound: boolean;
  /** The rule's opt-out (or hiding, for cosmetic rules) completed. */
  dismissed: boolean;
  /** The pre-hiding stylesheet was put back because the opt-out did not complete in time. */
  fallbackHidden: boolean;
  /** Time spent waiting after load, ms. */
  waitedMs: number;
}

export class ConsentHandler {
  private readonly offs: Array<() => void> = [];
  /** Isolated-world context (by key) -> frame id; frame id -> main-world context. */
  private readonly worldFrames = new Map<string, string>();
  private readonly mainContexts = new Map<string, Ctx>();
  private topLifecycle = 'loading';
  /** The top frame's detection passes begun (autoconsent's findCmpAttempts): its heuristic rule runs on the second, 500 ms after the first. */
  private topAttempts = 0;
  /** The top frame's isolated-world context. */
  private topContext: Ctx | null = null;
  private started = false;
  /** Messages received so far, and how many there were when the content script was last seen idle. */
  private messages = 0;
  private quietAt = -1;
  private evalsPending = 0;
  private probing = false;
  private stopped = false;
  private cmpDetected: string | null = null;
  /** Contexts (frames, by key) that found a popup, with the context, and the outcome of their opt-out (true: done). */
  private readonly popups = new Map<string, { ctx: Ctx; cmp: string }>();
  private readonly results = new Map<string, boolean>();
  private readonly waiters = new Set<() => void>();

  private constructor(
    private readonly page: PageSession,
    private readonly scriptsDisabled: boolean,
  ) {}

  /**
   * Installs the content script and the binding; call before navigating. With the page's
   * scripts disabled (disable_js) the content script still runs, but its timers do not: it
   * can find and pre-hide a banner, not click through one, so nothing is waited for.
   */
  static async attach(page: PageSession, watch: PageWatch, opts: { scriptsDisabled?: boolean } = {}): Promise<ConsentHandler> {
    const a = loadAssets();
    const h = new ConsentHandler(page, Boolean(opts.scriptsDisabled));
    h.offs.push(
      page.cdp.on('Runtime.executionContextCreated', (params, sid) => {
        if (!sid || !watch.ours(sid)) return;
        const ctx = (params as { context: { id: number; name: string; auxData?: { frameId?: string; isDefault?: boolean } } }).context;
        const frameId = ctx.auxData?.frameId;
        if (!frameId) return;
        if (ctx.auxData?.isDefault) h.mainContexts.set(frameId, { sid, id: ctx.id });
        else if (ctx.name === WORLD) h.worldFrames.set(keyOf({ sid, id: ctx.id }), frameId);
      }),
      page.cdp.on('Runtime.bindingCalled', (params, sid) => {
        if (!sid || !watch.ours(sid)) return;
        const { name, payload, executionContextId } = params as { name: string; payload: string; executionContextId: number };
        if (name !== BINDING) return;
        let parsed: { top: boolean; m: Message };
        try {
          parsed = JSON.parse(payload) as { top: boolean; m: Message };
        } catch {
          return;
        }
        void h.onMessage(parsed.m, parsed.top, { sid, id: executionContextId }).catch(() => undefined);
      }),
    );
    // The binding and the content script, on the page's session and on each of its out-of-process frames'.
    const install = (sid: string) =>
      Promise.all([
        page.cdp.send('Runtime.addBinding', { name: BINDING, executionContextName: WORLD }, sid),
        page.cdp.send('Page.addScriptToEvaluateOnNewDocument', { source: a.source, worldName: WORLD }, sid),
        // Context and binding events; pages are prepared without the Runtime domain, whose
        // events every other capture would pay for.
        page.cdp.send('Runtime.enable', {}, sid),
      ]);
    try {
      await Promise.all([install(page.sessionId), watch.onFrame(install)]);
    } catch (err) {
      h.stop();
      throw err;
    }
    return h;
  }

  /** A command in a context's session. */
  private send<T = Params>(ctx: Ctx, method: string, params: Params): Promise<T> {
    return this.page.cdp.send<T>(method, { ...params, contextId: ctx.id }, ctx.sid);
  }

  private reply(ctx: Ctx, message: Params): Promise<unknown> {
    return this.send(ctx, 'Runtime.evaluate', {
      expression: `window.autoconsentReceiveMessage && window.autoconsentReceiveMessage(${JSON.stringify(message)})`,
    }).catch(() => undefined);
  }

  private async onMessage(m: Message, top: boolean, ctx: Ctx): Promise<void> {
    this.messages++;
    const key = keyOf(ctx);
    if (top) this.topContext = ctx;
    switch (m.type) {
      case 'init': {
        const a = loadAssets();
        const compact = a.filter(a.rules, { url: m.url ?? '', mainFrame: top });
        await this.reply(ctx, { type: 'initResp', config: CONFIG, rules: { autoconsent: [], compact } });
        return;
      }
      case 'eval': {
        // A rule step that must run in the page's own world (a CMP's JavaScript API).
        this.evalsPending++;
        const frameId = this.worldFrames.get(key);
        const mainContext = frameId ? this.mainContexts.get(frameId) : undefined;
        let result = false;
        if (mainContext !== undefined && m.code) {
          try {
            const r = await this.send<{ result?: { value?: unknown }; exceptionDetails?: unknown }>(mainContext, 'Runtime.evaluate', {
              expression: m.code,
              returnByValue: true,
              awaitPromise: true,
              timeout: 1000,
            });
            result = !r.exceptionDetails && Boolean(r.result?.value);
          } catch {
            result = false;
          }
        }
        await this.reply(ctx, { type: 'evalResp', id: m.id, result });
        this.evalsPending--;
        this.wakeAll();
        return;
      }
      case 'report':
        if (top && m.state?.lifecycle) {
          if (m.state.lifecycle === 'started') this.started = true;
          this.topLifecycle = m.state.lifecycle;
          // A document the page navigated to starts its passes again.
          this.topAttempts = m.state.findCmpAttempts ?? 0;
        }
        break;
      case 'cmpDetected':
        this.cmpDetected ??= m.cmp ?? 'unknown';
        break;
      case 'popupFound':
        if (!this.popups.has(key)) this.popups.set(key, { ctx, cmp: m.cmp ?? 'unknown' });
        break;
      case 'optOutResult':
        this.results.set(key, Boolean(m.result));
        break;
      case 'autoconsentDone':
        this.results.set(key, true);
        break;
    }
    this.wakeAll();
  }

  private wakeAll(): void {
    for (const w of [...this.waiters]) w();
  }

  /** Resolves on the next message from the page, or after ms. */
  private changed(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.waiters.add(done);
    });
  }

  /** The content script has been seen idle (waiting for a timer, or done) since its last message. */
  private get quiet(): boolean {
    return this.started && this.quietAt === this.messages;
  }

  /**
   * Waits until the content script is idle: its detection steps run in microtasks, except
   * for `eval` steps, which wait for our answer. An evaluation in its world that finds no
   * eval in flight and no message sent since it was queued shows that everything started so
   * far (the first detection pass in particular) has run; the messages of that work, sent
   * synchronously through the binding, reached us before the answer.
   */
  private async probe(): Promise<void> {
    this.probing = true;
    try {
      for (let i = 0; i < 100 && !this.stopped && this.topContext !== null; i++) {
        const seen = this.messages;
        if (this.evalsPending > 0) {
          await this.changed(100);
          continue;
        }
        const ok = await this.send(this.topContext, 'Runtime.evaluate', { expression: 'true' }).then(
          () => true,
          () => false,
        );
        if (!ok) break;
        if (this.evalsPending === 0 && this.messages === seen) {
          this.quietAt = seen;
          break;
        }
      }
    } finally {
      this.probing = false;
      this.wakeAll();
    }
  }

  /** Every popup found has been dealt with (successfully or not). */
  private get finished(): boolean {
    return this.popups.size > 0 && [...this.popups.keys()].every((ctx) => this.results.has(ctx));
  }

  private get dismissed(): boolean {
    return this.popups.size > 0 && [...this.popups.keys()].every((ctx) => this.results.get(ctx) === true);
  }

  /**
   * Waits (bounded) after the load event for autoconsent to detect and dismiss a banner;
   * puts the pre-hiding back where a banner was found but not dismissed in time.
   */
  async settle(deadline: number, waitAfterMs = 0): Promise<ConsentOutcome> {
    const t0 = Date.now();
    const cap = (ms: number) => Math.min(t0 + ms, deadline - SAFETY_MS);
    for (;;) {
      if (this.finished || this.topLifecycle === 'nothingDetected') break;
      // Without scripts (disable_js) the content script's timers never fire: once it is idle,
      // whatever it found is all it will do.
      const waitsForTimers = this.cmpDetected !== null && !this.scriptsDisabled;
      // Nothing found by the rules of the first pass: the heuristic rule (a wall of no known
      // vendor, found by its words and buttons) runs in the second, 500 ms later; quiet before
      // it, the banner would be taken with the page when the load was quick and the wait after
      // short (a longer wait lets it run then: waitAfterMs).
      const heuristicToCome = this.cmpDetected === null && !this.scriptsDisabled && this.topAttempts < 2 && waitAfterMs < HEURISTIC_PASS_MS;
      if (this.quiet && !waitsForTimers && !heuristicToCome) break;
      if (this.started && !this.quiet && !this.probing && !waitsForTimers) void this.probe();
      const until = this.popups.size > 0 ? cap(ACTION_MS) : this.cmpDetected ? cap(POPUP_MS) : cap(START_MS);
      const left = until - Date.now();
      if (left <= 0) break;
      await this.changed(left);
    }
    let fallbackHidden = false;
    if (this.popups.size === 0 && this.topContext !== null) {
      // No banner in time: the page is captured as it is, without autoconsent's pre-hiding
      // (its selectors cover every known CMP and a few look like ordinary page parts).
      await this.send(this.topContext, 'Runtime.evaluate', {
        expression: `(document.getElementById('autoconsent-prehide') || { remove() {} }).remove()`,
      }).catch(() => undefined);
    } else if (this.popups.size > 0 && !this.dismissed) {
      for (const [key, { ctx }] of this.popups) {
        if (this.results.get(key) === true) continue;
        const r = await this.send<{ result?: { value?: unknown } }>(ctx, 'Runtime.evaluate', {
          expression:
            `(() => { const css = window.__snapPrehideCss || (document.getElementById('autoconsent-prehide') || {}).textContent; if (!css) ` +
            `return false; (${insertStyle})(css, 'id', 'snap-consent-fallback'); return true; })()`,
          returnByValue: true,
        }).catch(() => undefined);
        fallbackHidden ||= r?.result?.value === true;
      }
    }
    return {
      cmp: this.popups.values().next().value?.cmp ?? null,
      popupFound: this.popups.size > 0,
      dismissed: this.dismissed,
      fallbackHidden,
      waitedMs: Date.now() - t0,
    };
  }

  /** Stops listening (the page's context, with the script and binding, is disposed by the caller). */
  stop(): void {
    this.stopped = true;
    for (const off of this.offs.splice(0)) off();
    this.wakeAll();
  }
}
