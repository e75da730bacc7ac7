/**
 * What the proxy service's actions do: accounts' own proxies (stored sealed, tested through
 * the proxy) and the real-location catalogue, and the route of one capture through either.
 * The catalogue's rules live in locations.ts, own proxies' rules in own-proxies.ts, their
 * table in proxy-repository.ts, the connection test in proxy-check.ts.
 */
import type { ParamsOf, ResultOf } from '../shared/contracts';
import type { EgressPolicy } from '../shared/egress';
import { serviceError } from '../shared/errors';
import { checkFeatures } from '../billing/public/plan-gates';
import { randomId, type SecretBox } from '../shared/secrets';
import {
  ALL_LOCATIONS,
  type Catalogue,
  closeNames,
  knownLocation,
  LOCATION_FAILURE_NOTES,
  locationNames,
  resolveLocation,
  routeOf,
  upstreamAddress,
} from './locations';
import { describeTarget } from './places';
import { type ProxyRow, labelOf, proxyFields, proxyIdentity, proxyRecord, storedProxyRecord, upstreamUrl } from './own-proxies';
import { testThroughProxy } from './proxy-check';
import type { ProxyRepository } from './proxy-repository';

export interface ProxiesDeps {
  repository: ProxyRepository;
  catalogue: Catalogue;
  /** Seals and opens the stored passwords. */
  secrets: SecretBox;
  /**
   * Proxy hosts pass the same egress policy as capture targets (a proxy at a private address
   * would reach this network), resolved with the same DNS servers.
   */
  policy: EgressPolicy;
  /** PROXY_TEST_URL and its timeout. */
  test: { url: string; timeoutMs: number };
}

export class Proxies {
  private readonly proxies: ProxyRepository;
  private readonly catalogue: Catalogue;
  private readonly secrets: SecretBox;
  private readonly policy: EgressPolicy;
  private readonly test: { url: string; timeoutMs: number };

  constructor(deps: ProxiesDeps) {
    this.proxies = deps.repository;
    this.catalogue = deps.catalogue;
    this.secrets = deps.secrets;
    this.policy = deps.policy;
    this.test = deps.test;
  }

  /** The real-location names, sorted. */
  realLocations(): string[] {
    return locationNames(this.catalogue);
  }

  async checkRoute(params: ParamsOf<'proxy.checkRoute'>): Promise<ResultOf<'proxy.checkRoute'>> {
    const { realLocation, customProxyId } = params;
    if (customProxyId !== undefined) return { ok: true as const, identity: proxyIdentity(await this.stored(params.accountId, customProxyId, true)) };
    if (realLocation !== undefined) this.refuseUnknown(realLocation);
    return { ok: true as const };
  }

  async testLocation(name: string): Promise<ResultOf<'proxy.testLocation'>> {
    this.refuseUnknown(name);
    const location = resolveLocation(this.catalogue, name) ?? name;
    const r = routeOf(this.catalogue, location, randomId(12));
    if (!r) throw serviceError('invalid_parameter', `real_location: "${name}" has no upstream.`);
    const result = await testThroughProxy(r.upstream, this.test.url, this.test.timeoutMs, LOCATION_FAILURE_NOTES);
    return { location, via: r.via, target: r.target ? describeTarget(r.target) : null, upstream: upstreamAddress(r.upstream), ...result };
  }

  /** The route of one capture: an own proxy wins over a real location. */
  async route(params: ParamsOf<'proxy.route'>): Promise<ResultOf<'proxy.route'>> {
    const { accountId, realLocation, customProxyId } = params;
    if (customProxyId !== undefined) {
      const row = await this.stored(accountId, customProxyId, true);
      return { upstream: await this.upstreamOf(row), location: null, customProxy: `${row.host}:${row.port}` };
    }
    if (realLocation === undefined) return null;
    await this.checkRoute(params);
    // Random is one name picked for this capture; the record names the location it went through.
    const name = resolveLocation(this.catalogue, realLocation);
    const r = name === null ? null : routeOf(this.catalogue, name, randomId(12));
    if (!r) throw serviceError('invalid_parameter', `real_location: "${realLocation}" is not a location of this server; GET /real_locations lists them.`);
    return { upstream: r.upstream, location: name, customProxy: null };
  }

