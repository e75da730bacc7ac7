/**
 * One capture's page, by its job id (capture.jobStatus, as GET /jobs/:job_id: another
 * account's job is 404): the image, links to its files (HTML, Markdown, metadata), its AI
 * answer, its job and timings, and how the page answered. A job still queued or running
 * shows its state and reloads itself every few seconds (a <meta refresh>, no script), so
 * the page never waits on the capture.
 */
import { type ConfigView, call, type JobStatus, type ScreenshotRef } from '../../../shared/contracts';
import { cdnLink } from '../../../shared/links';
import { html, type SafeHtml, safeUrl } from '../html';
import { bytesText, page, timeOf } from '../layout';
import { configName, galleryHref, PAGE_SIZE } from './captures';
import type { ConsolePageContext } from './context';

const RUNNING_REFRESH_SECONDS = 3;

function fact(term: string, value: SafeHtml | string | number | null | undefined): SafeHtml {
  return html`<dt>${term}</dt><dd>${value === null || value === undefined || value === '' ? html`<span class="muted">—</span>` : value}</dd>`;
}

function outsideLink(address: string | null): SafeHtml | null {
  if (!address) return null;
  return html`<a href="${safeUrl(address)}" rel="noopener noreferrer nofollow" target="_blank">${address}</a>`;
}

function files(shot: ScreenshotRef, config: ConsolePageContext['config']): SafeHtml {
  const isImage = (shot.content_type ?? '').startsWith('image/');
  const links: SafeHtml[] = [];
  if (shot.image_name)
    links.push(html`<li><a href="${safeUrl(shot.direct_link)}">${isImage ? 'Image, full size' : `File (${shot.content_type ?? 'download'})`}</a></li>`);
  if (shot.html_name) links.push(html`<li><a href="${safeUrl(cdnLink(config, shot.html_name))}">HTML</a></li>`);
  if (shot.markdown_link) links.push(html`<li><a href="${safeUrl(shot.markdown_link)}">Markdown</a></li>`);
  if (shot.metadata_link) links.push(html`<li><a href="${safeUrl(shot.metadata_link)}">Metadata (JSON)</a></li>`);
  return links.length ? html`<ul>${links}</ul>` : html`<p class="muted">No files.</p>`;
}

function aiSection(shot: ScreenshotRef): SafeHtml {
  const ai = shot.ai;
  if (!ai || (!ai.ai_analyzed && !ai.ai_error)) return html`<p class="muted">No AI analysis was asked for.</p>`;
  const structured = ai.ai_structured_response ? JSON.stringify(ai.ai_structured_response, null, 2) : null;
  return html`<dl class="facts">
${fact('Provider', `${ai.ai_provider}${ai.ai_model ? ` · ${ai.ai_model}` : ''}`)}
${fact('Mode', ai.ai_prompt_mode)}
${ai.ai_prompt ? fact('Prompt', ai.ai_prompt) : ''}
</dl>
${ai.ai_error ? html`<p class="notice error">The analysis did not run: ${ai.ai_error.error_code}: ${ai.ai_error.note}</p>` : ''}
${structured ? html`<h3>Answer (structured)</h3><pre>${structured}</pre>` : ai.ai_analyzed ? html`<h3>Answer</h3><pre class="ai-answer">${ai.ai_response}</pre>` : ''}`;
}

function jobSection(job: JobStatus, shot: ScreenshotRef | null, name: string, config: ConfigView | null): SafeHtml {
  const t = job.timings;
  const took = t?.finished_at_ms != null ? `${((t.finished_at_ms - t.queued_at_ms) / 1000).toFixed(1)} s` : null;
  const configLink = config
    ? html`<a href="${galleryHref({ page: 1, limit: PAGE_SIZE, config: config.ids.screenshot_config_id, from: '', to: '' })}">${name}</a>`
    : null;
  return html`<dl class="facts">
${fact('Job', job.job_id)}
${fact('State', job.status)}
${fact('Configuration', configLink)}
${fact('Queued', t ? timeOf(t.queued_at_ms) : null)}
${fact('Finished', t ? timeOf(t.finished_at_ms) : null)}
${fact('Took', took)}
${shot ? fact('Taken', timeOf(shot.taken_at_ms)) : ''}
${shot ? fact('Page status', shot.status_code) : ''}
${shot ? fact('Page loaded', shot.load_finished === null ? null : shot.load_finished ? 'yes' : 'no: captured as drawn at navigation_timeout') : ''}
${shot ? fact('Final address', outsideLink(shot.final_url)) : ''}
${shot?.proxy_server ? fact('Real location', shot.proxy_server) : ''}
${shot?.custom_proxy ? fact('Own proxy', shot.custom_proxy) : ''}
${shot && shot.bandwidth_bytes > 0 ? fact('Bandwidth', bytesText(shot.bandwidth_bytes)) : ''}
</dl>`;
}

export async function capturePage(ctx: ConsolePageContext, jobId: string): Promise<string> {
  const { broker, session } = ctx;
  const accountId = session.account.accountId;
  const job = await call(broker, 'capture.jobStatus', { accountId, jobId });
  const shot = job.status === 'completed' ? job.screenshot : null;
  const configId = shot?.config_id ?? null;
  const config = configId ? await call(broker, 'scheduler.get', { accountId, id: configId }).catch(() => null) : null;
  const url = typeof config?.options.url === 'string' ? config.options.url : null;
  const name = configName(config ?? undefined, shot?.final_url ?? `Capture ${job.job_id}`);
  const isImage = (shot?.content_type ?? '').startsWith('image/');
  const running = job.status === 'queued' || job.status === 'running';
  return page({
    title: name,
    session: { accountId, csrf: session.csrf },
    active: 'captures',
    refreshSeconds: running ? RUNNING_REFRESH_SECONDS : undefined,
    body: html`<p><a href="/console/captures">← Captures</a></p>
<h1 class="capture-title">${name}</h1>
${url && url !== name ? html`<p class="capture-url">${outsideLink(url)}</p>` : ''}
${running ? html`<p class="notice" role="status">This capture is ${job.status}; the page reloads by itself until it is done.</p>` : ''}
${job.status === 'failed' ? html`<p class="notice error" role="alert">The capture failed: ${job.error_code}: ${job.note}</p>` : ''}
${
  shot
    ? html`<section aria-labelledby="image-h"><h2 id="image-h">Image</h2>
${isImage ? html`<a href="${safeUrl(shot.direct_link)}"><img class="shot" src="${safeUrl(shot.direct_link)}" alt="${`Screenshot of ${name}`}"></a>` : ''}
${files(shot, ctx.config)}
</section>
<section aria-labelledby="ai-h"><h2 id="ai-h">AI answer</h2>${aiSection(shot)}</section>`
    : ''
}
<section aria-labelledby="job-h"><h2 id="job-h">Job and timings</h2>${jobSection(job, shot, name, config)}</section>`,
  });
}
