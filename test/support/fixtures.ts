/**
 * Fixture pages served locally for capture tests. Every request is recorded (path, query, headers)
 * so tests can see what the browser sent.
 */
import type http from 'node:http';
import { type LocalServer, type PageAnswer, servePages } from './local-server';

export interface SeenRequest {
  path: string;
  /** The query string, without "?" ('' when there is none). */
  query: string;
  headers: http.IncomingHttpHeaders;
}

export interface FixtureServer extends LocalServer {
  seen: SeenRequest[];
}

const page = (body: string, head = '') =>
  `<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0;padding:0}</style>${head}</head><body>${body}</body></html>`;

/** A noisy gradient: JPEG quality makes a real difference on it. */
const NOISY = page(
  '<canvas id="c" width="800" height="600"></canvas><script>const c=document.getElementById("c").getContext("2d");for(let y=0;y<600;y+=4)for(let ' +
    'x=0;x<800;x+=4){c.fillStyle="rgb("+((x*7+y*13)%256)+","+((x*x+y)%256)+","+((y*y+x*3)%256)+")";c.fillRect(x,y,4,4);}</script>',
);

const PAGES: Record<string, (req: http.IncomingMessage, port: number) => PageAnswer> = {
  '/plain': () => ({ body: page('<h1>Plain page</h1><div id="box" style="width:300px;height:200px;background:rgb(0,0,255);margin:40px"></div>') }),
  '/white': () => ({ body: page('<div style="height:100vh;background:#fff"></div>') }),
  '/tall': () => ({ body: page('<div id="tall" style="height:2600px;background:linear-gradient(#f00,#00f)">tall</div>') }),
  '/noisy': () => ({ body: NOISY }),
  '/js-rendered': () => ({
    body: page('<div id="static">static</div><script>document.body.insertAdjacentHTML("beforeend", "<p id=\\"from-js\\">rendered by script</p>")</script>'),
  }),
  // The page replaces setTimeout, then checks #c (a property: no DOM mutation announces it) some frames later.
  '/stalled-timers': () => ({
    body: page(
      '<input type="checkbox" id="c"><script>window.setTimeout = function () { return 0; }; let n = 0; (function tick() { if (++n === 20) ' +
        'document.getElementById("c").checked = true; else requestAnimationFrame(tick); })();</script>',
    ),
  }),
  // #flash exists for 5 ms only, 300 ms after load: a look every so often would miss it.
  '/flash': () => ({
    body: page(
      '<script>setTimeout(() => { const p = document.createElement("p"); p.id = "flash"; document.body.append(p); setTimeout(() => p.remove(), 5); }, ' +
        '300)</script>',
    ),
  }),
  '/late': () => ({
    body: page('<script>setTimeout(() => document.body.insertAdjacentHTML("beforeend", "<p id=\\"late\\">late content</p>"), 1200)</script>'),
  }),
  '/echo': () => ({
    headers: { 'set-cookie': 'visited=yes; Path=/' },
    body: page(
      '<p id="cookies"></p><script>document.getElementById("cookies").textContent = "cookies:" + document.cookie; document.cookie = "fromjs=1; ' +
        'path=/";</script>',
    ),
  }),
  '/env': () => ({
    body: page(
      '<p id="tz"></p><p id="geo"></p><script>document.getElementById("tz").textContent = Intl.DateTimeFormat().resolvedOptions().timeZone;' +
        'navigator.geolocation.getCurrentPosition(p => { const g = document.getElementById("geo"); g.textContent = p.coords.latitude + "," + ' +
        'p.coords.longitude; g.className = "done"; }, e => { const g = document.getElementById("geo"); g.textContent = "error:" + e.message; g.className = ' +
        '"done"; });</script>',
    ),
  }),
  '/hover': () => ({
    body: page('<style>#btn{width:200px;height:100px;background:rgb(0,128,0)} #btn:hover{background:rgb(255,0,0)}</style><div id="btn"></div>'),
  }),
  // The same, with a load event that comes 700 ms after the document is parsed (a slow image).
  '/hover-late-load': () => ({
    body: page(
      '<style>#btn{width:200px;height:100px;background:rgb(0,128,0)} #btn:hover{background:rgb(255,0,0)}</style><div id="btn"></div><img src="/slow-image" ' +
        'width="1" height="1">',
    ),
  }),
  '/slow-image': () => ({ delayMs: 700, body: '' }),
  '/lazy': () => ({
    body: page(
      '<div style="height:3000px">top</div><div id="sentinel">bottom</div><script>new IntersectionObserver((es, o) => { if (es.some(e => e.isIntersecting)) ' +
        '{ document.body.insertAdjacentHTML("beforeend", "<p id=\\"lazy-loaded\\">lazy</p>"); o.disconnect(); } ' +
        '}).observe(document.getElementById("sentinel"))</script>',
    ),
  }),
  '/hang': () => ({ body: page('<p>about to hang</p><script>for(;;){}</script>') }),
  '/slow': () => ({ delayMs: 2500, body: page('<p>slow</p>') }),
  '/very-slow': () => ({ delayMs: 6000, body: page('<p>very slow</p>') }),
  '/to-private': (_req, port) => ({ status: 302, headers: { location: `http://127.0.0.1:${port}/plain` }, body: '' }),
  '/with-private-image': (_req, port) => ({ body: page(`<p>public page</p><img id="px" src="http://127.0.0.1:${port}/pixel.png">`) }),
  // A public page framing a private address directly, and a public site of another origin
  // (a cross-site frame, so its own renderer process under site isolation) that loads a
  // private image itself.
  '/with-private-frames': (_req, port) => ({
    body: page(
      `<p>framing page</p><iframe id="direct" src="http://127.0.0.1:${port}/plain?framed"></iframe>` +
        `<iframe id="cross-site" src="http://other.test:${port}/with-private-image?framed"></iframe>`,
    ),
  }),
  // Opens a WebSocket to 127.0.0.1 on the port in the query; body[data-ws] tells how it went.
  '/with-private-socket': () => ({
    body: page(
      '<p>socket page</p><script>const port = new URLSearchParams(location.search).get("port"); const w = new WebSocket("ws://127.0.0.1:" + port + "/");' +
        'w.onopen = () => { document.body.dataset.ws = "open"; }; w.onerror = () => { document.body.dataset.ws = "refused"; };</script>',
    ),
  }),
  '/pixel.png': () => ({ headers: { 'content-type': 'image/gif' }, body: '' }),
};

export async function startFixtures(): Promise<FixtureServer> {
  const seen: SeenRequest[] = [];
  const server = await servePages(({ req, path, query }, port) => {
    seen.push({ path, query, headers: req.headers });
    return PAGES[path]?.(req, port);
  });
  return { ...server, seen };
}
