/**
 * Egress policy for capture targets (DESIGN section 5): pages may not reach loopback,
 * private, link-local, carrier-grade NAT, multicast or cloud metadata addresses, checked
 * after DNS resolution, for the first URL, every redirect and every sub-request the page
 * makes. ALLOW_PRIVATE_NETWORKS=true lifts it (local use, tests).
 *
 * Two places apply it. The egress gateway (gateway.ts), which every browser context uses as
 * its proxy, resolves each name itself with `admit`, checks every address and connects to
 * the address it checked: that is what closes DNS rebinding, WebSockets and service-worker
 * fetches. `check` (a URL, verdicts cached briefly) is the early, friendlier check of the
 * URLs a capture loads itself. Webhook requests use `admit` at connect time too.
 */
import dns from 'node:dns/promises';
import net from 'node:net';

const blocked = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, including the 169.254.169.254 metadata service
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(prefix, bits, 'ipv4');
}
for (const [prefix, bits] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7], // unique local, including fd00:ec2::254 (AWS metadata over IPv6)
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(prefix, bits, 'ipv6');
}

/**
 * IPv6 ranges that carry an IPv4 address inside (the last 32 bits, or bits 16-48 for
 * 6to4): such an address is as bad as the IPv4 address it carries. NAT64 (64:ff9b::/96)
 * and the IPv4-compatible form (::a.b.c.d) reach the embedded address through a
 * translator; IPv4-mapped (::ffff:a.b.c.d) and IPv4-translated (::ffff:0:a.b.c.d) are the
 * address itself in some stacks.
 */
const embeddingLast32 = new net.BlockList();
embeddingLast32.addSubnet('64:ff9b::', 96, 'ipv6');
embeddingLast32.addSubnet('::ffff:0:0', 96, 'ipv6');
embeddingLast32.addSubnet('::ffff:0:0:0', 96, 'ipv6');
embeddingLast32.addSubnet('::', 96, 'ipv6');
const sixToFour = new net.BlockList();
sixToFour.addSubnet('2002::', 16, 'ipv6');
/** Refused whatever they carry: local-use NAT64, Teredo (its IPv4 address is obfuscated), discard-only, documentation. */
for (const [prefix, bits] of [
  ['64:ff9b:1::', 48],
  ['2001::', 32],
  ['100::', 64],
  ['2001:db8::', 32],
] as const) {
  blocked.addSubnet(prefix, bits, 'ipv6');
}

/** The 16 bytes of an IPv6 address (any textual form Node accepts). */
function ipv6Bytes(address: string): Buffer {
  const text = address.toLowerCase();
  const [head, tail] = text.includes('::') ? text.split('::') : [text, ''];
  const parse = (part: string | undefined): number[] => {
    if (!part) return [];
    const out: number[] = [];
    for (const group of part.split(':')) {
      if (group.includes('.')) {
        const v4 = group.split('.').map(Number);
        out.push(((v4[0] ?? 0) << 8) | (v4[1] ?? 0), ((v4[2] ?? 0) << 8) | (v4[3] ?? 0));
      } else out.push(parseInt(group, 16));
    }
    return out;
  };
  const h = parse(head);
  const t = parse(tail);
  const groups = [...h, ...Array<number>(8 - h.length - t.length).fill(0), ...t];
  const buf = Buffer.alloc(16);
  for (const [i, g] of groups.entries()) buf.writeUInt16BE(g, i * 2);
  return buf;
}

const v4At = (b: Buffer, offset: number): string => `${b[offset]}.${b[offset + 1]}.${b[offset + 2]}.${b[offset + 3]}`;

/** Whether the egress policy refuses this address (anything that is not an IP address is refused). */
export function isBlockedAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) {
    const bare = address.replace(/%.*$/, '');
    if (blocked.check(bare, 'ipv6')) return true;
    if (embeddingLast32.check(bare, 'ipv6')) return blocked.check(v4At(ipv6Bytes(bare), 12), 'ipv4');
    if (sixToFour.check(bare, 'ipv6')) return blocked.check(v4At(ipv6Bytes(bare), 2), 'ipv4');
    return false;
  }
  return true;
}

/** What `admit` decides about a host: the one address to connect to, or why not. */
export type Admission =
  | { allowed: true; address: string; family: 4 | 6 }
  | { allowed: false; reason: string; address: string | null; unresolvable?: boolean };

/** Resolves names with the given DNS servers (host or host:port), A and AAAA records. */
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

export type EgressVerdict = { allowed: true } | { allowed: false; reason: string };

/** Schemes a page may load without a network request of its own. */
const LOCAL_SCHEMES = new Set(['data:', 'blob:', 'about:', 'chrome-error:']);

export class EgressPolicy {
  private readonly cache = new Map<string, { verdict: EgressVerdict; until: number }>();
  private readonly allowed = new net.BlockList();

  constructor(
    readonly allowPrivateNetworks: boolean,
    private readonly lookup: (host: string) => Promise<string[]> = async (host) => (await dns.lookup(host, { all: true, verbatim: true })).map((a) => a.address),
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
    const host = rawHost.replace(/^\[|\]$/g, '');
    let addresses: string[];
    if (net.isIP(host)) addresses = [host];
    else {
      try {
        addresses = await this.lookup(host);
      } catch (err) {
        return { allowed: false, reason: `could not be resolved (${(err as { code?: string }).code ?? (err as Error).message})`, address: null, unresolvable: true };
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
    const bad = addresses.find((a) => this.refuses(a));
    return bad
      ? { allowed: false, reason: `resolves to ${bad}, a loopback, private, link-local or metadata address` }
      : { allowed: true };
  }
}
