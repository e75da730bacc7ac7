/**
 * The realistic workload's sites: many distinct names (site-N.test), each resolved by a DNS
 * server the bench runs (test/support/dns-server.ts, the one the tests use) to the page
 * server on loopback, and a mix of the four pages over them.
 *
 * How each contender resolves a name:
 *   - the service: its egress gateway asks the bench's DNS server (EGRESS_DNS_SERVERS), as
 *     it asks any resolver in production (services/shared/egress.ts, resolverLookup), and
 *     connects to the address it checked;
 *   - the floors (raw CDP, nothing of the service): their browser contexts go out through a
 *     plain forward proxy of the bench's (proxy-chain, the library the gateway is built on,
 *     with no policy, no accounting and one shared kept-alive agent), which asks the same DNS
 *     server with the same resolver. So every contender pays a DNS question and a proxy hop
 *     per name the same way; Chromium's --host-resolver-rules would skip both.
 *
 * Only loopback: the DNS server answers site-N.test with 127.0.0.1 and every other name with
 * NXDOMAIN, and the floors' proxy refuses any address outside 127.0.0.0/8.
 */
import type dns from 'node:dns';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Server } from 'proxy-chain';
import { resolverLookup } from '../services/shared/egress';
import { type DnsServer, startDnsServer } from '../test/support/dns-server';
import { SCRIPT_SELECTOR } from './pages';

/** The pages of the mix and how many of every ten captures each takes. */
export const MIX_WEIGHTS = { simple: 4, script: 3, heavy: 2, long: 1 } as const;
export type MixPage = keyof typeof MIX_WEIGHTS;

/** One capture of the workload: a page on a site. */
export interface MixItem {
  page: MixPage;
  site: number;
}

/** The name of site n. */
export const siteName = (n: number) => `site-${n}.test`;

/** The /snap options of each page of the mix: its complete work (script: wait_for its cards; long: fullpage). */
export const MIX_SNAP_OPTIONS: Record<MixPage, Record<string, string>> = {
  simple: {},
  heavy: {},
  script: { wait_for: SCRIPT_SELECTOR },
  long: { fullpage: 'true' },
};

/** The address of an item: its page on its site name, at the page server's port. */
export const mixUrl = (port: string | number, paths: Record<string, string>, item: MixItem) => `http://${siteName(item.site)}:${port}${paths[item.page]}`;

/** Where a side is in the shared sequence (each side captures the same list, in order). */
export interface MixCursor {
  next: number;
}

/**
 * One block of the workload: `count` captures of the next items of `seq` (from `cursor`, which
 * moves on) by `workers` concurrent workers, each `op(worker, item)` resolving to the bytes
 * received; `done` is told each capture's item, time (ms) and bytes.
 */
export async function driveMix(
  seq: readonly MixItem[],
  cursor: MixCursor,
  workers: number,
  count: number,
  op: (worker: number, item: MixItem) => Promise<number>,
  done?: (item: MixItem, ms: number, bytes: number) => void,
): Promise<void> {
  let started = 0;
  await Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      while (started < count) {
        started++;
        const item = seq[cursor.next++ % seq.length]!;
        const s = performance.now();
        const bytes = await op(w, item);
        done?.(item, performance.now() - s, bytes);
      }
    }),
  );
}

const SITE_NAME = /^site-(\d+)\.test$/;

/**
 * The workload: `count` captures, the pages in MIX_WEIGHTS' proportions in a fixed shuffled
 * order, each on the next of `sites` names in turn (so a name comes back only after every
 * other one). The same seed gives the same sequence: every contender captures the same list.
 */
export function mixSequence(count: number, sites: number, seed = 7): MixItem[] {
  const deck: MixPage[] = [];
  for (const [page, w] of Object.entries(MIX_WEIGHTS) as Array<[MixPage, number]>) for (let i = 0; i < w; i++) deck.push(page);
  let s = seed >>> 0;
  const rand = () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
  const out: MixItem[] = [];
  while (out.length < count) {
    const round = [...deck];
    for (let i = round.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [round[i], round[j]] = [round[j]!, round[i]!];
    }
    for (const page of round) if (out.length < count) out.push({ page, site: out.length % sites });
  }
  return out;
}

/** The bench's DNS server: site-N.test (N < sites) → 127.0.0.1, nothing else. */
export async function startSitesDns(sites: number): Promise<DnsServer> {
  return startDnsServer((name, type) => {
    const m = SITE_NAME.exec(name);
    if (!m || Number(m[1]) >= sites) return null;
    return type === 'A' ? ['127.0.0.1'] : [];
  });
}

export interface FloorProxy {
  /** For Target.createBrowserContext's proxyServer. */
  proxyServer: string;
  stop(): Promise<void>;
}

/**
 * The floors' way out: a forward proxy that resolves each name with the bench's DNS server
 * (the resolver the gateway uses) and connects to that loopback address, refusing any other.
 */
export async function startFloorProxy(dnsAddress: string): Promise<FloorProxy> {
  const resolve = resolverLookup([dnsAddress]);
  const agent = new http.Agent({ keepAlive: true });
  const server = new Server({
    host: '127.0.0.1',
    port: 0,
    verbose: false,
    prepareRequestFunction: async ({ hostname }: { hostname: string }) => {
      const [address] = await resolve(hostname);
      if (!address?.startsWith('127.')) throw new Error(`the bench's proxy reaches loopback only; ${hostname} resolved to ${address ?? 'nothing'}`);
      const dnsLookup = ((_h: string, options: unknown, callback?: unknown) => {
        const cb = (typeof options === 'function' ? options : callback) as (e: Error | null, a: unknown, f?: number) => void;
        const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
        if (all) cb(null, [{ address, family: 4 }]);
        else cb(null, address, 4);
      }) as unknown as typeof dns.lookup;
      return { dnsLookup, httpAgent: agent };
    },
  });
  await server.listen();
  const port = (server.server.address() as AddressInfo).port;
  return {
    proxyServer: `http://127.0.0.1:${port}`,
    stop: async () => {
      agent.destroy();
      await server.close(true);
    },
  };
}
