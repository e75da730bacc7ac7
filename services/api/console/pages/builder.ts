/**
 * The capture builder: a form over the option table (option-form.ts), sent to the server,
 * which validates it with the API's own validation (validateShape('snap', …)) and, when the
 * API would refuse it, shows the API's note beside the field, with nothing started or charged.
 * Accepted, the capture runs in the background as a job (startSnapJob: admitted and charged as
 * the API's capture-now) and the browser goes to the job's page, which shows its progress,
 * asks the job's state from the console's script until it is done (no page waits on a
 * capture), then shows the image; and the same capture as curl, the npm and Python clients'
 * calls and the MCP tool's, built from the options sent.
 */
import { call, type JobStatus } from '../../../shared/contracts';
import { egressPolicyFor } from '../../../shared/egress';
import { toEnvelope } from '../../../shared/errors';
import type { SnapOptions } from '../../../shared/screenshot-options';
import { startSnapJob } from '../../config-routes';
import type { RouteContext } from '../../http';
import { type RawParams, validateShape } from '../../request-schemas';
import { html, type SafeHtml, safeUrl } from '../html';
import { messagePage, page } from '../layout';
import { CSRF_FIELD, postRefusal } from '../security';
import type { ConsolePageContext, PageAnswer } from './context';
import { formOptions, optionFields } from './option-form';
import { snapSnippets } from './snippets';

/** What the API's routes are given, for the console's calls of the same handlers. */
export function routeContext<P>(ctx: ConsolePageContext, params: P, raw: RawParams, path: Record<string, string> = {}): RouteContext<P> {
  return { params, raw, path, request: ctx.request, reply: ctx.reply, broker: ctx.broker, account: ctx.session.account };
}

/** The API's refusal of a request (4xx): its parameter and note; a 5xx is thrown on. */
export function refusalOf(err: unknown): { status: number; param: string | null; note: string } {
  const { status, body } = toEnvelope(err);
  if (status >= 500) throw err;
  const param = (err as { data?: { param?: unknown } } | null)?.data?.param;
  return { status, param: typeof param === 'string' ? param : null, note: body.note };
}

/** A POST's refusal (no token, another origin) as a page, or null. */
export function csrfRefusal(ctx: ConsolePageContext, title: string): PageAnswer | null {
  const refusal = postRefusal(ctx.request, ctx.session.csrf);
  if (!refusal) return null;
  return { status: 403, body: messagePage(title, `${refusal} Reload the page and try again.`, frameOf(ctx)) };
}

export const frameOf = (ctx: ConsolePageContext) => ({ accountId: ctx.session.account.accountId, csrf: ctx.session.csrf });

function builderForm(ctx: ConsolePageContext, values: Record<string, unknown>, problem: { param: string | null; note: string } | null): string {
  return page({
    title: 'Build a capture',
    session: frameOf(ctx),
    active: 'build',
    body: html`<h1>Build a capture</h1>
<p>Every option of <code>/snap</code>, with what it does and its default. The capture runs in the background; its page shows it when it is done,
with the same call as <code>curl</code>, the npm and Python clients and the MCP tool.</p>
${problem ? html`<p class="notice error" id="problem" role="alert"><strong>The API refuses these options:</strong> ${problem.note}</p>` : ''}
<form method="post" action="/console/build" class="builder" novalidate>
<input type="hidden" name="${CSRF_FIELD}" value="${ctx.session.csrf}">
${optionFields('snap', values, problem)}
<p><button type="submit">Capture</button></p>
</form>`,
  });
}

/** GET /console/build: the form (its values from the query, so a capture can be built again). */
export async function builderPage(ctx: ConsolePageContext): Promise<string> {
  return builderForm(ctx, (ctx.request.query ?? {}) as Record<string, unknown>, null);
}

/**
 * The options a capture run in the background cannot honour, refused rather than accepted and
 * ignored: the builder always takes a fresh capture of a picture and shows its page.
 */
function notInBackground(o: SnapOptions): { param: string; note: string } | null {
  const viaSnap = 'send it with GET /snap (the code shown with a built capture)';
  if (o.ttl !== undefined && o.ttl > 0) {
    return {
      param: 'ttl',
      note: `ttl: the builder always takes a fresh capture (it runs in the background, as capture now does); leave it empty or 0, or ${viaSnap}.`,
    };
  }
  if (o.html_only) return { param: 'html_only', note: `html_only: the builder shows the picture it takes; to get the HTML alone, ${viaSnap}.` };
  if (o.json)
    return { param: 'json', note: `json: the builder shows the capture's page, record included; json only changes what GET /snap answers, so ${viaSnap}.` };
  return null;
}

