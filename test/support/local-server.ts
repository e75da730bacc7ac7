/** The HTTP server under every fixture site: 127.0.0.1 on a free port, stopped with its connections. */
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
