/**
 * One warm browser: a WebDriver session (on the Selenium Grid, or a local ChromeDriver in
 * embedded mode) plus one browser-level CDP socket. It runs one capture at a time, in a
 * fresh browser context (CDP Target.createBrowserContext: no cookie, storage or cache is
 * shared with any other capture), and prepares the next context while it is idle, so its
 * cost stays off the request's path. It watches its browser while a capture runs, and
 * closes the browser itself when it is quit (BrowserPool decides when).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Builder, type WebDriver, error as webdriverError } from 'selenium-webdriver';
import chrome from 'selenium-webdriver/chrome';
import MANDATORY_CHROME_ARGS from '../../../grid/config/chrome-args.json';
import { CdpConnection } from '../page/cdp';
import type { EgressGateway } from '../page/gateway';
import { type Viewport, presetPage, viewportOf } from '../page/page-session';
import { type CdpRoute, CdpRouter, type GridCdp } from './grid-cdp';
import { localDriverService, tiedBrowserBinary } from './local-driver';

/**
 * The flags without which headless Chromium hangs or phones home on a closed network (the
 * same file configures the local Grid's nodes), plus quieter defaults for captures.
 */
export const CHROME_ARGS = [
  ...MANDATORY_CHROME_ARGS,
  '--disable-default-apps',
  '--disable-extensions',
  '--mute-audio',
  '--hide-scrollbars',
  // WebRTC's UDP goes around every proxy, the egress gateway included: a page's STUN or TURN
  // server at an internal address would get its datagrams, and a STUN server would learn the
  // machine's own address behind a real location. Its UDP is only ever sent through a proxy
  // (none speaks UDP), so WebRTC goes over TCP through the gateway, which checks it, or nowhere.
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
  // Frames in the page's own renderer: the page's request interception (egress policy, ad and
  // tracker blocking) then sees every frame's requests. Under site isolation a cross-site
  // frame gets a renderer of its own that interception on the page does not reach (seen with
  // the full browser; the headless shell does not isolate sites). Isolation between captures
  // and accounts does not depend on it: a browser context never shares a renderer.
  '--disable-site-isolation-trials',
  // One switch only: Chromium reads the last --disable-features it is given.
  `--disable-features=${[
    'Translate',
    'MediaRouter',
    'OptimizationHints',
    // Every capture opens a window in a fresh context. By default each such window also loads
    // two WebUI omnibox popups in renderers of their own, and a spare renderer is started
    // beside the page's: measured on Chromium 156, about 0.7 s of CPU per capture instead of
    // 0.15 s. A capture never shows an omnibox and never needs a second renderer.
    'WebUIOmniboxPopup',
    'WebUIOmniboxAimPopup',
    'WebUIOmniboxFullPopup',
    'SpareRendererForSitePerProcess',
  ].join(',')}`,
];

/** The extension capability naming the capture instance that started a Grid session (gone-owners.ts). */
export const SESSION_OWNER_CAPABILITY = 'pagepixels:owner';

/** The owner of the sessions a capture instance starts: its node id and its broker's instance id (a process restarted under the same node id is another). */
export function sessionOwner(nodeID: string, instanceID: string | null | undefined): string {
  return `${nodeID}/${instanceID ?? ''}`;
}

export interface LaunchOptions {
  seleniumUrl: string | null;
  /** On a Grid, the owner every session carries (sessionOwner), so that the others can end its sessions once it is gone. */
  owner?: string;
  /** null: on a Grid, the Node's own browser (its stereotype's binary). */
  chromeBin: string | null;
  chromedriverBin: string;
  /** Extra Chromium flags (tests route fixture hostnames with --host-resolver-rules). */
  extraArgs: string[];
  /** Starts the egress gateway of one slot (its contexts' proxy); absent: contexts go out directly. */
  gateway?: (() => Promise<EgressGateway>) | null;
  /** GRID_CDP, for a launch without cdpRouter (absent: direct). */
  gridCdp?: GridCdp;
  /** Opens each session's CDP socket by GRID_CDP (grid-cdp.ts); absent: one for this launch, which logs nothing. */
  cdpRouter?: CdpRouter<CdpConnection> | null;
}

