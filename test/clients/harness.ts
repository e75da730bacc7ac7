/**
 * What the client replay suites share (test/clients/*.test.ts): a running system with every
 * service and real browsers, and the edges an official client's calls reach past it, all on
 * 127.0.0.1: a target site that records each request's headers and cookies, a real-location
 * upstream proxy (proxy-chain) named by the catalogue, the service's own AI on a local
 * stand-in speaking OpenAI's wire format, and a webhook receiver for change alerts.
 *
 * The site's page carries the elements the n8n node's example actions name
 * (#some-element-on-the-page, #searchInput), so a request sent with every option added and
 * left at its example runs through, as it would against a site that has them. /quadrants
 * fills the viewport with four known colours, for reading a capture's pixels.
 */
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { Server as ProxyServer } from 'proxy-chain';
import { type Receiver, startReceiver } from '../notifier/receivers';
import { type FakeProvider, startFakeProvider } from '../support/ai-providers';
import { tempDir } from '../support/backends';
import { startCaptureSystem } from '../support/capture-helpers';
import { type HttpAnswer, jobFinished, request } from '../support/http';
import { type LocalServer, serveLocally } from '../support/local-server';
import type { RunningSystem } from '../support/system';

/** A request the target site saw. */
export interface SiteRequest {
  path: string;
  query: string;
  headers: http.IncomingHttpHeaders;
}

/** Real-location names the catalogue serves in these suites (each through the local upstream). */
export const LOCATIONS = ['London', 'New York', 'USA'] as const;

export interface ClientWorld {
  readonly sys: RunningSystem;
  readonly base: string;
  readonly key: string;
  readonly accountId: string;
  /** The target site: http://127.0.0.1:port, pages /page, /price and /quadrants. */
  readonly site: LocalServer & { seen: SiteRequest[] };
  /** The proxy user names the real-location upstream saw (one per connection). */
  readonly upstreamUsers: string[];
  readonly ai: FakeProvider;
  readonly receiver: Receiver;
  /** The requests the site saw for `path`. */
  seenAt(path: string): SiteRequest[];
  /** GET /jobs/:id until the job ends. */
  finished(jobId: string): Promise<HttpAnswer>;
  /** A stored file (direct_link), as bytes. */
  file(link: string): Promise<Buffer>;
}

const page = (price: number) =>
  '<!doctype html><html><head><meta charset="utf-8"><title>Client site</title><style>html,body{margin:0}</style></head><body>' +
  '<h1>Client site</h1><button id="some-element-on-the-page">Go</button><input id="searchInput"><button id="login">Log in</button>' +
  `<p id="price">${price} EUR</p><p id="cookies"></p><script>document.getElementById("cookies").textContent = "cookies:" + document.cookie;</script>` +
  '</body></html>';

/** /quadrants: the viewport in four solid colours (top left, top right, bottom left, bottom right), for reading a capture's pixels. */
export const QUADRANTS = [
  [255, 0, 0],
  [0, 160, 0],
  [0, 0, 255],
  [255, 200, 0],
] as const;
const quadrantsPage = () =>
  '<!doctype html><html><head><meta charset="utf-8"><style>html,body{margin:0}div{position:fixed;width:50vw;height:50vh}</style></head><body>' +
  ['left:0;top:0', 'left:50vw;top:0', 'left:0;top:50vh', 'left:50vw;top:50vh']
    .map((at, i) => `<div style="${at};background:rgb(${QUADRANTS[i]?.join(',')})"></div>`)
    .join('') +
  '</body></html>';

export interface ClientWorldOptions {
  /** Settings added to the system's (LOG_LEVEL, say). */
  env?: Record<string, string>;
  /** Where the system's log lines go (default: the test process's stdout). */
  logStream?: { write(line: string): unknown };
}

