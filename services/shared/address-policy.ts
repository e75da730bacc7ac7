/**
 * Which addresses the egress policy refuses (DESIGN section 5): loopback, private,
 * link-local, carrier-grade NAT, multicast and cloud metadata ranges, and IPv6 forms that
 * carry such an IPv4 address. Shared by capture
 * (pages and their sub-requests) and the notifier (webhook targets), so both refuse the
 * same addresses.
 */
import net from 'node:net';
import { serviceError } from './errors';

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

/** The host of a URL when it is an address literal (brackets of IPv6 removed), else null. */
export function literalAddress(url: URL): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return net.isIP(host) ? host : null;
}

/** What refuseLiteralTargets asks of the egress policy (EgressPolicy answers it). */
export interface TargetPolicy {
  readonly allowPrivateNetworks: boolean;
  /** Whether an address is refused: the ranges above minus the operator's EGRESS_ALLOW_ADDRESSES. */
  refuses(address: string): boolean;
}

/**
 * Refuses (400 url_not_allowed) a configuration whose `webhook_url`, or a `change` step's
 * `url`, names a refused address literally, when it is stored (create and update). A name
 * is checked when a delivery is sent, since what it resolves to may change. The same
 * policy as deliveries: an address the operator allowed (EGRESS_ALLOW_ADDRESSES) is stored.
 */
export function refuseLiteralTargets(o: { webhook_url?: string; multi_step_actions?: Array<{ type: string; url?: string }> }, policy: TargetPolicy): void {
  const targets: Array<[string, string]> = [];
  if (o.webhook_url) targets.push(['webhook_url', o.webhook_url]);
  o.multi_step_actions?.forEach((step, i) => {
    if (step.type === 'change' && step.url) targets.push([`multi_step_actions[${i}].url`, step.url]);
  });
  refuseLiteralUrls(targets, policy);
}

/**
 * Refuses (400 url_not_allowed) the first of `targets` ([parameter, URL]) that names a
 * refused address literally: caught before anything is stored, reserved or fetched. A name
 * is checked when it is connected to.
 */
export function refuseLiteralUrls(targets: ReadonlyArray<readonly [string, string]>, policy: TargetPolicy): void {
  if (policy.allowPrivateNetworks) return;
  for (const [name, raw] of targets) {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      continue; // the option's own validation names a malformed URL
    }
    const address = literalAddress(url);
    if (address && policy.refuses(address)) {
      throw serviceError(
        'url_not_allowed',
        `${name}: ${raw} names ${address}, a loopback, private, link-local or metadata address. Private and internal addresses are refused (an operator can ` +
          `allow one with EGRESS_ALLOW_ADDRESSES).`,
      );
    }
  }
}
