/**
 * A small Chrome DevTools Protocol client over one browser-level WebSocket (the Grid's
 * `se:cdp` endpoint, or Chromium's own debugger URL), in flat-session mode: every target
 * we attach to is addressed by its sessionId on the same socket, so one connection serves
 * all captures of a browser. selenium-webdriver opens the session; this speaks CDP.
 */
import WebSocket from 'ws';

type Params = Record<string, unknown>;
type Listener = (params: Params, sessionId: string | undefined) => void;

export class CdpError extends Error {
  constructor(
    readonly method: string,
    message: string,
    readonly cdpCode?: number,
  ) {
    super(`${method}: ${message}`);
  }
}

export class CdpConnection {
  private nextId = 1;
  private readonly pending = new Map<number, { method: string; sentAt: number; resolve(v: Params): void; reject(e: Error): void }>();
  private readonly closeListeners: Array<(err: Error) => void> = [];
  private readonly listeners = new Map<string, Set<Listener>>();
  private closedError: Error | null = null;

  private constructor(private readonly ws: WebSocket) {
    ws.on('message', (data) => this.onMessage(data.toString()));
    ws.on('close', () => this.fail(new Error('CDP connection closed')));
    ws.on('error', (err) => this.fail(err instanceof Error ? err : new Error(String(err))));
  }

  static open(url: string, timeoutMs = 15_000): Promise<CdpConnection> {
    return new Promise((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false, maxPayload: 512 * 1024 * 1024, handshakeTimeout: timeoutMs });
      ws.once('open', () => resolve(new CdpConnection(ws)));
      ws.once('error', reject);
    });
  }

  get closed(): boolean {
    return this.closedError !== null;
  }

  /** How long the oldest unanswered command has waited, ms (0 when none is waiting). */
  get oldestPendingMs(): number {
    // Map keeps insertion order: the first entry is the oldest.
    for (const waiter of this.pending.values()) return Date.now() - waiter.sentAt;
    return 0;
  }

  /** Called once when the connection closes, whoever closed it. */
  onClose(listener: (err: Error) => void): void {
    if (this.closedError) listener(this.closedError);
    else this.closeListeners.push(listener);
  }

  send<T = Params>(method: string, params: Params = {}, sessionId?: string): Promise<T> {
    if (this.closedError) return Promise.reject(new CdpError(method, this.closedError.message));
    const id = this.nextId++;
    const message = JSON.stringify(sessionId ? { id, method, params, sessionId } : { id, method, params });
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { method, sentAt: Date.now(), resolve: resolve as (v: Params) => void, reject });
      this.ws.send(message, (err) => {
        if (err) {
          this.pending.delete(id);
          reject(new CdpError(method, err.message));
        }
      });
    });
  }

  /** Subscribes to an event; returns the unsubscribe function. */
  on(event: string, listener: Listener): () => void {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    set.add(listener);
    return () => set?.delete(listener);
  }

  /** Resolves with the first matching event of a session, or rejects after timeoutMs. */
  waitFor(event: string, sessionId: string | undefined, timeoutMs: number, match: (p: Params) => boolean = () => true): Promise<Params> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        off();
        reject(new CdpError(event, `not seen within ${timeoutMs} ms`));
      }, timeoutMs);
      const off = this.on(event, (params, sid) => {
        if (sid === sessionId && match(params)) {
          clearTimeout(timer);
          off();
          resolve(params);
        }
      });
    });
  }

  /** Closes the connection; every unanswered command fails with `why`. */
  close(why = 'CDP connection closed by us'): void {
    this.fail(new Error(why));
    this.ws.terminate();
  }

  private onMessage(text: string): void {
    const msg = JSON.parse(text) as {
      id?: number;
      result?: Params;
      error?: { code: number; message: string };
      method?: string;
      params?: Params;
      sessionId?: string;
    };
    if (msg.id !== undefined) {
      const waiter = this.pending.get(msg.id);
      if (!waiter) return;
      this.pending.delete(msg.id);
      if (msg.error) waiter.reject(new CdpError(waiter.method, msg.error.message, msg.error.code));
      else waiter.resolve(msg.result ?? {});
      return;
    }
    if (msg.method) {
      for (const listener of this.listeners.get(msg.method) ?? []) listener(msg.params ?? {}, msg.sessionId);
    }
  }

  private fail(err: Error): void {
    if (this.closedError) return;
    this.closedError = err;
    for (const waiter of this.pending.values()) waiter.reject(new CdpError(waiter.method, err.message));
    this.pending.clear();
    for (const listener of this.closeListeners.splice(0)) listener(err);
  }
}