/** POST /console/build: validated as /snap is; refused with the API's note (nothing charged), else a background job and its page. */
export async function builderSubmit(ctx: ConsolePageContext): Promise<PageAnswer> {
  const refused = csrfRefusal(ctx, 'Not captured');
  if (refused) return refused;
  const raw = formOptions(ctx.request.body);
  let jobId: string;
  try {
    const options = validateShape<SnapOptions>('snap', raw);
    const unhonoured = notInBackground(options);
    if (unhonoured) return { status: 400, body: builderForm(ctx, raw, unhonoured) };
    jobId = await startSnapJob(routeContext(ctx, options, raw), egressPolicyFor(ctx.config), options);
  } catch (err) {
    const problem = refusalOf(err);
    return { status: problem.status, body: builderForm(ctx, raw, problem) };
  }
  const given = new URLSearchParams(Object.entries(raw).filter(([, v]) => typeof v === 'string' && v !== '') as Array<[string, string]>);
  return { redirect: `/console/build/${encodeURIComponent(jobId)}?${given.toString()}` };
}

function snippetSection(ctx: ConsolePageContext, options: Record<string, unknown> | null): SafeHtml {
  if (!options) return html``;
  const s = snapSnippets(ctx.config.baseUrl, options);
  const block = (id: string, title: string, code: string) =>
    html`<h3 id="${id}-h">${title}</h3><pre class="snippet" id="snippet-${id}" aria-labelledby="${id}-h"><code>${code}</code></pre>`;
  return html`<section aria-labelledby="code-h"><h2 id="code-h">The same capture as code</h2>
${block('curl', 'curl', s.curl)}
${block('npm', 'npm (screenshots-pagepixels)', s.npm)}
${block('python', 'Python (screenshots_pagepixels)', s.python)}
${block('mcp', 'MCP (tool and arguments)', s.mcp)}
</section>`;
}

/** GET /console/build/:job_id: the job's progress (polled by the script), then its image; the options' code. */
export async function buildResultPage(ctx: ConsolePageContext, jobId: string): Promise<string> {
  const accountId = ctx.session.account.accountId;
  const job = await call(ctx.broker, 'capture.jobStatus', { accountId, jobId });
  const query = (ctx.request.query ?? {}) as Record<string, unknown>;
  let options: Record<string, unknown> | null = null;
  try {
    options = validateShape<Record<string, unknown>>('snap', query);
  } catch {
    options = null;
  }
  const shot = job.status === 'completed' ? job.screenshot : null;
  const running = job.status === 'queued' || job.status === 'running';
  const again = `/console/build?${new URLSearchParams(Object.entries(query).filter(([, v]) => typeof v === 'string') as Array<[string, string]>).toString()}`;
  return page({
    title: running ? 'Capturing…' : 'Capture',
    session: frameOf(ctx),
    active: 'build',
    body: html`<p><a href="${again}">← Change the options</a></p>
<h1>Capture ${job.job_id}</h1>
${running ? html`<p class="notice" role="status" id="progress" data-poll="/console/jobs/${encodeURIComponent(job.job_id)}/state">The capture is ${job.status}; this page shows it when it is done. <a href="">Reload</a></p>` : ''}
${job.status === 'failed' ? html`<p class="notice error" role="alert">The capture failed: ${job.error_code}: ${job.note}</p>` : ''}
${
  shot
    ? html`<section aria-labelledby="image-h"><h2 id="image-h">Image</h2>
${(shot.content_type ?? '').startsWith('image/') ? html`<img class="shot" id="preview" src="${safeUrl(shot.direct_link)}" alt="The capture">` : ''}
<p><a href="/console/captures/${encodeURIComponent(job.job_id)}">Its page: files, AI answer, timings</a></p></section>`
    : ''
}
${snippetSection(ctx, options)}`,
  });
}

/** GET /console/jobs/:job_id/state: the job's state as JSON, for the page's script (404 for another account's job). */
export async function jobStateAnswer(ctx: ConsolePageContext, jobId: string): Promise<PageAnswer> {
  let job: JobStatus;
  try {
    job = await call(ctx.broker, 'capture.jobStatus', { accountId: ctx.session.account.accountId, jobId });
  } catch (err) {
    const { status, body } = toEnvelope(err);
    return { status, type: 'application/json; charset=utf-8', body: JSON.stringify(body) };
  }
  return { status: 200, type: 'application/json; charset=utf-8', body: JSON.stringify({ job_id: job.job_id, status: job.status }) };
}
