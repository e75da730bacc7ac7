/**
 * What the egress gateway's plain-HTTP path costs (issue 46, item 2): the CPU of the gateway
 * (services/capture/page/gateway.ts, proxy-chain under the egress policy) per capture of ten
 * plain-HTTP requests to one site, the way a page's subresources reach it: a capture bound,
 * ten requests on up to six kept-alive connections (a browser's per-host limit), the capture
 * unbound. The gateway runs in this process alone; the browser's side (an HTTP client sending
 * absolute URLs), the DNS server the policy asks (EGRESS_DNS_SERVERS) and the site run in a
 * peer process, so this process's CPU (process.cpuUsage) is the gateway's. Each capture asks
 * for a new site name, as the mixed workload does.
 *
 * Two ways, alternated in rounds (the order reversed every other round): as shipped, a
 * capture resolves each name once (GatewayCapture.admit), and as before that change, every
 * request resolved (EgressPolicy.admit per request). Beside them the peer's CPU for the same
 * captures (the client and the DNS server): the DNS server's share falls with the questions.
 *
 * Environment: BENCH_GATEWAY_ROUNDS (default 10 rounds of 40 captures per way). A run with it
 * set prints its report but leaves docs/benchmark.md alone.
 */
import { type ChildProcess, fork } from 'node:child_process';
import http from 'node:http';
import os from 'node:os';
import { EgressGateway, GatewayCapture } from '../services/capture/page/gateway';
import { type Admission, EgressPolicy, resolverLookup } from '../services/shared/egress';
import { startDnsServer } from '../test/support/dns-server';
import { envPositiveInt, publishResults, runBench } from './run';

const FULL_ROUNDS = 10;
const ROUNDS = envPositiveInt('BENCH_GATEWAY_ROUNDS', FULL_ROUNDS);
const FULL_RUN = !process.env.BENCH_GATEWAY_ROUNDS?.trim();
const CAPTURES_PER_ROUND = 40;
const REQUESTS_PER_CAPTURE = 10;
/** Bytes of each response (a small image). */
const BODY_BYTES = 20_000;

type PeerMessage = { ready: { dns: string; port: number } } | { done: { cpuMs: number; questions: number } };

