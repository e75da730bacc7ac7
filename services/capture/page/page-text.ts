/**
 * The text beside the picture (markdown=true, metadata=true), read from the same page load as
 * the image (docs/decisions/2026-11-28-markdown-and-metadata.md):
 *
 * - markdown: the page's main content as Mozilla's Readability finds it (Firefox's reader
 *   view), run inside the captured page on a copy of its document (so the page itself is left
 *   as it is, and no second parser or second load is needed), its article HTML then written as
 *   Markdown by turndown, here in Node.
 * - metadata: the page's head (title, description, language, canonical URL, Open Graph and
 *   Twitter cards, icons) and the web fonts it used, read in the page; the main document's
 *   final status, response headers and redirect chain, from what the browser reports of its
 *   requests (Network events, enabled only when metadata is asked for).
 *
 * Both are read in one evaluation, after the image; a capture that asks for neither sends
 * nothing more.
 */
import fs from 'node:fs';
import TurndownService from 'turndown';
import type { SnapOptions } from '../../shared/screenshot-options';
import type { PageSession } from './page-session';

/** Most characters of Markdown kept (a huge page cannot make a huge file). */
export const MARKDOWN_LIMIT = 1_000_000;
/** Most entries kept of each list of the metadata (tags, icons, headers, redirects, fonts). */
export const METADATA_LIST_LIMIT = 100;
const VALUE_LIMIT = 2000;

/** One hop of the main document's redirect chain. */
export interface RedirectHop {
  url: string;
  status: number;
  /** Where it sent the browser (its Location header), as the browser resolved it. */
  location: string;
}

/** A web font face the page loaded (document.fonts, status "loaded"). */
export interface UsedFont {
  family: string;
  style: string;
  weight: string;
}

export interface PageIcon {
  rel: string;
  href: string;
  sizes?: string;
  type?: string;
}

/** What metadata=true records of a page. */
export interface PageMetadata {
  url: string;
  title: string | null;
  description: string | null;
  /** <html lang>, else the Content-Language meta tag. */
  language: string | null;
  canonical_url: string | null;
  /** The og:* meta tags, by property without the prefix (title, image, type...). */
  open_graph: Record<string, string>;
  /** The twitter:* meta tags, by name without the prefix (card, site, title...). */
  twitter: Record<string, string>;
  icons: PageIcon[];
  /** The main document's final HTTP status; null when not known. */
  status_code: number | null;
  /** Its response headers, names in lower case; empty when not known. */
  response_headers: Record<string, string>;
  /** The redirects that led to it, in order (empty: none). */
  redirects: RedirectHop[];
  /** The web fonts the page loaded: faces its text used (Chromium loads a face only when text on the page needs it). */
  fonts: UsedFont[];
}

/** Whether the capture reads text beside its picture. */
export const wantsText = (o: Pick<SnapOptions, 'markdown' | 'metadata'>): boolean => o.markdown === true || o.metadata === true;

/** What the browser reported of the main document's requests (Network events of the main frame). */
export interface DocumentObserver {
  readonly seen: { status: number | null; headers: Record<string, string>; redirects: RedirectHop[] };
  stop(): void;
}

type Params = Record<string, unknown>;
interface NetResponse {
  url: string;
  status: number;
  headers: Record<string, string>;
}

const lowerHeaders = (h: Record<string, unknown> | undefined): Record<string, string> =>
  Object.fromEntries(
    Object.entries(h ?? {})
      .slice(0, METADATA_LIST_LIMIT)
      .map(([k, v]) => [k.toLowerCase(), String(v).slice(0, VALUE_LIMIT)]),
  );

/**
 * Follows the main frame's document requests: a navigation starts the chain again, each
 * redirect adds a hop, the response gives the status and headers. Network must be enabled on
 * the page (networkCommand, sent with the capture's first commands).
 */
export function observeDocument(page: PageSession): DocumentObserver {
  const seen: DocumentObserver['seen'] = { status: null, headers: {}, redirects: [] };
  let current = '';
  const offs = [
    page.cdp.on('Network.requestWillBeSent', (p: Params, sid) => {
      if (sid !== page.sessionId || p.type !== 'Document' || p.frameId !== page.mainFrameId) return;
      const redirect = p.redirectResponse as NetResponse | undefined;
      if (redirect && p.requestId === current) {
        if (seen.redirects.length < METADATA_LIST_LIMIT) {
          seen.redirects.push({ url: redirect.url, status: redirect.status, location: String((p.request as { url: string }).url) });
        }
        return;
      }
      current = String(p.requestId);
      seen.redirects = [];
      seen.status = null;
      seen.headers = {};
    }),
    page.cdp.on('Network.responseReceived', (p: Params, sid) => {
      if (sid !== page.sessionId || p.requestId !== current) return;
      const r = p.response as NetResponse;
      seen.status = r.status > 0 ? r.status : null;
      seen.headers = lowerHeaders(r.headers);
    }),
  ];
  return {
    seen,
    stop: () => {
      for (const off of offs) off();
    },
  };
}

/** The command that has the browser report the requests (only when metadata is asked for). */
export function networkCommand(page: PageSession, o: Pick<SnapOptions, 'metadata'>): Promise<unknown> | null {
  return o.metadata ? page.send('Network.enable') : null;
}

let readabilitySource: string | null = null;
/** Readability's own source (the package's one file, which defines a global Readability class), read once. */
function readability(): string {
  readabilitySource ??= fs.readFileSync(require.resolve('@mozilla/readability/Readability.js'), 'utf8');
  return readabilitySource;
}

