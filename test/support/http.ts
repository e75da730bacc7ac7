/** A small HTTP client for tests: JSON in, status + headers + parsed body out. */
export interface HttpAnswer<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: T;
  raw: Buffer;
}

export async function request<T = Record<string, unknown>>(
  base: string,
  method: string,
  path: string,
  opts: { json?: unknown; form?: Record<string, string>; headers?: Record<string, string>; body?: string } = {},
): Promise<HttpAnswer<T>> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  let body: string | undefined = opts.body;
  if (opts.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(opts.json);
  } else if (opts.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(opts.form).toString();
  }
  const res = await fetch(base + path, { method, headers, body });
  const raw = Buffer.from(await res.arrayBuffer());
  let parsed: unknown = null;
  if ((res.headers.get('content-type') ?? '').includes('json')) parsed = JSON.parse(raw.toString('utf8'));
  return { status: res.status, headers: res.headers, body: parsed as T, raw };
}

/** GET /jobs/:id every 100 ms until the job is completed or failed (at most 30 s); its last answer. */
export async function jobFinished(base: string, token: string, jobId: string): Promise<HttpAnswer<Record<string, unknown>>> {
  for (let i = 0; i < 300; i++) {
    const r = await request(base, 'GET', `/jobs/${jobId}`, { headers: { authorization: `Bearer ${token}` } });
    if (r.body.status === 'completed' || r.body.status === 'failed') return r;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`job ${jobId} did not finish`);
}

export function qs(params: Record<string, string | number | boolean>): string {
  return new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)])).toString();
}
