/**
 * Request blocking for captures: ads (`no_ads`, EasyList), trackers (`no_tracking`,
 * EasyPrivacy) and third-party scripts (`disable_third_party_js`).
 *
 * The lists are the ones Debian ships in `webext-ublock-origin-chromium`, read from disk:
 * nothing is fetched at run time. Each list is parsed once per process by
 * @ghostery/adblocker, in a worker thread so the event loop (and the captures already
 * running) never stalls on it, and the compiled engine is cached in os.tmpdir() keyed by
 * the list's mtime and size, so a restarted process loads it in milliseconds. The lists stay
 * in separate engines: `no_ads` consults EasyList only and `no_tracking` EasyPrivacy only.
 *
 * Requests are matched as the page makes them (CDP Fetch, see request-guard.ts) and blocked
 * ones fail with BlockedByClient. After load, the lists' element hiding rules (`##`
 * filters: generic ones, the page's hostname's, and those keyed on the classes and ids
 * present) become a stylesheet, and images, frames and media whose request was blocked are
 * collapsed, as uBlock Origin does (no broken-image icon, no error page in an ad slot).
 * Scriptlets (`##+js`) and procedural selectors are not applied.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { ENGINE_VERSION, FiltersEngine, Request, type RequestType } from '@ghostery/adblocker';
import { getDomain } from 'tldts';
import { serviceError } from '../../shared/errors';
import { type PageSession, inPageCall, insertStyle } from './page-session';

export const LIST_PACKAGE = 'webext-ublock-origin-chromium';
const LIST_DIR = '/usr/share/chromium/extensions/ublock-origin/assets/thirdparties/easylist';

export interface ListPaths {
  easylist: string;
  easyprivacy: string;
}

export const DEFAULT_LISTS: ListPaths = {
  easylist: path.join(LIST_DIR, 'easylist.txt'),
  easyprivacy: path.join(LIST_DIR, 'easyprivacy.txt'),
};

export interface BlockOptions {
  no_ads?: boolean;
  no_tracking?: boolean;
  disable_third_party_js?: boolean;
}

export interface BlockRequest {
  url: string;
  /** The URL of the page (its main frame) making the request. */
  pageUrl: string;
  /** CDP Network.ResourceType: Document, Script, Image, XHR, ... */
  resourceType: string;
  /** For a Document: true for the page's own navigation, false for an iframe. */
  isMainFrame?: boolean;
}

export interface BlockDecision {
  block: boolean;
  reason?: string;
}

/** Whether any option needs requests to be checked against the blocker. */
export function wantsBlocking(o: BlockOptions): boolean {
  return Boolean(o.no_ads || o.no_tracking || o.disable_third_party_js);
}

/** CDP resource types in the adblocker's (webRequest) vocabulary. */
const REQUEST_TYPES: Record<string, RequestType> = {
  Document: 'sub_frame',
  Stylesheet: 'stylesheet',
  Image: 'image',
  Media: 'media',
  Font: 'font',
  Script: 'script',
  TextTrack: 'other',
  XHR: 'xhr',
  Fetch: 'xhr',
  Prefetch: 'other',
  EventSource: 'other',
  WebSocket: 'websocket',
  Manifest: 'other',
  SignedExchange: 'other',
  Ping: 'ping',
  CSPViolationReport: 'csp_report',
  Preflight: 'preflight',
  Other: 'other',
};

function hostnameOf(url: string): string | null {
  try {
    const u = new URL(url);
    return u.protocol === 'http:' || u.protocol === 'https:' || u.protocol === 'ws:' || u.protocol === 'wss:' ? u.hostname.replace(/^\[|\]$/g, '') : null;
  } catch {
    return null;
  }
}

/**
 * The registrable domain (eTLD+1, private suffixes such as github.io included) of a host;
 * the host itself for IP addresses and single-label names.
 */
export function siteOf(hostname: string): string {
  return getDomain(hostname, { allowPrivateDomains: true }) ?? hostname.toLowerCase();
}

/** True when url belongs to another registrable domain than pageUrl (both http(s)). */
export function isThirdParty(url: string, pageUrl: string): boolean {
  const host = hostnameOf(url);
  const pageHost = hostnameOf(pageUrl);
  if (!host || !pageHost) return false;
  return siteOf(host) !== siteOf(pageHost);
}

/**
 * Collects the page's classes, ids and link targets (what generic hiding rules key on), and
 * the URLs of its images, frames, media and plugins (to collapse those that were blocked).
 */