/** What the page answers: the article's HTML and title, and its head, as asked. */
interface PageAnswer {
  article?: { title: string | null; html: string | null; lang: string | null } | null;
  head?: Omit<PageMetadata, 'status_code' | 'response_headers' | 'redirects'>;
}

/** Runs in the page: its head and the web fonts it loaded. */
function readHead(limit: number, valueLimit: number): PageAnswer['head'] {
  const cut = (s: string | null | undefined): string | null => (s == null ? null : String(s).trim().slice(0, valueLimit) || null);
  const meta = (attr: string, name: string): string | null => {
    for (const m of Array.from(document.querySelectorAll(`meta[${attr}]`))) {
      if ((m.getAttribute(attr) ?? '').toLowerCase() === name) return cut(m.getAttribute('content'));
    }
    return null;
  };
  const prefixed = (prefix: string): Record<string, string> => {
    const out: Record<string, string> = {};
    for (const m of Array.from(document.querySelectorAll('meta[property], meta[name]'))) {
      const key = (m.getAttribute('property') || m.getAttribute('name') || '').toLowerCase();
      if (!key.startsWith(prefix) || key.length === prefix.length || key.slice(prefix.length) in out) continue;
      if (Object.keys(out).length >= limit) break;
      out[key.slice(prefix.length)] = cut(m.getAttribute('content')) ?? '';
    }
    return out;
  };
  const icons: PageIcon[] = [];
  for (const l of Array.from(document.querySelectorAll('link[rel][href]')) as HTMLLinkElement[]) {
    const rel = (l.getAttribute('rel') ?? '').toLowerCase();
    if (!/(^|\s)(icon|apple-touch-icon|apple-touch-icon-precomposed|mask-icon)(\s|$)/.test(rel) || icons.length >= limit) continue;
    const icon: PageIcon = { rel, href: l.href };
    if (l.getAttribute('sizes')) icon.sizes = String(l.getAttribute('sizes'));
    if (l.getAttribute('type')) icon.type = String(l.getAttribute('type'));
    icons.push(icon);
  }
  const fonts: UsedFont[] = [];
  const seenFonts = new Set<string>();
  document.fonts.forEach((f) => {
    if (f.status !== 'loaded' || fonts.length >= limit) return;
    const family = f.family.replace(/^["']|["']$/g, '');
    const key = `${family}|${f.style}|${f.weight}`;
    if (seenFonts.has(key)) return;
    seenFonts.add(key);
    fonts.push({ family, style: f.style, weight: f.weight });
  });
  const canonical = document.querySelector('link[rel~="canonical"][href]') as HTMLLinkElement | null;
  return {
    url: location.href,
    title: cut(document.title),
    description: meta('name', 'description'),
    language: cut(document.documentElement.getAttribute('lang')) ?? meta('http-equiv', 'content-language'),
    canonical_url: canonical ? canonical.href : null,
    open_graph: prefixed('og:'),
    twitter: prefixed('twitter:'),
    icons,
    fonts,
  };
}

/** The one expression that reads what the options ask for (Readability's source inlined when markdown is). */
export function textExpression(o: Pick<SnapOptions, 'markdown' | 'metadata'>): string {
  const parts: string[] = [];
  if (o.markdown) {
    parts.push(
      `article: (() => { ${readability()}\n; const doc = document.cloneNode(true); const a = new Readability(doc).parse(); ` +
        'return a ? { title: a.title || null, html: a.content || null, lang: a.lang || null } : null; })()',
    );
  }
  if (o.metadata) parts.push(`head: (${readHead.toString()})(${METADATA_LIST_LIMIT}, ${VALUE_LIMIT})`);
  return `({ ${parts.join(', ')} })`;
}

let turndown: TurndownService | null = null;
/** The article's HTML as Markdown (ATX headings, fenced code, "-" bullets), with the title as its heading when the article has none. */
export function toMarkdown(html: string, title: string | null): string {
  turndown ??= new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-', emDelimiter: '*' }).remove([
    'script',
    'style',
    'noscript',
  ]);
  const body = turndown.turndown(html).trim();
  const heading = title && !/^#\s/m.test(body) ? `# ${title}\n\n` : '';
  return `${heading}${body}\n`.slice(0, MARKDOWN_LIMIT);
}

/** What the capture hands on: the Markdown and the metadata, as asked. */
export interface PageText {
  markdown?: string;
  metadata?: PageMetadata;
}

/**
 * Reads the text the options ask for, in one evaluation; nothing when they ask for none. A
 * page Readability finds no article in gives an empty Markdown file, not a failed capture.
 */
export async function readText(page: PageSession, o: SnapOptions, observed: DocumentObserver | null, finalStatus: number | null): Promise<PageText> {
  if (!wantsText(o)) return {};
  const answer = await page.evaluate<PageAnswer>(textExpression(o), false);
  const out: PageText = {};
  if (o.markdown) {
    const a = answer.article;
    out.markdown = a?.html ? toMarkdown(a.html, a.title) : a?.title ? `# ${a.title}\n` : '';
  }
  if (o.metadata && answer.head) {
    const seen = observed?.seen;
    out.metadata = {
      ...answer.head,
      status_code: seen?.status ?? finalStatus,
      response_headers: seen?.headers ?? {},
      redirects: seen?.redirects ?? [],
    };
  }
  return out;
}
