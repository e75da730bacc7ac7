/**
 * GET /real_locations and the real_location option's name check, with a catalogue file
 * (REAL_LOCATIONS_FILE) naming local upstreams, and with a provider preset combined with a
 * file (the file's names override the preset's).
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { call } from '../../services/shared/contracts';
import { backendConfig, tempDir } from '../support/backends';
import { screenshotsUsed } from '../support/capture-helpers';
import { expectEnvelope } from '../support/errors';
import { qs, request } from '../support/http';
import { type RunningSystem, runSystem } from '../support/system';
import { HOSTED_NAMES } from './hosted-location-names';

/**
 * Registers before/after hooks in the calling describe block: a system (no capture service)
 * whose REAL_LOCATIONS_FILE holds `file`, with `env` beside it, and a paid account.
 */
function withCatalogue(file: Record<string, unknown>, env: Record<string, string> = {}): { sys: RunningSystem; key: string } {
  const s = {} as { sys: RunningSystem; key: string };
  const dir = tempDir('locations-');
  let cleanup: () => Promise<void>;
  before(async () => {
    const catalogue = path.join(dir, 'locations.json');
    fs.writeFileSync(catalogue, JSON.stringify(file));
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing,ai,proxy,scheduler', REAL_LOCATIONS_FILE: catalogue, ...env });
    cleanup = b.cleanup;
    s.sys = await runSystem(b.config);
    s.key = (await s.sys.account('paid')).access_token;
  });
  after(async () => {
    await s.sys?.stop();
    await cleanup?.();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return s;
}

describe('real locations: GET /real_locations and the name check', () => {
  const s = withCatalogue({
    Berlin: { proxy: 'http://user-country-de-city-berlin-session-{session}:secret-pw@127.0.0.1:7000' },
    Munich: { proxy: 'socks5://user:secret-pw@127.0.0.1:7001' },
    Germany: { pick: ['Berlin', 'Munich'] },
    amsterdam: { proxy: 'http://u:secret-pw@127.0.0.1:7002' },
  });

  it('lists every name, sorted, and never an upstream or its credentials', async () => {
    const r = await request<{ success: boolean; results: string[] }>(s.sys.base, 'GET', `/real_locations?access_token=${s.key}`);
    expect(r.status).to.equal(200);
    expect(r.body).to.deep.equal({ success: true, results: ['amsterdam', 'Berlin', 'Germany', 'Munich'] });
    expect(JSON.stringify(r.body)).to.not.include('secret-pw');
    expect(JSON.stringify(r.body)).to.not.include('7000');
  });

  it('needs a key', async () => {
    expectEnvelope(await request(s.sys.base, 'GET', '/real_locations'), 401, 'access_token_required');
  });

  it('an unknown real_location is 400 invalid_parameter naming the list, before any credit', async () => {
    const snap = await request(s.sys.base, 'GET', `/snap?${qs({ access_token: s.key, url: 'https://example.com', real_location: 'Atlantis' })}`);
    expectEnvelope(snap, 400, 'invalid_parameter', 'real_location', 'Atlantis', 'GET /real_locations');
    const create = await request(s.sys.base, 'POST', '/screenshot_configs', {
      headers: { authorization: `Bearer ${s.key}` },
      json: { url: 'https://example.com', real_location: 'Atlantis' },
    });
    expectEnvelope(create, 400, 'invalid_parameter', 'GET /real_locations');
    expect(await screenshotsUsed(s.sys, s.key)).to.equal(0);
  });

  it("a typo's note lists the close names", async () => {
    const snap = await request<{ note: string }>(s.sys.base, 'GET', `/snap?${qs({ access_token: s.key, url: 'https://example.com', real_location: 'Berln' })}`);
    expectEnvelope(snap, 400, 'invalid_parameter', 'Close names: Berlin.');
  });

  it('All (every location at once) is refused saying why, before any credit; Random is taken and not listed', async () => {
    for (const all of ['All', 'all']) {
      const snap = await request(s.sys.base, 'GET', `/snap?${qs({ access_token: s.key, url: 'https://example.com', proxy_server: all })}`);
      expectEnvelope(snap, 400, 'invalid_parameter', '"All" would capture from every location at once', 'Random');
    }
    expect(await screenshotsUsed(s.sys, s.key)).to.equal(0);
    const { accountId } = await call(s.sys.broker, 'billing.authenticate', { token: s.key });
    expect(await call(s.sys.broker, 'proxy.checkRoute', { accountId, realLocation: 'random' })).to.deep.equal({ ok: true });
    // Each capture through Random goes through one of the names, and its record names it.
    const through = new Set<string | null>();
    for (let i = 0; i < 40; i++) through.add((await call(s.sys.broker, 'proxy.route', { accountId, realLocation: 'Random' }))?.location ?? null);
    expect([...through].sort()).to.deep.equal(['Berlin', 'Germany', 'Munich', 'amsterdam']);
    const listed = await request<{ results: string[] }>(s.sys.base, 'GET', `/real_locations?access_token=${s.key}`);
    expect(listed.body.results).to.not.include('Random');
  });
});

describe('real locations with a provider preset and a file', () => {
  // No capture here: the preset's gateway is never contacted.
  const s = withCatalogue(
    { london: { proxy: 'http://own-{session}:pw@127.0.0.1:7000' }, 'Office VPN': { proxy: 'http://u:pw@127.0.0.1:7001' } },
    { REAL_LOCATIONS_PROVIDER: 'iproyal', REAL_LOCATIONS_USERNAME: 'royaluser', REAL_LOCATIONS_PASSWORD: 'royalsecret' },
  );

  it("lists every hosted name and the file's, sorted, in the file's spelling where it overrides", async () => {
    const r = await request<{ results: string[] }>(s.sys.base, 'GET', `/real_locations?access_token=${s.key}`);
    const expected = [...HOSTED_NAMES.filter((n) => n !== 'London'), 'london', 'Office VPN'].sort((a, b) => a.localeCompare(b, 'en', { sensitivity: 'base' }));
    expect(r.body.results).to.deep.equal(expected);
    expect(JSON.stringify(r.body)).to.not.include('royalsecret');
  });

  it('a typo is 400 invalid_parameter listing the close names, on snaps and configurations, before any credit', async () => {
    const snap = await request<{ note: string }>(
      s.sys.base,
      'GET',
      `/snap?${qs({ access_token: s.key, url: 'https://example.com', real_location: 'Calfornia' })}`,
    );
    expectEnvelope(snap, 400, 'invalid_parameter', 'real_location', '"Calfornia"', 'Close names: California');
    const create = await request<{ note: string }>(s.sys.base, 'POST', '/screenshot_configs', {
      headers: { authorization: `Bearer ${s.key}` },
      json: { url: 'https://example.com', real_location: 'Lodnon' },
    });
    // The file's spelling of the name it overrides.
    expectEnvelope(create, 400, 'invalid_parameter', 'Close names: london', 'GET /real_locations');
    expect(await screenshotsUsed(s.sys, s.key)).to.equal(0);
  });
});