/**
 * The WebDriver server knows no such session: a Grid whose hub restarted since it was started
 * (the new hub answers 404 invalid session id), or a ChromeDriver that ended it.
 */
export function isUnknownSession(err: unknown): boolean {
  return err instanceof webdriverError.NoSuchSessionError;
}

/** A target (tab in its own window) in a fresh browser context, attached in flat mode. */
export interface PreparedPage {
  contextId: string;
  targetId: string;
  sessionId: string;
  /** The page's main frame; its id stays the same across navigations. */
  mainFrameId: string;
  /** The device metrics it was prepared with. */
  viewport: Viewport;
}

/** A CDP command unanswered this long makes a busy slot ask ChromeDriver whether its browser is still there. */
const STALL_MS = 3_000;
/** How long ChromeDriver may take to answer that question before the browser counts as gone. */
const PROBE_TIMEOUT_MS = 10_000;
/** The longest a used context waits for its capture's answer before it is disposed anyway. */
export const MAX_DISPOSAL_WAIT_MS = 2_000;
/**
 * A busy browser whose CDP socket bypasses the Grid sends it a WebDriver command this often:
 * the Grid counts only what goes through it as the session's activity, and ends a session
 * idle for its session timeout (60 s on the nodes) even when a long capture is using it.
 */
export const GRID_KEEPALIVE_MS = 15_000;

export class BrowserSlot {
  private prepared: Promise<PreparedPage> | null = null;
  private probing = false;
  /** The prepared page has finished coming up (a capture can start on it at once). */
  private spareReady = false;
  /** Disposal of the last capture's context, then preparation of the next page. */
  private recycling: Promise<void> = Promise.resolve();
  /** Lets a disposal held back for its capture's answer start now (recycle). */
  private startDisposal: (() => void) | null = null;
  busy = false;
  broken = false;
  lastUsed = Date.now();
  userAgent = '';
  /** The WebDriver session's id (on a Grid, how its node's slots name it). */
  sessionId = '';
  /** A local browser's profile folder (profileFolderOf), removed when it quits; null on a Grid. */
  profileFolder: string | null = null;
  /** This slot's egress gateway: every context it creates uses it as its proxy. */
  gateway: EgressGateway | null = null;
  /** The viewport the next prepared page is set up for: the one the last capture asked for. */
  nextViewport: Viewport = viewportOf({});
  /** Where the CDP socket goes: straight to the browser, or through the Grid's relay (se:cdp). */
  cdpRoute: CdpRoute = 'relay';
  /** On a Grid, with the CDP socket straight to the browser: only WebDriver commands keep the session alive there. */
  gridSeesWebDriverOnly = false;
  /** When the last WebDriver command was answered. */
  lastContact = Date.now();
  /** Why the WebDriver server no longer knows the session (set once, by ping); null while it does. */
  unknown: Error | null = null;
  private readonly unknownListeners: Array<(err: Error) => void> = [];

  constructor(
    readonly driver: WebDriver,
    readonly cdp: CdpConnection,
    readonly id: number,
  ) {}

  get hasReadyPage(): boolean {
    return this.spareReady;
  }

  /** The browser is gone: its CDP connection closed (or was closed because the browser stopped answering). */
  get lost(): boolean {
    return this.cdp.closed;
  }

  /** Called once when the browser is gone, whoever found out (the socket, the watchdog, quit). */
  onLost(listener: (err: Error) => void): void {
    this.cdp.onClose(listener);
  }

