/**
 * A small Chrome DevTools Protocol client over one browser-level WebSocket (the Grid's
 * `se:cdp` endpoint, or Chromium's own debugger URL), in flat-session mode: every target
 * we attach to is addressed by its sessionId on the same socket, so one connection serves
 * all captures of a browser. selenium-webdriver opens the session; this speaks CDP.
 */
import WebSocket from 'ws';

type Params = Record<string, unknown>;
type Listener = (params: Params, sessionId: string | undefined) => void;

interface Waiter {
  method: string;
  sentAt: number;
  /** sendForData: the answer is its result's base64 `data`, decoded. */
  data: boolean;
  resolve(v: unknown): void;
  reject(e: Error): void;
}

/** A message this long may be a data answer (a screenshot, a PDF): read as bytes first. */
const DATA_ANSWER_MIN_BYTES = 16 * 1024;
/** How a data answer from Chromium begins (`{"id":` then the id) and what follows the id. */
const ID_PREFIX = Buffer.from('{"id":');
const DATA_PREFIX = Buffer.from(',"result":{"data":"');

/**
 * Base64 decoded this many characters at a time (a multiple of 4): each slice's Latin-1 string
 * is a short-lived ordinary one on V8's young heap, where one string of a whole screenshot
 * (above about a megabyte) is an external string that counts toward V8's external memory and
 * lives until a full collection.
 */
const DECODE_SLICE_CHARS = 64 * 1024;

/**
 * Decodes the base64 text in src[start, end) into a new buffer; null when it is not plain
 * padded base64 (a character outside the alphabet, an escape, a length not a multiple of 4:
 * Node's decoder skips such characters, so the decoded length comes out short). Node decodes
 * base64 only from strings: the text is read as Latin-1 strings, a slice at a time
 * (DECODE_SLICE_CHARS), each written into the result. Two to three times faster than decoding
 * the bytes in JavaScript (docs/benchmark.md).
 */
export function decodeBase64Bytes(src: Buffer, start: number, end: number): Buffer | null {
  const length = end - start;
  if (length < 0 || length % 4 !== 0) return null;
  const pad = length === 0 ? 0 : src[end - 1] === 0x3d ? (src[end - 2] === 0x3d ? 2 : 1) : 0;
  const size = (length / 4) * 3 - pad;
  const out = Buffer.allocUnsafe(size);
  let written = 0;
  for (let at = start; at < end; at += DECODE_SLICE_CHARS) {
    written += out.write(src.toString('latin1', at, Math.min(end, at + DECODE_SLICE_CHARS)), written, 'base64');
  }
  return written === size ? out : null;
}

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
  private readonly pending = new Map<number, Waiter>();
  /** Data answers read straight from their bytes (sendForData); the rest were parsed as JSON. */
  dataAnswersFromBytes = 0;
  private readonly closeListeners: Array<(err: Error) => void> = [];
  private readonly listeners = new Map<string, Set<Listener>>();
  private closedError: Error | null = null;

  private constructor(private readonly ws: WebSocket) {
    // Without a binaryType set, ws hands over every message as one Buffer.
    ws.on('message', (data) => this.onMessage(data as Buffer));
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
    return this.command<T>(method, params, sessionId, false);
  }

  /**
   * A command whose result is one base64 `data` field (Page.captureScreenshot,
   * Page.printToPDF): resolves with it decoded. The answer is read from the message's bytes,
   * never made a JavaScript string: a screenshot's base64 as text, then as the parsed field,
   * was two copies of about half a megabyte each on the heap per capture. Any other shape is
   * parsed as JSON, as send does.
   */
  sendForData(method: string, params: Params = {}, sessionId?: string): Promise<Buffer> {
    return this.command<Buffer>(method, params, sessionId, true);
  }

  private command<T>(method: string, params: Params, sessionId: string | undefined, data: boolean): Promise<T> {
    // A socket already closing (the browser's end went away: a Grid node killed, with the CDP
    // socket straight to its browser) is closed for the capture now, not when its close event
    // comes: the capture is then the browser's failure (taken again elsewhere), not a send error.
    if (this.ws.readyState !== WebSocket.OPEN) this.fail(new Error('CDP connection closed'));
    if (this.closedError) return Promise.reject(new CdpError(method, this.closedError.message));
    const id = this.nextId++;
    const message = JSON.stringify(sessionId ? { id, method, params, sessionId } : { id, method, params });
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { method, sentAt: Date.now(), data, resolve: resolve as (v: unknown) => void, reject });
      this.ws.send(message, (err) => {
        if (!err) return;
        this.pending.delete(id);
        // A write that fails leaves the socket unusable: the browser's end went away (EPIPE,
        // ECONNRESET), maybe before ws has seen it and while the socket still reads as open.
        // Closed for the capture now, as above, so that it is the browser's failure.
        this.close(`CDP connection closed (${err.message})`);
        reject(new CdpError(method, this.closedError?.message ?? err.message));
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

  private onMessage(raw: Buffer): void {
    if (raw.length >= DATA_ANSWER_MIN_BYTES && this.dataAnswer(raw)) return;
    const msg = JSON.parse(raw.toString()) as {
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
      else if (!waiter.data) waiter.resolve(msg.result ?? {});
      else if (typeof msg.result?.data === 'string') waiter.resolve(Buffer.from(msg.result.data, 'base64'));
      else waiter.reject(new CdpError(waiter.method, 'the answer has no data'));
      return;
    }
    if (msg.method) {
      for (const listener of this.listeners.get(msg.method) ?? []) listener(msg.params ?? {}, msg.sessionId);
    }
  }

  /**
   * Answers a sendForData waiter from the message's bytes when it has Chromium's shape,
   * `{"id":N,"result":{"data":"<base64>"}...`; false (nothing done) for anything else.
   */
  private dataAnswer(raw: Buffer): boolean {
    if (raw.compare(ID_PREFIX, 0, ID_PREFIX.length, 0, ID_PREFIX.length) !== 0) return false;
    let id = 0;
    let at = ID_PREFIX.length;
    for (; at < 24 && raw[at]! >= 0x30 && raw[at]! <= 0x39; at++) id = id * 10 + raw[at]! - 0x30;
    const waiter = this.pending.get(id);
    if (!waiter?.data || raw.compare(DATA_PREFIX, 0, DATA_PREFIX.length, at, at + DATA_PREFIX.length) !== 0) return false;
    const start = at + DATA_PREFIX.length;
    const end = raw.indexOf(0x22, start);
    // The result holds nothing but the data: a closing brace follows its closing quote.
    if (end < 0 || raw[end + 1] !== 0x7d) return false;
    const data = decodeBase64Bytes(raw, start, end);
    if (!data) return false;
    this.pending.delete(id);
    this.dataAnswersFromBytes++;
    waiter.resolve(data);
    return true;
  }

  private fail(err: Error): void {
    if (this.closedError) return;
    this.closedError = err;
    for (const waiter of this.pending.values()) waiter.reject(new CdpError(waiter.method, err.message));
    this.pending.clear();
    for (const listener of this.closeListeners.splice(0)) listener(err);
  }
}