/** The peer: a DNS server answering every name with 127.0.0.1, the site, and the client that sends captures' requests through the gateway. */
async function peer(): Promise<void> {
  const dns = await startDnsServer((_name, type) => (type === 'AAAA' ? [] : ['127.0.0.1']));
  const body = Buffer.alloc(BODY_BYTES, 97);
  const site = http.createServer((_req, res) => {
    res.setHeader('content-type', 'image/png');
    res.end(body);
  });
  await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
  const sitePort = (site.address() as { port: number }).port;
  let capture = 0;
  process.on('message', async (m: { requests: number; gatewayPort: number }) => {
    const c0 = process.cpuUsage();
    const q0 = dns.questions.length;
    const agent = new http.Agent({ keepAlive: true, maxSockets: 6 });
    const host = `site-${capture++}.test:${sitePort}`;
    await Promise.all(
      Array.from(
        { length: m.requests },
        (_, i) =>
          new Promise<void>((resolve, reject) => {
            const req = http.request({ host: '127.0.0.1', port: m.gatewayPort, path: `http://${host}/img${i}`, headers: { host }, agent }, (res) => {
              res.resume();
              res.on('end', resolve);
            });
            req.on('error', reject);
            req.end();
          }),
      ),
    );
    agent.destroy();
    const c = process.cpuUsage(c0);
    process.send?.({ done: { cpuMs: (c.user + c.system) / 1000, questions: dns.questions.length - q0 } } satisfies PeerMessage);
  });
  process.send?.({ ready: { dns: dns.address, port: sitePort } } satisfies PeerMessage);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

if (process.argv[2] === '--peer') {
  void peer();
} else {
  runBench('gateway', async (cleanups) => {
    const progress = (msg: string) => process.stderr.write(`[gateway] ${msg}\n`);
    const child: ChildProcess = fork(__filename, ['--peer'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    cleanups.push(async () => {
      child.kill();
    });
    const ready = await new Promise<{ dns: string; port: number }>((resolve) =>
      child.once('message', (m: PeerMessage) => {
        if ('ready' in m) resolve(m.ready);
      }),
    );
    const policy = new EgressPolicy(true, resolverLookup([ready.dns]));
    const gateway = await EgressGateway.start({ policy, bindHost: '127.0.0.1', idleTimeoutMs: 30_000, connectTimeoutMs: 5_000 });
    cleanups.push(() => gateway.close());
    const shipped = GatewayCapture.prototype.admit;
    const everyRequest = function (this: GatewayCapture, host: string, p: EgressPolicy): Promise<Admission> {
      return p.admit(host);
    };
    /** One capture through the gateway; the peer's CPU and DNS questions for it. */
    const capture = async (): Promise<{ cpuMs: number; questions: number }> => {
      const bound = gateway.bind();
      const done = new Promise<{ cpuMs: number; questions: number }>((resolve) =>
        child.once('message', (m: PeerMessage) => {
          if ('done' in m) resolve(m.done);
        }),
      );
      child.send({ requests: REQUESTS_PER_CAPTURE, gatewayPort: gateway.port });
      const r = await done;
      gateway.unbind(bound);
      return r;
    };
    const ways = {
      shipped: { gateway: [] as number[], peer: [] as number[], questions: 0 },
      every: { gateway: [] as number[], peer: [] as number[], questions: 0 },
    };
    for (let i = 0; i < 20; i++) await capture();
    for (let round = 0; round < ROUNDS; round++) {
      progress(`round ${round + 1} of ${ROUNDS}`);
      for (const way of round % 2 ? (['every', 'shipped'] as const) : (['shipped', 'every'] as const)) {
        GatewayCapture.prototype.admit = way === 'shipped' ? shipped : everyRequest;
        let peerMs = 0;
        const c0 = process.cpuUsage();
        for (let i = 0; i < CAPTURES_PER_ROUND; i++) {
          const r = await capture();
          peerMs += r.cpuMs;
          ways[way].questions += r.questions;
        }
        const c = process.cpuUsage(c0);
        ways[way].gateway.push((c.user + c.system) / 1000 / CAPTURES_PER_ROUND);
        ways[way].peer.push(peerMs / CAPTURES_PER_ROUND);
      }
    }
    GatewayCapture.prototype.admit = shipped;
    const captures = ROUNDS * CAPTURES_PER_ROUND;
    const row = (label: string, w: (typeof ways)['shipped']) =>
      `| ${label} | ${median(w.gateway).toFixed(2)} (${Math.min(...w.gateway).toFixed(2)}–${Math.max(...w.gateway).toFixed(2)}) | ${median(w.peer).toFixed(2)} | ${(w.questions / captures).toFixed(1)} |`;
    const gain = median(ways.every.gateway) - median(ways.shipped.gateway);
    const report = [
      "# The egress gateway's plain-HTTP path: CPU per capture",
      '',
      `Run ${new Date().toISOString()} on ${os.cpus()[0]?.model.trim() ?? 'unknown CPU'}, ${os.cpus().length} cores, Node ${process.version}; ${ROUNDS} rounds of ${CAPTURES_PER_ROUND} captures per way, each capture ${REQUESTS_PER_CAPTURE} plain-HTTP requests of ${BODY_BYTES / 1000} kB to a new site name on up to 6 kept-alive connections; load average (1 min) at the end ${os.loadavg()[0]?.toFixed(2)}.`,
      '',
      '| way | gateway CPU ms per capture, median of rounds (range) | peer CPU ms per capture (client and DNS server) | DNS questions per capture |',
      '| --- | --- | --- | --- |',
      row('a name resolved once per capture (as shipped)', ways.shipped),
      row('every request resolved (before)', ways.every),
      '',
      `Resolving a name once per capture saves ${gain.toFixed(2)} ms of the gateway's CPU per capture of ${REQUESTS_PER_CAPTURE} requests (${((gain / median(ways.every.gateway)) * 100).toFixed(0)} %), and the DNS server's questions fall from two per request (A and AAAA) to two per name. What remains is the sockets' work that any forward proxy does (accepting the browser's connections, connecting to the site, reading and writing each request and response) and proxy-chain's own handling, about 40 µs per request in a profile (docs/decisions/2026-11-28-gateway-plain-http.md).`,
    ].join('\n');
    publishResults('gateway', report, FULL_RUN, progress);
  });
}
