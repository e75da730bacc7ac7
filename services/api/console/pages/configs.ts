/**
 * Screenshot configurations: the list (a page at a time, the lists' own paging), each with its
 * schedule in words and its next run (as the scheduler computed it: scheduler.get); create and
 * edit with a form over the option table, validated and carried out by the API's own handlers
 * (createConfig, updateConfig: the same checks, the same charge for the first capture);
 * capture now (captureNow); delete after a confirmation page (deleteConfig). Every change is a
 * POST with the console's token; another account's configuration is 404, as on the API.
 */
import { type ConfigView, call } from '../../../shared/contracts';
import { egressPolicyFor } from '../../../shared/egress';
import type { ConfigOptions } from '../../../shared/screenshot-options';
import { captureNow, createConfig, deleteConfig, updateConfig } from '../../config-routes';
import { type ConfigChanges, validateShape } from '../../request-schemas';
import { html, type SafeHtml, safeUrl } from '../html';
import { page, timeOf } from '../layout';
import { CSRF_FIELD } from '../security';
import { csrfRefusal, frameOf, refusalOf, routeContext } from './builder';
import { configName, pageNumber } from './captures';
import type { ConsolePageContext, PageAnswer } from './context';
import { formOptions, optionFields } from './option-form';
import { scheduleInWords } from './schedule-words';

export const CONFIGS_PAGE_SIZE = 20;

const idOf = (ctx: ConsolePageContext) => (ctx.request.params as { id: string }).id;
const token = (ctx: ConsolePageContext) => html`<input type="hidden" name="${CSRF_FIELD}" value="${ctx.session.csrf}">`;
const configHref = (id: string, tail = '') => `/console/configs/${encodeURIComponent(id)}${tail}`;

const NOTICES: Record<string, string> = {
  created: 'The configuration was created; its first capture is on its way.',
  saved: 'The changes were saved; they apply from the next capture.',
  deleted: 'The configuration and its captures were deleted.',
};

/** GET /console/configs: the account's configurations, newest first, with their schedules. */
export async function configsPage(ctx: ConsolePageContext): Promise<string> {
  const accountId = ctx.session.account.accountId;
  const query = (ctx.request.query ?? {}) as Record<string, unknown>;
  const n = pageNumber(query.page);
  const { configs, has_more } = await call(ctx.broker, 'scheduler.list', {
    accountId,
    paging: { page: n, limit: CONFIGS_PAGE_SIZE, afterMs: null, beforeMs: null, order: 'DESC' },
  });
  const full = await Promise.all(configs.map((c) => call(ctx.broker, 'scheduler.get', { accountId, id: c.ids.screenshot_config_id })));
  const notice = typeof query.done === 'string' ? NOTICES[query.done] : undefined;
  const row = (v: (typeof full)[number]) => {
    const id = v.ids.screenshot_config_id;
    const name = configName(v, id);
    return html`<tr>
<td><a class="config-name" href="${configHref(id, '/edit')}">${name}</a>${name !== v.options.url ? html`<br><span class="muted">${v.options.url}</span>` : ''}</td>
<td class="schedule">${scheduleInWords(v.options, v.next_run_at_ms)}</td>
<td class="next-run">${v.next_run_at_ms ? timeOf(v.next_run_at_ms) : html`<span class="muted">—</span>`}</td>
<td>${v.ids.last_job_id ? html`<a href="/console/captures/${encodeURIComponent(v.ids.last_job_id)}">Last capture</a>` : html`<span class="muted">—</span>`}
 · <a href="/console/captures?config=${encodeURIComponent(id)}">Captures</a></td>
<td><form class="inline" method="post" action="${configHref(id, '/capture')}">${token(ctx)}<button type="submit" class="link">Capture now</button></form>
 · <a href="${configHref(id, '/edit')}">Edit</a> · <a href="${configHref(id, '/delete')}">Delete</a></td>
</tr>`;
  };
  return page({
    title: n > 1 ? `Configurations, page ${n}` : 'Configurations',
    session: frameOf(ctx),
    active: 'configs',
    body: html`<h1>Configurations</h1>
${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
<p><a class="button" href="/console/configs/new">New configuration</a></p>
${
  full.length
    ? html`<div class="table-wrap"><table class="configs"><caption class="visually-hidden">Configurations, newest first</caption>
<thead><tr><th scope="col">Configuration</th><th scope="col">Schedule</th><th scope="col">Next run</th><th scope="col">Captures</th><th scope="col">Actions</th></tr></thead>
<tbody>${full.map(row)}</tbody></table></div>`
    : html`<p class="muted">${n > 1 ? 'No configurations on this page.' : 'No configurations yet.'}</p>`
}
<nav class="pager" aria-label="Pages">
${n > 1 ? html`<a rel="prev" href="/console/configs${n > 2 ? `?page=${n - 1}` : ''}">← Newer</a>` : ''}
<span>Page ${n}</span>
${has_more ? html`<a rel="next" href="/console/configs?page=${n + 1}">Older →</a>` : ''}
</nav>`,
  });
}

