/**
 * Provider presets and the hosted service's names, without a running system: every name
 * through every preset asks for credentials that provider's documented syntax accepts (the
 * grammars of test/support/provider-upstreams.ts), with the targeting the name means; the
 * exact syntax of each provider; the decisions on ambiguous names; a file combined with a
 * preset; close names of a typo; configurations that must stop the process. The last part
 * runs the local stand-ins, each refusing the other providers' syntax with 407.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { CatalogueError, closeNames, type Catalogue, loadCatalogue, locationNames, presetCatalogue, routeOf } from '../../services/proxy/locations';
import { countryTargets, HOSTED_PLACES } from '../../services/proxy/places';
import { type PresetRoute, presetRoute } from '../../services/proxy/presets';
import { testThroughProxy } from '../../services/proxy/proxy-check';
import { ConfigError, loadConfig, REAL_LOCATION_PROVIDERS, type RealLocationProvider } from '../../services/shared/config';
import { ACCOUNTS, type Asked, parseCredentials, startProviderUpstream } from '../support/provider-upstreams';
import { HOSTED_NAMES } from './hosted-location-names';

function route(provider: RealLocationProvider, gateway: { host: string; port: number } | null = { host: '127.0.0.1', port: 7000 }): PresetRoute {
  const r = presetRoute({ provider, ...ACCOUNTS[provider], gateway });
  if ('error' in r) throw new Error(r.error);
  return r;
}

/** The user name and password an upstream URL carries, decoded, and its host:port. */
function credentialsOf(upstream: string): { username: string; password: string; host: string } {
  const u = new URL(upstream);
  return { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password), host: u.host };
}

/** What `provider` reads from the upstream of one capture through `name` (the draw fixed by `r`). */
function askedFor(provider: RealLocationProvider, cat: Catalogue, name: string, r = 0, session = 'Abcd1234EFgh'): Asked | null {
  const route = routeOf(cat, name, session, () => r);
  if (!route) throw new Error(`no route for ${name}`);
  const c = credentialsOf(route.upstream);
  return parseCredentials(provider, ACCOUNTS[provider], c.username, c.password);
}

/** A name as letters and digits only, to compare what each provider's syntax spells its way. */
const flat = (s: string) =>
  s
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '');

const sorted = (names: string[]) => [...names].sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'base' }) || (a < b ? -1 : 1));

