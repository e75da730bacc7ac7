/**
 * The real-location catalogue: every location name this server serves, and the upstream
 * proxy of a capture through one. Two sources, combined:
 *
 * - a provider preset (REAL_LOCATIONS_PROVIDER, presets.ts): every name of the hosted
 *   service (places.ts), each asking the provider for its country, US state or city; a
 *   country picks one of its cities at random, a region one of its countries;
 * - an operator's JSON file (REAL_LOCATIONS_FILE, DESIGN section 3) mapping names to an
 *   upstream proxy, or to other names (the preset's included) to pick from at random. Its
 *   names override the preset's:
 *
 *   {"Berlin":  {"proxy": "http://user-country-de-city-berlin-session-{session}:pw@gw.example:7000"},
 *    "Munich":  {"proxy": "socks5://user:pw@gw.example:7001"},
 *    "Germany": {"pick": ["Berlin", "Munich"]}}
 *
 * `{session}` in a proxy URL becomes a fresh random id per capture (residential providers'
 * sticky sessions, which they read from the user name in their own formats). Pure functions
 * but loadCatalogue (which reads the file): building and validating the catalogue, listing
 * its names, close names of a typo, and the route of one capture.
 */
import fs from 'node:fs';
import didYouMean, { ReturnTypeEnums, ThresholdTypeEnums } from 'didyoumean2';
import type { Config } from '../shared/config';
import type { ProxyFailure } from './own-proxies';
import { countryTargets, HOSTED_PLACES, type Place, type Target } from './places';
import { type PresetRoute, presetRoute } from './presets';

/** A file's upstream template, a file's or a region's names to pick from, or a preset name's targets (one at random). */
export type LocationEntry = { proxy: string } | { pick: string[] } | { targets: Target[] };

/** Names in their own case, each with its entry; looked up without regard to case. */
export interface Catalogue {
  entries: ReadonlyMap<string, { name: string; entry: LocationEntry }>;
  /** The preset that builds the upstream of a target; null when no preset is configured. */
  preset: PresetRoute | null;
}

export class CatalogueError extends Error {}

/** What a failed test of a location's upstream (admin CLI) means to the operator. */
export const LOCATION_FAILURE_NOTES: Record<ProxyFailure, string> = {
  proxy_auth_failed:
    'The upstream refused the proxy user name and password it was sent: check REAL_LOCATIONS_USERNAME and REAL_LOCATIONS_PASSWORD (or the URL in ' +
    'REAL_LOCATIONS_FILE), and that the account may target this location.',
  proxy_connection_failed:
    'The upstream could not be reached or did not relay the test page (PROXY_TEST_URL): check its host and port (REAL_LOCATIONS_GATEWAY or the URL in ' +
    'REAL_LOCATIONS_FILE).',
  proxy_host_not_found: "The upstream's host name does not resolve: check REAL_LOCATIONS_GATEWAY or the URL in REAL_LOCATIONS_FILE.",
  proxy_timeout: 'The upstream did not relay the test page in time (PROXY_TEST_TIMEOUT_MS).',
};

const PROXY_SCHEMES = new Set(['http:', 'https:', 'socks5:', 'socks:']);

type Entries = Map<string, { name: string; entry: LocationEntry }>;

/** A parsed catalogue file's entries, each checked alone: every proxy a URL the gateway can chain to. */
function fileEntries(raw: unknown, source: string): Entries {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new CatalogueError(`${source}: must be a JSON object of location names`);
  const entries: Entries = new Map();
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
      if (!PROXY_SCHEMES.has(url.protocol))
        throw new CatalogueError(`${source}: "${name}": proxy must be http://, https:// or socks5:// (got ${url.protocol})`);
      if (!url.hostname || !url.port) throw new CatalogueError(`${source}: "${name}": proxy must name a host and a port`);
      entries.set(key, { name, entry: { proxy: v.proxy } });
    } else if (v && Array.isArray(v.pick) && v.pick.length > 0 && v.pick.every((p) => typeof p === 'string') && v.proxy === undefined) {
      entries.set(key, { name, entry: { pick: v.pick as string[] } });
    } else {
      throw new CatalogueError(`${source}: "${name}" must be {"proxy": "<url>"} or {"pick": ["<name>", ...]}`);
    }
  }
  return entries;
}

function hostedEntry(place: Place): LocationEntry {
  switch (place.kind) {
    case 'country':
      return { targets: countryTargets(place.country) };
    case 'state':
      return { targets: [{ country: 'US', state: place.state }] };
    case 'city':
      return { targets: [place.target] };
    case 'region':
      return { pick: place.countries };
  }
}

/**
 * The catalogue of a preset (every hosted name; null: none) and a file's entries (null: no
 * file), the file's names replacing the preset's. Every pick must name an entry of the
 * whole and no picks may go round in a circle, so every name ends at an upstream.
 */
