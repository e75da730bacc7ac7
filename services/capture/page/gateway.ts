/**
 * The egress gateway (DESIGN section 5, modelled on Stripe's Smokescreen): a forward proxy
 * (proxy-chain) that every browser context of a capture uses as its proxy. One gateway
 * listens per browser slot and is bound to the capture running in that slot; requests
 * arriving while no capture is bound are refused.
 *
 * For every request (plain HTTP, and CONNECT for https and wss) the gateway resolves the
 * name itself (EgressPolicy.admit), refuses it when any address is loopback, private,
 * link-local, metadata or another refused range (IPv4 inside IPv6 included), and otherwise
 * connects to the very address it checked: its lookup hands Node that address and nothing
 * else, so a DNS server answering differently the second time (rebinding) has no second
 * time. A capture resolves each name once (GatewayCapture.admit): its later requests to the
 * name go to the same checked address, as a browser's own DNS cache would send them, without
 * asking the DNS server again. Literal addresses are checked before any connection is attempted.
 *
 * Each capture's bytes (what went to and came from the targets) are counted from the
 * connections it used; when the capture is unbound its connections are closed and counted.
 *
 * Timeouts: a connection with no traffic for idleTimeoutMs is closed; a connection to a
 * target or upstream that is not established within connectTimeoutMs is given up (plain
 * HTTP: on the outgoing socket; CONNECT: until the tunnel is answered), so a black-holed
 * address costs a page that long, not the idle timeout.
 *
 * What the gateway could not reach for a capture (a name that does not resolve, a connection
 * refused or not answered) is kept on its GatewayCapture (failures). A plain-HTTP request
 * that fails so is answered with an error response (proxy-chain's 502, 504 and 59x status
 * lines), which Chromium renders as the page: the capture reads the failures to tell the
 * gateway's answer from a page the site sent (page-capture.ts).
 */
