/**
 * proxy: owns proxies (accounts' own proxies, passwords sealed with SecretBox) and the
 * real-location catalogue (a provider preset and/or REAL_LOCATIONS_FILE, read at start: a
 * broken file or preset stops the service), and hands capture the route of one capture
 * (proxy.route: the upstream with its credentials, used by capture's egress gateway only).
 * Wiring only: the catalogue's rules live in locations.ts (names in places.ts, providers'
 * syntax in presets.ts), own proxies' rules in own-proxies.ts, their table in
 * proxy-repository.ts, the connection test in proxy-check.ts.
 */
import type { Knex } from 'knex';
import type { ServiceSchema } from 'moleculer';
import { egressPolicyFor } from '../shared/egress';
import type { Config } from '../shared/config';
import type { Handler } from '../shared/contracts';
import { acquireDatabase, releaseDatabase } from '../shared/database';
import { serviceError } from '../shared/errors';
import { checkFeatures } from '../billing/public/plan-gates';
import { randomId, SecretBox } from '../shared/secrets';
import type { ServiceUnit } from '../shared/service-unit';
import { ALL_LOCATIONS, type Catalogue, closeNames, knownLocation, LOCATION_FAILURE_NOTES, loadCatalogue, locationNames, resolveLocation, routeOf, upstreamAddress } from './locations';
import { describeTarget } from './places';
import { type ProxyRow, displayUrlOf, labelOf, proxyFields, proxyRecord, upstreamUrl } from './own-proxies';
import { testThroughProxy } from './proxy-check';
import { ProxyRepository } from './proxy-repository';

