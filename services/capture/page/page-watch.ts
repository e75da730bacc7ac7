/**
 * What a capture watches on its page from before its first request until its image: what a
 * real page does that would otherwise hold or spoil the capture.
 *
 * - JavaScript dialogs are answered the moment they open (docs/decisions/2026-11-28-dialogs-answered-at-once.md):
 *   `alert` and `beforeunload` accepted (OK; leave the page), `confirm` and `prompt` dismissed
 *   (Cancel; the prompt returns null), in the main frame and in every frame of its renderer.
 *   The page's script goes on at once.
 * - Popups the page opens (window.open, target=_blank) are closed as they are created: the
 *   capture is always of its own tab, and a popup would only take CPU from it.
 * - A crash of the page's renderer (out of memory, killed) fails the capture at once with
 *   page_crashed, instead of leaving its commands unanswered until the time budget runs out.
 * - A page that cannot come to rest fails the capture as soon as that is clear, not at the end
 *   of its budget, holding a browser that other captures wait for: one that replaces its own
 *   document without end (a `<meta http-equiv=refresh content=0>`, a script that reloads it),
 *   SELF_NAVIGATIONS times within SELF_NAVIGATION_WINDOW_MS, with page_load_failed; one whose
 *   own script holds its renderer (a loop that never ends), which answers no trivial script
 *   for UNRESPONSIVE_MS, with page_unresponsive.
 * - The page's loading, from the lifecycle events of the main frame's current document: what
 *   wait_until waits for, whether anything was drawn (first paint), and how often the
 *   page navigated itself.
 * - Frames in renderers of their own (site isolation: cross-site frames under `--site-per-process`,
 *   the full browser's default): each is attached as it starts, paused, set up (dialogs, and
 *   what onFrame asks: the consent handling) and then let run, so nothing of it runs unwatched.
 *
 * The page's session has Page, Inspector and lifecycle events enabled (BrowserSlot.createPage),
 * and the browser's connection discovers targets (launchSession), so nothing is sent here
 * before navigating.
 */
import { serviceError } from '../../shared/errors';
import type { WAIT_UNTIL } from '../../shared/screenshot-options';
import type { PageSession } from './page-session';

export type WaitUntil = (typeof WAIT_UNTIL)[number];

/**
 * The lifecycle events (Page.lifecycleEvent names) that make up each wait_until moment. The
 * 500 ms without a request that networkidle adds to the load event are the capture's own
 * NetworkWatch's (page-capture.ts), which leaves streams aside: Chromium's networkIdle event
 * counts an open EventSource or WebSocket, and never comes while one is open.
 */
const MOMENT: Record<WaitUntil, readonly string[]> = {
  load: ['load'],
  domcontentloaded: ['DOMContentLoaded'],
  networkidle: ['load'],
};

/** What a dialog of each type is answered with: true accepts (OK), false dismisses (Cancel). */
export const DIALOG_ANSWER: Readonly<Record<string, boolean>> = { alert: true, beforeunload: true, confirm: false, prompt: false };

type Params = Record<string, unknown>;

/**
 * Documents the page may begin of itself (beyond those the capture navigated to) within
 * SELF_NAVIGATION_WINDOW_MS before it counts as reloading itself without end. A page that
 * refreshes itself every second, or a chain of a few script redirects, stays well under it.
 */
export const SELF_NAVIGATIONS = 20;
export const SELF_NAVIGATION_WINDOW_MS = 10_000;
/**
 * How long the page's renderer may leave a trivial script unanswered before the page counts as
 * unresponsive: a single task of its own script running this long freezes the tab for a person
 * too (nothing can be clicked, scrolled or typed). The page's layout and the capture's own
 * reading of it hold the renderer too: a 100 000-element table on a machine running 4 times
 * more than its cores left the question unanswered for 15 s, so the bound is half the default
 * capture budget (half the capture's own when that is longer: PageWatch.start), which such a
 * page rarely meets and would need most of anyway. Probed only
 * in captures that run longer than PROBE_AFTER_MS, once every PROBE_EVERY_MS, so a capture of
 * an ordinary page sends none.
 */
export const UNRESPONSIVE_MS = 30_000;
const PROBE_AFTER_MS = 3_000;
const PROBE_EVERY_MS = 1_000;