export const DOM_FEATURES_EXPRESSION = `(() => {
  const classes = new Set(), ids = new Set(), hrefs = new Set(), resources = new Map();
  const all = document.querySelectorAll('[id],[class],a[href]');
  for (let i = 0; i < all.length && i < 50000; i++) {
    const el = all[i];
    if (el.id) ids.add(el.id);
    const cl = el.classList;
    if (cl) for (let j = 0; j < cl.length; j++) classes.add(cl[j]);
    if (el.tagName === 'A' && el.href) hrefs.add(el.href);
  }
  const types = { IMG: 'Image', IFRAME: 'Document', FRAME: 'Document', VIDEO: 'Media', AUDIO: 'Media', EMBED: 'Other', OBJECT: 'Other' };
  for (const el of document.querySelectorAll('img,iframe,frame,video,audio,embed,object')) {
    const url = el.currentSrc || el.src || el.data;
    if (typeof url === 'string' && /^https?:/.test(url) && resources.size < 5000) resources.set(url, types[el.tagName]);
  }
  const cap = (s) => Array.from(s).slice(0, 20000);
  return { classes: cap(classes), ids: cap(ids), hrefs: cap(hrefs), resources: Array.from(resources, ([url, type]) => ({ url, type })) };
})()`;

export interface DomFeatures {
  classes?: string[];
  ids?: string[];
  hrefs?: string[];
}

/**
 * Where a capture gets the blocker, when its options ask for blocking: built on first use,
 * as the lists take seconds to parse the first time (a BlockerLoader, owned by the service).
 */
export type BlockerSource = () => Promise<PageBlocker>;

/** Builds the blocker on first use and keeps it; a failed build is retried by the next capture that needs it. */
export class BlockerLoader {
  private building: Promise<PageBlocker> | null = null;

  constructor(
    private lists: ListPaths = DEFAULT_LISTS,
    private cacheDir: string = os.tmpdir(),
  ) {}

  /** Reads other lists (or keeps its cache elsewhere) from now on: the next get() builds anew. */
  use(opts: { lists?: ListPaths; cacheDir?: string }): void {
    this.lists = opts.lists ?? DEFAULT_LISTS;
    this.cacheDir = opts.cacheDir ?? os.tmpdir();
    this.building = null;
  }

  get(): Promise<PageBlocker> {
    if (!this.building) {
      const p = PageBlocker.load(this.lists, this.cacheDir);
      this.building = p;
      p.catch(() => {
        if (this.building === p) this.building = null;
      });
    }
    return this.building;
  }
}

export class PageBlocker {
  private constructor(
    private readonly ads: FiltersEngine,
    private readonly privacy: FiltersEngine,
  ) {}

  /** Builds a blocker from list files (from the cache when the lists have not changed). */
  static async load(lists: ListPaths = DEFAULT_LISTS, cacheDir: string = os.tmpdir()): Promise<PageBlocker> {
    const [ads, privacy] = await Promise.all([loadEngine('easylist', lists.easylist, cacheDir), loadEngine('easyprivacy', lists.easyprivacy, cacheDir)]);
    return new PageBlocker(ads, privacy);
  }

  /** Whether a request the page makes is to be discarded, and why. */
  decide(req: BlockRequest, o: BlockOptions): BlockDecision {
    const isMainFrame = req.resourceType === 'Document' && (req.isMainFrame ?? req.url === req.pageUrl);
    // The page itself is always loaded: the caller asked for it.
    if (isMainFrame) return { block: false };
    if (o.disable_third_party_js && req.resourceType === 'Script' && isThirdParty(req.url, req.pageUrl)) {
      return { block: true, reason: 'third-party script' };
    }
    if (!o.no_ads && !o.no_tracking) return { block: false };
    if (!hostnameOf(req.url)) return { block: false };
    const request = Request.fromRawDetails({ url: req.url, sourceUrl: req.pageUrl, type: REQUEST_TYPES[req.resourceType] ?? 'other' });
    if (o.no_ads) {
      const r = this.ads.match(request);
      if (r.match || r.redirect) return { block: true, reason: `EasyList ${r.filter?.toString() ?? ''}`.trim() };
    }
    if (o.no_tracking) {
      const r = this.privacy.match(request);
      if (r.match || r.redirect) return { block: true, reason: `EasyPrivacy ${r.filter?.toString() ?? ''}`.trim() };
    }
    return { block: false };
  }

  /**
   * The element hiding stylesheet for a page: the list's generic rules, the rules for the
   * page's hostname and, given the page's classes/ids/links, the generic rules keyed on them.
   * Scriptlets and procedural (extended) selectors are not applied.
   */
  cosmeticCss(pageUrl: string, o: BlockOptions, dom: DomFeatures = {}): string {
    const hostname = hostnameOf(pageUrl);
    if (!hostname) return '';
    const engines = [...(o.no_ads ? [this.ads] : []), ...(o.no_tracking ? [this.privacy] : [])];
    const css: string[] = [];
    for (const engine of engines) {
      const { styles } = engine.getCosmeticsFilters({
        url: pageUrl,
        hostname,
        domain: siteOf(hostname),
        classes: dom.classes ?? [],
        ids: dom.ids ?? [],
        hrefs: dom.hrefs ?? [],
        getInjectionRules: false,
        getExtendedRules: false,
      });
      if (styles) css.push(styles);
    }
    return css.join('\n');
  }
}

/**
 * Hides what the lists' element hiding rules match on the page as it is now (no_ads with
 * EasyList, no_tracking with EasyPrivacy), and collapses the images, frames and media whose
 * request was blocked (they would show a broken-image icon or an error page otherwise).
 * Returns how many CSS characters were injected and how many elements were collapsed.
 */