  /**
   * Called once when a WebDriver command is answered that the session is unknown. On a Grid
   * whose hub restarted, the browser runs on and its CDP socket (straight to it) still works,
   * but the Grid counts its slot free and gives it to another session, and its node ends the
   * session's ChromeDriver at its session timeout and leaves the browser running: the slot has
   * to be replaced and its browser closed over CDP (quit), the only way left to reach it.
   */
  onSessionUnknown(listener: (err: Error) => void): void {
    this.unknownListeners.push(listener);
  }

  /** Any WebDriver command: keeps the session from being reaped by the Grid; fails when the browser is gone or the session unknown. */
  async ping(): Promise<void> {
    try {
      await this.driver.getWindowHandle();
    } catch (err) {
      if (isUnknownSession(err) && !this.unknown) {
        this.unknown = err as Error;
        this.broken = true;
        for (const listener of this.unknownListeners) listener(this.unknown);
      }
      throw err;
    }
    this.lastContact = Date.now();
  }

  /** When the Grid last saw this session in use: its CDP traffic counts there when relayed, else its WebDriver commands only. */
  get lastActive(): number {
    return this.gridSeesWebDriverOnly ? this.lastContact : this.lastUsed;
  }

  /**
   * Watches the browser while a capture runs; returns the function that stops watching.
   * A browser that dies under a capture (a crash, the OOM killer, its node gone) does not
   * fail the capture's CDP commands: behind the Grid's proxy they stay unanswered, for good.
   * ChromeDriver knows at once, so a command unanswered for STALL_MS makes the slot ask it
   * (any WebDriver command will do). A browser found gone has its CDP connection closed,
   * which fails every waiting command; the engine then takes the capture again elsewhere.
   */
  watch(): () => void {
    const timer = setInterval(() => {
      if (this.probing || this.cdp.closed) return;
      if (this.gridSeesWebDriverOnly && Date.now() - this.lastContact >= GRID_KEEPALIVE_MS) {
        // The capture's CDP traffic bypasses the Grid: a WebDriver command keeps its session. A
        // session it finds unknown is reported by ping (onSessionUnknown); any other failure
        // shows in the probe below if the browser stops answering, and the next keepalive tries again.
        this.lastContact = Date.now();
        this.ping().catch(() => undefined);
      }
      if (this.cdp.oldestPendingMs < STALL_MS) return;
      this.probing = true;
      withTimeout(this.ping(), PROBE_TIMEOUT_MS, 'asking ChromeDriver whether the browser is there')
        .then(
          () => undefined,
          (err: Error) => {
            // A session the Grid no longer knows is no browser gone: it answers over its own
            // socket, and is replaced after its capture (ping told onSessionUnknown).
            if (isUnknownSession(err)) return;
            this.broken = true;
            this.cdp.close(`CDP connection closed: the browser stopped answering (${err.message.split('\n')[0]})`);
          },
        )
        .finally(() => {
          this.probing = false;
        });
    }, 1_000);
    return () => clearInterval(timer);
  }

  /** Starts preparing the next page in the background (once the last context is gone). */
  prepareNext(): void {
    if (this.prepared || this.broken) return;
    const p = this.pageAfterRecycling();
    this.prepared = p;
    p.then(
      () => {
        if (this.prepared === p) this.spareReady = true;
      },
      () => {
        this.broken = true;
      },
    );
  }

  /**
   * The prepared page (or a new one), handed over to one capture. The next page is prepared
   * only after this capture is over (recycle): preparing it alongside would compete with the
   * capture for the browser's UI thread, which serves every CDP command of the browser, and
   * measurably slows the capture down. The pool lets idle slots with a ready page go first.
   */
  async takePage(): Promise<PreparedPage> {
    this.startDisposal?.();
    const p = this.prepared ?? this.pageAfterRecycling();
    this.prepared = null;
    this.spareReady = false;
    return p;
  }