describe('real-location presets and the hosted names (pure)', () => {
  const catalogues = Object.fromEntries(REAL_LOCATION_PROVIDERS.map((p) => [p, presetCatalogue(route(p))])) as Record<RealLocationProvider, Catalogue>;

  it("every preset serves exactly the hosted service's names, sorted", () => {
    expect(HOSTED_NAMES).to.have.length(199);
    for (const p of REAL_LOCATION_PROVIDERS) expect(locationNames(catalogues[p]), p).to.deep.equal(sorted(HOSTED_NAMES));
  });

  it("every name through every preset asks in that provider's syntax for the country, state or city it means", () => {
    for (const p of REAL_LOCATION_PROVIDERS) {
      for (const name of HOSTED_NAMES) {
        for (const r of [0, 0.5, 0.99]) {
          const asked = askedFor(p, catalogues[p], name, r);
          expect(asked, `${p} ${name}`).to.not.equal(null);
          const place = HOSTED_PLACES.get(name);
          const state = flat((asked?.state ?? '').replace(/^us_/, ''));
          const city = flat(asked?.city ?? '');
          if (place?.kind === 'state') {
            expect(asked?.country, `${p} ${name}`).to.equal('us');
            expect([flat(place.state.name), place.state.code.toLowerCase()], `${p} ${name}`).to.include(state);
          } else if (place?.kind === 'country') {
            expect(asked?.country, `${p} ${name}`).to.equal(place.country.toLowerCase());
            expect(
              countryTargets(place.country).map((t) => flat(t.city ?? '')),
              `${p} ${name}`,
            ).to.include(city);
          } else if (place?.kind === 'city') {
            expect([asked?.country, city], `${p} ${name}`).to.deep.equal([place.target.country.toLowerCase(), flat(place.target.city ?? '')]);
          }
        }
      }
    }
  });

  it("each provider's exact syntax: a city, a US state, a US city, a country without big cities; the preset's own gateway", () => {
    const names = ['London', 'California', 'Los Angeles', 'New Hampshire', 'Andorra', 'Brazil'];
    const expected: Record<RealLocationProvider, string[]> = {
      brightdata: [
        'brd-customer-hl_1a2b3c4d-zone-residential1-country-gb-city-london-session-Abcd1234EFgh:zone-secret',
        'brd-customer-hl_1a2b3c4d-zone-residential1-country-us-state-ca-session-Abcd1234EFgh:zone-secret',
        'brd-customer-hl_1a2b3c4d-zone-residential1-country-us-city-losangeles-session-Abcd1234EFgh:zone-secret',
        'brd-customer-hl_1a2b3c4d-zone-residential1-country-us-state-nh-session-Abcd1234EFgh:zone-secret',
        'brd-customer-hl_1a2b3c4d-zone-residential1-country-ad-session-Abcd1234EFgh:zone-secret',
        'brd-customer-hl_1a2b3c4d-zone-residential1-country-br-city-saopaulo-session-Abcd1234EFgh:zone-secret',
      ],
      oxylabs: [
        'customer-snap_user-cc-GB-city-london-sessid-Abcd1234EFgh:oxy-secret',
        'customer-snap_user-st-us_california-sessid-Abcd1234EFgh:oxy-secret',
        'customer-snap_user-cc-US-city-los_angeles-sessid-Abcd1234EFgh:oxy-secret',
        'customer-snap_user-st-us_new_hampshire-sessid-Abcd1234EFgh:oxy-secret',
        'customer-snap_user-cc-AD-sessid-Abcd1234EFgh:oxy-secret',
        'customer-snap_user-cc-BR-city-sao_paulo-sessid-Abcd1234EFgh:oxy-secret',
      ],
      decodo: [
        'user-spuser123-country-gb-city-london-session-Abcd1234EFgh:decodo-secret',
        'user-spuser123-country-us-state-us_california-session-Abcd1234EFgh:decodo-secret',
        'user-spuser123-country-us-state-us_california-city-los_angeles-session-Abcd1234EFgh:decodo-secret',
        'user-spuser123-country-us-state-us_new_hampshire-session-Abcd1234EFgh:decodo-secret',
        'user-spuser123-country-ad-session-Abcd1234EFgh:decodo-secret',
        'user-spuser123-country-br-city-sao_paulo-session-Abcd1234EFgh:decodo-secret',
      ],
      iproyal: [
        'royaluser:royalsecret_country-gb_city-london_session-Abcd1234_lifetime-30m',
        'royaluser:royalsecret_country-us_state-california_session-Abcd1234_lifetime-30m',
        'royaluser:royalsecret_country-us_city-losangeles_session-Abcd1234_lifetime-30m',
        'royaluser:royalsecret_country-us_state-newhampshire_session-Abcd1234_lifetime-30m',
        'royaluser:royalsecret_country-ad_session-Abcd1234_lifetime-30m',
        'royaluser:royalsecret_country-br_city-saopaulo_session-Abcd1234_lifetime-30m',
      ],
    };
    const gateways: Record<RealLocationProvider, string> = {
      brightdata: 'brd.superproxy.io:33335',
      oxylabs: 'pr.oxylabs.io:7777',
      decodo: 'gate.decodo.com:7000',
      iproyal: 'geo.iproyal.com:12321',
    };
    for (const p of REAL_LOCATION_PROVIDERS) {
      const cat = presetCatalogue(route(p, null));
      const got = names.map((n) => credentialsOf(routeOf(cat, n, 'Abcd1234EFgh', () => 0)?.upstream ?? ''));
      expect(
        got.map((c) => `${c.username}:${c.password}`),
        p,
      ).to.deep.equal(expected[p]);
      expect(new Set(got.map((c) => c.host)), p).to.deep.equal(new Set([gateways[p]]));
    }
  });

  it('credentials are URL-encoded into the upstream and read back intact', () => {
    const r = presetRoute({ provider: 'oxylabs', username: 'snap_user', password: 'p@ss:w/rd%', gateway: { host: '::1', port: 8000 } });
    if ('error' in r) throw new Error(r.error);
    const up = routeOf(presetCatalogue(r), 'London', 'S1', () => 0)?.upstream ?? '';
    expect(up.startsWith('http://') && up.endsWith('@[::1]:8000')).to.equal(true);
    expect(credentialsOf(up).password).to.equal('p@ss:w/rd%');
  });

  it('decisions: New York the city, Washington the state, Georgia the country, US/USA and GB spellings, Dominica', () => {
    const cat = catalogues.brightdata;
    const ask = (name: string, r = 0) => askedFor('brightdata', cat, name, r);
    expect(ask('New York')).to.include({ country: 'us', city: 'newyork', state: null });
    expect(ask('Washington')).to.include({ country: 'us', state: 'wa', city: null });
    expect(ask('Georgia (US)')).to.include({ country: 'us', state: 'ga' });
    expect(ask('Georgia')).to.include({ country: 'ge', city: 'tbilisi' });
    expect(ask('Dominica')).to.include({ country: 'dm', city: null });
    for (const n of ['US', 'USA', 'usa']) expect(ask(n)?.country).to.equal('us');
    for (const n of ['Great Britain', 'United Kingdom']) expect(ask(n)).to.include({ country: 'gb', city: 'london' });
    expect(ask('Miami')).to.include({ country: 'us', city: 'miami' });
  });

  it('a country picks each of its big cities over the draws; one without is targeted whole; names without case', () => {
    const cities = (name: string) => new Set(Array.from({ length: 60 }, () => askedFor('oxylabs', catalogues.oxylabs, name, Math.random())?.city ?? null));
    expect(cities('Germany')).to.deep.equal(new Set(['berlin', 'hamburg', 'munich']));
    expect(cities('usa')).to.deep.equal(new Set(['new_york', 'los_angeles', 'chicago']));
    expect(cities('ANDORRA')).to.deep.equal(new Set([null]));
    expect(countryTargets('CY')).to.deep.equal([{ country: 'CY' }]);
  });

  it("Europe picks among the UN geoscheme's European countries, many of them over the draws, never Cyprus, Turkey or the Caucasus", () => {
    const europe = new Set(
      'al ad at by be ba bg hr cz dk ee fi fr de gr hu is ie it lv li lt lu mk mt md mc me nl no pl pt ro ru rs sk si es se ch ua gb'.split(' '),
    );
    const seen = new Set<string>();
    for (let i = 0; i < 400; i++) seen.add(askedFor('decodo', catalogues.decodo, 'Europe', Math.random())?.country ?? 'none');
    for (const cc of seen) expect(europe.has(cc), cc).to.equal(true);
    expect(seen.size).to.be.greaterThan(30);
  });

  it("every capture has its own session; IPRoyal's is the 8 characters its syntax asks for", () => {
    const a = askedFor('iproyal', catalogues.iproyal, 'London', 0, 'firstSession1');
    const b = askedFor('iproyal', catalogues.iproyal, 'London', 0, 'otherSession2');
    expect(a?.session).to.equal('firstSes');
    expect(b?.session).to.equal('otherSes');
    expect(askedFor('brightdata', catalogues.brightdata, 'London', 0, 'a-b_c')?.session).to.equal('abc');
  });

  it("a file's names override the preset's and its picks may name the preset's; a pick of a missing name is refused", () => {
    const file = {
      raw: {
        london: { proxy: 'http://file-user-{session}:pw@127.0.0.1:7100' },
        Alps: { pick: ['Switzerland', 'Austria'] },
      },
      source: 'REAL_LOCATIONS_FILE f.json',
    };
    const cat = presetCatalogue(route('oxylabs'), file);
    const names = locationNames(cat);
    expect(names).to.include.members(['Alps', 'london']).and.not.include('London');
    expect(names).to.have.length(200);
    expect(routeOf(cat, 'LONDON', 'S1')).to.deep.equal({ upstream: 'http://file-user-S1:pw@127.0.0.1:7100', via: 'london', target: null });
    const alps = new Set(Array.from({ length: 40 }, () => askedFor('oxylabs', cat, 'Alps', Math.random())?.country));
    expect(alps).to.deep.equal(new Set(['ch', 'at']));
    expect(() => presetCatalogue(route('oxylabs'), { raw: { Bad: { pick: ['Atlantis'] } }, source: 'REAL_LOCATIONS_FILE f.json' })).to.throw(
      CatalogueError,
      /"Bad" picks "Atlantis", which is neither in the file nor one of the Oxylabs preset's names/,
    );
  });

  it('credentials the syntax cannot carry stop the service, naming the variable and never the password', () => {
    const load = (provider: RealLocationProvider, username: string, password: string) => () =>
      loadCatalogue({ file: null, preset: { provider, username, password, gateway: null } });
    expect(load('brightdata', 'hl_1a2b3c4d', 'zone-secret')).to.throw(
      CatalogueError,
      /REAL_LOCATIONS_USERNAME must be the zone's proxy user name, brd-customer-<customer id>-zone-<zone name>/,
    );
    expect(load('brightdata', 'brd-customer-hl_1-zone-z-country-us', 'zone-secret')).to.throw(CatalogueError, /REAL_LOCATIONS_USERNAME carries "-country-…"/);
    expect(load('oxylabs', 'customer-snap_user-cc-US', 'oxy-secret')).to.throw(
      CatalogueError,
      /REAL_LOCATIONS_PROVIDER=oxylabs: REAL_LOCATIONS_USERNAME carries "-cc-…"/,
    );
    expect(load('decodo', 'user-sp-session-1', 'decodo-secret')).to.throw(CatalogueError, /REAL_LOCATIONS_USERNAME carries "-session-…"/);
    let message = '';
    try {
      load('iproyal', 'royaluser', 'royalsecret_country-us')();
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).to.match(/REAL_LOCATIONS_PASSWORD carries "_country-…"/);
    expect(message).to.not.include('royalsecret');
    // A prefix the preset adds is accepted when already there.
    expect(askedFor('oxylabs', presetCatalogue(route('oxylabs')), 'London')?.city).to.equal('london');
    const prefixed = presetRoute({ provider: 'decodo', username: 'user-spuser123', password: 'decodo-secret', gateway: null });
    if ('error' in prefixed) throw new Error(prefixed.error);
    expect(credentialsOf(routeOf(presetCatalogue(prefixed), 'London', 'S1', () => 0)?.upstream ?? '').username).to.equal(
      'user-spuser123-country-gb-city-london-session-S1',
    );
  });

  it('the configuration: all or nothing, a known provider, host:port; smartproxy is decodo', () => {
    const base = { REAL_LOCATIONS_PROVIDER: 'oxylabs', REAL_LOCATIONS_USERNAME: 'u', REAL_LOCATIONS_PASSWORD: 'very-secret-pw' };
    const fails = (env: Record<string, string>, re: RegExp) => {
      let message = '';
      try {
        loadConfig(env);
      } catch (err) {
        expect(err).to.be.instanceOf(ConfigError);
        message = (err as Error).message;
      }
      expect(message).to.match(re);
      expect(message).to.not.include('very-secret-pw');
    };
    fails({ ...base, REAL_LOCATIONS_PROVIDER: 'luminati' }, /REAL_LOCATIONS_PROVIDER must be one of brightdata, oxylabs, decodo, iproyal/);
    fails({ ...base, REAL_LOCATIONS_USERNAME: '' }, /REAL_LOCATIONS_PROVIDER=oxylabs needs REAL_LOCATIONS_USERNAME/);
    fails({ ...base, REAL_LOCATIONS_PASSWORD: ' ' }, /needs REAL_LOCATIONS_PASSWORD/);
    fails({ REAL_LOCATIONS_PASSWORD: 'very-secret-pw' }, /REAL_LOCATIONS_PASSWORD is set but REAL_LOCATIONS_PROVIDER is not/);
    fails({ ...base, REAL_LOCATIONS_GATEWAY: 'gate.example' }, /REAL_LOCATIONS_GATEWAY must be host:port/);
    fails({ ...base, REAL_LOCATIONS_GATEWAY: '127.0.0.1:70000' }, /REAL_LOCATIONS_GATEWAY must be host:port/);
    expect(loadConfig({ ...base, REAL_LOCATIONS_PROVIDER: 'SmartProxy', REAL_LOCATIONS_GATEWAY: '[::1]:24000' }).realLocations.preset).to.deep.equal({
      provider: 'decodo',
      username: 'u',
      password: 'very-secret-pw',
      gateway: { host: '::1', port: 24000 },
    });
    expect(loadConfig({ REAL_LOCATIONS_FILE: 'f.json' }).realLocations).to.deep.equal({ file: 'f.json', preset: null });
  });

  it('close names of a typo, the closest first; none for a name like no other', () => {
    const cat = catalogues.oxylabs;
    expect(closeNames(cat, 'Lodnon')[0]).to.equal('London');
    expect(closeNames(cat, 'Calfornia')[0]).to.equal('California');
    expect(closeNames(cat, 'germny')[0]).to.equal('Germany');
    expect(closeNames(cat, 'Los Angelos')[0]).to.equal('Los Angeles');
    expect(closeNames(cat, 'Xqzvw')).to.deep.equal([]);
    expect(closeNames(cat, 'Ne')).to.have.length.at.most(5);
  });
});

