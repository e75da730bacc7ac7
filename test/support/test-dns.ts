/**
 * The DNS server every test system's egress gateway asks (EGRESS_DNS_SERVERS in
 * TEST_DEFAULTS), started once per test run by the root hooks. It answers the fixture
 * names the tests use (any name under .test or .localhost, `localhost`, and the names a
 * fixture registers with `mapToLoopback`) with 127.0.0.1 and every other name with NXDOMAIN,
 * so a test system never resolves, let alone reaches, a name on the real network.
 */
import { type DnsServer, startDnsServer } from './dns-server';

const extraNames = new Set<string>();

/** Makes the shared test DNS server answer these names (real ones, e.g. an ad network's) with 127.0.0.1. */
export function mapToLoopback(names: readonly string[]): void {
  for (const n of names) extraNames.add(n.toLowerCase());
}

function isTestName(name: string): boolean {
  return name === 'localhost' || name.endsWith('.test') || name.endsWith('.localhost') || extraNames.has(name);
}

let server: DnsServer | null = null;

/** Starts the shared server (once); its host:port. */
export async function startTestDns(): Promise<string> {
  server ??= await startDnsServer((name, type) => (isTestName(name) ? (type === 'A' ? ['127.0.0.1'] : []) : null));
  return server.address;
}

export async function stopTestDns(): Promise<void> {
  await server?.stop();
  server = null;
}