import type dns from 'node:dns';
import http from 'node:http';
import net, { type AddressInfo, type NetConnectOpts, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { type PrepareRequestFunctionResult, RequestError, Server } from 'proxy-chain';
import type { Admission, EgressPolicy } from '../../shared/egress';

export interface GatewayOptions {
  policy: EgressPolicy;
  /** Where the gateway listens (127.0.0.1 when the browsers run on this host). */
  bindHost: string;
  /** The host the browsers reach it at (EGRESS_GATEWAY_HOST); defaults to bindHost. */
  advertisedHost?: string;
  /** A connection to the gateway with no traffic for this long is closed. */
  idleTimeoutMs: number;
  /** A connection to a target (or an upstream) not established within this is given up. */
  connectTimeoutMs: number;
}

/** A request the policy refused: the host asked for, its port, what was asked for and why. */
export interface Refusal {
  host: string;
  port: number;
  /** The request's URL (plain HTTP), or `https://host:port` for a tunnel (CONNECT: its path is the browser's secret). */
  url: string;
  reason: string;
}

/** A request the gateway could not carry: the URL asked for (as Refusal's) and why, in words (`good.test:8001 refused the connection (ECONNREFUSED)`). */
export interface GatewayFailure {
  url: string;
  reason: string;
}

/** A URL as compared with a failure's: without its fragment (never sent), in its normal form. */
function comparable(rawUrl: string): string | null {
  try {
    const url = new URL(rawUrl);
    url.hash = '';
    return url.href;
  } catch {
    return null;
  }
}

/** One capture's use of the gateway: what was refused, what could not be reached, and how many bytes went through. */
export class GatewayCapture {
  readonly refusals: Refusal[] = [];
  /**
   * The upstream proxy this capture goes out through (a real location's or the account's own,
   * credentials included), or null: straight to the targets. Only the gateway uses it: the
   * browser knows the gateway's address and nothing else. `agent`: the capture's own
   * outgoing connections for plain HTTP (CaptureAgent), destroyed when it is unbound.
   */
  constructor(
    readonly upstream: string | null,
    readonly agent: http.Agent,
    /** The requests the gateway could not carry (unresolvable names, connections refused or not answered), in order; the agent adds its own. */
    readonly failures: GatewayFailure[] = [],
  ) {}

  /** Bytes sent to and received from targets by the capture's connections, counted so far. */
  bytes = 0;
  ended = false;
  /** The policy's answer for each name this capture asked for (an unresolvable one is asked again). */
  private readonly admissions = new Map<string, Promise<Admission>>();

  /** The policy's answer for a host, asked once per capture: every connection to it goes to the one address checked. */
  admit(host: string, policy: EgressPolicy): Promise<Admission> {
    const key = host.toLowerCase();
    let answer = this.admissions.get(key);
    if (!answer) {
      answer = policy.admit(host);
      this.admissions.set(key, answer);
      void answer.then(
        (a) => {
          if (!a.allowed && a.unresolvable) this.admissions.delete(key);
        },
        () => this.admissions.delete(key),
      );
    }
    return answer;
  }

  /** The refusal of a URL's host and port, if the gateway refused it (`<url> <reason>`). */
  refusalOf(rawUrl: string): string | null {
    let url: URL;
    try {
      url = new URL(rawUrl);
    } catch {
      return null;
    }
    const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
    const port = Number(url.port || (url.protocol === 'https:' || url.protocol === 'wss:' ? 443 : 80));
    const r = this.refusals.find((x) => x.host === host && x.port === port);
    return r ? `${rawUrl} ${r.reason}` : null;
  }

  /**
   * The failure of a request for this URL among the failures from `since` on, if the gateway
   * could not carry it: a plain-HTTP request by its URL, a tunnel (https) by its host and port.
   */
  /** A connection to the capture's upstream proxy that could not be made, from `since` on (its request not known). */
  upstreamFailure(since = 0): GatewayFailure | null {
    return this.failures.slice(since).find((f) => f.url === '') ?? null;
  }

  failureOf(rawUrl: string, since = 0): GatewayFailure | null {
    const url = comparable(rawUrl);
    if (url === null) return null;
    const { protocol, hostname, port } = new URL(url);
    const tunnel = protocol === 'https:' || protocol === 'wss:' ? `https://${hostname}:${port || 443}` : null;
    return this.failures.slice(since).find((f) => f.url === url || f.url === tunnel) ?? null;
  }
}

/** Why a connection could not be made, in words, from its error's code. */
function connectFailure(err: Error & { code?: string }, connectTimeoutMs: number): string {
  switch (err.code) {
    case 'ECONNREFUSED':
      return 'refused the connection (ECONNREFUSED)';
    case 'ETIMEDOUT':
      return `did not answer within ${connectTimeoutMs} ms (ETIMEDOUT)`;
    case 'ECONNRESET':
      return 'reset the connection (ECONNRESET)';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return `could not be reached (${err.code})`;
    default:
      return `could not be connected to (${err.code ?? err.message})`;
  }
}

/**
 * One capture's outgoing connections for plain HTTP (and chaining to an upstream): kept
 * alive between its requests, as the browser would keep them alive going out directly,
 * and never beyond the capture (destroyed when it is unbound), so a connection's bytes are
 * always its capture's. A connection not established within `connectTimeoutMs` is given up.
 */
class CaptureAgent extends http.Agent {
  /**
   * `failed`: told of a connection that could not be made, with the URL its request asked for
   * and why; `viaUpstream`: the connections go to the capture's upstream proxy, not to the targets.
   */
  constructor(
    private readonly connectTimeoutMs: number,
    private readonly failed: (failure: GatewayFailure) => void,
    private readonly viaUpstream: boolean,
  ) {
    // An idle connection is let go after 4 s, before the usual 5 s of servers that send no
    // keep-alive hint (Node honours a hint), so a request seldom meets one the target is closing.
    super({ keepAlive: true, scheduling: 'lifo', timeout: 4_000 });
  }

  override createConnection(options: NetConnectOpts, callback?: (err: Error | null, socket: Duplex) => void): Duplex {
    const socket = net.createConnection(options);
    const timer = setTimeout(
      () => socket.destroy(Object.assign(new Error(`connect timed out after ${this.connectTimeoutMs} ms`), { code: 'ETIMEDOUT' })),
      this.connectTimeoutMs,
    );
    let connected = false;
    socket.once('connect', () => {
      connected = true;
      clearTimeout(timer);
    });
    socket.once('close', () => clearTimeout(timer));
    // A connection that was never made fails its request: the gateway answers it with an error.
    socket.once('error', (err) => {
      if (!connected) this.failed(this.failure(options, err));
    });
    callback?.(null, socket);
    return socket;
  }

  /**
   * The failure of the request a connection was made for. Node gives the agent the request's
   * options: through an upstream, its path is the absolute URL asked for; otherwise its href is.
   */
  private failure(options: NetConnectOpts, err: Error): GatewayFailure {
    const { path, href } = options as { path?: unknown; href?: unknown };
    const why = connectFailure(err, this.connectTimeoutMs);
    // Through an upstream, Node hands the agent no path (it means a socket's path to net): the
    // request is not known, only that the upstream could not be connected to (url '').
    if (this.viaUpstream) return { url: typeof path === 'string' ? (comparable(path) ?? path) : '', reason: `the proxy the capture goes out through ${why}` };
    const url = typeof href === 'string' ? href : '';
    let host = '';
    try {
      host = new URL(url).host;
    } catch {
      // Not a URL: the failure names no host.
    }
    return { url: comparable(url) ?? url, reason: host ? `${host} ${why}` : why };
  }
}

/**
 * A CONNECT: the client's socket gets connectTimeoutMs until the gateway first answers on it
 * ("200 Connection Established" once the target is connected, or an error), then the idle
 * timeout again. proxy-chain opens the tunnel itself, so its first write is the one signal.
 */
function timeTunnelConnect(socket: Socket, connectTimeoutMs: number, idleTimeoutMs: number): void {
  socket.setTimeout(connectTimeoutMs);
  const write = socket.write;
  socket.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
    socket.write = write;
    socket.setTimeout(idleTimeoutMs);
    return write.apply(this, args);
  } as Socket['write'];
}