export function proxyService(deps: { config: Readonly<Config> }): ServiceUnit {
  const { config } = deps;
  let db: Knex;
  let catalogue: Catalogue;
  let proxies: ProxyRepository;
  const secrets = new SecretBox(config);
  // Proxy hosts pass the same egress policy as capture targets (a proxy at a private address
  // would reach this network), resolved with the same DNS servers.
  const policy = egressPolicyFor(config);

  /** The stored proxy, or 412 custom_proxy_not_found (a capture) / 404 not_found (the endpoints). */
  async function stored(accountId: string, id: number, forCapture: boolean): Promise<ProxyRow> {
    const row = await proxies.find(accountId, id);
    if (row) return row;
    if (forCapture) throw serviceError('custom_proxy_not_found', `custom_proxy_id: no stored proxy has id ${id} in this account (GET /proxies lists them); captures never fall back to going out directly.`);
    throw serviceError('not_found', `No proxy ${id} in this account.`);
  }

  /** The upstream URL of a stored proxy, its host resolved and checked now (connected to by address). */
  async function upstreamOf(row: ProxyRow): Promise<string> {
    const admission = await policy.admit(row.host);
    if (!admission.allowed) {
      if (admission.unresolvable) throw serviceError('proxy_host_not_found', `The proxy's host ${row.host} ${admission.reason}.`);
      throw serviceError('invalid_proxy', `host: ${row.host} ${admission.reason}; proxies at private or internal addresses are refused.`);
    }
    const password = row.password_encrypted ? secrets.open(row.password_encrypted) : null;
    return upstreamUrl(row, admission.address, password);
  }

  /** Tests a stored proxy and records the outcome; a failure is thrown after it is recorded. */
  async function runTest(row: ProxyRow) {
    try {
      const result = await testThroughProxy(await upstreamOf(row), config.proxyTest.url, config.proxyTest.timeoutMs);
      await proxies.recordTest(row.account_id, row.id, { verified: true, exit_ip: result.exit_ip, last_test_ms: result.ms, last_error: null });
      return result;
    } catch (err) {
      const code = (err as { type?: string }).type ?? 'proxy_connection_failed';
      await proxies.recordTest(row.account_id, row.id, { verified: false, exit_ip: null, last_test_ms: null, last_error: code });
      throw err;
    }
  }

  const checkRoute: Handler<'proxy.checkRoute'> = async (ctx) => {
    const { realLocation, customProxyId } = ctx.params;
    if (customProxyId !== undefined) {
      await stored(ctx.params.accountId, customProxyId, true);
      return { ok: true as const };
    }
    if (realLocation !== undefined) refuseUnknown(realLocation);
    return { ok: true as const };
  };

  /**
   * 400 invalid_parameter for a name the catalogue does not have, with the names close to it
   * (a typo); `All` (every location at once) is refused saying why. `Random` is known when
   * the catalogue has any name.
   */
  function refuseUnknown(name: string): void {
    if (knownLocation(catalogue, name) === null && name.toLowerCase() === ALL_LOCATIONS) {
      throw serviceError(
        'invalid_parameter',
        'real_location: "All" would capture from every location at once; a capture goes through one location. Name one (GET /real_locations lists them), or Random for one picked per capture.',
      );
    }
    if (resolveLocation(catalogue, name) !== null) return;
    const close = closeNames(catalogue, name);
    const near = close.length ? ` Close names: ${close.join(', ')}.` : '';
    const where = catalogue.entries.size ? 'GET /real_locations lists the locations of this server' : 'this server has no real locations configured (GET /real_locations is empty)';
    throw serviceError('invalid_parameter', `real_location: "${name}" is not a location of this server.${near} ${where}.`);
  }

  const testLocation: Handler<'proxy.testLocation'> = async (ctx) => {
    const { name } = ctx.params;
    refuseUnknown(name);
    const location = resolveLocation(catalogue, name) ?? name;
    const r = routeOf(catalogue, location, randomId(12));
    if (!r) throw serviceError('invalid_parameter', `real_location: "${name}" has no upstream.`);
    const result = await testThroughProxy(r.upstream, config.proxyTest.url, config.proxyTest.timeoutMs, LOCATION_FAILURE_NOTES);
    return { location, via: r.via, target: r.target ? describeTarget(r.target) : null, upstream: upstreamAddress(r.upstream), ...result };
  };

  /** The route of one capture: an own proxy wins over a real location. */
  const route: Handler<'proxy.route'> = async (ctx) => {
    const { accountId, realLocation, customProxyId } = ctx.params;
    if (customProxyId !== undefined) {
      const row = await stored(accountId, customProxyId, true);
      return { upstream: await upstreamOf(row), location: null, customProxy: `${row.host}:${row.port}` };
    }
    if (realLocation === undefined) return null;
    await checkRoute(ctx);
    // Random is one name picked for this capture; the record names the location it went through.
    const name = resolveLocation(catalogue, realLocation);
    const r = name === null ? null : routeOf(catalogue, name, randomId(12));
    if (!r) throw serviceError('invalid_parameter', `real_location: "${realLocation}" is not a location of this server; GET /real_locations lists them.`);
    return { upstream: r.upstream, location: name, customProxy: null };
  };

  const put: Handler<'proxy.put'> = async (ctx) => {
    const { account, input, test } = ctx.params;
    checkFeatures(account, { ownProxy: true });
    const existing = input.id !== undefined ? await stored(account.accountId, input.id, false) : null;
    const f = proxyFields(input, existing);
    // A host that resolves to a refused address is refused outright; one that does not resolve is stored and fails its test.
    const admission = await policy.admit(f.host);
    if (!admission.allowed && !admission.unresolvable) throw serviceError('invalid_proxy', `host: ${f.host} ${admission.reason}; proxies at private or internal addresses are refused.`);
    const write = {
      protocol: f.protocol,
      host: f.host,
      port: f.port,
      username: f.username,
      ...(f.password !== undefined ? { password_encrypted: f.password === null ? null : secrets.seal(f.password) } : {}),
    };
    let id: number;
    if (existing) {
      id = existing.id;
      await proxies.update(account.accountId, id, write);
    } else id = await proxies.insert(account.accountId, write);
    const row = await stored(account.accountId, id, false);
    const result = test ? await runTest(row) : null;
    const after = await stored(account.accountId, id, false);
    return { proxy: { ...proxyRecord(after), display_url: displayUrlOf(after) }, result };
  };

  const testStored: Handler<'proxy.test'> = async (ctx) => {
    const { account, id } = ctx.params;
    checkFeatures(account, { ownProxy: true });
    const result = await runTest(await stored(account.accountId, id, false));
    return { proxy: proxyRecord(await stored(account.accountId, id, false)), result };
  };

  const summaries: Handler<'proxy.summaries'> = async (ctx) => {
    const rows = await proxies.list(ctx.params.accountId);
    return rows.map((r) => ({ id: Number(r.id), label: labelOf(r), verified: Boolean(r.verified) }));
  };

  const schema: ServiceSchema = {
    name: 'proxy',
    actions: {
      summaries: { handler: summaries },
      realLocations: { handler: (async () => locationNames(catalogue)) as Handler<'proxy.realLocations'> },
      checkRoute: { handler: checkRoute },
      route: { handler: route },
      testLocation: { handler: testLocation, timeout: config.proxyTest.timeoutMs + 15_000 },
      put: { handler: put, timeout: config.proxyTest.timeoutMs + 15_000 },
      list: { handler: (async (ctx) => (await proxies.list(ctx.params.accountId)).map(proxyRecord)) as Handler<'proxy.list'> },
      test: { handler: testStored, timeout: config.proxyTest.timeoutMs + 15_000 },
      remove: { handler: (async (ctx) => ({ removed: await proxies.remove(ctx.params.accountId, ctx.params.id) })) as Handler<'proxy.remove'> },
    },
    created() {
      catalogue = loadCatalogue(config.realLocations);
      db = acquireDatabase(config.database);
      proxies = new ProxyRepository(db);
    },
    async stopped() {
      await releaseDatabase(config.database);
    },
  };
  return { schema, handle: {} };
}