  async put(params: ParamsOf<'proxy.put'>): Promise<ResultOf<'proxy.put'>> {
    const { account, input, test } = params;
    checkFeatures(account, { ownProxy: true }, { managing: true });
    const existing = input.id !== undefined ? await this.stored(account.accountId, input.id, false) : null;
    const f = proxyFields(input, existing);
    // A host that resolves to a refused address is refused outright; one that does not resolve is stored and fails its test.
    const admission = await this.policy.admit(f.host);
    if (!admission.allowed && !admission.unresolvable)
      throw serviceError('invalid_proxy', `host: ${f.host} ${admission.reason}; proxies at private or internal addresses are refused.`);
    const write = {
      protocol: f.protocol,
      host: f.host,
      port: f.port,
      username: f.username,
      ...(f.password !== undefined ? { password_encrypted: f.password === null ? null : this.secrets.seal(f.password) } : {}),
    };
    let id: number;
    if (existing) {
      id = existing.id;
      await this.proxies.update(account.accountId, id, write);
    } else id = await this.proxies.insert(account.accountId, write);
    const row = await this.stored(account.accountId, id, false);
    const result = test ? await this.runTest(row) : null;
    const after = await this.stored(account.accountId, id, false);
    return { proxy: storedProxyRecord(after), result };
  }

  async testStored(params: ParamsOf<'proxy.test'>): Promise<ResultOf<'proxy.test'>> {
    const { account, id } = params;
    checkFeatures(account, { ownProxy: true }, { managing: true });
    const result = await this.runTest(await this.stored(account.accountId, id, false));
    return { proxy: proxyRecord(await this.stored(account.accountId, id, false)), result };
  }

  async summaries(accountId: string): Promise<ResultOf<'proxy.summaries'>> {
    const rows = await this.proxies.list(accountId);
    return rows.map((r) => ({ id: Number(r.id), label: labelOf(r), verified: Boolean(r.verified) }));
  }

  async list(accountId: string): Promise<ResultOf<'proxy.list'>> {
    return (await this.proxies.list(accountId)).map(proxyRecord);
  }

  async remove(accountId: string, id: number): Promise<ResultOf<'proxy.remove'>> {
    return { removed: await this.proxies.remove(accountId, id) };
  }

  /** The stored proxy, or 412 custom_proxy_not_found (a capture) / 404 not_found (the endpoints). */
  private async stored(accountId: string, id: number, forCapture: boolean): Promise<ProxyRow> {
    const row = await this.proxies.find(accountId, id);
    if (row) return row;
    if (forCapture)
      throw serviceError(
        'custom_proxy_not_found',
        `custom_proxy_id: no stored proxy has id ${id} in this account (GET /proxies lists them); captures never fall back to going out directly.`,
      );
    throw serviceError('not_found', `No proxy ${id} in this account.`);
  }

  /** The upstream URL of a stored proxy, its host resolved and checked now (connected to by address). */
  private async upstreamOf(row: ProxyRow): Promise<string> {
    const admission = await this.policy.admit(row.host);
    if (!admission.allowed) {
      if (admission.unresolvable) throw serviceError('proxy_host_not_found', `The proxy's host ${row.host} ${admission.reason}.`);
      throw serviceError('invalid_proxy', `host: ${row.host} ${admission.reason}; proxies at private or internal addresses are refused.`);
    }
    const password = row.password_encrypted
      ? this.secrets.open(
          row.password_encrypted,
          `The password stored for proxy ${row.id}`,
          `store the proxy again with PUT /proxies (id ${row.id}, with its password)`,
        )
      : null;
    return upstreamUrl(row, admission.address, password);
  }

  /** Tests a stored proxy and records the outcome; a failure is thrown after it is recorded. */
  private async runTest(row: ProxyRow) {
    try {
      const result = await testThroughProxy(await this.upstreamOf(row), this.test.url, this.test.timeoutMs);
      await this.proxies.recordTest(row.account_id, row.id, { verified: true, exit_ip: result.exit_ip, last_test_ms: result.ms, last_error: null });
      return result;
    } catch (err) {
      const code = (err as { type?: string }).type ?? 'proxy_connection_failed';
      await this.proxies.recordTest(row.account_id, row.id, { verified: false, exit_ip: null, last_test_ms: null, last_error: code });
      throw err;
    }
  }

  /**
   * 400 invalid_parameter for a name the catalogue does not have, with the names close to it
   * (a typo); `All` (every location at once) is refused saying why. `Random` is known when
   * the catalogue has any name.
   */
  private refuseUnknown(name: string): void {
    const catalogue = this.catalogue;
    if (knownLocation(catalogue, name) === null && name.toLowerCase() === ALL_LOCATIONS) {
      throw serviceError(
        'invalid_parameter',
        'real_location: "All" would capture from every location at once; a capture goes through one location. Name one (GET /real_locations lists them), or ' +
          'Random for one picked per capture.',
      );
    }
    if (resolveLocation(catalogue, name) !== null) return;
    const close = closeNames(catalogue, name);
    const near = close.length ? ` Close names: ${close.join(', ')}.` : '';
    const where = catalogue.entries.size
      ? 'GET /real_locations lists the locations of this server'
      : 'this server has no real locations configured (GET /real_locations is empty)';
    throw serviceError('invalid_parameter', `real_location: "${name}" is not a location of this server.${near} ${where}.`);
  }
}
