/**
 * The quality corpus's runner: serves the pages (two local sites and the consent fixtures,
 * all on 127.0.0.1), starts the capture system on the shared Grid, takes each page's /snap
 * and runs its check. Used by quality.test.ts (mocha, one test per page) and run.ts
 * (`npm run quality`).
 *
 * Names: the pages are at http://www.quality.test:<port>/<name>/ and the second site at
 * http://embed.quality-cdn.test:<port>/<name>/ (one server, answering by Host). The egress
 * gateway resolves them with the test DNS server, which must be running
 * (TEST_DEFAULTS.EGRESS_DNS_SERVERS: the root hooks start it under mocha, run.ts itself),
 * and Chromium maps them to 127.0.0.1 too (--host-resolver-rules): no name is ever looked up
 * outside this machine.
 */
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { FIXTURE_HOSTS, type BlockingFixtures, startBlockingFixtures } from '../capture/page/consent-fixtures';
import { TEST_DEFAULTS } from '../support/backends';
import { startCaptureSystem } from '../support/capture-helpers';
import { qs } from '../support/http';
import { type LocalServer, serveLocally } from '../support/local-server';
import { sharedAsset } from './assets';
import type { Answer, Origins, QualityPage, Route, RouteAnswer, RouteRequest, SnapParam } from './page';
import { decodePicture, type Picture } from './picture';

export const SITE_HOST = 'www.quality.test';
export const OTHER_HOST = 'embed.quality-cdn.test';

/** Every page's /snap gets these unless its params say otherwise: no wait, a small viewport, lossless pixels. */
export const SNAP_DEFAULTS: Record<string, SnapParam> = { wait: 0, ttl: 0, page_width: 800, page_height: 600, image_format: 'png' };

/** Captures at once (and browser sessions of the system): the shared Grid has 5, the machine 2 cores. */
export const DEFAULT_CONCURRENCY = 3;

/** The service's own limit on one capture (CAPTURE_TIMEOUT_MS); the runner gives up on an answer a little after it. */
const CAPTURE_TIMEOUT_MS = 40_000;

export interface PageResult {
  name: string;
  ok: boolean;
  /** Time of the /snap and its check (ms). */
  ms: number;
  /** Why it failed ('' when it passed). */
  why: string;
  /** The page's knownGap, when it failed. */
  knownGap?: string;
}

export interface Corpus {
  origins: Origins;
  /** The /snap of one page and its check. */
  run(page: QualityPage): Promise<PageResult>;
  /** Queues the pages, `concurrency` running at once: a result per page, each as it comes. */
  schedule(pages: readonly QualityPage[]): Array<Promise<PageResult>>;
  /** Every page, `concurrency` at once; onResult is told each result as it comes. */
  runAll(pages: readonly QualityPage[], onResult?: (r: PageResult) => void): Promise<PageResult[]>;
  stop(): Promise<void>;
}

const NAME = /^[a-z0-9][a-z0-9-]*$/;

/** Refuses a corpus with an unusable or repeated name. */
export function checkPages(pages: readonly QualityPage[]): void {
  const seen = new Set<string>();
  for (const p of pages) {
    if (!NAME.test(p.name)) throw new Error(`quality page "${p.name}": a name is lower case letters, digits and dashes`);
    if (seen.has(p.name)) throw new Error(`quality page "${p.name}" is listed twice`);
    seen.add(p.name);
  }
}

/** The Chromium flag mapping the corpus's names (and the consent fixtures') to 127.0.0.1 (one flag: Chromium keeps the last). */
export function corpusResolverRules(): string {
  return `--host-resolver-rules=${[SITE_HOST, OTHER_HOST, ...FIXTURE_HOSTS].map((h) => `MAP ${h} 127.0.0.1`).join(', ')}`;
}

async function answerRoute(route: Route | undefined, r: RouteRequest): Promise<RouteAnswer | undefined> {
  if (route === undefined) return undefined;
  return typeof route === 'function' ? await route(r) : route;
}

/** The one server under both sites: by Host, then /_/ (shared assets) or /<page>/<path>. */
async function serveSites(pages: readonly QualityPage[], origins: () => Origins): Promise<LocalServer> {
  const byName = new Map(pages.map((p) => [p.name, p]));
  const send = (res: http.ServerResponse, a: RouteAnswer | undefined) => {
    if (!a) {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
      return;
    }
    if (a.never === 'silent') return;
    const go = () => {
      if (res.destroyed) return;
      res.writeHead(a.status ?? 200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...(a.headers ?? {}) });
      if (a.never === 'open') res.write(a.body);
      else res.end(a.body);
    };
    if (a.delayMs) setTimeout(go, a.delayMs);
    else go();
  };
  return serveLocally((req, res) => {
    const host = (req.headers.host ?? '').replace(/:\d+$/, '');
    if (process.env.QUALITY_LOG_REQUESTS) console.error(`[quality] ${new Date().toISOString().slice(11, 23)} ${req.method} ${host}${req.url}`);
    const url = new URL(req.url ?? '/', 'http://x');
    const [, folder = '', ...rest] = url.pathname.split('/');
    const path = `/${rest.join('/')}`;
    const r = { path, query: url.searchParams, origins: origins(), req };
    let answer: Promise<RouteAnswer | undefined>;
    if (host !== SITE_HOST && host !== OTHER_HOST && host !== '127.0.0.1') answer = Promise.resolve(undefined);
    else if (folder === '_') answer = sharedAsset(r);
    else {
      const page = byName.get(folder);
      const routes = host === OTHER_HOST ? page?.otherRoutes : page?.routes;
      answer = answerRoute(routes?.[path], r);
    }
    // The request's body is not read (no page posts); its end is what lets the answer go.
    req.resume();
    answer.then(
      (a) => send(res, a),
      (err: Error) => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(`route failed: ${err.message}`);
      },
    );
  });
}

