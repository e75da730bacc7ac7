/**
 * The egress gateway on its own: requests sent through it as a browser sends them (absolute
 * URLs for plain HTTP, CONNECT for https and wss), names resolved by a DNS server the test
 * runs, targets on 127.0.0.1. Only loopback is ever connected to: refusals of other
 * addresses are decided before any connection.
 */
import { spawn } from 'node:child_process';
import { expect } from 'chai';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo, Socket } from 'node:net';
import { EgressPolicy, isBlockedAddress, resolverLookup } from '../../../services/shared/egress';
import { EgressGateway } from '../../../services/capture/page/gateway';
import { Server as ProxyServer } from 'proxy-chain';
import { type DnsServer, startDnsServer } from '../../support/dns-server';
import { startSocks5 } from '../../support/socks5-server';

interface Target {
  port: number;
  /** Requests seen, as "host path". */
  seen: string[];
  /** Bytes read and written by the target's sockets, once they closed. */
  bytes(): number;
  /** Connections accepted so far, and those still open. */
  connections(): number;
  open(): number;
  stop(): Promise<void>;
}

async function startTarget(): Promise<Target> {
  const seen: string[] = [];
  let bytes = 0;
  let connections = 0;
  const open = new Set<Socket>();
  const server = http.createServer((req, res) => {
    seen.push(`${req.headers.host} ${req.url}`);
    res.setHeader('content-type', 'text/plain');
    res.end(req.url === '/big' ? 'x'.repeat(100_000) : 'hello');
  });
  server.on('connection', (s: Socket) => {
    connections++;
    open.add(s);
    s.on('close', () => {
      open.delete(s);
      bytes += s.bytesRead + s.bytesWritten;
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    bytes: () => bytes,
    connections: () => connections,
    open: () => open.size,
    stop: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** GET through the gateway as a browser does for http: an absolute URL to the proxy. */
function viaProxy(gw: EgressGateway, url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({ host: '127.0.0.1', port: gw.port, method: 'GET', path: url, headers: { host: u.host }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** CONNECT through the gateway; resolves with the proxy's status (200: tunnel open) and the tunnel. */
function connectVia(gw: EgressGateway, authority: string): Promise<{ status: number; socket: Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: gw.port, method: 'CONNECT', path: authority, agent: false });
    req.on('connect', (res, socket) => resolve({ status: res.statusCode ?? 0, socket }));
    req.on('response', (res) => {
      res.resume();
      resolve({ status: res.statusCode ?? 0, socket: res.socket });
    });
    req.on('error', reject);
    req.end();
  });
}

/** A GET sent inside an open tunnel; the raw answer. */
function getInTunnel(socket: Socket, host: string, path: string): Promise<string> {
  return new Promise((resolve) => {
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      raw += c;
    });
    socket.on('end', () => resolve(raw));
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
  });
}

/**
 * A TCP port on 127.0.0.1 whose connects hang: a listener (python3, which can listen without
 * ever accepting) with a backlog of 0, its queue filled, so the kernel drops further SYNs.
 */
let hanging: { stop(): Promise<void> } | null = null;
async function hangingPort(): Promise<number> {
  const child = spawn('python3', [
    '-c',
    'import socket,sys\ns=socket.socket();s.bind(("127.0.0.1",0));s.listen(0)\nprint(s.getsockname()[1],flush=True)\nsys.stdin.read()',
  ]);
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout.once('data', (d: Buffer) => resolve(Number(d.toString().trim())));
    child.once('error', reject);
  });
  const fillers = Array.from({ length: 3 }, () => net.connect(port, '127.0.0.1').on('error', () => undefined));
  await new Promise((r) => setTimeout(r, 200));
  hanging = {
    async stop() {
      for (const f of fillers) f.destroy();
      child.kill('SIGKILL');
    },
  };
  return port;
}

