/**
 * Provider presets: how each residential proxy network is asked for a country, a US state
 * or a city with a sticky session, from one proxy account (REAL_LOCATIONS_PROVIDER,
 * REAL_LOCATIONS_USERNAME, REAL_LOCATIONS_PASSWORD; REAL_LOCATIONS_GATEWAY replaces the
 * preset's gateway host:port). Each provider reads its targeting from the proxy user name
 * (IPRoyal: from the password) in its own syntax, written here from its public
 * documentation, cited beside it. Pure functions: the catalogue (locations.ts) calls them
 * once per capture with a fresh session id.
 *
 * Names are sent as the documentation shows them: lower-case ASCII, diacritics dropped,
 * words joined the provider's way ("Sao Paulo": `saopaulo`, `sao_paulo`). A session lasts at
 * least as long as a capture may (CAPTURE_TIMEOUT_MS is at most 10 minutes); every capture
 * has its own, so one capture's requests leave from one address and two captures' do not
 * share one.
 */
import type { RealLocationPreset, RealLocationProvider } from '../shared/config';
import type { Target } from './places';

export interface Credentials {
  username: string;
  password: string;
}

export interface Preset {
  label: string;
  /** The provider's residential gateway (REAL_LOCATIONS_GATEWAY replaces it). */
  gateway: { host: string; port: number };
  /** Why these credentials cannot carry this provider's parameters (naming the variable), or null. */
  check(c: Credentials): string | null;
  /** The proxy user name and password that ask this provider for `target`, in sticky session `session` (alphanumeric). */
  credentials(c: Credentials, target: Target, session: string): Credentials;
}

/** "Sao Paulo" -> ["sao", "paulo"]; "Port-au-Prince" -> ["port", "au", "prince"]. */
function words(name: string): string[] {
  return name
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
}

/** A user name that already carries one of these parameters was copied with its targeting: the preset adds its own. */
function carries(value: string, params: string[]): string | undefined {
  return params.find((p) => value.toLowerCase().includes(p));
}

function noParams(variable: string, value: string, params: string[]): string | null {
  const found = carries(value, params);
  if (found) return `${variable} carries "${found}…": give the proxy user alone, the preset adds the targeting and session parameters`;
  if (/\s/.test(value)) return `${variable} contains a space`;
  return null;
}

function withPrefix(username: string, prefix: string): string {
  return username.startsWith(prefix) ? username : `${prefix}${username}`;
}

/**
 * Bright Data (residential zone). User name `brd-customer-<customer id>-zone-<zone name>`
 * as the zone's access details show it, then `-key-value` parameters:
 *   country `-country-us` (two letters, lower case); state `-country-us-state-ny` (residential
 *   only, lower-case state code, the country US with it); city `-country-de-city-berlin`
 *   (lower case, no spaces, the country with it);
 *   https://docs.brightdata.com/api-reference/proxy/geolocation-targeting
 *   session `-session-<id>` (alphanumeric only: the same value, the same peer);
 *   https://docs.brightdata.com/api-reference/proxy/rotate_ips
 *   user name structure: https://docs.brightdata.com/proxy-networks/config-options
 * Gateway brd.superproxy.io:33335 (the documentation's examples).
 */
const brightdata: Preset = {
  label: 'Bright Data',
  gateway: { host: 'brd.superproxy.io', port: 33335 },
  check: (c) =>
    noParams('REAL_LOCATIONS_USERNAME', c.username, ['-country-', '-state-', '-city-', '-session-']) ??
    (/^brd-customer-[A-Za-z0-9_]+-zone-[A-Za-z0-9_]+$/.test(c.username)
      ? null
      : "REAL_LOCATIONS_USERNAME must be the zone's proxy user name, brd-customer-<customer id>-zone-<zone name> (Bright Data control panel, the zone's " +
        '"Access details")'),
  credentials(c, t, session) {
    const params = [`country-${t.country.toLowerCase()}`];
    if (t.city) params.push(`city-${words(t.city).join('')}`);
    else if (t.state) params.push(`state-${t.state.code.toLowerCase()}`);
    params.push(`session-${session}`);
    return { username: `${c.username}-${params.join('-')}`, password: c.password };
  },
};

/**
 * Oxylabs Residential Proxies. User name `customer-<proxy user>` then `-key-value`:
 *   country `-cc-DE` (ISO alpha-2); city `-cc-GB-city-london` (English, "must be accompanied
 *   by cc", spaces as `_`: `st_petersburg`, `rio_de_janeiro`); US state `-st-us_california`
 *   (state name with `us_`); session `-sessid-<id>` (random string of 0-9 and A-Z; 10 minutes);
 *   https://developers.oxylabs.io/proxies/residential-proxies/making-requests
 *   https://developers.oxylabs.io/proxies/residential-proxies/select-state
 *   https://developers.oxylabs.io/proxies/residential-proxies/session-control
 * Gateway pr.oxylabs.io:7777:
 *   https://developers.oxylabs.io/proxies/residential-proxies/getting-started
 */
