/**
 * The real-location catalogue (DESIGN section 3): an operator's JSON file mapping each
 * location name (countries, US states, cities, regions) to an upstream proxy, or to other
 * names to pick from at random:
 *
 *   {"Berlin":  {"proxy": "http://user-country-de-city-berlin-session-{session}:pw@gw.example:7000"},
 *    "Munich":  {"proxy": "socks5://user:pw@gw.example:7001"},
 *    "Germany": {"pick": ["Berlin", "Munich"]}}
 *
 * `{session}` in a proxy URL becomes a fresh random id per capture (residential providers'
 * sticky sessions, which they read from the user name in their own formats). Pure functions:
 * parsing and validating the file, listing the names, and the route of one capture.
 */
import fs from 'node:fs';

export type LocationEntry = { proxy: string } | { pick: string[] };

/** Names in their own case, each with its entry; looked up without regard to case. */
export interface Catalogue {
  entries: ReadonlyMap<string, { name: string; entry: LocationEntry }>;
}

export class CatalogueError extends Error {}

const PROXY_SCHEMES = new Set(['http:', 'https:', 'socks5:', 'socks:']);

/** Validates a parsed catalogue file: every proxy a URL the gateway can chain to, every pick a known name, no cycles. */
export function parseCatalogue(raw: unknown, source = 'REAL_LOCATIONS_FILE'): Catalogue {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new CatalogueError(`${source}: must be a JSON object of location names`);
  const entries = new Map<string, { name: string; entry: LocationEntry }>();
  for (const [name, value] of Object.entries(raw as Record<string, unknown>)) {
    if (!name.trim()) throw new CatalogueError(`${source}: a location name is empty`);
    const key = name.toLowerCase();
    if (entries.has(key)) throw new CatalogueError(`${source}: "${name}" is listed twice (names are compared without case)`);
    const v = value as { proxy?: unknown; pick?: unknown } | null;
    if (v && typeof v.proxy === 'string' && v.pick === undefined) {
      let url: URL;
      try {
        url = new URL(v.proxy.replaceAll('{session}', 'session'));
      } catch {
        throw new CatalogueError(`${source}: "${name}": proxy is not a URL`);
      }
      if (!PROXY_SCHEMES.has(url.protocol)) throw new CatalogueError(`${source}: "${name}": proxy must be http://, https:// or socks5:// (got ${url.protocol})`);
      if (!url.hostname || !url.port) throw new CatalogueError(`${source}: "${name}": proxy must name a host and a port`);
      entries.set(key, { name, entry: { proxy: v.proxy } });
    } else if (v && Array.isArray(v.pick) && v.pick.length > 0 && v.pick.every((p) => typeof p === 'string') && v.proxy === undefined) {
      entries.set(key, { name, entry: { pick: v.pick as string[] } });
    } else {
      throw new CatalogueError(`${source}: "${name}" must be {"proxy": "<url>"} or {"pick": ["<name>", ...]}`);
    }
  }
  for (const { name, entry } of entries.values()) {
    if (!('pick' in entry)) continue;
    for (const p of entry.pick) if (!entries.has(p.toLowerCase())) throw new CatalogueError(`${source}: "${name}" picks "${p}", which is not in the file`);
  }
  // Every name must end at a proxy whichever way the picks go: no cycles.
  const done = new Set<string>();
  const visit = (key: string, path: string[]): void => {
    if (done.has(key)) return;
    if (path.includes(key)) throw new CatalogueError(`${source}: the picks go round in a circle (${[...path, key].map((k) => entries.get(k)?.name).join(' -> ')})`);
    const e = entries.get(key)?.entry;
    if (e && 'pick' in e) for (const p of e.pick) visit(p.toLowerCase(), [...path, key]);
    done.add(key);
  };
  for (const key of entries.keys()) visit(key, []);
  return { entries };
}

/** Reads and validates the file; a missing or broken file stops the service at start. */
export function loadCatalogue(file: string | null): Catalogue {
  if (file === null) return { entries: new Map() };
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new CatalogueError(`REAL_LOCATIONS_FILE: cannot read ${file} (${(err as Error).message})`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new CatalogueError(`REAL_LOCATIONS_FILE: ${file} is not JSON (${(err as Error).message})`);
  }
  return parseCatalogue(raw, `REAL_LOCATIONS_FILE ${file}`);
}

/** Every name of the catalogue, sorted (case-insensitively, then as written). */
export function locationNames(cat: Catalogue): string[] {
  return [...cat.entries.values()].map((e) => e.name).sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'base' }) || (a < b ? -1 : a > b ? 1 : 0));
}

/** The catalogue's own spelling of a name, or null when it is not in the catalogue. */
export function knownLocation(cat: Catalogue, name: string): string | null {
  return cat.entries.get(name.toLowerCase())?.name ?? null;
}

/**
 * The upstream of one capture through a location: picks followed at random down to a proxy,
 * `{session}` replaced by `session` (URL-encoded). Null for a name not in the catalogue.
 */
export function routeOf(cat: Catalogue, name: string, session: string, random: () => number = Math.random): { upstream: string; via: string } | null {
  let current = cat.entries.get(name.toLowerCase());
  while (current && 'pick' in current.entry) {
    const picks = current.entry.pick;
    const next = picks[Math.min(picks.length - 1, Math.floor(random() * picks.length))] ?? '';
    current = cat.entries.get(next.toLowerCase());
  }
  if (!current || !('proxy' in current.entry)) return null;
  return { upstream: current.entry.proxy.replaceAll('{session}', encodeURIComponent(session)), via: current.name };
}