describe('egress gateway (proxy-chain, one capture bound at a time)', () => {
  let dns: DnsServer;
  let target: Target;
  /** name -> answers, taken one per question (the last one repeats). */
  const zone = new Map<string, string[]>();
  const gateways: EgressGateway[] = [];

  async function gateway(allowPrivateNetworks: boolean, connectTimeoutMs = 5000): Promise<EgressGateway> {
    const gw = await EgressGateway.start({
      policy: new EgressPolicy(allowPrivateNetworks, resolverLookup([dns.address], 1000)),
      bindHost: '127.0.0.1',
      idleTimeoutMs: 5000,
      connectTimeoutMs,
    });
    gateways.push(gw);
    return gw;
  }

  before(async () => {
    dns = await startDnsServer((name, type) => {
      const answers = zone.get(name);
      if (!answers) return null;
      if (type === 'AAAA') return [];
      const next = answers.length > 1 ? answers.shift() : answers[0];
      return next ? [next] : [];
    });
    target = await startTarget();
  });
  after(async () => {
    for (const gw of gateways) await gw.close();
    await target.stop();
    await dns.stop();
  });
  beforeEach(() => {
    zone.clear();
    dns.questions.length = 0;
  });

  it('refuses a public-looking name that resolves to 127.0.0.1 (HTTP and CONNECT), reaching nothing', async () => {
    zone.set('shop.example.test', ['127.0.0.1']);
    const gw = await gateway(false);
    const capture = gw.bind();
    const before = target.seen.length;
    const r = await viaProxy(gw, `http://shop.example.test:${target.port}/secret`);
    expect(r.status).to.equal(403);
    const t = await connectVia(gw, `shop.example.test:${target.port}`);
    expect(t.status).to.equal(403);
    t.socket.destroy();
    expect(target.seen.length).to.equal(before);
    expect(capture.refusalOf(`http://shop.example.test:${target.port}/secret`)).to.match(/resolves to 127\.0\.0\.1/);
    gw.unbind(capture);
  });

  it('refuses 169.254.169.254, [::ffff:127.0.0.1] and NAT64 forms before any connection or lookup', async () => {
    const gw = await gateway(false);
    const capture = gw.bind();
    // Refused by the check itself: the gateway never opens a connection to a refused address.
    expect((await viaProxy(gw, 'http://169.254.169.254/latest/meta-data/')).status).to.equal(403);
    const meta = await connectVia(gw, '169.254.169.254:443');
    expect(meta.status).to.equal(403);
    meta.socket.destroy();
    expect((await viaProxy(gw, `http://[::ffff:127.0.0.1]:${target.port}/`)).status).to.equal(403);
    expect((await viaProxy(gw, `http://[64:ff9b::7f00:1]:${target.port}/`)).status).to.equal(403);
    expect(dns.questions).to.deep.equal([]);
    expect(capture.refusalOf('http://169.254.169.254/latest/meta-data/')).to.include('169.254.169.254');
    expect(capture.refusals.map((r) => r.host)).to.include('::ffff:7f00:1');
    gw.unbind(capture);
  });

  it('embedded IPv4 forms are judged by the address they carry', () => {
    for (const a of ['::ffff:7f00:1', '::ffff:127.0.0.1', '64:ff9b::a9fe:a9fe', '2002:c0a8:101::1', '::ffff:0:a00:1', '::7f00:1', '2001::1', '64:ff9b:1::1']) {
      expect(isBlockedAddress(a), a).to.equal(true);
    }
    for (const a of ['64:ff9b::808:808', '2002:808:808::1', '2606:4700::1', '8.8.8.8']) expect(isBlockedAddress(a), a).to.equal(false);
  });

  it('connects to the address it checked: one lookup per request, never a second one (rebinding)', async () => {
    // First answer 127.0.0.1 (where the target is), then 127.0.0.3 (nothing listens): a
    // second lookup before connecting would fail the request.
    zone.set('rebind.test', ['127.0.0.1', '127.0.0.3']);
    const gw = await gateway(true);
    const capture = gw.bind();
    const r = await viaProxy(gw, `http://rebind.test:${target.port}/one`);
    expect(r).to.deep.equal({ status: 200, body: 'hello' });
    expect(dns.questions.filter((q) => q === 'A rebind.test')).to.have.length(1);
    expect(target.seen).to.include(`rebind.test:${target.port} /one`);
    gw.unbind(capture);
  });

  it('resolves a name once per capture: its later requests go to the checked address; the next capture asks again', async () => {
    // Answers 127.0.0.1 (where the target is), then 127.0.0.3 (nothing listens): a request
    // that asked again would fail.
    zone.set('once.test', ['127.0.0.1', '127.0.0.3']);
    zone.set('flaky.test', []);
    const gw = await gateway(true);
    const asked = (name: string) => dns.questions.filter((q) => q === `A ${name}`).length;
    const capture = gw.bind();
    for (const path of ['/a', '/b', '/c']) expect(await viaProxy(gw, `http://once.test:${target.port}${path}`)).to.deep.equal({ status: 200, body: 'hello' });
    const t = await connectVia(gw, `ONCE.test:${target.port}`);
    expect(t.status, 'a tunnel to the same name, in capitals').to.equal(200);
    t.socket.destroy();
    expect(asked('once.test'), 'one question for the capture').to.equal(1);
    // An unresolvable name is asked again by the next request (DNS may answer then).
    expect((await viaProxy(gw, `http://flaky.test:${target.port}/x`)).status).to.equal(502);
    zone.set('flaky.test', ['127.0.0.1']);
    expect(await viaProxy(gw, `http://flaky.test:${target.port}/y`)).to.deep.equal({ status: 200, body: 'hello' });
    gw.unbind(capture);
    // The next capture resolves anew: 127.0.0.3, where nothing listens.
    const next = gw.bind();
    expect((await viaProxy(gw, `http://once.test:${target.port}/d`)).status).to.be.at.least(500);
    expect(asked('once.test')).to.equal(2);
    gw.unbind(next);
  });

  it('tunnels CONNECT to the checked address (wss and https go this way)', async () => {
    zone.set('tunnel.test', ['127.0.0.1']);
    const gw = await gateway(true);
    const capture = gw.bind();
    const t = await connectVia(gw, `tunnel.test:${target.port}`);
    expect(t.status).to.equal(200);
    expect(await getInTunnel(t.socket, 'tunnel.test', '/in-tunnel')).to.match(/^HTTP\/1\.1 200[\s\S]*hello$/);
    expect(target.seen).to.include(`tunnel.test /in-tunnel`);
    gw.unbind(capture);
  });

  it('counts a capture exactly: the bytes the targets read and wrote', async () => {
    const gw = await gateway(true);
    const capture = gw.bind();
    const was = target.bytes();
    await viaProxy(gw, `http://127.0.0.1:${target.port}/big`);
    const t = await connectVia(gw, `127.0.0.1:${target.port}`);
    await getInTunnel(t.socket, '127.0.0.1', '/big');
    const counted = gw.unbind(capture);
    // The target's sockets close once the gateway has closed the capture's connections.
    for (let i = 0; i < 50 && target.bytes() - was < counted; i++) await new Promise((r) => setTimeout(r, 20));
    expect(counted).to.be.greaterThan(200_000);
    expect(counted).to.equal(target.bytes() - was);
  });

  it("keeps a capture's connections to a target alive between its requests, closes them when it ends, and never lends them to the next", async () => {
    const gw = await gateway(true);
    const url = (path: string) => `http://127.0.0.1:${target.port}${path}`;
    const accepted = target.connections();
    const was = target.bytes();
    const first = gw.bind();
    // Each request on a client connection of its own, as a browser's parallel requests arrive.
    for (const path of ['/a', '/big', '/c']) expect((await viaProxy(gw, url(path))).status).to.equal(200);
    expect(target.connections() - accepted).to.equal(1);
    expect(target.open()).to.equal(1);
    const counted = gw.unbind(first);
    for (let i = 0; i < 50 && target.open() > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(target.open()).to.equal(0);
    // Counted exactly over the reused connection: what the target read and wrote.
    expect(counted).to.be.greaterThan(100_000);
    expect(counted).to.equal(target.bytes() - was);
    const second = gw.bind();
    expect(await viaProxy(gw, url('/d'))).to.deep.equal({ status: 200, body: 'hello' });
    expect(target.connections() - accepted).to.equal(2);
    gw.unbind(second);
  });

  describe('through an upstream proxy (a real location, or an own proxy)', () => {
    let upstream: ProxyServer;
    /** What the upstream saw: "user:password target". */
    const upstreamSeen: string[] = [];
    /** Bytes between the gateway and the upstream, as the upstream counted them. */
    let upstreamBytes = 0;
    before(async () => {
      upstream = new ProxyServer({
        port: 0,
        host: '127.0.0.1',
        prepareRequestFunction: ({ username, password, hostname, port }) => {
          upstreamSeen.push(`${username}:${password} ${hostname}:${port}`);
          return { requestAuthentication: username !== 'user-country-de-session-s1' || password !== 'pw' };
        },
      });
      upstream.on('connectionClosed', ({ stats }: { stats?: { srcTxBytes: number; srcRxBytes: number } }) => {
        upstreamBytes += (stats?.srcTxBytes ?? 0) + (stats?.srcRxBytes ?? 0);
      });
      await upstream.listen();
    });
    after(async () => {
      await upstream.close(true);
    });

    it('goes out through the upstream with its credentials, which the browser side never sees; counts what the upstream counted', async () => {
      const gw = await gateway(true);
      const before = upstreamBytes;
      const capture = gw.bind(`http://user-country-de-session-s1:pw@127.0.0.1:${upstream.port}`);
      const r = await viaProxy(gw, `http://127.0.0.1:${target.port}/big`);
      expect(r.status).to.equal(200);
      const t = await connectVia(gw, `127.0.0.1:${target.port}`);
      expect(t.status).to.equal(200);
      await getInTunnel(t.socket, '127.0.0.1', '/via-tunnel');
      expect(upstreamSeen).to.include.members([`user-country-de-session-s1:pw 127.0.0.1:${target.port}`]);
      expect(target.seen).to.include.members([`127.0.0.1:${target.port} /big`, '127.0.0.1 /via-tunnel']);
      const counted = gw.unbind(capture);
      for (let i = 0; i < 50 && upstreamBytes - before < counted; i++) await new Promise((r) => setTimeout(r, 20));
      expect(counted).to.be.greaterThan(100_000);
      expect(counted).to.equal(upstreamBytes - before);
    });

    it('an upstream that refuses the credentials fails the request without showing them', async () => {
      const gw = await gateway(true);
      const capture = gw.bind(`http://user-country-de-session-s1:wrong-secret@127.0.0.1:${upstream.port}`);
      const r = await viaProxy(gw, `http://127.0.0.1:${target.port}/denied`);
      expect(r.status).to.not.equal(200);
      expect(r.body).to.not.include('wrong-secret');
      const t = await connectVia(gw, `127.0.0.1:${target.port}`);
      expect(t.status).to.not.equal(200);
      t.socket.destroy();
      gw.unbind(capture);
      expect(target.seen.some((s) => s.endsWith('/denied'))).to.equal(false);
    });

    it('chains to a SOCKS5 upstream (with authentication): HTTP and CONNECT; refused credentials fail the request', async () => {
      const socks = await startSocks5({ username: 'sock-user', password: 'sock-pw' });
      try {
        const gw = await gateway(true);
        const capture = gw.bind(`socks5://sock-user:sock-pw@127.0.0.1:${socks.port}`);
        expect((await viaProxy(gw, `http://127.0.0.1:${target.port}/via-socks`)).status).to.equal(200);
        const t = await connectVia(gw, `127.0.0.1:${target.port}`);
        expect(t.status).to.equal(200);
        await getInTunnel(t.socket, '127.0.0.1', '/socks-tunnel');
        expect(socks.seen).to.include(`sock-user 127.0.0.1:${target.port}`);
        expect(target.seen).to.include.members([`127.0.0.1:${target.port} /via-socks`, '127.0.0.1 /socks-tunnel']);
        gw.unbind(capture);
        const bad = gw.bind(`socks5://sock-user:wrong@127.0.0.1:${socks.port}`);
        expect((await viaProxy(gw, `http://127.0.0.1:${target.port}/socks-denied`)).status).to.not.equal(200);
        gw.unbind(bad);
        expect(target.seen.some((x) => x.endsWith('/socks-denied'))).to.equal(false);
      } finally {
        await socks.stop();
      }
    });

    it('still refuses what the policy refuses, before the upstream is asked', async () => {
      zone.set('inside.test', ['10.1.2.3']);
      const gw = await gateway(false);
      const capture = gw.bind(`http://user-country-de-session-s1:pw@127.0.0.1:${upstream.port}`);
      const seen = upstreamSeen.length;
      expect((await viaProxy(gw, 'http://inside.test/')).status).to.equal(403);
      expect((await viaProxy(gw, 'http://169.254.169.254/')).status).to.equal(403);
      expect(upstreamSeen.length).to.equal(seen);
      gw.unbind(capture);
    });
  });

  it('gives up a connect that hangs after its connect timeout, well before the idle timeout (HTTP and CONNECT)', async function () {
    this.timeout(15_000);
    const port = await hangingPort();
    try {
      const gw = await gateway(true, 400);
      const capture = gw.bind();
      let t = Date.now();
      const plain = await viaProxy(gw, `http://127.0.0.1:${port}/never`);
      expect(plain.status).to.be.within(502, 504);
      expect(Date.now() - t).to.be.within(350, 3000);
      // Kept as the gateway's failure of that URL, which the capture reads to tell its answer from a page.
      expect(capture.failureOf(`http://127.0.0.1:${port}/never#part`)).to.deep.equal({
        url: `http://127.0.0.1:${port}/never`,
        reason: `127.0.0.1:${port} did not answer within 400 ms (ETIMEDOUT)`,
      });
      t = Date.now();
      const tunnel = await new Promise<string>((resolve) => {
        const req = http.request({ host: '127.0.0.1', port: gw.port, method: 'CONNECT', path: `127.0.0.1:${port}`, agent: false });
        req.on('connect', (res) => resolve(`answered ${res.statusCode}`));
        req.on('response', (res) => resolve(`answered ${res.statusCode}`));
        req.on('error', (err: NodeJS.ErrnoException) => resolve(`closed (${err.code})`));
        req.end();
      });
      expect(tunnel).to.match(/^closed|answered 50\d/);
      expect(Date.now() - t).to.be.within(350, 3000);
      gw.unbind(capture);
    } finally {
      await hanging?.stop();
    }
  });

  it('refuses requests while no capture is bound, and those of a capture that ended', async () => {
    const gw = await gateway(true);
    expect((await viaProxy(gw, `http://127.0.0.1:${target.port}/unbound`)).status).to.equal(403);
    const capture = gw.bind();
    expect(() => gw.bind()).to.throw(/already bound/);
    gw.unbind(capture);
    expect((await viaProxy(gw, `http://127.0.0.1:${target.port}/after`)).status).to.equal(403);
    expect(target.seen.some((s) => s.endsWith('/unbound') || s.endsWith('/after'))).to.equal(false);
  });
});
