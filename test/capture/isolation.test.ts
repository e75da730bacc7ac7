/**
 * The leak probe (DESIGN section 4: no browser state crosses captures or accounts). A page
 * writes every kind of state a site can leave in a browser: cookies (from a header and from
 * script), local and session storage, IndexedDB, a service worker, Cache Storage, a resource
 * in the HTTP cache, and a permission (geolocation, granted by the capture's own latitude and
 * longitude). It reads them back in the same capture, so the probe is seen to find each of
 * them. Then other captures on the same browser (one browser, so they share it), of the same
 * account and of another, read the same site: they must find none of it.
 */
import { expect } from 'chai';
import type http from 'node:http';
import { startCaptureSystem } from '../support/capture-helpers';
import { qs, request } from '../support/http';
import { type LocalServer, serveLocally } from '../support/local-server';

/** What a page found, in the same order for the write and the read. */
interface Found {
  cookie: string;
  local: string | null;
  session: string | null;
  idb: string[];
  serviceWorkers: number;
  caches: string[];
  geolocation: string;
}

/** Reads every kind of state, then (for the write) the HTTP-cached resource twice; writes the result in #done. */
const READ = `
async function found() {
  return {
    cookie: document.cookie,
    local: localStorage.getItem('leak'),
    session: sessionStorage.getItem('leak'),
    idb: (await indexedDB.databases()).map((d) => d.name),
    serviceWorkers: (await navigator.serviceWorker.getRegistrations()).length,
    caches: await caches.keys(),
    geolocation: (await navigator.permissions.query({ name: 'geolocation' })).state,
  };
}
function report(value) {
  const pre = document.createElement('pre');
  pre.id = 'done';
  pre.textContent = JSON.stringify(value);
  document.body.appendChild(pre);
}`;

const WRITE_PAGE = `<!doctype html><title>write</title><body><script>${READ}
(async () => {
  document.cookie = 'script_cookie=1; path=/; max-age=3600';
  localStorage.setItem('leak', 'local');
  sessionStorage.setItem('leak', 'session');
  await new Promise((resolve, reject) => {
    const open = indexedDB.open('leakdb', 1);
    open.onupgradeneeded = () => open.result.createObjectStore('s');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const tx = open.result.transaction('s', 'readwrite');
      tx.objectStore('s').put('idb', 'k');
      tx.oncomplete = () => { open.result.close(); resolve(); };
      tx.onerror = () => reject(tx.error);
    };
  });
  await navigator.serviceWorker.register('/sw.js');
  await navigator.serviceWorker.ready;
  await (await caches.open('leakcache')).put('/in-cache-storage', new Response('cache storage'));
  await fetch('/http-cached.js');
  await fetch('/http-cached.js');
  report(await found());
})().catch((e) => report({ error: String(e) }));
</script></body>`;

const READ_PAGE = `<!doctype html><title>read</title><body><script>${READ}
(async () => {
  await fetch('/http-cached.js');
  report(await found());
})().catch((e) => report({ error: String(e) }));
</script></body>`;

describe('isolation: no browser state crosses captures or accounts (the leak probe)', function () {
  this.timeout(120_000);
  let site: LocalServer;
  /** Requests the site saw: path and the Cookie header. */
  const seen: Array<{ path: string; cookie: string | undefined }> = [];
  let sys: Awaited<ReturnType<typeof startCaptureSystem>>;
  let other = '';

  before(async () => {
    site = await serveLocally((req: http.IncomingMessage, res: http.ServerResponse) => {
      const path = (req.url ?? '').split('?')[0] ?? '';
      seen.push({ path, cookie: req.headers.cookie });
      if (path === '/sw.js') {
        res.setHeader('content-type', 'text/javascript');
        res.end("self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));");
      } else if (path === '/http-cached.js') {
        res.setHeader('content-type', 'text/javascript');
        res.setHeader('cache-control', 'public, max-age=3600');
        res.end('// cached');
      } else {
        res.setHeader('content-type', 'text/html');
        res.setHeader('cache-control', 'no-store');
        if (path === '/write') res.setHeader('set-cookie', 'header_cookie=1; Path=/; Max-Age=3600');
        res.end(path === '/write' ? WRITE_PAGE : READ_PAGE);
      }
    });
    // One browser: every capture runs in it, one after the other.
    sys = await startCaptureSystem({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1' });
    other = (await sys.sys.account('big')).access_token;
  });
  after(async () => {
    await sys?.cleanup();
    await site?.stop();
  });

  /** A capture of the site's page (a secure origin: *.localhost), as `key`'s; what the page found. */
  const capture = async (page: 'write' | 'read', key: string, extra: Record<string, string | number | boolean> = {}): Promise<Found & { error?: string }> => {
    const url = `http://probe.localhost:${site.port}/${page}`;
    const r = await request<{ html: string }>(
      sys.sys.base,
      'GET',
      `/snap?${qs({ access_token: key, url, html_only: true, wait_for: '#done', wait: 0, ttl: 0, ...extra })}`,
    );
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    const text = /<pre id="done">([^<]*)<\/pre>/.exec(r.body.html)?.[1] ?? '';
    return JSON.parse(text.replace(/&quot;/g, '"').replace(/&amp;/g, '&')) as Found;
  };
  const requestsOf = (path: string) => seen.filter((s) => s.path === path);

  it('finds, in the capture that wrote them, every kind of state the page wrote', async () => {
    const wrote = await capture('write', sys.token, { latitude: 48.85, longitude: 2.35 });
    expect(wrote.error).to.equal(undefined);
    expect(wrote.cookie.split('; ').sort()).to.deep.equal(['header_cookie=1', 'script_cookie=1']);
    expect(wrote).to.deep.include({ local: 'local', session: 'session', idb: ['leakdb'], serviceWorkers: 1, caches: ['leakcache'], geolocation: 'granted' });
    // Fetched twice, asked for once: the second came from the HTTP cache.
    expect(requestsOf('/http-cached.js')).to.have.length(1);
  });

  for (const who of ['the same account', 'another account'] as const) {
    it(`a later capture by ${who}, on the same browser, finds none of it`, async () => {
      const before = requestsOf('/http-cached.js').length;
      const read = await capture('read', who === 'the same account' ? sys.token : other);
      expect(read.error).to.equal(undefined);
      expect(read).to.deep.equal({ cookie: '', local: null, session: null, idb: [], serviceWorkers: 0, caches: [], geolocation: 'prompt' });
      // The page's own request carried no cookie, and the cached resource was asked for again.
      expect(requestsOf('/read').at(-1)?.cookie).to.equal(undefined);
      expect(requestsOf('/http-cached.js').length).to.equal(before + 1);
    });
  }
});
