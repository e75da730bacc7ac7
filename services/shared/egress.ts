/**
 * Egress policy for capture targets (DESIGN section 5): pages may not reach loopback,
 * private, link-local, carrier-grade NAT, multicast or cloud metadata addresses, checked
 * after DNS resolution, for the first URL, every redirect and every sub-request the page
 * makes. ALLOW_PRIVATE_NETWORKS=true lifts it (local use, tests).
 *
 * Two places apply it. The egress gateway (capture/gateway.ts), which every browser context uses as
 * its proxy, resolves each name itself with `admit`, checks every address and connects to
 * the address it checked: that is what closes DNS rebinding, WebSockets and service-worker
 * fetches. `check` (a URL, verdicts cached briefly) is the early, friendlier check of the
 * URLs a capture loads itself. Webhook requests use `admit` at connect time too.
 */
import dns from 'node:dns/promises';
import net, { type LookupFunction } from 'node:net';
import { isBlockedAddress } from './address-policy';
import type { Config } from './config';

export { isBlockedAddress };

/** What `admit` decides about a host: the one address to connect to, or why not. */
export type Admission = { allowed: true; address: string; family: 4 | 6 } | { allowed: false; reason: string; address: string | null; unresolvable?: boolean };

/** Resolves names with the given DNS servers (IP addresses, each with or without a port: EGRESS_DNS_SERVERS), A and AAAA records. */
export function resolverLookup(servers: string[], timeoutMs = 5_000): (host: string) => Promise<string[]> {
  const resolver = new dns.Resolver({ timeout: timeoutMs, tries: 2 });
  resolver.setServers(servers);
  return async (host) => {
    const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)]);
    const addresses = [...(v4.status === 'fulfilled' ? v4.value : []), ...(v6.status === 'fulfilled' ? v6.value : [])];
    if (addresses.length === 0) {
      const reason = v4.status === 'rejected' ? (v4.reason as Error) : new Error(`${host} has no address`);
      throw reason;
    }
    return addresses;
  };
}

/**
 * A host as a URL reads it: an IPv4 address written another way (`127.1`, `2130706433`,
 * `0x7f000001`, `0177.0.0.1`) is that address, which DNS would not be asked about (a resolver
 * other than the system's answers "not found"); any other host is returned as given.
 */
export function addressOf(host: string): string {
  if (net.isIP(host) || !/^[0-9a-fx.]+$/i.test(host)) return host;
  try {
    const parsed = new URL(`http://${host}/`).hostname;
    return net.isIP(parsed) ? parsed : host;
  } catch {
    return host;
  }
}

/**
 * A `lookup` for an HTTP request that answers only the address the policy admitted
 * (EgressPolicy.admit): the connection goes there whatever DNS says by then, so a name that
 * resolved to a public address when checked and to an internal one a moment later (DNS
 * rebinding) cannot get through.
 */
