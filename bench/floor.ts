/**
 * The floors' raw CDP captures and /snap's HTTP request, shared by the benches that compare
 * them (bench.ts, mix.ts): a page in a fresh browser context, the complete work of a capture
 * (navigate, load event, wait_for or full page, screenshot), the isolated floor's pool of
 * browsers that prepare a fresh context per capture, and one GET /snap timed until its body
 * is read; and, for the benches of one browser's own work (encoder.ts, guard.ts), one Grid
 * session's tab with the page server (oneBrowserOnGrid).
 */
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { type BrowserSlot, launchSession, withTimeout } from '../services/capture/browsers/browser-slot';
import { type Config, loadConfig } from '../services/shared/config';
import { call } from '../services/shared/contracts';
import type { System } from '../runtime/system';
import { type PageServer, startPageServerProcess } from './pages';
import { descendantsNamed, processes, treesUse } from './procs';
import { FORMAT, QUALITY, VIEWPORT } from './run';

export const STEP_TIMEOUT_MS = 60_000;

/** What a capture does between the load event and the screenshot, in the floors (raw CDP) as in /snap (its options). */
export type Work = { kind: 'viewport' } | { kind: 'wait_for'; selector: string } | { kind: 'fullpage' };

export interface FloorTab {
  slot: BrowserSlot;
  sessionId: string;
}

/**
 * A page (target in its own window) in a fresh browser context, with the bench's viewport;
 * with `proxyServer`, the context goes out through it (loopback included, as the service's do).
 */
export async function openPage(slot: BrowserSlot, proxyServer?: string): Promise<{ contextId: string; targetId: string; sessionId: string }> {
  const { cdp } = slot;
  const proxy = proxyServer ? { proxyServer, proxyBypassList: '<-loopback>' } : {};
  const { browserContextId } = await cdp.send<{ browserContextId: string }>('Target.createBrowserContext', { disposeOnDetach: false, ...proxy });
  const { targetId } = await cdp.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank', browserContextId, newWindow: true });
  const { sessionId } = await cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
  await cdp.send('Page.enable', {}, sessionId);
  await cdp.send('Emulation.setDeviceMetricsOverride', { ...VIEWPORT, deviceScaleFactor: 1, mobile: false }, sessionId);
  return { contextId: browserContextId, targetId, sessionId };
}

/**
 * The Selenium Grid's session timeout for a bench's Grid, s. The floors drive their browsers
 * over CDP alone, so the Grid sees their WebDriver sessions as idle and would end them (and
 * their ChromeDrivers, whose trees the bench counts) once this runs out: it must outlast a run.
 * The service's own sessions keep themselves alive (BrowserPool's keep-alive).
 */
export const BENCH_GRID_SESSION_TIMEOUT_S = 3_600;

const gridModule = require(path.join(__dirname, '..', '..', 'grid', 'grid.js')) as {
  startGrid(opts: { mode: 'standalone'; maxSessions: number; port: number; sessionTimeout?: number }): Promise<{
    url: string;
    pids: number[];
    stop(): Promise<void>;
  }>;
};

/**
 * For a bench of one browser's own work (encoder.ts, guard.ts): a standalone Grid with one
 * session's tab, the page server in a process of its own, and the browser's CPU so far (its
 * ChromeDriver's process tree, from /proc). Everything is stopped by the bench's cleanups.
 */
export async function oneBrowserOnGrid(cleanups: Array<() => Promise<void>>): Promise<{ tab: FloorTab; pages: PageServer; browserCpuMs(): number }> {
  const [grid, pages] = await Promise.all([
    gridModule.startGrid({ mode: 'standalone', maxSessions: 1, port: 0, sessionTimeout: BENCH_GRID_SESSION_TIMEOUT_S }),
    startPageServerProcess(),
  ]);
  cleanups.push(
    () => grid.stop(),
    () => pages.stop(),
  );
  const passThrough = Object.fromEntries(['CHROME_BIN', 'CHROMEDRIVER_BIN', 'CHROME_EXTRA_ARGS'].filter((k) => process.env[k]).map((k) => [k, process.env[k]]));
  const config = loadConfig({ ...passThrough, DATA_DIR: '/tmp', SELENIUM_URL: grid.url, LOG_LEVEL: 'warn' });
  const tab = await openFloorTab(config, 1);
  cleanups.push(() => tab.slot.quit());
  return { tab, pages, browserCpuMs: () => treesUse(descendantsNamed(processes(), grid.pids[0]!, 'chromedriver')).cpuMs };
}

