/** The web console's operator view over plain HTTP (no browser): signing in as its form does, pages asked for with its cookie. */

export interface OperatorSignIn {
  status: number;
  location: string | null;
  retryAfter: string | null;
  /** The name of each cookie the answer set, in the order of its Set-Cookie headers. */
  cookiesSet: string[];
  /** The Set-Cookie of the operator session ('' when none was set). */
  setCookie: string;
  /** The operator cookie's value ('' when none was set). */
  session: string;
  body: string;
}

/** GETs the operator sign-in page (its form's token and cookie), then POSTs the form with `token`; `headers` go on both. */
export async function operatorSignIn(base: string, token: string, headers: Record<string, string> = {}): Promise<OperatorSignIn> {
  const form = await fetch(`${base}/console/operator/sign-in`, { headers });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const signinCookie = (form.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
  const r = await fetch(`${base}/console/operator/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: signinCookie, ...headers },
    body: new URLSearchParams({ _csrf: csrf, token }).toString(),
  });
  const setCookie = r.headers.getSetCookie().find((c) => c.startsWith('console_operator=')) ?? '';
  return {
    status: r.status,
    location: r.headers.get('location'),
    retryAfter: r.headers.get('retry-after'),
    cookiesSet: r.headers.getSetCookie().map((c) => c.split('=')[0] ?? ''),
    setCookie,
    session: /^console_operator=([^;]*)/.exec(setCookie)?.[1] ?? '',
    body: await r.text(),
  };
}

/** A page asked for with `cookie` (e.g. `console_operator=<v>` or `console_session=<v>`), redirects not followed. */
export function cookieGet(base: string, cookie: string, path: string): Promise<Response> {
  return fetch(base + path, { redirect: 'manual', headers: cookie ? { cookie } : {} });
}

/** A form POSTed with `cookie`, redirects not followed. */
export function cookiePost(
  base: string,
  cookie: string,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {},
): Promise<Response> {
  return fetch(base + path, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}), ...headers },
    body: new URLSearchParams(fields).toString(),
  });
}

/** The CSRF token a page's forms carry. */
export async function pageToken(response: Response): Promise<string> {
  return /name="_csrf" value="([^"]+)"/.exec(await response.text())?.[1] ?? '';
}
