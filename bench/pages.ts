/**
 * The benchmark's pages, served by a local node:http server (nothing leaves the machine):
 *
 *   /simple  a heading, a paragraph and a coloured box (under 1 KB).
 *   /heavy   a few hundred KB of HTML: six hundred cards (about eight thousand DOM nodes), a big
 *            inline SVG, layered CSS gradients and shadows, a little script, and six images
 *            (PNG and JPEG) generated here at start with sharp.
 *
 * Every answer is `cache-control: no-store`, so a page reloaded in the same tab (the floor)
 * fetches its images again, like a capture in a fresh browser context (/snap) does.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';

export interface PageServer {
  /** http://127.0.0.1:port */
  origin: string;
  /** Page name to path, e.g. simple → /simple. */
  pages: Record<string, string>;
  /** Bytes of each page's HTML and of all its images. */
  sizes: Record<string, { htmlBytes: number; imageBytes: number; images: number }>;
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

/** Six images: three smooth PNGs and three noisy JPEGs. */
async function makeImages(): Promise<Map<string, { data: Buffer; type: string }>> {
  const images = new Map<string, { data: Buffer; type: string }>();
  for (let i = 0; i < 6; i++) {
    const raw = Buffer.alloc(IMAGE_W * IMAGE_H * 3);
    const rand = rng(1000 + i);
    for (let y = 0; y < IMAGE_H; y++) {
      for (let x = 0; x < IMAGE_W; x++) {
        const o = (y * IMAGE_W + x) * 3;
        const noise = i % 2 === 1 ? Math.floor(rand() * 90) : 0;
        raw[o] = (x * (i + 1) + noise) & 255;
        raw[o + 1] = (y * (7 - i) + ((x * y) >> 7) + noise) & 255;
        raw[o + 2] = ((x + y) * 3 + i * 40 + noise) & 255;
      }
    }
    const img = sharp(raw, { raw: { width: IMAGE_W, height: IMAGE_H, channels: 3 } });
    if (i % 2 === 0) images.set(`/img/${i}.png`, { data: await img.png().toBuffer(), type: 'image/png' });
    else images.set(`/img/${i}.jpg`, { data: await img.jpeg({ quality: 85 }).toBuffer(), type: 'image/jpeg' });
  }
  return images;
}

const WORDS = 'lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt ut labore et dolore magna aliqua enim ad minim veniam quis nostrud'.split(' ');

function heavyPage(imagePaths: string[]): string {
  const rand = rng(42);
  const words = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(rand() * WORDS.length)]).join(' ');
  const css = [
    'html,body{margin:0;font-family:sans-serif;color:#222;background:linear-gradient(180deg,#f7f9fc,#e9eef7)}',
    '.hero{height:260px;position:relative;overflow:hidden;background:radial-gradient(circle at 20% 30%,rgba(255,120,80,.85),transparent 40%),radial-gradient(circle at 80% 60%,rgba(80,160,255,.8),transparent 45%),conic-gradient(from 45deg,#ffd86f,#fc6262,#7b6cff,#3ad1b8,#ffd86f);box-shadow:inset 0 -40px 80px rgba(0,0,0,.35)}',
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
    css.push(`.c${i}{background:linear-gradient(${i * 30}deg,hsl(${h},80%,92%),hsl(${(h + 60) % 360},70%,80%)),radial-gradient(circle at 90% 10%,hsla(${h},90%,60%,.4),transparent 60%)}`);
  }
  // The big inline SVG: gradients and a couple of thousand shapes.
  const svg: string[] = [
    '<svg width="700" height="260" viewBox="0 0 700 260" xmlns="http://www.w3.org/2000/svg"><defs>',
    ...Array.from(
      { length: 8 },
      (_, i) => `<radialGradient id="g${i}"><stop offset="0" stop-color="hsl(${i * 45},90%,65%)"/><stop offset="1" stop-color="hsl(${i * 45 + 90},80%,35%)" stop-opacity=".2"/></radialGradient>`,
    ),
    '</defs>',
  ];
  for (let i = 0; i < 1200; i++) {
    const x = (rand() * 700).toFixed(1);
    const y = (rand() * 260).toFixed(1);
    if (i % 3 === 0) svg.push(`<circle cx="${x}" cy="${y}" r="${(2 + rand() * 14).toFixed(1)}" fill="url(#g${i % 8})"/>`);
    else if (i % 3 === 1) svg.push(`<rect x="${x}" y="${y}" width="${(4 + rand() * 20).toFixed(1)}" height="${(4 + rand() * 20).toFixed(1)}" fill="hsl(${i % 360},70%,60%)" opacity=".6" transform="rotate(${i % 90} ${x} ${y})"/>`);
    else svg.push(`<path d="M${x} ${y} q ${(rand() * 40 - 20).toFixed(1)} ${(rand() * 40 - 20).toFixed(1)} ${(rand() * 40).toFixed(1)} 0" stroke="hsl(${(i * 7) % 360},60%,40%)" fill="none" stroke-width="1.5"/>`);
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
    `<div class="hero">${svg.join('')}<h1>A heavy page</h1></div><section class="gallery">${gallery}</section><section class="cards">${cards.join('')}</section>${script}`,
  );
}

export async function startPageServer(): Promise<PageServer> {
  const images = await makeImages();
  const heavy = heavyPage([...images.keys()]);
  const html = new Map<string, string>([
    ['/simple', SIMPLE],
    ['/heavy', heavy],
  ]);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0] ?? '/';
    const page = html.get(path);
    if (page !== undefined) {
      const body = Buffer.from(page, 'utf8');
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-length': body.length, 'cache-control': 'no-store' });
      res.end(body);
      return;
    }
    const image = images.get(path);
    if (image) {
      res.writeHead(200, { 'content-type': image.type, 'content-length': image.data.length, 'cache-control': 'no-store' });
      res.end(image.data);
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' });
    res.end('not found');
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const imageBytes = [...images.values()].reduce((n, i) => n + i.data.length, 0);
  return {
    origin: `http://127.0.0.1:${port}`,
    pages: { simple: '/simple', heavy: '/heavy' },
    sizes: {
      simple: { htmlBytes: Buffer.byteLength(SIMPLE), imageBytes: 0, images: 0 },
      heavy: { htmlBytes: Buffer.byteLength(heavy), imageBytes, images: images.size },
    },
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