export async function openFloorTab(config: Readonly<Config>, id: number, proxyServer?: string): Promise<FloorTab> {
  const slot = await launchSession(
    {
      seleniumUrl: config.seleniumUrl,
      chromeBin: config.capture.chromeBin,
      chromedriverBin: config.capture.chromedriverBin,
      extraArgs: config.capture.extraArgs,
      gridCdp: config.capture.gridCdp,
    },
    id,
  );
  try {
    return { slot, sessionId: (await openPage(slot, proxyServer)).sessionId };
  } catch (err) {
    await slot.quit();
    throw err;
  }
}

/** Evaluates an expression in the tab's page, awaiting the promise it returns, and gives back its value. */
export async function evaluate<T>(tab: FloorTab, expression: string, what: string): Promise<T> {
  const r = await withTimeout(
    tab.slot.cdp.send<{ result: { value: T }; exceptionDetails?: { text: string } }>(
      'Runtime.evaluate',
      { expression, awaitPromise: true, returnByValue: true },
      tab.sessionId,
    ),
    STEP_TIMEOUT_MS,
    what,
  );
  if (r.exceptionDetails) throw new Error(`floor: ${what}: ${r.exceptionDetails.text}`);
  return r.result.value;
}

/** Resolves as soon as an element matches (at once if one does), on the page's own mutations: the floor does not poll. */
export const selectorPresent = (selector: string) =>
  `new Promise((resolve) => { const sel = ${JSON.stringify(selector)}; if (document.querySelector(sel)) return resolve(true);` +
  ' const mo = new MutationObserver(() => { if (document.querySelector(sel)) { mo.disconnect(); resolve(true); } });' +
  ' mo.observe(document, { childList: true, subtree: true }); })';

export const DOCUMENT_HEIGHT = 'Math.max(document.documentElement.scrollHeight, document.body ? document.body.scrollHeight : 0)';

/**
 * Waits until every image has pixels or has failed (a lazy image not yet started has neither,
 * so it is waited for), then reports how many have pixels and the document's height.
 */
export const IMAGES_SETTLED =
  'Promise.all([...document.images].map((img) => img.complete && img.naturalWidth > 0 ? null : new Promise((resolve) => {' +
  ' img.addEventListener("load", resolve, { once: true }); img.addEventListener("error", resolve, { once: true }); })))' +
  `.then(() => ({ loaded: [...document.images].filter((img) => img.naturalWidth > 0).length, total: document.images.length, height: ${DOCUMENT_HEIGHT} }))`;

/**
 * fullpage's complete work: the viewport grown to the document's height by device metrics (so
 * lazy images start loading), a wait until every image has loaded, the height measured again
 * (and the viewport grown again if it changed). An image that did not load fails the run: a
 * floor that captured blank areas would not be doing the work.
 */
export async function growToFullPage(tab: FloorTab): Promise<void> {
  let height = await evaluate<number>(tab, DOCUMENT_HEIGHT, 'measuring the page');
  for (let round = 0; round < 3; round++) {
    await tab.slot.cdp.send('Emulation.setDeviceMetricsOverride', { width: VIEWPORT.width, height, deviceScaleFactor: 1, mobile: false }, tab.sessionId);
    const settled = await evaluate<{ loaded: number; total: number; height: number }>(tab, IMAGES_SETTLED, 'waiting for the images');
    if (settled.loaded < settled.total) throw new Error(`floor: ${settled.total - settled.loaded} of ${settled.total} images did not load`);
    if (settled.height === height) return;
    height = settled.height;
  }
}

/**
 * One floor iteration: navigate, wait for the load event, the row's complete work, screenshot.
 * Returns the image size. A reused tab goes back to the bench's viewport after a full-page capture.
 */
export async function floorCapture(tab: FloorTab, url: string, work: Work, reused: boolean): Promise<number> {
  const { cdp } = tab.slot;
  const loaded = cdp.waitFor('Page.loadEventFired', tab.sessionId, STEP_TIMEOUT_MS);
  loaded.catch(() => undefined);
  const nav = await cdp.send<{ errorText?: string }>('Page.navigate', { url }, tab.sessionId);
  if (nav.errorText) throw new Error(`floor: navigating to ${url} failed: ${nav.errorText}`);
  await loaded;
  if (work.kind === 'wait_for') await evaluate(tab, selectorPresent(work.selector), `waiting for ${work.selector}`);
  if (work.kind === 'fullpage') await growToFullPage(tab);
  const shot = await cdp.send<{ data: string }>('Page.captureScreenshot', { format: FORMAT, quality: QUALITY }, tab.sessionId);
  if (work.kind === 'fullpage' && reused)
    await cdp.send('Emulation.setDeviceMetricsOverride', { ...VIEWPORT, deviceScaleFactor: 1, mobile: false }, tab.sessionId);
  return Buffer.from(shot.data, 'base64').length;
}

