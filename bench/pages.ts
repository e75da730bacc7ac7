/**
 * The benchmark's pages, served by a local node:http server (nothing leaves the machine):
 *
 *   /simple  a heading, a paragraph and a coloured box (under 1 KB).
 *   /heavy   a few hundred KB of HTML: six hundred cards (about eight thousand DOM nodes), a big
 *            inline SVG, layered CSS gradients and shadows, a little script, and six images
 *            (PNG and JPEG) generated here at start with sharp.
 *   /script  a shell whose content arrives by script after the load event: it fetches
 *            /script/data (answered after SCRIPT_DATA_DELAY_MS, like a slow API) and renders
 *            sixty cards into #feed at once, so SCRIPT_SELECTOR appearing means all are there.
 *   /long    LONG_PAGE_HEIGHT CSS px of ten sections, each with a loading="lazy" JPEG: the first
 *            few load in a 800 px viewport, the rest only once the viewport reaches them.
 *
 * Every answer is `cache-control: no-store`, so a page reloaded in the same tab (the floor)
 * fetches its images again, like a capture in a fresh browser context (/snap) does.
 */
import { fork } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';

export interface PageServer {
  /** http://127.0.0.1:port */
  origin: string;
  /** Page name to path, e.g. simple → /simple. */
  pages: Record<string, string>;
  /** Bytes of each page's HTML, of all its images, and of what its script fetches. */
  sizes: Record<string, { htmlBytes: number; imageBytes: number; images: number; dataBytes: number }>;
  stop(): Promise<void>;
}

const doc = (title: string, head: string, body: string) =>
  `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>${title}</title>${head}</head><body>${body}</body></html>`;

const SIMPLE = doc(
  'Simple',
  '<style>html,body{margin:0;font-family:sans-serif}h1{margin:24px}#box{width:300px;height:200px;background:#2a6df4;margin:24px}</style>',
  '<h1>A simple page</h1><p style="margin:24px">One heading, one paragraph, one box.</p><div id="box"></div>',
);

/** A deterministic pseudo-random sequence (so the heavy page is the same on every run). */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const IMAGE_W = 480;
const IMAGE_H = 320;

/** Generated picture number k: smooth gradients, or with noise (which JPEG compresses poorly). */
function picture(k: number, seed: number, width: number, height: number, noisy: boolean): sharp.Sharp {
  const raw = Buffer.alloc(width * height * 3);
  const rand = rng(seed);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 3;
      const noise = noisy ? Math.floor(rand() * 90) : 0;
      raw[o] = (x * (k + 1) + noise) & 255;
      raw[o + 1] = (y * (7 - k) + ((x * y) >> 7) + noise) & 255;
      raw[o + 2] = ((x + y) * 3 + k * 40 + noise) & 255;
    }
  }
  return sharp(raw, { raw: { width, height, channels: 3 } });
}

type Images = Map<string, { data: Buffer; type: string }>;

/** The heavy page's six images: three smooth PNGs and three noisy JPEGs. */
async function makeImages(): Promise<Images> {
  const images: Images = new Map();
  for (let i = 0; i < 6; i++) {
    const img = picture(i, 1000 + i, IMAGE_W, IMAGE_H, i % 2 === 1);
    if (i % 2 === 0) images.set(`/img/${i}.png`, { data: await img.png().toBuffer(), type: 'image/png' });
    else images.set(`/img/${i}.jpg`, { data: await img.jpeg({ quality: 85 }).toBuffer(), type: 'image/jpeg' });
  }
  return images;
}

const WORDS = (
  'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor ' +
  'incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud'
).split(' ');

