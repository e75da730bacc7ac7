/** The HTTP server under every fixture site (127.0.0.1 on a free port, stopped with its connections) and how the sites answer. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface LocalServer {
  /** http://127.0.0.1:port */
  origin: string;
  port: number;
  stop(): Promise<void>;
}

/** Serves `handle` (which is told the server's own port, for pages that link back to it). */
export async function serveLocally(handle: (req: http.IncomingMessage, res: http.ServerResponse, port: number) => void): Promise<LocalServer> {
  let port = 0;
  const server = http.createServer((req, res) => handle(req, res, port));
  // Idle keep-alive sockets would otherwise hold stop() up.
  server.keepAliveTimeout = 1000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    stop: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** What a fixture page answers: HTML that is never cached, unless `headers` says otherwise. */
export interface PageAnswer {
  status?: number;
  headers?: Record<string, string>;
  body: string;
  /** Answers this many ms late (a slow page). */
  delayMs?: number;
}

/** A request to a fixture site, its body read. */
export interface PageRequest {
  req: http.IncomingMessage;
  method: string;
  path: string;
  /** The query string, without "?" ('' when there is none). */
  query: string;
  body: string;
}

/**
 * A fixture site: `answer` is told every request and the server's port, and gives the page,
 * or undefined for a plain 404.
 */
export function servePages(answer: (r: PageRequest, port: number) => PageAnswer | undefined): Promise<LocalServer> {
  return serveLocally((req, res, port) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const [path = '/', query = ''] = (req.url ?? '/').split('?');
      const out = answer({ req, method: req.method ?? 'GET', path, query, body: Buffer.concat(chunks).toString('utf8') }, port);
      if (!out) {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
        return;
      }
      const send = () => {
        res.writeHead(out.status ?? 200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...(out.headers ?? {}) });
        res.end(out.body);
      };
      if (out.delayMs) setTimeout(send, out.delayMs);
      else send();
    });
  });
}
