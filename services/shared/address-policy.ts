/**
 * Which addresses the egress policy refuses (DESIGN section 5): loopback, private,
 * link-local, carrier-grade NAT, multicast and cloud metadata ranges. Shared by capture
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

export function isBlockedAddress(address: string): boolean {
  const family = net.isIP(address);
  if (family === 4) return blocked.check(address, 'ipv4');
  if (family === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped?.[1]) return blocked.check(mapped[1], 'ipv4');
    return blocked.check(address, 'ipv6');
  }
  return true;
}

/** The host of a URL when it is an address literal (brackets of IPv6 removed), else null. */
export function literalAddress(url: URL): string | null {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return net.isIP(host) ? host : null;
}

/**
 * Refuses (400 url_not_allowed) a configuration whose `webhook_url`, or a `change` step's
 * `url`, names a refused address literally, when it is stored (create and update). A name
 * is checked when a delivery is sent, since what it resolves to may change.
 */
export function refuseLiteralTargets(
  o: { webhook_url?: string; multi_step_actions?: Array<{ type: string; url?: string }> },
  allowPrivateNetworks: boolean,
): void {
  if (allowPrivateNetworks) return;
  const targets: Array<[string, string]> = [];
  if (o.webhook_url) targets.push(['webhook_url', o.webhook_url]);
  o.multi_step_actions?.forEach((step, i) => {
    if (step.type === 'change' && step.url) targets.push([`multi_step_actions[${i}].url`, step.url]);
  });
  for (const [name, raw] of targets) {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      continue; // the option's own validation names a malformed URL
    }
    const address = literalAddress(url);
    if (address && isBlockedAddress(address)) {
      throw serviceError('url_not_allowed', `${name}: ${raw} names ${address}, a loopback, private, link-local or metadata address. Private and internal addresses are refused.`);
    }
  }
}