function heavyPage(imagePaths: string[]): string {
  const rand = rng(42);
  const words = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
  const css = [
    'html,body{margin:0;font-family:sans-serif;color:#222;background:linear-gradient(180deg,#f7f9fc,#e9eef7)}',
    '.hero{height:260px;position:relative;overflow:hidden;background:radial-gradient(circle at 20% 30%,rgba(255,120,80,.85),transparent ' +
      '40%),radial-gradient(circle at 80% 60%,rgba(80,160,255,.8),transparent 45%),conic-gradient(from ' +
      '45deg,#ffd86f,#fc6262,#7b6cff,#3ad1b8,#ffd86f);box-shadow:inset 0 -40px 80px rgba(0,0,0,.35)}',
    '.hero h1{position:absolute;left:32px;bottom:24px;margin:0;font-size:48px;color:#fff;text-shadow:0 4px 16px rgba(0,0,0,.5)}',
    '.hero svg{position:absolute;right:0;top:0;opacity:.9}',
    '.gallery{display:grid;grid-template-columns:repeat(6,1fr);gap:8px;padding:8px}',
    '.gallery img{width:100%;height:140px;object-fit:cover;border-radius:10px;box-shadow:0 6px 18px rgba(0,0,0,.25);filter:saturate(1.2)}',
    '.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));gap:10px;padding:10px}',
    '.card{border-radius:12px;padding:10px;box-shadow:0 2px 10px rgba(20,30,60,.18),0 1px 2px rgba(0,0,0,.2);font-size:12px}',
    '.card header{display:flex;justify-content:space-between;align-items:center}',
    '.card h3{margin:0;font-size:14px}.card .tag{border-radius:8px;padding:1px 6px;background:rgba(255,255,255,.6)}',
    '.card ul{margin:6px 0;padding-left:16px}.card footer{display:flex;justify-content:space-between}',
  ];
  for (let i = 0; i < 12; i++) {
    const h = i * 30;
    css.push(
      `.c${i}{background:linear-gradient(${i * 30}deg,hsl(${h},80%,92%),hsl(${(h + 60) % 360},70%,80%)),radial-gradient(circle at 90% ` +
        `10%,hsla(${h},90%,60%,.4),transparent 60%)}`,
    );
  }
  // The big inline SVG: gradients and a couple of thousand shapes.
  const svg: string[] = [
    '<svg width="700" height="260" viewBox="0 0 700 260" xmlns="http://www.w3.org/2000/svg"><defs>',
    ...Array.from(
      { length: 8 },
      (_, i) =>
        `<radialGradient id="g${i}"><stop offset="0" stop-color="hsl(${i * 45},90%,65%)"/><stop offset="1" stop-color="hsl(${i * 45 + 90},80%,35%)" ` +
        `stop-opacity=".2"/></radialGradient>`,
    ),
    '</defs>',
  ];
  for (let i = 0; i < 1200; i++) {
    const x = (rand() * 700).toFixed(1);
    const y = (rand() * 260).toFixed(1);
    if (i % 3 === 0) svg.push(`<circle cx="${x}" cy="${y}" r="${(2 + rand() * 14).toFixed(1)}" fill="url(#g${i % 8})"/>`);
    else if (i % 3 === 1)
      svg.push(
        `<rect x="${x}" y="${y}" width="${(4 + rand() * 20).toFixed(1)}" height="${(4 + rand() * 20).toFixed(1)}" fill="hsl(${i % 360},70%,60%)" ` +
          `opacity=".6" transform="rotate(${i % 90} ${x} ${y})"/>`,
      );
    else
      svg.push(
        `<path d="M${x} ${y} q ${(rand() * 40 - 20).toFixed(1)} ${(rand() * 40 - 20).toFixed(1)} ${(rand() * 40).toFixed(1)} 0" ` +
          `stroke="hsl(${(i * 7) % 360},60%,40%)" fill="none" stroke-width="1.5"/>`,
      );
  }
  svg.push('</svg>');
  const cards: string[] = [];
  for (let i = 0; i < 600; i++) {
    cards.push(
      `<article class="card c${i % 12}"><header><h3>Item ${i + 1}</h3><span class="tag">#${(i * 37) % 997}</span></header>` +
        `<p>${words(14)}</p><ul><li>${words(3)}</li><li>${words(4)}</li><li>${words(2)}</li></ul>` +
        `<footer><a href="#item-${i}">Details</a><em>${(rand() * 500).toFixed(2)} €</em></footer></article>`,
    );
  }
  const gallery = imagePaths.map((src, i) => `<img src="${src}" alt="image ${i + 1}" width="${IMAGE_W}" height="${IMAGE_H}">`).join('');
  // A little script, as real pages have: a summary built after the DOM is parsed.
  const script =
    '<script>document.addEventListener("DOMContentLoaded",()=>{const n=document.querySelectorAll(".card").length;' +
    'const s=document.createElement("p");s.id="summary";s.style.cssText="margin:10px;font-weight:bold";' +
    's.textContent=n+" cards, "+document.getElementsByTagName("*").length+" elements";document.querySelector(".hero").after(s);});</script>';
  return doc(
    'Heavy',
    `<style>${css.join('')}</style>`,
    `<div class="hero">${svg.join('')}<h1>A heavy page</h1></div><section class="gallery">${gallery}</section><section ` +
      `class="cards">${cards.join('')}</section>${script}`,
  );
}

/** The long page's height, CSS px. */
export const LONG_PAGE_HEIGHT = 10_000;
const LONG_SECTIONS = 10;
const LONG_IMAGE_W = 960;
const LONG_IMAGE_H = 600;

/** The long page's ten images: JPEGs, every other one noisy. */
async function makeLongImages(): Promise<Images> {
  const images: Images = new Map();
  for (let i = 0; i < LONG_SECTIONS; i++) {
    const data = await picture(i, 2000 + i, LONG_IMAGE_W, LONG_IMAGE_H, i % 2 === 1)
      .jpeg({ quality: 85 })
      .toBuffer();
    images.set(`/long-img/${i}.jpg`, { data, type: 'image/jpeg' });
  }
  return images;
}

