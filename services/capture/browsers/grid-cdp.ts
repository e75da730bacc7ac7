/**
 * Where a browser session's CDP socket goes (GRID_CDP, docs/configuration.md).
 *
 * On a Selenium Grid a session offers the Grid's relay, `se:cdp`: a WebSocket on the hub that
 * the hub and then the node pass on to the browser, every message of a capture (screenshots of
 * hundreds of kilobytes included) through two JVMs. With GRID_CDP=direct (the default) the
 * capture instance speaks to the browser's own DevTools socket instead, when it can reach it:
 * Chromium 156 listens for DevTools on loopback only (it has no --remote-debugging-address any
 * more), so that is when the session's node is on this host. The node is found with the
 * Grid's GraphQL (`session(id) { nodeUri }`), the browser's port in the session's
 * `goog:chromeOptions.debuggerAddress`, and the socket in that port's /json/version. The
 * browser found there must be the session's own: one of its targets is the session's window.
 *
 * Whenever the direct socket cannot be used (the node is on another host, the Grid does not
 * answer, the port is not the session's browser) the session uses the relay, and the reason is
 * logged once per process. Embedded mode (a local ChromeDriver, no Grid) always speaks to the
 * browser's own socket.
 */

import { gridEndpoint } from '../public/grid-status';

/** GRID_CDP: the browser's own DevTools socket when the node is on this host (else the relay), or always the Grid's relay. */
export type GridCdp = 'direct' | 'relay';

/** The route a session's CDP socket took: straight to the browser, or through the Grid's relay. */
export type CdpRoute = 'direct' | 'relay';

/** The part of a WebDriver session's capabilities read here (selenium-webdriver's Capabilities). */
export interface SessionCapabilities {
  get(key: string): unknown;
}

/** The part of a CDP connection used here (page/cdp.ts). */
export interface CdpSocket {
  send<T>(method: string, params?: Record<string, unknown>): Promise<T>;
  close(): void;
}

export interface CdpSessionInfo {
  /** The WebDriver session's id. */
  id: string;
  capabilities: SessionCapabilities;
  /** The session's current window handle: ChromeDriver names a window by its DevTools target id. */
  windowHandle(): Promise<string>;
}

export interface CdpRouterDeps<C extends CdpSocket> {
  /** Opens a CDP WebSocket (CdpConnection.open). */
  open(url: string): Promise<C>;
  fetchFn?: typeof fetch;
  log?: { info(...a: unknown[]): void };
}

/** How long the Grid's GraphQL and the browser's /json/version may take before the relay is used. */
export const LOOKUP_TIMEOUT_MS = 3_000;

/** Why the direct socket was not used; the message never quotes SELENIUM_URL (it may hold credentials). */
export class NoDirectSocket extends Error {}

const LOOPBACK_NAMES = new Set(['localhost', '::1', '[::1]']);

/** 127.0.0.0/8, ::1 or localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  return LOOPBACK_NAMES.has(h) || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** `goog:chromeOptions.debuggerAddress` as host and port: where ChromeDriver found the browser's DevTools, on the node. */
export function debuggerAddressOf(caps: SessionCapabilities): { host: string; port: number } | null {
  const address = (caps.get('goog:chromeOptions') as { debuggerAddress?: unknown } | undefined)?.debuggerAddress;
  if (typeof address !== 'string') return null;
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:]+):(\d{1,5})$/.exec(address);
  const port = Number(m?.[2]);
  if (!m || port < 1 || port > 65535) return null;
  return { host: m[1] as string, port };
}

/** The node holding a session, as the Grid's GraphQL names it (Selenium 4's `session(id) { nodeUri }`). */
export async function nodeUriOf(seleniumUrl: string, sessionId: string, fetchFn: typeof fetch = fetch): Promise<URL> {
  const { url, headers } = gridEndpoint(seleniumUrl, 'graphql');
  let res: Response;
  try {
    res = await fetchFn(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify({ query: 'query ($id: String!) { session(id: $id) { nodeUri } }', variables: { id: sessionId } }),
      signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS),
    });
  } catch (err) {
    throw new NoDirectSocket(`the Grid's GraphQL did not answer (${(err as Error).message})`);
  }
  if (!res.ok) throw new NoDirectSocket(`the Grid's GraphQL answered ${res.status}`);
  const body = (await res.json().catch(() => null)) as { data?: { session?: { nodeUri?: unknown } } } | null;
  const nodeUri = body?.data?.session?.nodeUri;
  if (typeof nodeUri !== 'string') throw new NoDirectSocket("the Grid's GraphQL did not name the session's node");
  try {
    return new URL(nodeUri);
  } catch {
    throw new NoDirectSocket(`the Grid named the session's node "${nodeUri}", which is not a URL`);
  }
}

