/**
 * The Selenium Grid as the capture service reads it, published for the api's operator view:
 * a path under SELENIUM_URL with the URL's credentials moved into a Basic Authorization
 * header (fetch refuses a URL that holds them, and its refusal quotes the URL, password and
 * all), and the nodes and sessions of the Grid's `GET /status` (Selenium 4).
 *
 * The capture service reads /status to move off draining nodes (browsers/grid-drain.ts) and to
 * end the sessions of an instance that died (browsers/gone-owners.ts); the operator view shows
 * the same answer.
 */

/** The parts of the Grid's `GET /status` answer read here. */
interface GridStatusBody {
  value?: {
    nodes?: Array<{
      uri?: string;
      availability?: string;
      slots?: Array<{ session?: { sessionId?: string; capabilities?: Record<string, unknown> } | null }>;
    }>;
  };
}

/** A live session on the Grid, as its `/status` names it. */
export interface GridSession {
  sessionId: string;
  /** Its node is draining: it takes no new session and stops once its sessions have ended. */
  draining: boolean;
  /** The session's capabilities as the node answered them (the requested extension capabilities among them). */
  capabilities: Record<string, unknown>;
}

/** A Grid node, as its `/status` describes it. */
export interface GridNode {
  uri: string;
  /** UP, DRAINING or DOWN. */
  availability: string;
  /** How many sessions it can hold. */
  slots: number;
  /** The sessions it holds. */
  sessions: GridSession[];
}

/** The Grid answered `/status` with an HTTP error. */
export class GridStatusRefused extends Error {
  constructor(readonly status: number) {
    super(`the Grid's /status answered ${status}`);
  }
}

/** A URL's credentials, as a Basic Authorization header, and the URL without them. */
function withoutCredentials(u: URL): { url: URL; headers: Record<string, string> } {
  if (!u.username && !u.password) return { url: u, headers: {} };
  const basic = Buffer.from(`${decodeURIComponent(u.username)}:${decodeURIComponent(u.password)}`).toString('base64');
  const bare = new URL(u.href);
  bare.username = '';
  bare.password = '';
  return { url: bare, headers: { authorization: `Basic ${basic}` } };
}

/** A path under SELENIUM_URL (`status`, `graphql`, `session/<id>`), without its credentials, and them as a header. */
export function gridEndpoint(seleniumUrl: string, path: string): { url: URL; headers: Record<string, string> } {
  return withoutCredentials(new URL(path, seleniumUrl.endsWith('/') ? seleniumUrl : `${seleniumUrl}/`));
}

/**
 * The Grid's nodes and their sessions, from its `/status` (none when it gives no node list: a
 * standalone server). Throws GridStatusRefused for an HTTP error, the fetch's own error when the
 * Grid does not answer within `timeoutMs`.
 */
export async function readGridNodes(
  seleniumUrl: string,
  { fetchFn = fetch, timeoutMs = 3_000 }: { fetchFn?: typeof fetch; timeoutMs?: number } = {},
): Promise<GridNode[]> {
  const { url, headers } = gridEndpoint(seleniumUrl, 'status');
  const res = await fetchFn(url, { headers, signal: AbortSignal.timeout(timeoutMs) });
  if (!res.ok) throw new GridStatusRefused(res.status);
  const body = (await res.json()) as GridStatusBody;
  return (body.value?.nodes ?? []).map((node) => {
    const availability = String(node.availability ?? '?');
    const sessions: GridSession[] = [];
    for (const slot of node.slots ?? []) {
      const session = slot.session;
      if (session?.sessionId) sessions.push({ sessionId: session.sessionId, draining: availability === 'DRAINING', capabilities: session.capabilities ?? {} });
    }
    return { uri: String(node.uri ?? '?'), availability, slots: node.slots?.length ?? 0, sessions };
  });
}