export class PageWatch {
  /**
   * Rejects when the page cannot be captured, whatever the capture is waiting for: page_crashed
   * when its renderer crashes, page_load_failed when it reloads itself without end,
   * page_unresponsive when its script holds its renderer (never resolves).
   */
  readonly failed: Promise<never>;
  /** Dialogs answered, by type. */
  readonly dialogs: Record<string, number> = {};
  popupsClosed = 0;
  /** What the capture is doing now, in words, for the note of a capture that runs out of time ("waiting for ..."). */
  step = 'preparing the page';
  /** Documents the main frame has started during the capture (1 for a page that did not navigate itself). */
  documents = 0;
  /** When the documents the page began of itself began (epoch ms), the last SELF_NAVIGATIONS of them. */
  private readonly selfStarts: number[] = [];
  /** Documents the capture itself navigated to (expectNavigation), which the page did not begin. */
  private navigationsSent = 0;
  private probeTimer: NodeJS.Timeout | undefined;
  private readonly fail: (err: Error) => void;
  private loader: string | null = null;
  private events = new Set<string>();
  private readonly changed = new Set<() => void>();
  private readonly offs: Array<() => void> = [];
  /** The sessions of the page's out-of-process frames (and of their frames). */
  readonly frames = new Set<string>();
  private readonly frameSetups: Array<(sessionId: string) => Promise<unknown>> = [];

  private constructor(
    private readonly page: PageSession,
    private readonly unresponsiveMs: number,
  ) {
    let fail!: (err: Error) => void;
    this.failed = new Promise<never>((_, reject) => {
      fail = reject;
    });
    this.failed.catch(() => undefined);
    this.fail = fail;
    this.probeTimer = setTimeout(() => this.probe(), PROBE_AFTER_MS);
    const { cdp, sessionId } = page;
    this.offs.push(
      cdp.on('Page.javascriptDialogOpening', (p, sid) => {
        if (!sid || !this.ours(sid)) return;
        const type = String(p.type);
        this.dialogs[type] = (this.dialogs[type] ?? 0) + 1;
        // A dialog the page closed itself in the meantime answers an error: nothing to do then.
        cdp.send('Page.handleJavaScriptDialog', { accept: DIALOG_ANSWER[type] ?? false }, sid).catch(() => undefined);
      }),
      cdp.on('Target.attachedToTarget', (p, sid) => {
        const info = p.targetInfo as { type: string };
        const child = String(p.sessionId);
        if (!sid || !this.ours(sid)) return;
        if (info.type !== 'iframe') {
          // Nothing else is watched (a worker): let it run.
          cdp.send('Runtime.runIfWaitingForDebugger', {}, child).catch(() => undefined);
          return;
        }
        this.frames.add(child);
        void this.setUpFrame(child);
      }),
      cdp.on('Target.targetCreated', (p) => {
        const info = p.targetInfo as { targetId: string; type: string; browserContextId?: string };
        if (info.browserContextId !== page.contextId || info.targetId === page.targetId || info.type !== 'page') return;
        this.popupsClosed++;
        cdp.send('Target.closeTarget', { targetId: info.targetId }).catch(() => undefined);
      }),
      cdp.on('Inspector.targetCrashed', (_p, sid) => {
        if (sid === sessionId) fail(serviceError('page_crashed', this.crashNote()));
      }),
      cdp.on('Page.lifecycleEvent', (p, sid) => {
        if (sid !== sessionId || p.frameId !== page.mainFrameId) return;
        this.lifecycle(p);
      }),
    );
  }

  /** `budgetMs`: the capture's time budget; a renderer is unresponsive after half of it, at least UNRESPONSIVE_MS. */
  static start(page: PageSession, budgetMs = 0): PageWatch {
    return new PageWatch(page, Math.max(UNRESPONSIVE_MS, budgetMs / 2));
  }

  /** The page's own session, or one of its out-of-process frames'. */
  ours(sessionId: string): boolean {
    return sessionId === this.page.sessionId || this.frames.has(sessionId);
  }