/** The browser's own DevTools socket at host:port (its /json/version), with that host and port in it. */
export async function browserSocketAt(host: string, port: number, fetchFn: typeof fetch = fetch): Promise<string> {
  // Chromium answers /json/* only for a Host header that is an address or localhost.
  const target = host === 'localhost' ? '127.0.0.1' : host;
  const where = `${target}:${port}`;
  let res: Response;
  try {
    res = await fetchFn(`http://${where}/json/version`, { signal: AbortSignal.timeout(LOOKUP_TIMEOUT_MS) });
  } catch (err) {
    throw new NoDirectSocket(`the browser's DevTools at ${where} did not answer (${(err as Error).message})`);
  }
  const body = (await res.json().catch(() => null)) as { webSocketDebuggerUrl?: unknown } | null;
  const ws = body?.webSocketDebuggerUrl;
  if (!res.ok || typeof ws !== 'string') throw new NoDirectSocket(`the browser's DevTools at ${where} gave no webSocketDebuggerUrl`);
  const url = new URL(ws);
  url.host = where;
  return url.href;
}

/**
 * Opens sessions' CDP sockets by GRID_CDP, and says once per reason why one took the relay.
 * One per capture instance (its browser pool's launches share it).
 */
export class CdpRouter<C extends CdpSocket> {
  private readonly said = new Set<string>();
  private readonly fetchFn: typeof fetch;

  constructor(
    private readonly o: { seleniumUrl: string | null; gridCdp: GridCdp },
    private readonly deps: CdpRouterDeps<C>,
  ) {
    this.fetchFn = deps.fetchFn ?? fetch;
  }

  /** The session's CDP socket, open, and the route it took. */
  async connect(session: CdpSessionInfo): Promise<{ cdp: C; route: CdpRoute; url: string }> {
    const caps = session.capabilities;
    if (!this.o.seleniumUrl) {
      // Embedded: ChromeDriver and its browser run on this host.
      const address = debuggerAddressOf(caps);
      if (!address) throw new Error('the WebDriver session offers no CDP endpoint (no goog:chromeOptions.debuggerAddress)');
      const url = await browserSocketAt(address.host, address.port, this.fetchFn);
      return { cdp: await this.deps.open(url), route: 'direct', url };
    }
    const relay = caps.get('se:cdp');
    if (this.o.gridCdp === 'direct') {
      try {
        return await this.direct(this.o.seleniumUrl, session);
      } catch (err) {
        if (!(err instanceof NoDirectSocket)) throw err;
        if (typeof relay !== 'string') throw new Error(`GRID_CDP=direct: ${err.message}, and the session offers no se:cdp (is enable-cdp off on its node?)`);
        this.sayOnce(`GRID_CDP=direct: ${err.message}; sessions in that case use the Grid's CDP relay (se:cdp).`);
      }
    }
    if (typeof relay !== 'string') throw new Error('the WebDriver session offers no se:cdp endpoint (is enable-cdp off on its Grid node?)');
    return { cdp: await this.deps.open(relay), route: 'relay', url: relay };
  }

  /** The browser's own socket, when the node is on this host and the browser there is the session's; NoDirectSocket otherwise. */
  private async direct(seleniumUrl: string, session: CdpSessionInfo): Promise<{ cdp: C; route: CdpRoute; url: string }> {
    const address = debuggerAddressOf(session.capabilities);
    if (!address) throw new NoDirectSocket('the session names no goog:chromeOptions.debuggerAddress');
    const node = await nodeUriOf(seleniumUrl, session.id, this.fetchFn);
    if (!isLoopbackHost(node.hostname)) {
      throw new NoDirectSocket(`the session's node ${node.hostname} is not on this host (Chromium serves DevTools on its own loopback only)`);
    }
    if (!isLoopbackHost(address.host)) throw new NoDirectSocket(`the browser's DevTools address ${address.host} is not loopback`);
    const url = await browserSocketAt(address.host, address.port, this.fetchFn);
    let cdp: C;
    try {
      cdp = await this.deps.open(url);
    } catch (err) {
      throw new NoDirectSocket(`the browser's DevTools socket at port ${address.port} could not be opened (${(err as Error).message})`);
    }
    // A port on this host's loopback is this host's: it must be the session's browser (a Grid reached through a
    // port forward names its node's loopback, where this host may run another browser).
    try {
      const [{ targetInfos }, handle] = await Promise.all([
        cdp.send<{ targetInfos: Array<{ targetId: string }> }>('Target.getTargets'),
        session.windowHandle(),
      ]);
      if (!targetInfos.some((t) => t.targetId.toUpperCase() === handle.toUpperCase())) {
        throw new NoDirectSocket(`the browser at port ${address.port} of this host is not the session's (its window is not there)`);
      }
    } catch (err) {
      cdp.close();
      if (err instanceof NoDirectSocket) throw err;
      throw new NoDirectSocket(`the browser at port ${address.port} could not be checked (${(err as Error).message})`);
    }
    return { cdp, route: 'direct', url };
  }

  /**
   * Logs a reason the first time it is met: its numbers (a browser's port, a node's address)
   * left out of what is remembered, so that the set stays as small as the reasons are few,
   * whatever number of sessions meet them.
   */
  private sayOnce(message: string): void {
    const reason = message.replace(/\d+/g, '#');
    if (this.said.has(reason)) return;
    this.said.add(reason);
    this.deps.log?.info(message);
  }
}
