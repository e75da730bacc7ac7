/**
 * The operator's checks of real locations: `admin real-locations test <name>` fetches
 * PROXY_TEST_URL (a local IP echo) through the location's upstream (a provider's local
 * stand-in) and prints the exit IP and the time; `real-locations list`; and a preset the
 * provider's syntax cannot carry, or a half-set configuration, stops `npm start`'s process
 * naming the variable.
 */
import { execFile } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { backendConfig } from '../support/backends';
import { ACCOUNTS, type ProviderUpstream, startProviderUpstream } from '../support/provider-upstreams';

const DIST = path.resolve(__dirname, '..', '..');

/** Runs a script of dist/bin without blocking this process (it hosts the stand-in the script talks to). */
function run(script: string, args: string[], env: Record<string, string>): Promise<{ status: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [path.join(DIST, 'bin', script), ...args],
      { env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000 },
      (err, stdout, stderr) => {
        resolve({ status: err ? Number((err as { code?: unknown }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

describe('admin real-locations and the start-up check', function () {
  this.timeout(120_000);
  let upstream: ProviderUpstream;
  let echo: http.Server;
  let env: Record<string, string>;
  let cleanup: () => Promise<void>;

  before(async () => {
    upstream = await startProviderUpstream('brightdata', ACCOUNTS.brightdata);
    echo = http.createServer((_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end('{"ip":"203.0.113.8"}');
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    const b = await backendConfig('sqlite', {
      LOG_LEVEL: 'warn',
      REAL_LOCATIONS_PROVIDER: 'brightdata',
      REAL_LOCATIONS_USERNAME: ACCOUNTS.brightdata.username,
      REAL_LOCATIONS_PASSWORD: ACCOUNTS.brightdata.password,
      REAL_LOCATIONS_GATEWAY: `127.0.0.1:${upstream.port}`,
      PROXY_TEST_URL: `http://127.0.0.1:${(echo.address() as AddressInfo).port}/ip`,
      PROXY_TEST_TIMEOUT_MS: '5000',
    });
    env = b.env;
    cleanup = b.cleanup;
  });
  after(async () => {
    await cleanup();
    await upstream.close();
    echo.closeAllConnections();
    await new Promise<void>((r) => echo.close(() => r()));
  });

  it('test <name> prints the exit IP and the time through the location, as the provider was asked', async () => {
    const r = await run('admin.js', ['real-locations', 'test', 'London'], env);
    expect(r.status, r.stderr).to.equal(0);
    expect(r.stdout.trim()).to.match(new RegExp(`^London: exit IP 203\\.0\\.113\\.8 in \\d+ ms \\(London, GB, through 127\\.0\\.0\\.1:${upstream.port}\\)$`));
    expect(upstream.asked.at(-1)).to.include({ country: 'gb', city: 'london' });
    const json = await run('admin.js', ['real-locations', 'test', 'los', 'angeles', '--json'], env);
    expect(JSON.parse(json.stdout)).to.include({
      location: 'Los Angeles',
      via: 'Los Angeles',
      target: 'Los Angeles, CA, US',
      upstream: `127.0.0.1:${upstream.port}`,
      exit_ip: '203.0.113.8',
    });
    const region = await run('admin.js', ['real-locations', 'test', 'Europe'], env);
    expect(region.stdout).to.match(/^Europe: exit IP 203\.0\.113\.8 in \d+ ms \([A-Z][^:]+: [^,]+(, [A-Z]{2})*, through /);
    expect(r.stdout + json.stdout + region.stdout).to.not.include(ACCOUNTS.brightdata.password);
  });

  it('a typo fails listing the close names; credentials the upstream refuses fail naming the variables, never the password', async () => {
    const typo = await run('admin.js', ['real-locations', 'test', 'Lodnon'], env);
    expect(typo.status).to.equal(2);
    expect(typo.stderr).to.match(/"Lodnon" is not a location of this server\. Close names: London/);
    const refused = await run('admin.js', ['real-locations', 'test', 'London'], { ...env, REAL_LOCATIONS_PASSWORD: 'wrong-zone-secret' });
    expect(refused.status).to.equal(2);
    expect(refused.stderr).to.match(/refused the proxy user name and password.*REAL_LOCATIONS_USERNAME and REAL_LOCATIONS_PASSWORD/);
    expect(refused.stderr).to.not.include('wrong-zone-secret');
    expect(upstream.refused.at(-1)).to.match(/-country-gb-city-london-session-/);
  });

  it('list prints every name of the catalogue', async () => {
    const r = await run('admin.js', ['real-locations', 'list'], env);
    expect(r.status, r.stderr).to.equal(0);
    const names = r.stdout.trim().split('\n');
    expect(names).to.have.length(199);
    expect(names).to.include.members(['Georgia (US)', 'London', 'USA']);
  });

  it('a preset the provider cannot read, or half a configuration, stops the process at start naming the variable', async () => {
    const badUser = await run('serve.js', [], { ...env, SERVICES: 'proxy', REAL_LOCATIONS_USERNAME: 'hl_1a2b3c4d' });
    expect(badUser.status).to.equal(1);
    expect(badUser.stderr).to.match(/Failed to start: REAL_LOCATIONS_PROVIDER=brightdata: REAL_LOCATIONS_USERNAME must be the zone's proxy user name/);
    expect(badUser.stderr).to.not.include(ACCOUNTS.brightdata.password);
    const noPassword = await run('serve.js', [], { ...env, SERVICES: 'proxy', REAL_LOCATIONS_PASSWORD: '' });
    expect(noPassword.status).to.equal(2);
    expect(noPassword.stderr).to.match(/Configuration error: REAL_LOCATIONS_PROVIDER=brightdata needs REAL_LOCATIONS_PASSWORD/);
  });
});