export function pinnedLookup(admitted: { address: string; family: 4 | 6 }): LookupFunction {
  const { address, family } = admitted;
  return (_name, options, callback) => {
    if ((options as { all?: boolean }).all)
      (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
    else callback(null, address, family);
  };
}

export type EgressVerdict = { allowed: true } | { allowed: false; reason: string };

/** A URL's verdict from its host's admission: an unresolvable name fails in the browser as a load error, not as a policy refusal. */
function verdictOf(a: Admission): EgressVerdict {
  return a.allowed || a.unresolvable ? { allowed: true } : { allowed: false, reason: a.reason };
}

/** Schemes a page may load without a network request of its own. */
const LOCAL_SCHEMES = new Set(['data:', 'blob:', 'about:', 'chrome-error:']);

export class EgressPolicy {
  private readonly cache = new Map<string, { verdict: EgressVerdict; until: number }>();
  private readonly allowed = new net.BlockList();

  constructor(
    readonly allowPrivateNetworks: boolean,
    private readonly lookup: (host: string) => Promise<string[]> = async (host) =>
      (await dns.lookup(host, { all: true, verbatim: true })).map((a) => a.address),
    private readonly ttlMs = 30_000,
    /** Addresses or CIDR ranges let through although refused by the ranges above (EGRESS_ALLOW_ADDRESSES). */
    allowAddresses: string[] = [],
  ) {
    for (const r of allowAddresses) {
      const [address = '', bits] = r.split('/');
      const family = net.isIP(address) === 6 ? 'ipv6' : 'ipv4';
      if (bits === undefined) this.allowed.addAddress(address, family);
      else this.allowed.addSubnet(address, Number(bits), family);
    }
  }

  /** Whether this policy refuses an address (the ranges above, minus the operator's exceptions). */
  refuses(address: string): boolean {
    if (!isBlockedAddress(address)) return false;
    const family = net.isIP(address);
    return !(family && this.allowed.check(address.replace(/%.*$/, ''), family === 6 ? 'ipv6' : 'ipv4'));
  }

  /**
   * Resolves a host (a name, or an IP address in any form a URL allows) once and decides:
   * refused if any address it resolves to is refused, else the first address, which the
   * caller connects to (never resolving again, so a second answer cannot differ). Never
   * cached: every connection gets a fresh answer, and is bound to it.
   */
  async admit(rawHost: string): Promise<Admission> {
    const host = addressOf(rawHost.replace(/^\[|\]$/g, ''));
    let addresses: string[];
    if (net.isIP(host)) addresses = [host];
    else {
      try {
        addresses = await this.lookup(host);
      } catch (err) {
        return {
          allowed: false,
          reason: `could not be resolved (${(err as { code?: string }).code ?? (err as Error).message})`,
          address: null,
          unresolvable: true,
        };
      }
    }
    const first = addresses[0];
    if (first === undefined) return { allowed: false, reason: 'has no address', address: null, unresolvable: true };
    if (!this.allowPrivateNetworks) {
      const bad = addresses.find((a) => this.refuses(a));
      if (bad !== undefined) return { allowed: false, reason: `resolves to ${bad}, a loopback, private, link-local or metadata address`, address: bad };
    }
    return { allowed: true, address: first, family: net.isIP(first) === 6 ? 6 : 4 };
  }

  /**
   * Checks a URL a page (or the caller) wants to load. `admit`: where the capture's egress
   * gateway will connect for the host (GatewayCapture.admit): the URL's host is decided by
   * that one admission, not asked of DNS apart (and not from this policy's short cache: the
   * gateway's answer is the capture's own), so the page's first request finds it answered.
   */
  async check(rawUrl: string, admit?: (host: string) => Promise<Admission>): Promise<EgressVerdict> {
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      return { allowed: false, reason: 'is not a valid URL' };
    }
    if (LOCAL_SCHEMES.has(url.protocol)) return { allowed: true };
    if (url.protocol !== 'http:' && url.protocol !== 'https:' && url.protocol !== 'ws:' && url.protocol !== 'wss:') {
      return { allowed: false, reason: `uses the ${url.protocol} scheme; only http and https are allowed` };
    }
    if (this.allowPrivateNetworks) return { allowed: true };
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (admit) return verdictOf(await admit(host));
    const cached = this.cache.get(host);
    if (cached && cached.until > Date.now()) return cached.verdict;
    const verdict = verdictOf(await this.admit(host));
    this.cache.set(host, { verdict, until: Date.now() + this.ttlMs });
    if (this.cache.size > 5000) this.cache.clear();
    return verdict;
  }
}

/**
 * The policy every service applies to the addresses it connects to or stores, from the
 * operator's settings: ALLOW_PRIVATE_NETWORKS, EGRESS_DNS_SERVERS, EGRESS_ALLOW_ADDRESSES.
 */
export function egressPolicyFor(config: Pick<Config, 'allowPrivateNetworks' | 'capture'>): EgressPolicy {
  const { dnsServers, allowAddresses } = config.capture;
  return new EgressPolicy(config.allowPrivateNetworks, dnsServers.length ? resolverLookup(dnsServers) : undefined, undefined, allowAddresses);
}