export async function injectCosmetics(page: PageSession, blocker: PageBlocker, o: BlockOptions): Promise<{ css: number; collapsed: number }> {
  if (!o.no_ads && !o.no_tracking) return { css: 0, collapsed: 0 };
  const { url, dom } = await page.evaluate<{ url: string; dom: DomFeatures & { resources: Array<{ url: string; type: string }> } }>(
    `({ url: location.href, dom: ${DOM_FEATURES_EXPRESSION} })`,
    false,
  );
  const css = blocker.cosmeticCss(url, o, dom);
  const blocked = dom.resources
    .filter((r) => blocker.decide({ url: r.url, pageUrl: url, resourceType: r.type, isMainFrame: false }, o).block)
    .map((r) => r.url);
  if (!css && blocked.length === 0) return { css: 0, collapsed: 0 };
  const collapsed = await page.evaluate<number>(
    `(() => {
      ${css ? inPageCall(insertStyle, css, 'data-injected', 'no_ads') : ''};
      const blocked = new Set(${JSON.stringify(blocked)});
      let n = 0;
      for (const el of document.querySelectorAll('img,iframe,frame,video,audio,embed,object')) {
        if (blocked.has(el.currentSrc || el.src || el.data)) { el.style.setProperty('display', 'none', 'important'); n++; }
      }
      return n;
    })()`,
    false,
  );
  return { css: css.length, collapsed };
}

function missingList(file: string, err: NodeJS.ErrnoException): Error {
  return serviceError(
    'internal_error',
    `no_ads and no_tracking need the filter list ${file}, which could not be read (${err.code ?? err.message}); install the Debian package ${LIST_PACKAGE} ` +
      `on the capture host (apt-get install ${LIST_PACKAGE}).`,
  );
}

async function loadEngine(name: string, file: string, cacheDir: string): Promise<FiltersEngine> {
  let stat: fs.Stats;
  try {
    stat = await fs.promises.stat(file);
  } catch (err) {
    throw missingList(file, err as NodeJS.ErrnoException);
  }
  const prefix = `snap-filters-${name}-`;
  const cacheFile = path.join(cacheDir, `${prefix}${ENGINE_VERSION}-${Math.trunc(stat.mtimeMs)}-${stat.size}.bin`);
  try {
    return FiltersEngine.deserialize(new Uint8Array(await fs.promises.readFile(cacheFile)));
  } catch {
    // No cache yet, or one from another version of the adblocker: parse the list.
  }
  let serialized: Uint8Array;
  try {
    serialized = await parseInWorker(file);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT' || e.code === 'EACCES') throw missingList(file, e);
    throw err;
  }
  const engine = FiltersEngine.deserialize(serialized);
  void writeCache(cacheDir, prefix, cacheFile, serialized);
  return engine;
}

/** Writes the compiled engine atomically and removes caches of older list versions. */
async function writeCache(cacheDir: string, prefix: string, cacheFile: string, data: Uint8Array): Promise<void> {
  const tmp = `${cacheFile}.${process.pid}.${Date.now()}.tmp`;
  try {
    await fs.promises.writeFile(tmp, data);
    await fs.promises.rename(tmp, cacheFile);
    for (const f of await fs.promises.readdir(cacheDir)) {
      if (f.startsWith(prefix) && f.endsWith('.bin') && path.join(cacheDir, f) !== cacheFile) await fs.promises.rm(path.join(cacheDir, f), { force: true });
    }
  } catch {
    await fs.promises.rm(tmp, { force: true }).catch(() => undefined);
  }
}

/** Parses a list file into a serialized engine on a worker thread (about 1-2 s of CPU). */
function parseInWorker(file: string): Promise<Uint8Array> {
  const code = `
    const { parentPort, workerData } = require('node:worker_threads');
    const fs = require('node:fs');
    const { FiltersEngine } = require(workerData.module);
    try {
      const engine = FiltersEngine.parse(fs.readFileSync(workerData.file, 'utf8'), {
        loadCosmeticFilters: true, loadNetworkFilters: true, enableHtmlFiltering: false,
      });
      const bytes = engine.serialize();
      parentPort.postMessage({ bytes }, [bytes.buffer]);
    } catch (err) {
      parentPort.postMessage({ error: String(err && err.message || err), code: err && err.code });
    }`;
  return new Promise((resolve, reject) => {
    const worker = new Worker(code, { eval: true, workerData: { file, module: require.resolve('@ghostery/adblocker') } });
    let settled = false;
    worker.once('message', (msg: { bytes?: Uint8Array; error?: string; code?: string }) => {
      settled = true;
      if (msg.bytes) resolve(msg.bytes);
      else reject(Object.assign(new Error(msg.error ?? 'the filter list could not be parsed'), { code: msg.code }));
      void worker.terminate();
    });
    worker.once('error', (err) => {
      if (!settled) reject(err);
    });
    worker.once('exit', (exitCode) => {
      if (!settled) reject(new Error(`the filter list parser stopped (exit code ${exitCode})`));
    });
  });
}
