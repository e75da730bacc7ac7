/**
 * What a page of the quality corpus is (a real-world pattern, served locally, and a check of
 * the picture the service makes of it), and the small HTML helpers the pages share.
 *
 * Every page lives in a folder of its own, `/<name>/`, on two local sites (corpus.ts serves
 * them): `site`, the page's own origin, and `other`, a second site for what real pages load
 * from elsewhere (cross-site frames, widgets). Its routes are keyed by path inside that folder
 * ('/' is the page itself), so pages link to their own files with relative URLs (`img.svg`)
 * and no two pages can clash. `/_/…` are the shared assets (see assets.ts).
 */
import type http from 'node:http';
import type { Picture } from './picture';

/** The addresses a page may point at (all on loopback). */
export interface Origins {
  /** The page's own site, e.g. http://www.quality.test:port */
  site: string;
  /** A second site (cross-site to `site`), e.g. http://embed.quality-cdn.test:port */
  other: string;
  /** A page of the consent fixtures (test/capture/page/consent-fixtures.ts): http://<host>:<port><path>. */
  consent(host: string, path?: string): string;
}

/** What a route answers: HTML (never cached) unless `headers` say otherwise. */
export interface RouteAnswer {
  status?: number;
  headers?: Record<string, string>;
  body: string | Buffer;
  /** Answered this many ms late. */
  delayMs?: number;
  /**
   * 'open': the body is sent and the response never ends (a stream, a long poll, a body a
   * server keeps writing); 'silent': nothing is ever sent (a server that accepts and never answers).
   */
  never?: 'open' | 'silent';
}

export interface RouteRequest {
  /** The path inside the page's folder ('/' for the page itself). */
  path: string;
  query: URLSearchParams;
  origins: Origins;
  req: http.IncomingMessage;
}

/** A fixed answer, or one made per request (undefined: 404). */
export type Route = RouteAnswer | ((r: RouteRequest) => RouteAnswer | undefined | Promise<RouteAnswer | undefined>);

export type SnapParam = string | number | boolean;

/** What the service answered for a page's /snap, as its check sees it. */
export interface Answer {
  status: number;
  contentType: string;
  /** The answer's JSON (errors, json=true), or null. */
  body: Record<string, unknown> | null;
  raw: Buffer;
  /** Time the /snap took (ms). */
  ms: number;
  /** The picture, decoded; throws "expected an image, got <status> <error>" when the answer is not one. */
  picture(): Promise<Picture>;
}

export interface QualityPage {
  /** Unique; also the page's folder. Lower case, digits and dashes. */
  name: string;
  /** The real-world pattern it reproduces (which sites do this). */
  mimics: string;
  /** The page's files on its own site (path inside its folder → answer). */
  routes: Record<string, Route>;
  /** Its files on the second site, when it loads something cross-site. */
  otherRoutes?: Record<string, Route>;
  /**
   * The /snap query. `url`: a path inside the page's folder ('/' when absent), a full URL, or
   * made from the origins and the page's own folder URL. Defaults (corpus.ts SNAP_DEFAULTS):
   * wait=0, ttl=0, page_width=800, page_height=600, image_format=png.
   */
  params: { url?: string | ((o: Origins, folder: string) => string) } & Record<string, SnapParam | ((o: Origins, folder: string) => string) | undefined>;
  /** Throws an Error saying what was seen and what was expected. */
  check(answer: Answer): void | Promise<void>;
  /** Why this page may fail for now (shown after FAIL), e.g. "needs the CJK fonts". */
  knownGap?: string;
}

/** A complete HTML document: UTF-8, no margins, white, `head` and `body` as given. */
export function doc(body: string, opts: { head?: string; lang?: string; dir?: 'rtl' | 'ltr'; title?: string } = {}): string {
  const attrs = `${opts.lang ? ` lang="${opts.lang}"` : ''}${opts.dir ? ` dir="${opts.dir}"` : ''}`;
  return (
    `<!DOCTYPE html><html${attrs}><head><meta charset="utf-8"><title>${opts.title ?? 'quality corpus'}</title>` +
    '<style>html,body{margin:0;padding:0;background:#fff}img,iframe,video,canvas{display:block;border:0}</style>' +
    `${opts.head ?? ''}</head><body>${body}</body></html>`
  );
}

export type Rgb = [number, number, number];

export const css = (c: Rgb): string => `rgb(${c.join(',')})`;

/** A block of one colour, absolutely placed (left, top, width, height in CSS px). */
export function box(c: Rgb, left: number, top: number, width: number, height: number, extra = ''): string {
  return `<div style="position:absolute;left:${left}px;top:${top}px;width:${width}px;height:${height}px;background:${css(c)};${extra}"></div>`;
}

/** The shared solid-colour SVG (assets.ts), answered `delayMs` late. */
export function solidSvg(c: Rgb, width: number, height: number, delayMs = 0): string {
  return `/_/solid.svg?c=${c.join(',')}&w=${width}&h=${height}${delayMs ? `&delay=${delayMs}` : ''}`;
}

/** The shared solid-colour PNG (assets.ts). */
export function solidPng(c: Rgb, width: number, height: number, delayMs = 0): string {
  return `/_/solid.png?c=${c.join(',')}&w=${width}&h=${height}${delayMs ? `&delay=${delayMs}` : ''}`;
}

/** A few distinct colours the pages use. */
export const COLOURS = {
  red: [220, 20, 60] as Rgb,
  orange: [255, 140, 0] as Rgb,
  yellow: [200, 170, 0] as Rgb,
  green: [50, 160, 50] as Rgb,
  teal: [0, 128, 128] as Rgb,
  blue: [30, 144, 255] as Rgb,
  indigo: [75, 0, 130] as Rgb,
  pink: [199, 21, 133] as Rgb,
  brown: [139, 69, 19] as Rgb,
  slate: [112, 128, 144] as Rgb,
  grey: [200, 200, 200] as Rgb,
  white: [255, 255, 255] as Rgb,
  black: [0, 0, 0] as Rgb,
};

/** The colours in order, for columns of images. */
export const PALETTE: Rgb[] = [
  COLOURS.red,
  COLOURS.orange,
  COLOURS.yellow,
  COLOURS.green,
  COLOURS.teal,
  COLOURS.blue,
  COLOURS.indigo,
  COLOURS.pink,
  COLOURS.brown,
  COLOURS.slate,
];

/**
 * For pages whose right answer is an error: the /snap answered `status` with the error
 * envelope `{ success: false, error_code, note }` (error_code `code` when given).
 */
export function expectError(answer: Answer, status: number, code?: string): void {
  const said = answer.body ? JSON.stringify(answer.body).slice(0, 300) : `${answer.contentType}, ${answer.raw.length} bytes`;
  if (answer.status !== status) throw new Error(`answered ${answer.status} (${said}), expected ${status}${code ? ` ${code}` : ''}`);
  const body = answer.body;
  if (body?.success !== false) throw new Error(`answered ${answer.status} without the error envelope (${said})`);
  if (code && body.error_code !== code) throw new Error(`answered ${answer.status} ${String(body.error_code)} (${said}), expected ${code}`);
}

/** A document that is all one colour (a frame's content: the root's background fills the frame). */
export function solidDoc(c: Rgb): string {
  return doc('', { head: `<style>html,body{background:${css(c)}}</style>` });
}