/** Registers the world's before/after hooks in the calling describe block. */
export function clientWorld(options: ClientWorldOptions = {}): ClientWorld {
  let w: Omit<ClientWorld, 'seenAt' | 'finished' | 'file'> | null = null;
  const stops: Array<() => Promise<void>> = [];
  const dir = tempDir('clients-');

  before(async function () {
    this.timeout(120_000);
    const seen: SiteRequest[] = [];
    let price = 100;
    const site = await serveLocally((req, res) => {
      const [p = '', query = ''] = (req.url ?? '').split('?');
      seen.push({ path: p, query, headers: req.headers });
      res.setHeader('content-type', 'text/html; charset=utf-8');
      res.setHeader('cache-control', 'no-store');
      // /price changes at every visit, so each capture of it reads a new value.
      res.end(p === '/quadrants' ? quadrantsPage() : page(p === '/price' ? price++ : 100));
    });
    stops.push(() => site.stop());
    const upstreamUsers: string[] = [];
    const upstream = new ProxyServer({
      port: 0,
      host: '127.0.0.1',
      prepareRequestFunction: ({ username, password }) => {
        upstreamUsers.push(username);
        return { requestAuthentication: password !== 'upstream-secret' };
      },
    });
    await upstream.listen();
    stops.push(() => upstream.close(true));
    const catalogue = path.join(dir, 'locations.json');
    const via = (user: string) => ({ proxy: `http://${user}-session-{session}:upstream-secret@127.0.0.1:${upstream.port}` });
    fs.writeFileSync(catalogue, JSON.stringify({ London: via('gb-london'), 'New York': via('us-newyork'), USA: { pick: ['New York'] } }));
    const ai = await startFakeProvider('openai');
    stops.push(() => ai.stop());
    const receiver = await startReceiver();
    stops.push(() => receiver.stop());
    const started = await startCaptureSystem(
      {
        ALLOW_PRIVATE_NETWORKS: 'true',
        EGRESS_GATEWAY: 'on',
        CAPTURE_SESSIONS: '2',
        CAPTURE_TIMEOUT_MS: '20000',
        REAL_LOCATIONS_FILE: catalogue,
        SERVICE_AI_PROVIDER: 'openai',
        SERVICE_AI_BASE_URL: ai.baseUrl,
        SERVICE_AI_API_KEY: ai.key,
        SERVICE_AI_MODEL: 'gpt-4o-mini',
        ...options.env,
      },
      options.logStream ? { logStream: options.logStream } : {},
    );
    stops.unshift(() => started.cleanup());
    const { accountId } = await started.sys.broker.call<{ accountId: string }, { token: string }>('billing.authenticate', { token: started.token });
    w = { sys: started.sys, base: started.sys.base, key: started.token, accountId, site: { ...site, seen }, upstreamUsers, ai, receiver };
  });
  after(async function () {
    this.timeout(60_000);
    for (const stop of stops.splice(0)) await stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const get = () => {
    if (!w) throw new Error('clientWorld: used before its before hook ran');
    return w;
  };
  return {
    get sys() {
      return get().sys;
    },
    get base() {
      return get().base;
    },
    get key() {
      return get().key;
    },
    get accountId() {
      return get().accountId;
    },
    get site() {
      return get().site;
    },
    get upstreamUsers() {
      return get().upstreamUsers;
    },
    get ai() {
      return get().ai;
    },
    get receiver() {
      return get().receiver;
    },
    seenAt: (p) => get().site.seen.filter((s) => s.path === p),
    finished: (jobId) => jobFinished(get().base, get().key, jobId),
    file: async (link) => Buffer.from(await (await fetch(link)).arrayBuffer()),
  };
}

/** Sends exactly `target` (a path with its query, as the client puts it on the wire) with the client's headers and body bytes. */
export async function send(base: string, method: string, target: string, headers: Record<string, string>, body?: string): Promise<HttpAnswer> {
  const res = await fetch(base + target, { method, headers, ...(body !== undefined ? { body } : {}) });
  const raw = Buffer.from(await res.arrayBuffer());
  const json = (res.headers.get('content-type') ?? '').includes('json')
    ? (JSON.parse(raw.toString('utf8')) as Record<string, unknown>)
    : (null as unknown as Record<string, unknown>);
  return { status: res.status, headers: res.headers, body: json, raw };
}

export { request };