function combine(preset: PresetRoute | null, file: { raw: unknown; source: string } | null): Catalogue {
  const entries: Entries = new Map();
  if (preset) for (const [name, place] of HOSTED_PLACES) entries.set(name.toLowerCase(), { name, entry: hostedEntry(place) });
  const source = file?.source ?? 'REAL_LOCATIONS_FILE';
  if (file) for (const [key, e] of fileEntries(file.raw, source)) entries.set(key, e);
  const where = preset ? `neither in the file nor one of the ${preset.label} preset's names` : 'not in the file';
  for (const { name, entry } of entries.values()) {
    if (!('pick' in entry)) continue;
    for (const p of entry.pick) if (!entries.has(p.toLowerCase())) throw new CatalogueError(`${source}: "${name}" picks "${p}", which is ${where}`);
  }
  const done = new Set<string>();
  const visit = (key: string, path: string[]): void => {
    if (done.has(key)) return;
    if (path.includes(key))
      throw new CatalogueError(`${source}: the picks go round in a circle (${[...path, key].map((k) => entries.get(k)?.name).join(' -> ')})`);
    const e = entries.get(key)?.entry;
    if (e && 'pick' in e) for (const p of e.pick) visit(p.toLowerCase(), [...path, key]);
    done.add(key);
  };
  for (const key of entries.keys()) visit(key, []);
  return { entries, preset };
}

/** The catalogue of a parsed file alone (no preset). */
export function parseCatalogue(raw: unknown, source = 'REAL_LOCATIONS_FILE'): Catalogue {
  return combine(null, { raw, source });
}

/** The catalogue of a preset, and of a parsed file whose names override the preset's. */
export function presetCatalogue(preset: PresetRoute, file: { raw: unknown; source: string } | null = null): Catalogue {
  return combine(preset, file);
}

function readFile(file: string): { raw: unknown; source: string } {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new CatalogueError(`REAL_LOCATIONS_FILE: cannot read ${file} (${(err as Error).message})`);
  }
  try {
    return { raw: JSON.parse(text), source: `REAL_LOCATIONS_FILE ${file}` };
  } catch (err) {
    throw new CatalogueError(`REAL_LOCATIONS_FILE: ${file} is not JSON (${(err as Error).message})`);
  }
}

/**
 * The configured catalogue (the preset, the file, both or neither), read and checked at
 * start: a missing or broken file, or credentials the preset's syntax cannot carry, stop
 * the service with the variable named.
 */
export function loadCatalogue(settings: Config['realLocations']): Catalogue {
  let preset: PresetRoute | null = null;
  if (settings.preset) {
    const route = presetRoute(settings.preset);
    if ('error' in route) throw new CatalogueError(route.error);
    preset = route;
  }
  return combine(preset, settings.file === null ? null : readFile(settings.file));
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
 * The values the hosted service's forms offer besides location names: `Random` asks for any
 * one of the catalogue's names, picked per capture; `All` would ask for every location at
 * once, which one capture cannot do (refused). Neither is listed by GET /real_locations. A
 * name the catalogue has itself (a file may define one) is that name instead.
 */
export const RANDOM_LOCATION = 'random';
export const ALL_LOCATIONS = 'all';

/**
 * The catalogue name a capture asking for `name` goes through: its own spelling, or for
 * `Random` one of every name picked at random; null when it is not in the catalogue (or
 * the catalogue is empty).
 */
export function resolveLocation(cat: Catalogue, name: string, random: () => number = Math.random): string | null {
  const known = knownLocation(cat, name);
  if (known !== null || name.toLowerCase() !== RANDOM_LOCATION || cat.entries.size === 0) return known;
  const names = locationNames(cat);
  return names[Math.min(names.length - 1, Math.floor(random() * names.length))] ?? null;
}

/** Up to `max` names of the catalogue close to a name it does not know (a typo), the closest first. */
export function closeNames(cat: Catalogue, name: string, max = 5): string[] {
  const matches = didYouMean(name, locationNames(cat), {
    returnType: ReturnTypeEnums.ALL_SORTED_MATCHES,
    thresholdType: ThresholdTypeEnums.SIMILARITY,
    threshold: 0.5,
  });
  return matches.slice(0, max);
}

/**
 * The upstream of one capture through a location: picks followed at random down to a proxy
 * template (`{session}` replaced by `session`, URL-encoded) or to a preset name's targets
 * (one at random, asked for in session `session`). `via` is the name the route ended at,
 * `target` what the preset asked for (null through a file's proxy). Null for a name not in
 * the catalogue.
 */
export function routeOf(
  cat: Catalogue,
  name: string,
  session: string,
  random: () => number = Math.random,
): { upstream: string; via: string; target: Target | null } | null {
  const one = <T>(list: readonly T[]): T => list[Math.min(list.length - 1, Math.floor(random() * list.length))] as T;
  let current = cat.entries.get(name.toLowerCase());
  while (current && 'pick' in current.entry) current = cat.entries.get(one(current.entry.pick).toLowerCase());
  if (!current || 'pick' in current.entry) return null;
  if ('proxy' in current.entry) return { upstream: current.entry.proxy.replaceAll('{session}', encodeURIComponent(session)), via: current.name, target: null };
  if (!cat.preset) return null;
  const target = one(current.entry.targets);
  return { upstream: cat.preset.upstream(target, session), via: current.name, target };
}

/** An upstream URL's host:port, without its credentials (for operators' eyes). */
export function upstreamAddress(upstream: string): string {
  const u = new URL(upstream);
  return `${u.hostname}:${u.port || (u.protocol === 'https:' ? 443 : 80)}`;
}