describe("the providers' local stand-ins: each relays its own syntax only, 407 to the others'", function () {
  this.timeout(30_000);
  let echo: http.Server;
  let echoUrl = '';

  before(async () => {
    echo = http.createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end('{"ip":"203.0.113.5"}');
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    echoUrl = `http://127.0.0.1:${(echo.address() as AddressInfo).port}/ip`;
  });
  after(async () => {
    echo.closeAllConnections();
    await new Promise<void>((r) => echo.close(() => r()));
  });

  for (const stand of REAL_LOCATION_PROVIDERS) {
    it(`${stand}`, async () => {
      const upstream = await startProviderUpstream(stand, ACCOUNTS[stand]);
      try {
        for (const sender of REAL_LOCATION_PROVIDERS) {
          const cat = presetCatalogue(route(sender, { host: '127.0.0.1', port: upstream.port }));
          const up = routeOf(cat, 'London', 'Abcd1234EFgh', () => 0)?.upstream ?? '';
          const outcome = await testThroughProxy(up, echoUrl, 5000).then(
            (r) => r.exit_ip,
            (err: { type?: string }) => err.type,
          );
          expect(outcome, `${sender}'s syntax sent to ${stand}'s stand-in`).to.equal(sender === stand ? '203.0.113.5' : 'proxy_auth_failed');
        }
        expect(upstream.asked).to.have.length(1);
        expect(upstream.asked[0]).to.include({ country: 'gb', city: 'london' });
        expect(upstream.refused).to.have.length(3);
      } finally {
        await upstream.close();
      }
    });
  }
});
