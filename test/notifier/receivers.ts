/**
 * Webhook receivers the notifier tests start on 127.0.0.1: each records every request (its
 * headers and the exact body bytes) and answers as the test scripts it.
 */
import type http from 'node:http';
import { type LocalServer, serveLocally } from '../support/local-server';

export interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

export type Answer = { status: number; body?: string; headers?: Record<string, string> } | 'hang';

export interface Receiver extends LocalServer {
  received: Received[];
  /** The answer to the n-th request (0-based). */
  script: (n: number) => Answer;
}

export async function startReceiver(script: (n: number) => Answer = () => ({ status: 200 })): Promise<Receiver> {
  const received: Received[] = [];
  const hanging: http.ServerResponse[] = [];
  const r = {} as Receiver;
  const server = await serveLocally((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = received.length;
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const answer = r.script(n);
      if (answer === 'hang') {
        hanging.push(res);
        return;
      }
      res.writeHead(answer.status, { 'content-type': 'text/plain', ...(answer.headers ?? {}) });
      res.end(answer.body ?? '');
    });
  });
  return Object.assign(r, server, { received, script });
}
