/**
 * Egress policy for capture targets (DESIGN section 5): pages may not reach loopback,
 * private, link-local, carrier-grade NAT, multicast or cloud metadata addresses, checked
 * after DNS resolution, for the first URL, every redirect and every sub-request the page
 * makes. ALLOW_PRIVATE_NETWORKS=true lifts it (local use, tests).
 *
 * The browser resolves names itself, so a hostile DNS server could answer differently to
 * us and to it (rebinding). The policy still stops the common attacks (a URL naming an
 * internal address or a name that resolves to one); for stronger isolation run the Chrome
 * nodes in a network that has no route to internal addresses.
 */
import dns from 'node:dns/promises';
import net from 'node:net';
import { isBlockedAddress } from '../shared/address-policy';

export type EgressVerdict = { allowed: true } | { allowed: false; reason: string };

/** Schemes a page may load without a network request of its own. */
const LOCAL_SCHEMES = new Set(['data:', 'blob:', 'about:', 'chrome-error:']);

export class EgressPolicy {
  private readonly cache = new Map<string, { verdict: EgressVerdict; until: number }>();

  constructor(
    readonly allowPrivateNetworks: boolean,
    private readonly lookup: (host: string) => Promise<string[]> = async (host) => (await dns.lookup(host, { all: true, verbatim: true })).map((a) => a.address),
    private readonly ttlMs = 30_000,
  ) {}

  /** Checks a URL a page (or the caller) wants to load. */
  async check(rawUrl: string): Promise<EgressVerdict> {
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
    const cached = this.cache.get(host);
    if (cached && cached.until > Date.now()) return cached.verdict;
    const verdict = await this.resolve(host);
    this.cache.set(host, { verdict, until: Date.now() + this.ttlMs });
    if (this.cache.size > 5000) this.cache.clear();
    return verdict;
  }

  private async resolve(host: string): Promise<EgressVerdict> {
    let addresses: string[];
    if (net.isIP(host)) addresses = [host];
    else {
      try {
        addresses = await this.lookup(host);
      } catch {
        // Unresolvable names fail in the browser as a load error, not as a policy refusal.
        return { allowed: true };
      }
    }
    const bad = addresses.find(isBlockedAddress);
    return bad
      ? { allowed: false, reason: `resolves to ${bad}, a loopback, private, link-local or metadata address` }
      : { allowed: true };
  }
}
