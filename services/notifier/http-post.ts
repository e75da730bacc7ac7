/**
 * One webhook attempt on the wire: the target's name is resolved once, every address is
 * checked against the egress policy (DESIGN section 5), and the connection is made to the
 * checked address (a pinned lookup), so a name that resolves to a public address when
 * checked and to an internal one a moment later (DNS rebinding) cannot get through. No
 * redirect is followed (a 3xx is a failed attempt), and the whole attempt, connection
 * included, is bounded by the timeout.
 */
import http from 'node:http';
import https from 'node:https';
import { type Admission, pinnedLookup } from '../shared/egress';

export interface PostResult {
  /** The HTTP status, or null when no answer came. */
  status: number | null;
  /** The first bytes of the answer (Slack answers "ok"), for the attempt's record. */
  body: string;
  /** Retry-After in seconds, when the answer gave one. */
  retryAfter: number | null;
  /** Why no acceptable answer came (refused by the policy, timeout, connection error). */
  error: string | null;
}

export interface PostOptions {
  timeoutMs: number;
  /** The egress policy's decision on a host: the one address to connect to (EgressPolicy.admit). */
  admit: (host: string) => Promise<Admission>;
}

const MAX_ANSWER = 2048;

/** Retry-After as seconds from `now`: delay-seconds or an HTTP-date (RFC 9110, 10.2.3); null when absent or unreadable. */
export function retryAfterSeconds(value: string | undefined, now: number): number | null {
  if (!value) return null;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text);
  // IMF-fixdate ("Sun, 06 Nov 1994 08:49:37 GMT"), the form RFC 9110 has senders use.
  if (!/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(text)) return null;
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000));
}

export async function postJson(rawUrl: string, body: string, headers: Record<string, string>, o: PostOptions): Promise<PostResult> {
  const failed = (error: string): PostResult => ({ status: null, body: '', retryAfter: null, error });
  let url: URL;
  try {
    url = new URL(rawUrl);
  } catch {
    return failed('the target is not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return failed(`the target uses ${url.protocol}; only http and https are allowed`);
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const admission = await o.admit(host);
  if (!admission.allowed) {
    return failed(admission.address ? `refused by the egress policy: ${host} ${admission.reason}` : `${host} ${admission.reason}`);
  }
  // The connection goes to the address checked above, whatever DNS says by then.
  const lookup = pinnedLookup(admission);
  const client = url.protocol === 'https:' ? https : http;
  return new Promise<PostResult>((resolve) => {
    let settled = false;
    const done = (r: PostResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const req = client.request(
      url,
      {
        method: 'POST',
        lookup,
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'user-agent': 'snapservice-webhooks/1', ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < MAX_ANSWER) chunks.push(c);
          size += c.length;
        });
        res.on('end', () => {
          const status = res.statusCode ?? null;
          const retryAfter = retryAfterSeconds(res.headers['retry-after'], Date.now());
          done({
            status,
            body: Buffer.concat(chunks).toString('utf8').slice(0, MAX_ANSWER),
            retryAfter,
            error: status !== null && status >= 200 && status < 300 ? null : `answered HTTP ${status}`,
          });
        });
        res.on('error', (err) => done(failed(`the answer broke off (${err.message})`)));
      },
    );
    const timer = setTimeout(() => {
      done(failed(`no answer within ${o.timeoutMs} ms`));
      req.destroy();
    }, o.timeoutMs);
    req.on('error', (err) => done(failed(`could not connect (${(err as NodeJS.ErrnoException).code ?? err.message})`)));
    req.end(body);
  });
}