  /**
   * After a capture: throws its page away with its context (cookies, storage, cache,
   * renderer), then prepares the next page. Resolves when the context is gone.
   *
   * Both wait for `answered` (the capture's files written, its record and answer on their
   * way): disposing a context and starting a renderer take both cores of a small machine for
   * a moment, and would slow the answer down (measured: about 5 ms on a simple page, 10 ms on
   * a heavy one). They wait no longer than MAX_DISPOSAL_WAIT_MS, and not at all once the
   * browser is needed again (takePage, quit).
   */
  recycle(used: PreparedPage | null, disposeTimeoutMs: number, answered?: Promise<unknown>): Promise<void> {
    const start = answered ? this.heldUntil(answered) : Promise.resolve();
    const disposal = start.then(() => (used ? withTimeout(this.disposePage(used), disposeTimeoutMs, 'disposing a browser context') : undefined));
    this.recycling = disposal.catch(() => undefined);
    return disposal;
  }

  /** Resolves when `answered` settles, after MAX_DISPOSAL_WAIT_MS, or when startDisposal is called, whichever comes first. */
  private heldUntil(answered: Promise<unknown>): Promise<void> {
    this.startDisposal?.();
    return new Promise<void>((resolve) => {
      const start = () => {
        clearTimeout(timer);
        if (this.startDisposal === start) this.startDisposal = null;
        resolve();
      };
      const timer = setTimeout(start, MAX_DISPOSAL_WAIT_MS);
      this.startDisposal = start;
      answered.then(start, start);
    });
  }

  /** A new page once the last capture's context is gone (never two contexts coming and going at once). */
  private pageAfterRecycling(): Promise<PreparedPage> {
    return this.recycling.then(() => this.createPage());
  }

  private async createPage(): Promise<PreparedPage> {
    // Through the slot's gateway, loopback included: without "<-loopback>" Chromium sends
    // loopback and link-local requests (169.254.169.254 too) around the proxy.
    const proxy = this.gateway ? { proxyServer: this.gateway.proxyServer, proxyBypassList: '<-loopback>' } : {};
    const { browserContextId: contextId } = await this.cdp.send<{ browserContextId: string }>('Target.createBrowserContext', {
      disposeOnDetach: false,
      ...proxy,
    });
    // Its own window: a background tab in headless Chromium can stall on screenshots.
    const { targetId } = await this.cdp.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank', browserContextId: contextId, newWindow: true });
    const { sessionId } = await this.cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
    const viewport = this.nextViewport;
    // Page events (dialogs among them), the renderer's crash and the lifecycle events a capture watches (page-watch.ts).
    const [, , , , { frameTree }] = await Promise.all([
      this.cdp.send('Page.enable', {}, sessionId),
      this.cdp.send('Inspector.enable', {}, sessionId),
      this.cdp.send('Page.setLifecycleEventsEnabled', { enabled: true }, sessionId),
      presetPage(this.cdp, sessionId, this.userAgent, viewport),
      this.cdp.send<{ frameTree: { frame: { id: string } } }>('Page.getFrameTree', {}, sessionId),
    ]);
    return { contextId, targetId, sessionId, mainFrameId: frameTree.frame.id, viewport };
  }

  /** Throws the page away with its context (cookies, storage, cache, renderer). */
  async disposePage(page: PreparedPage): Promise<void> {
    await this.cdp.send('Target.disposeBrowserContext', { browserContextId: page.contextId });
  }

  async quit(): Promise<void> {
    this.broken = true;
    this.startDisposal?.();
    const pending = this.prepared;
    this.prepared = null;
    if (pending) await pending.then((p) => this.disposePage(p)).catch(() => undefined);
    // ChromeDriver's quit leaves Chromium's headless shell running (seen with Debian's 156),
    // so the browser is closed over CDP first.
    await withTimeout(this.cdp.send('Browser.close'), 2_000, 'closing the browser').catch(() => undefined);
    this.cdp.close();
    await this.driver.quit().catch(() => undefined);
    await this.gateway?.close().catch(() => undefined);
    if (this.profileFolder) removeProfile(this.profileFolder);
  }
}