/** Ten sections of exactly LONG_PAGE_HEIGHT / 10 px, each with a heading, a paragraph and a lazy image of fixed size. */
function longPage(imagePaths: string[]): string {
  const section = LONG_PAGE_HEIGHT / LONG_SECTIONS;
  const sections = imagePaths.map(
    (src, i) =>
      `<section><h2>Section ${i + 1}</h2><p>${WORDS.slice(0, 12 + i).join(' ')}.</p>` +
      `<img src="${src}" loading="lazy" alt="image ${i + 1}" width="${LONG_IMAGE_W}" height="${LONG_IMAGE_H}"></section>`,
  );
  return doc(
    'Long',
    `<style>html,body{margin:0;font-family:sans-serif;color:#222}section{box-sizing:border-box;height:${section}px;overflow:hidden;padding:32px 160px;` +
      'background:linear-gradient(180deg,#f4f6fb,#e3e8f3)}section:nth-child(even){background:linear-gradient(180deg,#fbf7f0,#f1e7d6)}h2{margin:0 0 ' +
      '12px}img{display:block}</style>',
    sections.join(''),
  );
}

/** What /script fetches after its load event, and the element that shows it has arrived. */
export const SCRIPT_SELECTOR = '#feed .card';
const SCRIPT_DATA_DELAY_MS = 250;

function scriptData(): string {
  const rand = rng(7);
  const words = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
  return JSON.stringify(Array.from({ length: 60 }, (_, i) => ({ title: `Item ${i + 1}`, text: words(16), price: (rand() * 500).toFixed(2) })));
}

const SCRIPT_PAGE = doc(
  'Script',
  '<style>html,body{margin:0;font-family:sans-serif;color:#222}h1{margin:24px}#feed{display:grid;grid-template-columns:repeat(4,1fr);gap:10px;padding:10px}' +
    '.card{border-radius:10px;padding:10px;background:#eef3fb;box-shadow:0 2px 8px rgba(20,30,60,.2);font-size:12px}.card h3{margin:0 0 ' +
    '6px;font-size:14px}</style>',
  '<h1>A page filled by script</h1><div id="feed"><p>Loading…</p></div>' +
    '<script>addEventListener("load",()=>{fetch("/script/data").then((r)=>r.json()).then((items)=>{' +
    'const cards=items.map((it)=>{const a=document.createElement("article");a.className="card";const h=document.createElement("h3");h.textContent=it.title;' +
    'const p=document.createElement("p");p.textContent=it.text+" ("+it.price+" €)";a.append(h,p);return a;});' +
    'document.getElementById("feed").replaceChildren(...cards);});});</script>',
);

export async function startPageServer(): Promise<PageServer> {
  const heavyImages = await makeImages();
  const longImages = await makeLongImages();
  const heavy = heavyPage([...heavyImages.keys()]);
  const long = longPage([...longImages.keys()]);
  const data = Buffer.from(scriptData(), 'utf8');
  const html = new Map<string, string>([
    ['/simple', SIMPLE],
    ['/heavy', heavy],
    ['/script', SCRIPT_PAGE],
    ['/long', long],
  ]);
  const images: Images = new Map([...heavyImages, ...longImages]);
  const send = (res: http.ServerResponse, type: string, body: Buffer) => {
    res.writeHead(200, { 'content-type': type, 'content-length': body.length, 'cache-control': 'no-store' });
    res.end(body);
  };
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const page = html.get(path);
    if (page !== undefined) return send(res, 'text/html; charset=utf-8', Buffer.from(page, 'utf8'));
    const image = images.get(path);
    if (image) return send(res, image.type, image.data);
    if (path === '/script/data') {
      const timer = setTimeout(() => send(res, 'application/json', data), SCRIPT_DATA_DELAY_MS);
      res.on('close', () => clearTimeout(timer));
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const bytesOf = (set: Images) => [...set.values()].reduce((n, i) => n + i.data.length, 0);
  return {
    origin: `http://127.0.0.1:${port}`,
    pages: { simple: '/simple', heavy: '/heavy', script: '/script', long: '/long' },
    sizes: {
      simple: { htmlBytes: Buffer.byteLength(SIMPLE), imageBytes: 0, images: 0, dataBytes: 0 },
      heavy: { htmlBytes: Buffer.byteLength(heavy), imageBytes: bytesOf(heavyImages), images: heavyImages.size, dataBytes: 0 },
      script: { htmlBytes: Buffer.byteLength(SCRIPT_PAGE), imageBytes: 0, images: 0, dataBytes: data.length },
      long: { htmlBytes: Buffer.byteLength(long), imageBytes: bytesOf(longImages), images: longImages.size, dataBytes: 0 },
    },
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The page server in a process of its own, as a target site is: serving the pages never
 * takes turns on one event loop with the system under test (its gateway relays every byte
 * of them) or with the floors' CDP client. The child stops with this process, whatever
 * stops it: it exits when its IPC channel closes.
 */
export async function startPageServerProcess(): Promise<PageServer> {
  const child = fork(__filename, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const info = await new Promise<Omit<PageServer, 'stop'>>((resolve, reject) => {
    child.once('message', (m) => resolve(m as Omit<PageServer, 'stop'>));
    void exited.then(() => reject(new Error('the page server process exited before it listened')));
  });
  return {
    ...info,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

// Run as startPageServerProcess's child: serve, say where, stop when the parent goes.
if (require.main === module && process.send) {
  void startPageServer().then(({ stop, ...info }) => {
    const bye = () => void stop().then(() => process.exit(0));
    process.once('disconnect', bye);
    process.once('SIGTERM', bye);
    process.send?.(info);
  });
}
