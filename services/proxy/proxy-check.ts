/**
 * The connection test of an own proxy: a small page (PROXY_TEST_URL, an IP-echo endpoint by
 * default) fetched through it, with the same chaining the egress gateway uses (a throwaway
 * proxy-chain listener on 127.0.0.1 whose every request goes to the proxy), so http, https
 * and socks5 proxies are tested exactly as captures will use them. Answers the exit IP and
 * the time taken, or the spec's error (proxy_auth_failed, proxy_host_not_found,
 * proxy_connection_failed, proxy_timeout). The upstream URL carries the credentials: it is
 * never logged or put in an error.
 */
import http from 'node:http';
import type { Socket } from 'node:net';
import tls from 'node:tls';
import { Server } from 'proxy-chain';
import { serviceError } from '../shared/errors';
import { FAILURE_NOTES, type ProxyFailure, failureOfStatus } from './own-proxies';

class TestFailure extends Error {
  constructor(readonly code: ProxyFailure) {
    super(code);
  }
}

/**
 * GET url through the local listener at port: CONNECT (then TLS for https) when the page is
 * https or the proxy is SOCKS (a SOCKS proxy only tunnels, and proxy-chain reports a SOCKS
 * authentication failure only on that path), else an absolute URL, as browsers send http
 * through an HTTP proxy (many HTTP proxies allow CONNECT only to port 443).
 */
function getVia(port: number, url: URL, signal: AbortSignal, tunnel: boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const fail = (err: unknown) => reject(err);
    const readBody = (res: http.IncomingMessage) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new TestFailure(failureOfStatus(res.statusCode ?? 0)));
        return;
      }
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        if (body.length < 10_000) body += c;
      });
      res.on('end', () => resolve(body));
      res.on('error', fail);
    };
    if (!tunnel) {
      const req = http.request({ host: '127.0.0.1', port, path: url.href, headers: { host: url.host }, agent: false, signal }, readBody);
      req.on('error', fail);
      req.end();
      return;
    }
    const https = url.protocol === 'https:';
    const req = http.request({ host: '127.0.0.1', port, method: 'CONNECT', path: `${url.hostname}:${url.port || (https ? 443 : 80)}`, agent: false, signal });
    req.on('connect', (res, socket: Socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        reject(new TestFailure(failureOfStatus(res.statusCode ?? 0)));
        return;
      }
      const stream = https ? tls.connect({ socket, servername: url.hostname }) : socket;
      const inner = http.request({ createConnection: () => stream, path: `${url.pathname}${url.search}`, headers: { host: url.host }, signal }, readBody);
      inner.on('error', fail);
      inner.end();
    });
    req.on('error', fail);
    req.end();
  });
}

/** The exit IP in an IP-echo answer: JSON {ip} (or {origin}), or the text itself when it is an address; else null. */
export function exitIpOf(body: string): string | null {
  try {
    const j = JSON.parse(body) as { ip?: unknown; origin?: unknown };
    const ip = j.ip ?? j.origin;
    if (typeof ip === 'string') return ip.split(',')[0]?.trim() ?? ip;
  } catch {
    // plain text
  }
  // Plain text is an IP only when it looks like one (a page that is not an IP echo gives none).
  const text = body.trim();
  return /^[0-9a-fA-F.:]{2,45}$/.test(text) ? text : null;
}

/** `notes`: the note of each failure (an own proxy's by default). */
export async function testThroughProxy(
  upstream: string,
  testUrl: string,
  timeoutMs: number,
  notes: Record<ProxyFailure, string> = FAILURE_NOTES,
): Promise<{ exit_ip: string | null; ms: number }> {
  const started = Date.now();
  const chain = new Server({ port: 0, host: '127.0.0.1', prepareRequestFunction: () => ({ upstreamProxyUrl: upstream }) });
  await chain.listen();
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  try {
    const page = new URL(testUrl);
    const body = await getVia(chain.port, page, abort.signal, page.protocol === 'https:' || upstream.startsWith('socks'));
    return { exit_ip: exitIpOf(body), ms: Date.now() - started };
  } catch (err) {
    const code: ProxyFailure = err instanceof TestFailure ? err.code : abort.signal.aborted ? 'proxy_timeout' : 'proxy_connection_failed';
    throw serviceError(code, notes[code]);
  } finally {
    clearTimeout(timer);
    await chain.close(true);
  }
}
