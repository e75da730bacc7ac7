/**
 * Which pages of a site domain research reads besides its home page: among the links the
 * home page shows, those of the same site that are likely to hold the fields asked for. A
 * link scores for words of its address and text that name the fields (their names and
 * descriptions: "pricing" for a field about price tiers), and for the pages that hold facts
 * about an organisation on most sites (about, pricing, team, contact, careers...); pages
 * that hold none (sign-in, cart, legal, files) are never read. Pure: links in, URLs out.
 */
import { getDomain } from 'tldts';
import type { PageLink } from '../browsers/engine';

/** Pages most sites keep their facts on, and how strongly each name suggests facts. */
const INFORMATIVE: Record<string, number> = {
  about: 4,
  pricing: 4,
  company: 3,
  price: 3,
  prices: 3,
  plans: 3,
  team: 3,
  leadership: 3,
  contact: 3,
  impressum: 3,
  imprint: 3,
  story: 2,
  mission: 2,
  careers: 2,
  jobs: 2,
  product: 2,
  products: 2,
  features: 2,
  services: 2,
  solutions: 2,
  customers: 2,
  investors: 2,
  locations: 2,
  faq: 2,
  press: 1,
  news: 1,
};

/** Pages that hold no facts about the organisation, whatever the fields. */
const NEVER = /\b(log-?in|log-?out|sign-?in|sign-?up|register|cart|basket|checkout|account|password|privacy|cookies?|terms|legal|gdpr|unsubscribe)\b/;
const FILE = /\.(pdf|zip|gz|png|jpe?g|gif|webp|svg|ico|mp4|webm|mp3|docx?|xlsx?|pptx?|csv|exe|dmg|apk)$/i;
const STOPWORDS = new Set(
  (
    'the and for with that this from what which when where their there them they have has had will would should could about into over than then also ' +
    "only each every most more such your you our its it's does page pages site website field value text list number true false name data give state states"
  ).split(' '),
);

const words = (text: string): string[] =>
  text
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((w) => w.length >= 3);

/** The words of the fields worth finding in a link: their names' and descriptions' words, less the common ones. */
export function fieldTerms(fields: ReadonlyArray<{ data_field_name: string; data_field_prompt_description: string }>): Set<string> {
  const terms = new Set<string>();
  for (const f of fields)
    for (const w of words(`${f.data_field_name.replace(/_/g, ' ')} ${f.data_field_prompt_description}`)) if (w.length >= 4 && !STOPWORDS.has(w)) terms.add(w);
  return terms;
}

/** Two words that are forms of one (price, pricing; found, founded): the same, or sharing most of a long prefix. */
function related(a: string, b: string): boolean {
  if (a === b) return true;
  if (a.length < 4 || b.length < 4) return false;
  let common = 0;
  while (common < a.length && common < b.length && a[common] === b[common]) common++;
  return common >= Math.max(4, Math.min(a.length, b.length) - 2);
}

/** A site: its registrable domain (www.example.co.uk and example.co.uk are one), else its host; and its port. */
export function siteOf(url: URL): string {
  return `${getDomain(url.hostname) ?? url.hostname}:${url.port}`;
}

function decoded(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** A page's address without what does not name another page (fragment, trailing slash). */
function pageKey(url: URL): string {
  return `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '') || '/'}${url.search}`;
}

/**
 * Up to `count` pages of `home`'s site to read, best first: links of the same site that score
 * above nothing (see the header); ties keep the page's order. `home` is where the home page
 * ended up (after its redirects).
 */
export function pickPages(home: string, links: readonly PageLink[], terms: ReadonlySet<string>, count: number): string[] {
  const base = new URL(home);
  const site = siteOf(base);
  const seen = new Set([pageKey(base)]);
  const scored: Array<{ url: string; score: number; order: number }> = [];
  for (const [order, link] of links.entries()) {
    let url: URL;
    try {
      url = new URL(link.href);
    } catch {
      continue;
    }
    if ((url.protocol !== 'http:' && url.protocol !== 'https:') || siteOf(url) !== site || FILE.test(url.pathname)) continue;
    url.hash = '';
    const key = pageKey(url);
    if (seen.has(key)) continue;
    seen.add(key);
    const said = `${decoded(url.pathname)} ${link.text}`;
    if (NEVER.test(said.toLowerCase())) continue;
    const linkWords = new Set(words(said));
    let score = 0;
    for (const w of linkWords) score += INFORMATIVE[w] ?? 0;
    for (const t of terms) if ([...linkWords].some((w) => related(w, t))) score += 3;
    // Deep or parameterised pages are less often where an organisation states its facts.
    score -= Math.max(0, url.pathname.split('/').filter(Boolean).length - 1) + (url.search ? 1 : 0);
    if (score > 0) scored.push({ url: url.href, score, order });
  }
  return scored
    .sort((a, b) => b.score - a.score || a.order - b.order)
    .slice(0, count)
    .map((s) => s.url);
}