/** One browser of the isolated floor and the page it has prepared for its next capture. */
export interface IsolatedSession {
  slot: BrowserSlot;
  next: Promise<{ contextId: string; sessionId: string }>;
  ready: boolean;
  busy: boolean;
  lastUsed: number;
}

/**
 * (c) The isolated floor: as many browsers as the service has (bench.ts: SNAP_SESSIONS), each with a
 * fresh context and window prepared for its next capture. A capture takes an idle browser
 * whose page is ready, least recently used first; afterwards that browser disposes the used
 * context and prepares the next page in the background. The design's ideal, on the same
 * resources the service gets, with nothing of the service in it.
 */
export class IsolatedPool {
  private readonly sessions: IsolatedSession[];

  constructor(
    slots: BrowserSlot[],
    private readonly proxyServer?: string,
  ) {
    this.sessions = slots.map((slot) => ({ slot, next: openPage(slot, proxyServer), ready: false, busy: false, lastUsed: 0 }));
    for (const s of this.sessions) this.markReadyWhenPrepared(s);
  }

  async capture(url: string, work: Work): Promise<number> {
    const s = this.pick();
    s.busy = true;
    let page: { contextId: string; sessionId: string } | null = null;
    try {
      page = await s.next;
      return await floorCapture({ slot: s.slot, sessionId: page.sessionId }, url, work, false);
    } finally {
      s.busy = false;
      s.lastUsed = performance.now();
      this.recycle(s, page?.contextId ?? null);
    }
  }

  /** Disposes every prepared context (the sessions themselves are quit by their owner). */
  async close(): Promise<void> {
    await Promise.all(
      this.sessions.map(async (s) => {
        const page = await s.next.catch(() => null);
        if (page) await s.slot.cdp.send('Target.disposeBrowserContext', { browserContextId: page.contextId }).catch(() => undefined);
      }),
    );
  }

  private pick(): IsolatedSession {
    let best: IsolatedSession | undefined;
    for (const s of this.sessions) {
      if (s.busy) continue;
      if (!best || (s.ready && !best.ready) || (s.ready === best.ready && s.lastUsed < best.lastUsed)) best = s;
    }
    // Never more workers than sessions (concurrency at most the number of browsers).
    if (!best) throw new Error('isolated floor: more workers than browsers');
    return best;
  }

  /** Disposes the used context, then prepares the next page, in the background. */
  private recycle(s: IsolatedSession, usedContextId: string | null): void {
    const disposed = usedContextId ? s.slot.cdp.send('Target.disposeBrowserContext', { browserContextId: usedContextId }) : Promise.resolve();
    s.next = disposed.then(() => openPage(s.slot, this.proxyServer));
    this.markReadyWhenPrepared(s);
  }

  private markReadyWhenPrepared(s: IsolatedSession): void {
    s.ready = false;
    const next = s.next;
    next.then(
      () => {
        if (s.next === next) s.ready = true;
      },
      () => undefined,
    );
  }
}

export function snapOnce(agent: http.Agent, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, timeout: STEP_TIMEOUT_MS * 2 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('error', reject);
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        if (res.statusCode !== 200 || res.headers['content-type'] !== `image/${FORMAT}`) {
          reject(new Error(`/snap answered ${res.statusCode} ${res.headers['content-type']}: ${body.toString('utf8').slice(0, 300)}`));
          return;
        }
        if (res.headers['x-cache'] !== 'MISS') {
          reject(new Error(`/snap answered X-Cache ${res.headers['x-cache']}; every capture must be fresh`));
          return;
        }
        resolve(body.length);
      });
    });
    req.on('timeout', () => req.destroy(new Error('/snap request timed out')));
    req.on('error', reject);
  });
}

/** A bench account on a system, on a plan whose limits never hold it, and the system's base URL. */
export async function benchAccount({ broker, api }: System): Promise<{ accessToken: string; base: string }> {
  await call(broker, 'billing.upsertPlan', { name: 'bench', paid: true, screenshot_limit: 10_000_000, max_concurrent: 64, max_queued: 64 });
  const { access_token } = await call(broker, 'billing.createAccount', { plan: 'bench' });
  return { accessToken: access_token, base: `http://127.0.0.1:${api?.port()}` };
}