  /**
   * Has the page's out-of-process frames attached as they start, paused until they are set up
   * (onFrame); sent with the capture's first commands.
   */
  attachFrames(): Promise<unknown> {
    return this.page.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true });
  }

  /** Also runs `setup` on each out-of-process frame's session before its document runs (and on those already attached). */
  onFrame(setup: (sessionId: string) => Promise<unknown>): Promise<unknown> {
    this.frameSetups.push(setup);
    return Promise.all([...this.frames].map((sid) => setup(sid).catch(() => undefined)));
  }

  /** A new frame session: dialogs, its own frames, each onFrame setup; then its document runs. */
  private async setUpFrame(sessionId: string): Promise<void> {
    const { cdp } = this.page;
    await Promise.all([
      cdp.send('Page.enable', {}, sessionId),
      cdp.send('Target.setAutoAttach', { autoAttach: true, waitForDebuggerOnStart: true, flatten: true }, sessionId),
      ...this.frameSetups.map((setup) => setup(sessionId)),
    ]).catch(() => undefined);
    await cdp.send('Runtime.runIfWaitingForDebugger', {}, sessionId).catch(() => undefined);
  }

  private crashNote(): string {
    return (
      'The page crashed its browser tab (its renderer ran out of memory or was killed) before it could be captured; nothing was charged. A page ' +
      'that allocates without end cannot be captured; try again, or capture a lighter page.'
    );
  }

  /** The capture is about to navigate the page (Page.navigate): the document that follows is not the page's own doing. */
  expectNavigation(): void {
    this.navigationsSent++;
  }

  /** A document begun while none of the capture's navigations was pending: the page navigated itself. */
  private begun(): void {
    if (this.documents <= this.navigationsSent) return;
    const now = Date.now();
    this.selfStarts.push(now);
    if (this.selfStarts.length > SELF_NAVIGATIONS) this.selfStarts.shift();
    const first = this.selfStarts[0] as number;
    if (this.selfStarts.length < SELF_NAVIGATIONS || now - first > SELF_NAVIGATION_WINDOW_MS) return;
    const seconds = Math.max(0.1, Math.round((now - first) / 100) / 10);
    this.fail(
      serviceError(
        'page_load_failed',
        `The page never came to rest to be captured: it navigated itself ${SELF_NAVIGATIONS} times in ${seconds} s (a refresh or a script that ` +
          'reloads it, or sends it back and forth, without end); nothing was charged. Check the page in a browser.',
      ),
    );
  }

  /**
   * Asks the page's renderer for a trivial script, again PROBE_EVERY_MS after each answer; a
   * question left unanswered for `unresponsiveMs` fails the capture with page_unresponsive.
   * Any answer counts, an error included (a document being replaced is still a renderer at work).
   */
  private probe(): void {
    const hung = setTimeout(() => {
      this.fail(
        serviceError(
          'page_unresponsive',
          `The page's own script kept its renderer busy for ${Math.round(this.unresponsiveMs / 1000)} s without a break (it answered no trivial script meanwhile: ` +
            `a loop that never ends, or work that freezes the tab for a person too), while ${this.step}; nothing was charged. Check the page in a browser.`,
        ),
      );
    }, this.unresponsiveMs);
    this.probeTimer = hung;
    this.page.evaluate<number>('1', false).then(
      () => this.probed(hung),
      () => this.probed(hung),
    );
  }

  private probed(hung: NodeJS.Timeout): void {
    clearTimeout(hung);
    // Stopped meanwhile: no probe after the capture.
    if (this.probeTimer !== hung) return;
    this.probeTimer = setTimeout(() => this.probe(), PROBE_EVERY_MS);
  }

  private lifecycle(p: Params): void {
    const loader = String(p.loaderId);
    if (p.name === 'init') {
      if (loader === this.loader) return;
      this.loader = loader;
      this.events = new Set();
      this.documents++;
      this.begun();
    } else if (loader !== this.loader) {
      // The prepared about:blank's late events (networkIdle), or a document already replaced.
      return;
    }
    this.events.add(String(p.name));
    for (const listener of this.changed) listener();
  }

  /** The current document, begun after the first `after` documents of the capture, has reached the moment. */
  reached(until: WaitUntil, after = 0): boolean {
    return this.documents > after && MOMENT[until].every((name) => this.events.has(name));
  }

  /**
   * Something of the current document was drawn: its first paint (a background of its own, a
   * box, a border: what a page of coloured blocks draws) or its first contentful paint (text,
   * an image, a canvas). The document's default background alone is no paint.
   */
  get painted(): boolean {
    return this.events.has('firstPaint') || this.events.has('firstContentfulPaint');
  }

  /** The current document has parsed (DOMContentLoaded), or has loaded. */
  get parsed(): boolean {
    return this.events.has('DOMContentLoaded') || this.events.has('load');
  }

  /**
   * Resolves true when a document begun after the first `after` (the count before a navigation
   * was sent: never the document it leaves) reaches the moment, false at `by` (epoch ms).
   */
  until(moment: WaitUntil, by: number, after = 0): Promise<boolean> {
    if (this.reached(moment, after)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = (reached: boolean) => {
        clearTimeout(timer);
        this.changed.delete(check);
        resolve(reached);
      };
      const check = () => {
        if (this.reached(moment, after)) done(true);
      };
      const timer = setTimeout(() => done(false), Math.max(0, by - Date.now()));
      this.changed.add(check);
    });
  }

  stop(): void {
    clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
    for (const off of this.offs.splice(0)) off();
    this.changed.clear();
  }
}