/**
 * proxy-chain's server, telling the gateway of every request it answers with an error of its
 * own (its 5xx and 59x: a target or an upstream proxy that could not be reached, refused the
 * upstream's credentials, or reset the connection mid-answer). A connection the agent could not
 * make is known before; what fails after it (an upstream's 407, its death mid-page) is known
 * only here.
 */
class GatewayServer extends Server {
  onFailed: ((request: http.IncomingMessage, error: NodeJS.ErrnoException) => void) | null = null;

  override failRequest(request: http.IncomingMessage, error: NodeJS.ErrnoException): void {
    this.onFailed?.(request, error);
    super.failRequest(request, error);
  }
}

/** A lookup that answers one address, whatever it is asked: the address the policy checked. */
function pinnedLookup(address: string, family: 4 | 6): typeof dns.lookup {
  const lookup = (_host: string, options: unknown, callback?: unknown): void => {
    const cb = (typeof options === 'function' ? options : callback) as (...a: unknown[]) => void;
    const all = typeof options === 'object' && options !== null && (options as { all?: boolean }).all;
    if (all) process.nextTick(cb, null, [{ address, family }]);
    else process.nextTick(cb, null, address, family);
  };
  return lookup as unknown as typeof dns.lookup;
}

/** The page a refused plain-HTTP request is answered with: blank, the reason in its source only. */
function refusalPage(why: string): string {
  return `<!doctype html><title>Refused</title><!-- ${why.replace(/--/g, '- -')} -->`;
}

export class EgressGateway {
  private current: GatewayCapture | null = null;
  private readonly byConnection = new Map<number, GatewayCapture>();

  private constructor(
    private readonly server: Server,
    private readonly advertisedHost: string,
    private readonly timeouts: { connectTimeoutMs: number; idleTimeoutMs: number },
  ) {}

  static async start(opts: GatewayOptions): Promise<EgressGateway> {
    let gateway: EgressGateway | null = null;
    const server = new GatewayServer({
      port: 0,
      host: opts.bindHost,
      prepareRequestFunction: ({ connectionId, hostname, port, isHttp, request }) => {
        if (!gateway) throw new RequestError('The gateway is starting.', 503);
        return gateway.prepare(connectionId, hostname, port, isHttp ? (request.url ?? '') : null, opts.policy);
      },
    });
    gateway = new EgressGateway(server, opts.advertisedHost ?? opts.bindHost, opts);
    const g = gateway;
    server.onFailed = (request, error) => {
      const capture = g.byConnection.get((request.socket as Socket & { proxyChainId?: number }).proxyChainId ?? -1);
      if (!capture || capture.ended) return;
      // A tunnel's request names host:port; a plain-HTTP one its absolute URL.
      const url = request.method === 'CONNECT' ? `https://${String(request.url ?? '').toLowerCase()}` : (comparable(request.url ?? '') ?? String(request.url));
      const through = capture.upstream ? 'the proxy the capture goes out through failed' : 'the gateway could not fetch it';
      capture.failures.push({ url, reason: `${through}: ${error.message}` });
    };
    server.on('connectionClosed', ({ connectionId, stats }: { connectionId: number; stats?: { trgTxBytes: number | null; trgRxBytes: number | null } }) => {
      const capture = g.byConnection.get(connectionId);
      g.byConnection.delete(connectionId);
      if (capture && !capture.ended && stats) capture.bytes += (stats.trgTxBytes ?? 0) + (stats.trgRxBytes ?? 0);
    });
    // proxy-chain destroys a socket that times out.
    server.server.on('connection', (socket: Socket) => socket.setTimeout(opts.idleTimeoutMs));
    await server.listen();
    return gateway;
  }