const oxylabs: Preset = {
  label: 'Oxylabs',
  gateway: { host: 'pr.oxylabs.io', port: 7777 },
  check: (c) => noParams('REAL_LOCATIONS_USERNAME', c.username, ['-cc-', '-st-', '-city-', '-sessid-']),
  credentials(c, t, session) {
    const params: string[] = [];
    if (t.city) params.push(`cc-${t.country}`, `city-${words(t.city).join('_')}`);
    else if (t.state) params.push(`st-us_${words(t.state.name).join('_')}`);
    else params.push(`cc-${t.country}`);
    params.push(`sessid-${session}`);
    return { username: `${withPrefix(c.username, 'customer-')}-${params.join('-')}`, password: c.password };
  },
};

/**
 * Decodo (formerly Smartproxy) Residential. User name `user-<proxy user>` then `-key-value`:
 * country `-country-us`; US state `-country-us-state-us_california` (multi-word names joined
 * with `_`: `us_new_york`); city `-country-de-city-berlin`, in the US with its state
 * (`-country-us-state-us_texas-city-austin`); session `-session-<id>` (sticky, 10 minutes by
 * default). Documentation: https://help.decodo.com/docs/residential-proxy-advanced-parameters
 * and https://help.decodo.com/docs/residential-proxy-custom-sticky-sessions; those pages could
 * not be read from here, so the syntax follows what could: Decodo's own examples of the
 * gateway (https://github.com/Decodo/Decodo, shell/README.md: gate.decodo.com:7000;
 * https://help.decodo.com/docs/mobile-proxy-quick-start) and the Decodo client
 * github.com/VectorSprint/go-proxy-pool (pkg.go.dev), whose documented output is
 * `user-<user>-country-us-state-us_california-city-los_angeles-session-<id>`.
 */
const decodo: Preset = {
  label: 'Decodo',
  gateway: { host: 'gate.decodo.com', port: 7000 },
  check: (c) => noParams('REAL_LOCATIONS_USERNAME', c.username, ['-country-', '-state-', '-city-', '-session-']),
  credentials(c, t, session) {
    const params = [`country-${t.country.toLowerCase()}`];
    if (t.state) params.push(`state-us_${words(t.state.name).join('_')}`);
    if (t.city) params.push(`city-${words(t.city).join('_')}`);
    params.push(`session-${session}`);
    return { username: `${withPrefix(c.username, 'user-')}-${params.join('-')}`, password: c.password };
  },
};

/**
 * IPRoyal Residential. The password carries the parameters, `_key-value` each:
 *   `_country-us` (ISO alpha-2); `_city-chicago` ("first specify the country");
 *   `_state-iowa` (US only); https://docs.iproyal.com/proxies/residential/proxy/location
 *   and https://docs.iproyal.com/scraping-tools/web-unblocker/geo-location-targeting;
 *   `_session-<id>` ("a random alphanumeric string, precisely 8 characters") with
 *   `_lifetime-30m` (one unit, 1 second to 7 days);
 *   https://docs.iproyal.com/proxies/residential/proxy/rotation
 * Multi-word names: the documentation shows none; `_` separates parameters, so the words are
 * joined without one (`_state-newyork`, `_city-losangeles`), as IPRoyal's users report working.
 * Gateway geo.iproyal.com:12321 (the nearest region): https://docs.iproyal.com/proxies/residential/proxy
 */
const iproyal: Preset = {
  label: 'IPRoyal',
  gateway: { host: 'geo.iproyal.com', port: 12321 },
  check: (c) =>
    noParams('REAL_LOCATIONS_PASSWORD', c.password, ['_country-', '_region-', '_state-', '_city-', '_session-', '_lifetime-']) ??
    (/\s/.test(c.username) ? 'REAL_LOCATIONS_USERNAME contains a space' : null),
  credentials(c, t, session) {
    const params = [`country-${t.country.toLowerCase()}`];
    if (t.city) params.push(`city-${words(t.city).join('')}`);
    else if (t.state) params.push(`state-${words(t.state.name).join('')}`);
    params.push(`session-${session.slice(0, 8).padEnd(8, '0')}`, 'lifetime-30m');
    return { username: c.username, password: `${c.password}_${params.join('_')}` };
  },
};

export const PRESETS: Record<RealLocationProvider, Preset> = { brightdata, oxylabs, decodo, iproyal };

/** The upstream of targets through one configured preset. */
export interface PresetRoute {
  label: string;
  /** http://<user>:<password>@<gateway>, asking for `target` in session `session`. */
  upstream(target: Target, session: string): string;
}

/** The configured preset's route, or the reason its credentials cannot work (naming the variable). */
export function presetRoute(config: RealLocationPreset): PresetRoute | { error: string } {
  const preset = PRESETS[config.provider];
  const account = { username: config.username, password: config.password };
  const error = preset.check(account);
  if (error) return { error: `REAL_LOCATIONS_PROVIDER=${config.provider}: ${error}` };
  const { host, port } = config.gateway ?? preset.gateway;
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return {
    label: preset.label,
    upstream(target, session) {
      const c = preset.credentials(account, target, session.replace(/[^A-Za-z0-9]/g, ''));
      return `http://${encodeURIComponent(c.username)}:${encodeURIComponent(c.password)}@${hostPart}:${port}`;
    },
  };
}