/**
 * The profile folder ChromeDriver made for a local browser (capabilities' chrome.userDataDir:
 * org.chromium.Chromium.scoped_dir.* in the temporary folder), which neither it nor the browser
 * removes: about 1 MB left by every browser started, replaced or stopped. Only a folder of that
 * name in the temporary folder is answered (a profile given in CHROME_EXTRA_ARGS is the operator's).
 */
export function profileFolderOf(capabilities: { get(name: string): unknown }): string | null {
  const dir = (capabilities.get('chrome') as { userDataDir?: unknown } | undefined)?.userDataDir;
  if (typeof dir !== 'string' || path.dirname(dir) !== os.tmpdir() || !path.basename(dir).startsWith('org.chromium.Chromium.scoped_dir.')) return null;
  return dir;
}

/** Removes a local browser's profile folder once it has quit. */
function removeProfile(dir: string): void {
  try {
    fs.rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  } catch {
    // A file the browser still held as it ended: nothing more to do here.
  }
}

/** Rejects when the promise has not settled within ms. */
export function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
    promise.then(
      (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      (e) => {
        clearTimeout(timer);
        reject(e);
      },
    );
  });
}

export async function launchSession(opts: LaunchOptions, id: number): Promise<BrowserSlot> {
  const options = new chrome.Options();
  options.addArguments(...CHROME_ARGS, ...opts.extraArgs);
  // The local ChromeDriver's browser is killed when its ChromeDriver ends (local-driver.ts); a Grid's Node starts its own.
  if (opts.chromeBin) options.setChromeBinaryPath(opts.seleniumUrl ? opts.chromeBin : tiedBrowserBinary(opts.chromeBin));
  if (opts.seleniumUrl && opts.owner) options.set(SESSION_OWNER_CAPABILITY, opts.owner);
  let builder = new Builder().forBrowser('chrome').setChromeOptions(options);
  let profileFolder: string | null = null;
  if (opts.seleniumUrl) builder = builder.usingServer(opts.seleniumUrl);
  else builder = builder.setChromeService(localDriverService(opts.chromedriverBin));
  const driver = await builder.build();
  try {
    const router =
      opts.cdpRouter ?? new CdpRouter({ seleniumUrl: opts.seleniumUrl, gridCdp: opts.gridCdp ?? 'direct' }, { open: (url) => CdpConnection.open(url) });
    const sessionId = (await driver.getSession()).getId();
    const capabilities = await driver.getCapabilities();
    profileFolder = opts.seleniumUrl ? null : profileFolderOf(capabilities);
    const { cdp, route } = await router.connect({ id: sessionId, capabilities, windowHandle: () => driver.getWindowHandle() });
    const slot = new BrowserSlot(driver, cdp, id);
    slot.profileFolder = profileFolder;
    slot.sessionId = sessionId;
    slot.cdpRoute = route;
    slot.gridSeesWebDriverOnly = route === 'direct' && opts.seleniumUrl !== null;
    if (opts.gateway) {
      try {
        slot.gateway = await opts.gateway();
      } catch (err) {
        cdp.close();
        throw err;
      }
    }
    // The pages the captures' pages open are announced (Target.targetCreated), so that a capture closes them (page-watch.ts).
    const [version] = await Promise.all([
      cdp.send<{ userAgent: string }>('Browser.getVersion'),
      cdp.send('Target.setDiscoverTargets', { discover: true, filter: [{ type: 'page' }] }),
    ]);
    // Sites serve degraded pages to "HeadlessChrome"; captures should look like a person's.
    slot.userAgent = version.userAgent.replace('HeadlessChrome', 'Chrome');
    return slot;
  } catch (err) {
    await driver.quit().catch(() => undefined);
    if (profileFolder) removeProfile(profileFolder);
    throw err;
  }
}
