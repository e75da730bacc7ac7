/**
 * What domain research reads from a page besides its image: the address it ended at, its
 * title, its visible text and its links, read in the page once it is captured (the same
 * capture, the same browser context, the same egress policy). Bounded, so that a huge page
 * cannot make a huge record: the text is cut at TEXT_LIMIT characters, the links at
 * LINK_LIMIT. A capture reads it when its context asks (`read`: readingCapture, page-capture.ts).
 */
export const TEXT_LIMIT = 20_000;
export const LINK_LIMIT = 500;

export interface PageLink {
  /** Absolute (the browser resolved it). */
  href: string;
  text: string;
}

export interface PageReading {
  /** Where the page ended up (after redirects). */
  url: string;
  /** The HTTP status its document came with (0 when the browser does not say). */
  status: number;
  title: string;
  text: string;
  links: PageLink[];
}

/** Evaluated in the page: its reading, as JSON-able values. */
export const READ_PAGE = `(() => {
  const clean = (s, n) => String(s || '').replace(/[ \\t\\f\\v\\u00a0]+/g, ' ').replace(/\\s*\\n\\s*/g, '\\n').trim().slice(0, n);
  const links = [];
  for (const a of document.querySelectorAll('a[href]')) {
    if (links.length >= ${LINK_LIMIT}) break;
    if (typeof a.href !== 'string') continue; // an SVG link's href is an object
    links.push({ href: a.href, text: clean(a.innerText || a.getAttribute('aria-label') || a.title, 200) });
  }
  const nav = performance.getEntriesByType('navigation')[0];
  return {
    url: location.href, status: (nav && nav.responseStatus) || 0, title: clean(document.title, 300),
    text: clean(document.body ? document.body.innerText : '', ${TEXT_LIMIT}), links,
  };
})()`;