  get port(): number {
    return (this.server.server.address() as AddressInfo).port;
  }

  /** The proxy address for Target.createBrowserContext. */
  get proxyServer(): string {
    const host = this.advertisedHost.includes(':') ? `[${this.advertisedHost}]` : this.advertisedHost;
    return `http://${host}:${this.port}`;
  }

  private async prepare(
    connectionId: number,
    hostname: string,
    port: number,
    /** A plain-HTTP request's (absolute) URL; null for a tunnel (CONNECT). */
    httpUrl: string | null,
    policy: EgressPolicy,
  ): Promise<PrepareRequestFunctionResult> {
    let capture = this.byConnection.get(connectionId);
    if (!capture) {
      capture = this.current ?? undefined;
      if (capture) this.byConnection.set(connectionId, capture);
    }
    if (!capture || capture.ended) throw new RequestError('No capture is running through this gateway.', 403);
    const admission = await capture.admit(hostname, policy);
    if (!admission.allowed) {
      const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
      const url = httpUrl ?? `https://${host.includes(':') ? `[${host}]` : host}:${port}`;
      if (admission.unresolvable) {
        capture.failures.push({ url: httpUrl === null ? url : (comparable(url) ?? url), reason: `${hostname} ${admission.reason}` });
        throw new RequestError(`${hostname} ${admission.reason}`, 502);
      }
      capture.refusals.push({ host, port, url, reason: admission.reason });
      const why = `${hostname} ${admission.reason}; refused by the egress policy.`;
      if (httpUrl === null) throw new RequestError(why, 403);
      // Plain HTTP: a 403 whose page draws nothing, so a refused frame of a page is left empty
      // in its picture (as a document paused and failed in the page was), the reason kept out of
      // sight. A tunnel's refusal (https) fails the connection: the browser's own error then.
      return { customResponseFunction: () => ({ statusCode: 403, headers: { 'content-type': 'text/html; charset=utf-8' }, body: refusalPage(why) }) };
    }
    const source = httpUrl !== null ? undefined : this.server.connections.get(connectionId);
    if (source) timeTunnelConnect(source, this.timeouts.connectTimeoutMs, this.timeouts.idleTimeoutMs);
    // Through an upstream, the upstream connects to the target (and resolves it in its own
    // region); the policy above still refused what resolves here to a refused address.
    // A kept-alive connection was made to an address the policy admitted earlier in this capture.
    const httpAgent = capture.agent;
    if (capture.upstream) return { upstreamProxyUrl: capture.upstream, httpAgent };
    return { dnsLookup: pinnedLookup(admission.address, admission.family), httpAgent };
  }

  /** Binds the next capture (one at a time), going out directly or through `upstream`; its requests are checked and counted. */
  bind(upstream: string | null = null): GatewayCapture {
    if (this.current) throw new Error('the egress gateway is already bound to a capture');
    const failures: GatewayFailure[] = [];
    const capture = new GatewayCapture(upstream, new CaptureAgent(this.timeouts.connectTimeoutMs, (f) => failures.push(f), upstream !== null), failures);
    this.current = capture;
    return capture;
  }

  /** Ends a capture: its connections still open are counted and closed; its bytes are final. */
  unbind(capture: GatewayCapture): number {
    if (this.current === capture) this.current = null;
    for (const [id, c] of this.byConnection) {
      if (c !== capture) continue;
      const stats = this.server.getConnectionStats(id);
      if (stats) capture.bytes += (stats.trgTxBytes ?? 0) + (stats.trgRxBytes ?? 0);
      this.byConnection.delete(id);
      this.server.closeConnection(id);
    }
    capture.agent.destroy();
    capture.ended = true;
    return capture.bytes;
  }

  async close(): Promise<void> {
    // Only the capture still bound has connections kept alive; an unbound one's were destroyed.
    this.current?.agent.destroy();
    this.current = null;
    await this.server.close(true);
  }
}
