/**
 * The files every page of the corpus may use, on both sites under `/_/`:
 *   /_/solid.svg?c=r,g,b&w=W&h=H[&delay=ms]  an image of one colour (SVG)
 *   /_/solid.png?c=r,g,b&w=W&h=H[&delay=ms]  the same as a PNG
 *   /_/font/<file>.ttf[?delay=ms]            a font file of this machine (DejaVu, which Chromium needs anyway), as a web font
 * Every answer may be made late with `delay`, as a slow CDN would.
 */
import fs from 'node:fs';
import path from 'node:path';
import sharp from 'sharp';
import type { RouteAnswer, RouteRequest } from './page';

/** Where the font files served as web fonts are looked for. */
const FONT_DIRS = ['/usr/share/fonts/truetype/dejavu', '/usr/share/fonts/TTF', '/usr/share/fonts/dejavu'];

/** A font file of this machine by its file name (DejaVuSerif-Bold.ttf), or null. */
export function systemFontFile(file: string): string | null {
  for (const dir of FONT_DIRS) {
    const p = path.join(dir, file);
    if (fs.existsSync(p)) return p;
  }
  return null;
}

function colourOf(q: URLSearchParams): [number, number, number, number, number] | null {
  const c = (q.get('c') ?? '').split(',').map(Number);
  const w = Number(q.get('w') ?? 100);
  const h = Number(q.get('h') ?? 100);
  if (c.length !== 3 || c.some((v) => !(v >= 0 && v <= 255)) || !(w > 0 && h > 0 && w <= 4000 && h <= 4000)) return null;
  return [c[0]!, c[1]!, c[2]!, w, h];
}

const pngs = new Map<string, Promise<Buffer>>();

export async function sharedAsset(r: RouteRequest): Promise<RouteAnswer | undefined> {
  const delayMs = Number(r.query.get('delay') ?? 0) || 0;
  if (r.path === '/solid.svg' || r.path === '/solid.png') {
    const v = colourOf(r.query);
    if (!v) return { status: 400, headers: { 'content-type': 'text/plain' }, body: 'bad colour or size' };
    const [red, green, blue, w, h] = v;
    if (r.path === '/solid.svg') {
      return {
        delayMs,
        headers: { 'content-type': 'image/svg+xml', 'cache-control': 'no-store' },
        body: `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}"><rect width="${w}" height="${h}" fill="rgb(${red},${green},${blue})"/></svg>`,
      };
    }
    const key = v.join(',');
    let png = pngs.get(key);
    if (!png) {
      png = sharp({ create: { width: w, height: h, channels: 3, background: { r: red, g: green, b: blue } } })
        .png()
        .toBuffer();
      pngs.set(key, png);
    }
    return { delayMs, headers: { 'content-type': 'image/png', 'cache-control': 'no-store' }, body: await png };
  }
  const font = /^\/font\/([A-Za-z0-9-]+\.ttf)$/.exec(r.path);
  if (font) {
    const file = systemFontFile(font[1]!);
    if (!file) return undefined;
    return { delayMs, headers: { 'content-type': 'font/ttf', 'cache-control': 'no-store', 'access-control-allow-origin': '*' }, body: fs.readFileSync(file) };
  }
  return undefined;
}