function configForm(
  ctx: ConsolePageContext,
  view: { id: string; name: string } | null,
  values: Record<string, unknown>,
  problem: { param: string | null; note: string } | null,
): string {
  const title = view ? `Edit ${view.name}` : 'New configuration';
  return page({
    title,
    session: frameOf(ctx),
    active: 'configs',
    body: html`<p><a href="/console/configs">← Configurations</a></p>
<h1>${title}</h1>
${view ? html`<p class="muted">A field left empty keeps its stored value; leaving scheduled_screenshot unset makes the configuration one-time, as PATCH does.</p>` : html`<p class="muted">Creating it takes its first capture at once (1 screenshot credit).</p>`}
${problem ? html`<p class="notice error" id="problem" role="alert"><strong>The API refuses these options:</strong> ${problem.note}</p>` : ''}
<form method="post" action="${view ? configHref(view.id) : '/console/configs'}" class="builder" novalidate>
${token(ctx)}
${optionFields(view ? 'configUpdate' : 'configCreate', values, problem)}
<p><button type="submit">${view ? 'Save' : 'Create'}</button></p>
</form>`,
  });
}

/** GET /console/configs/new. */
export async function newConfigPage(ctx: ConsolePageContext): Promise<string> {
  return configForm(ctx, null, {}, null);
}

/** POST /console/configs: POST /screenshot_configs's own handler. */
export async function createConfigSubmit(ctx: ConsolePageContext): Promise<PageAnswer> {
  const refused = csrfRefusal(ctx, 'Not created');
  if (refused) return refused;
  const raw = formOptions(ctx.request.body);
  try {
    const options = validateShape<ConfigOptions>('configCreate', raw);
    await createConfig(routeContext(ctx, options, raw), egressPolicyFor(ctx.config));
  } catch (err) {
    const problem = refusalOf(err);
    return { status: problem.status, body: configForm(ctx, null, raw, problem) };
  }
  return { redirect: '/console/configs?done=created' };
}

async function own(ctx: ConsolePageContext) {
  return call(ctx.broker, 'scheduler.get', { accountId: ctx.session.account.accountId, id: idOf(ctx) });
}

/** GET /console/configs/:id/edit: the form with the options as given. */
export async function editConfigPage(ctx: ConsolePageContext): Promise<string> {
  const v = await own(ctx);
  return configForm(ctx, { id: v.ids.screenshot_config_id, name: configName(v, v.ids.screenshot_config_id) }, v.config, null);
}

/** POST /console/configs/:id: PATCH /screenshot_configs/:id's own handler. */
export async function updateConfigSubmit(ctx: ConsolePageContext): Promise<PageAnswer> {
  const refused = csrfRefusal(ctx, 'Not saved');
  if (refused) return refused;
  const v = await own(ctx);
  const raw = formOptions(ctx.request.body);
  try {
    const changes = validateShape<ConfigChanges>('configUpdate', raw);
    await updateConfig(routeContext(ctx, changes, raw, { id: v.ids.screenshot_config_id }), egressPolicyFor(ctx.config));
  } catch (err) {
    const problem = refusalOf(err);
    return { status: problem.status, body: configForm(ctx, { id: v.ids.screenshot_config_id, name: configName(v, v.ids.screenshot_config_id) }, raw, problem) };
  }
  return { redirect: '/console/configs?done=saved' };
}

/** POST /console/configs/:id/capture: POST /screenshot_configs/:id/capture's own handler; then the job's page. */
export async function captureNowSubmit(ctx: ConsolePageContext): Promise<PageAnswer> {
  const refused = csrfRefusal(ctx, 'Not captured');
  if (refused) return refused;
  const v = await own(ctx);
  const started = await captureNow(routeContext(ctx, {}, {}, { id: v.ids.screenshot_config_id }), egressPolicyFor(ctx.config));
  return { redirect: `/console/captures/${encodeURIComponent(started.job_id)}` };
}

function summary(v: ConfigView & { options: ConfigOptions }): SafeHtml {
  return html`<dl class="facts"><dt>URL</dt><dd><a href="${safeUrl(v.options.url)}" rel="noopener noreferrer nofollow">${v.options.url}</a></dd>
<dt>Id</dt><dd>${v.ids.screenshot_config_id}</dd></dl>`;
}

/** GET /console/configs/:id/delete: the confirmation. */
export async function deleteConfigPage(ctx: ConsolePageContext): Promise<string> {
  const v = await own(ctx);
  const name = configName(v, v.ids.screenshot_config_id);
  return page({
    title: `Delete ${name}`,
    session: frameOf(ctx),
    active: 'configs',
    body: html`<p><a href="/console/configs">← Configurations</a></p>
<h1>Delete ${name}?</h1>
${summary(v)}
<p class="notice error">This deletes the configuration, its schedule and every capture it made. It cannot be undone.</p>
<form method="post" action="${configHref(v.ids.screenshot_config_id, '/delete')}">${token(ctx)}
<button type="submit" class="danger">Delete it</button> <a href="/console/configs">Keep it</a></form>`,
  });
}

/** POST /console/configs/:id/delete: DELETE /screenshot_configs/:id's own handler. */
export async function deleteConfigSubmit(ctx: ConsolePageContext): Promise<PageAnswer> {
  const refused = csrfRefusal(ctx, 'Not deleted');
  if (refused) return refused;
  const v = await own(ctx);
  await deleteConfig(routeContext(ctx, {}, {}, { id: v.ids.screenshot_config_id }));
  return { redirect: '/console/configs?done=deleted' };
}
