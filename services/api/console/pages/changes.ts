/**
 * Change notifications: the account's alerts (notifier.listChangeNotifications, as GET
 * /change_notifications) or one configuration's (scheduler.get first, as GET
 * /screenshot_configs/:id/changes: another account's configuration is 404), newest first, a
 * page at a time. Each shows its before and after: a text change its previous and retrieved
 * values and the word diff the history gives; a visual one the share changed and its before,
 * after and diff images.
 */
import { type ChangeNotificationRecord, type ConfigView, call } from '../../../shared/contracts';
import { serviceError } from '../../../shared/errors';
import { html, type SafeHtml, safeUrl } from '../html';
import { page, timeOf } from '../layout';
import { configName, pageNumber } from './captures';
import type { ConsolePageContext } from './context';

/** Alerts per page. */
export const CHANGES_PAGE_SIZE = 20;

/** ?config=: a configuration id, or '' for every configuration. */
export function configParam(value: unknown): string {
  const text = typeof value === 'string' ? value.trim() : '';
  if (text && !/^[A-Za-z0-9_-]{1,64}$/.test(text)) throw serviceError('invalid_parameter', 'config: a configuration id, as the list links them.');
  return text;
}

function changesHref(config: string, pageNo: number): string {
  const params = new URLSearchParams();
  if (config) params.set('config', config);
  if (pageNo > 1) params.set('page', String(pageNo));
  const s = params.toString();
  return s ? `/console/changes?${s}` : '/console/changes';
}

/** The word diff as text with <del> and <ins>, every piece escaped. */
export function wordDiff(diff: NonNullable<ChangeNotificationRecord['word_diff']>): SafeHtml {
  return html`<p class="word-diff">${diff.map((d) =>
    d.op === 'delete' ? html`<del>${d.text}</del> ` : d.op === 'insert' ? html`<ins>${d.text}</ins> ` : html`<span>${d.text}</span> `,
  )}</p>`;
}

/** One alert: when, which configuration and step, and its before and after. */
export function changeItem(c: ChangeNotificationRecord, name: string): SafeHtml {
  const sent = Number(c.sent_at);
  const heading = html`<h2><a href="${changesHref(c.screenshot_configuration_id, 1)}">${name}</a></h2>
<p class="muted">${timeOf(Number.isFinite(sent) ? sent : null)} · selector <code>${c.config.selector}</code> · sent to ${c.config.send_to}</p>`;
  if (c.visual) {
    const v = c.visual;
    return html`<li class="change visual">${heading}
<p class="changed-share">${v.changed_percent.toFixed(2)}% of the compared area changed${v.size_changed ? ' (the page changed size; the common area was compared)' : ''}.</p>
<ul class="gallery change-images">
<li><a href="${safeUrl(v.before_url)}"><img src="${safeUrl(v.before_url)}" alt="Before" loading="lazy"><div class="caption">Before</div></a></li>
<li><a href="${safeUrl(v.after_url)}"><img src="${safeUrl(v.after_url)}" alt="After" loading="lazy"><div class="caption">After</div></a></li>
<li><a href="${safeUrl(v.diff_url)}"><img src="${safeUrl(v.diff_url)}" alt="Changed areas" loading="lazy"><div class="caption">Difference</div></a></li>
</ul></li>`;
  }
  return html`<li class="change text">${heading}
<dl class="facts"><dt>Before</dt><dd class="before">${c.previous_value}</dd><dt>After</dt><dd class="after">${c.retrieved_value}</dd></dl>
${c.word_diff ? html`<h3 class="visually-hidden">Word by word</h3>${wordDiff(c.word_diff)}` : ''}</li>`;
}

export async function changesPage(ctx: ConsolePageContext): Promise<string> {
  const { broker, session } = ctx;
  const accountId = session.account.accountId;
  const query = (ctx.request.query ?? {}) as Record<string, unknown>;
  const pageNo = pageNumber(query.page);
  const config = configParam(query.config);
  const paging = { page: pageNo, limit: CHANGES_PAGE_SIZE, afterMs: null, beforeMs: null, order: 'DESC' as const };
  const known = new Map<string, ConfigView | null>();
  let configId: string | undefined;
  if (config) {
    // As the API: the account's configuration, or 404.
    const v = await call(broker, 'scheduler.get', { accountId, id: config });
    configId = v.ids.screenshot_config_id;
    known.set(configId, v);
  }
  const list = await call(broker, 'notifier.listChangeNotifications', { accountId, paging, history: true, ...(configId ? { configId } : {}) });
  for (const c of list.change_notifications) {
    const id = c.screenshot_configuration_id;
    if (!known.has(id)) known.set(id, await call(broker, 'scheduler.get', { accountId, id }).catch(() => null));
  }
  const nameOf = (id: string) => configName(known.get(id) ?? undefined, id);
  const title = configId ? `Changes of ${nameOf(configId)}` : 'Change notifications';
  const pager = html`<nav class="pager" aria-label="Pages">
${pageNo > 1 ? html`<a rel="prev" href="${changesHref(config, pageNo - 1)}">← Newer</a>` : ''}
<span>Page ${pageNo}</span>
${list.has_more ? html`<a rel="next" href="${changesHref(config, pageNo + 1)}">Older →</a>` : ''}
</nav>`;
  return page({
    title: pageNo > 1 ? `${title}, page ${pageNo}` : title,
    session: { accountId, csrf: session.csrf },
    active: 'changes',
    body: html`<h1>${title}</h1>
${configId ? html`<p><a href="/console/changes">← Every configuration</a></p>` : ''}
<p class="muted" role="status">${list.change_notifications.length ? 'Newest first.' : pageNo > 1 ? 'No changes on this page.' : 'No changes were detected yet.'}</p>
<ol class="changes">${list.change_notifications.map((c) => changeItem(c, nameOf(c.screenshot_configuration_id)))}</ol>
${pager}`,
  });
}