/** QUALITY_SAVE_DIR: each page's answer is written there as <name>.<png|jpeg|webp|pdf|json|txt>, to look at. */
function saveAnswer(dir: string, name: string, contentType: string, raw: Buffer): void {
  const ext = /^image\/(\w+)/.exec(contentType)?.[1] ?? (contentType.includes('pdf') ? 'pdf' : contentType.includes('json') ? 'json' : 'txt');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, `${name}.${ext}`), raw);
}

function answerOf(status: number, headers: Headers, raw: Buffer, ms: number): Answer {
  const contentType = headers.get('content-type') ?? '';
  let body: Record<string, unknown> | null = null;
  if (contentType.includes('json')) {
    try {
      body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
    } catch {
      body = null;
    }
  }
  let decoded: Promise<Picture> | null = null;
  return {
    status,
    contentType,
    body,
    raw,
    ms,
    picture() {
      if (status !== 200 || !contentType.startsWith('image/')) {
        const said = body ? JSON.stringify(body).slice(0, 300) : raw.toString('utf8').slice(0, 300);
        return Promise.reject(new Error(`expected an image, got ${status} ${contentType}: ${said}`));
      }
      decoded ??= decodePicture(raw);
      return decoded;
    },
  };
}

/** Serves the pages and starts the capture system (CAPTURE_SESSIONS = concurrency; `env` adds or overrides its settings). */
export async function startCorpus(pages: readonly QualityPage[], opts: { concurrency?: number; env?: Record<string, string> } = {}): Promise<Corpus> {
  checkPages(pages);
  if (!TEST_DEFAULTS.EGRESS_DNS_SERVERS) {
    throw new Error('the quality corpus needs the test DNS server (TEST_DEFAULTS.EGRESS_DNS_SERVERS): start it first (startTestDns), as the root hooks do');
  }
  const concurrency = opts.concurrency ?? DEFAULT_CONCURRENCY;
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    for (const fn of stops.splice(0).reverse()) await fn().catch(() => undefined);
  };
  try {
    let origins: Origins | null = null;
    const sites = await serveSites(pages, () => origins!);
    stops.push(() => sites.stop());
    const consent: BlockingFixtures = await startBlockingFixtures();
    stops.push(() => consent.stop());
    origins = { site: `http://${SITE_HOST}:${sites.port}`, other: `http://${OTHER_HOST}:${sites.port}`, consent: (host, path) => consent.url(host, path) };
    const { sys, token, cleanup } = await startCaptureSystem({
      ALLOW_PRIVATE_NETWORKS: 'true',
      CAPTURE_SESSIONS: String(concurrency),
      CAPTURE_TIMEOUT_MS: String(CAPTURE_TIMEOUT_MS),
      // A renderer's JavaScript heap capped at 1 GB, below Chromium's own cap: a page that
      // allocates without end crashes sooner (alone on a slow two-core machine, 11.5 s with this
      // cap against 25 s without; under the whole suite's load, more than 25 s). No page here
      // holds more than 320 MB.
      CHROME_EXTRA_ARGS: JSON.stringify([corpusResolverRules(), '--js-flags=--max-old-space-size=1024']),
      ...opts.env,
    });
    stops.push(cleanup);
    const o = origins;

    const run = async (page: QualityPage): Promise<PageResult> => {
      const folder = `${o.site}/${page.name}/`;
      const started = performance.now();
      const done = (why: string): PageResult => ({
        name: page.name,
        ok: why === '',
        ms: Math.round(performance.now() - started),
        why,
        ...(why && page.knownGap ? { knownGap: page.knownGap } : {}),
      });
      try {
        const params: Record<string, SnapParam> = { ...SNAP_DEFAULTS };
        for (const [k, v] of Object.entries(page.params)) if (v !== undefined && k !== 'url') params[k] = typeof v === 'function' ? v(o, folder) : v;
        const url = page.params.url;
        params.url =
          typeof url === 'function'
            ? url(o, folder)
            : url === undefined
              ? folder
              : /^https?:/.test(url)
                ? url
                : new URL(url.replace(/^\//, ''), folder).toString();
        const res = await fetch(`${sys.base}/snap?${qs({ access_token: token, ...params })}`, { signal: AbortSignal.timeout(CAPTURE_TIMEOUT_MS + 30_000) });
        const raw = Buffer.from(await res.arrayBuffer());
        if (process.env.QUALITY_SAVE_DIR) saveAnswer(process.env.QUALITY_SAVE_DIR, page.name, res.headers.get('content-type') ?? '', raw);
        await page.check(answerOf(res.status, res.headers, raw, Math.round(performance.now() - started)));
        return done('');
      } catch (err) {
        return done((err as Error).message || String(err));
      }
    };

    // Pages waiting for a turn, in order; `concurrency` of them run at once.
    const queue: Array<() => void> = [];
    let running = 0;
    const schedule = (page: QualityPage) =>
      new Promise<PageResult>((resolve) => {
        queue.push(() => {
          running++;
          void run(page).then((r) => {
            running--;
            queue.shift()?.();
            resolve(r);
          });
        });
        if (running < concurrency) queue.shift()?.();
      });

    return {
      origins: o,
      run,
      schedule: (list) => list.map(schedule),
      runAll: (list, onResult) =>
        Promise.all(
          list.map(async (page) => {
            const r = await schedule(page);
            onResult?.(r);
            return r;
          }),
        ),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
