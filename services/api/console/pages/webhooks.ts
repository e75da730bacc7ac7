/**
 * Webhook deliveries: the account's delivery log (notifier.listDeliveries, as GET
 * /webhook_deliveries), newest first, a page at a time, each with its status and every attempt
 * (time, status code, duration, error), and a Redeliver button: a POST with the token doing what
 * POST /webhook_deliveries/:id/retry does (notifier.retryDelivery: another account's delivery
 * is 404).
 */
import { call, type DeliveryView } from '../../../shared/contracts';
import { CSRF_FIELD } from '../security';
import { html, type SafeHtml } from '../html';
import { page, timeOf } from '../layout';
import { pageNumber } from './captures';
import type { ConsolePageContext } from './context';

export const DELIVERIES_PAGE_SIZE = 20;

const isoMs = (iso: string | null) => (iso ? Date.parse(iso) : null);

function attemptsTable(d: DeliveryView): SafeHtml {
  if (!d.attempts.length) return html`<p class="muted">No attempt yet.</p>`;
  return html`<table class="attempts"><caption class="visually-hidden">Attempts of delivery ${d.id}</caption>
<thead><tr><th scope="col">#</th><th scope="col">Time</th><th scope="col">Status code</th><th scope="col">Duration</th><th scope="col">Error</th></tr></thead>
<tbody>${d.attempts.map(
    (a, i) =>
      html`<tr><td>${i + 1}</td><td>${timeOf(isoMs(a.attempted_at))}</td><td class="code">${a.status_code ?? '—'}</td><td>${a.duration_ms} ms</td><td>${a.error ?? ''}</td></tr>`,
  )}</tbody></table>`;
}

function deliveryItem(d: DeliveryView, csrf: string): SafeHtml {
  return html`<li class="delivery" id="delivery-${d.id}">
<h2>${d.kind === 'change' ? 'Change alert' : d.kind === 'research' ? 'Domain research' : 'Capture'} to <span class="target">${d.url}</span></h2>
<dl class="facts">
<dt>Status</dt><dd class="status">${d.status}</dd>
<dt>Delivery</dt><dd><code>${d.id}</code></dd>
<dt>Created</dt><dd>${timeOf(isoMs(d.created_at))}</dd>
${d.screenshot_configuration_id ? html`<dt>Configuration</dt><dd><a href="/console/changes?config=${encodeURIComponent(d.screenshot_configuration_id)}">${d.screenshot_configuration_id}</a></dd>` : ''}
${d.next_attempt_at ? html`<dt>Next attempt</dt><dd>${timeOf(isoMs(d.next_attempt_at))}</dd>` : ''}
${d.last_error ? html`<dt>Last error</dt><dd>${d.last_error}</dd>` : ''}
</dl>
${attemptsTable(d)}
<form method="post" action="/console/webhooks/${encodeURIComponent(d.id)}/redeliver"><input type="hidden" name="${CSRF_FIELD}" value="${csrf}"><button type="submit">Redeliver</button></form>
</li>`;
}

function hrefOf(pageNo: number): string {
  return pageNo > 1 ? `/console/webhooks?page=${pageNo}` : '/console/webhooks';
}

export async function webhooksPage(ctx: ConsolePageContext): Promise<string> {
  const { broker, session } = ctx;
  const accountId = session.account.accountId;
  const query = (ctx.request.query ?? {}) as Record<string, unknown>;
  const pageNo = pageNumber(query.page);
  const redelivered = typeof query.redelivered === 'string' && /^[A-Za-z0-9_-]{1,64}$/.test(query.redelivered) ? query.redelivered : null;
  const notice = redelivered ? `Delivery ${redelivered} is being sent again; reload to see its new attempt.` : null;
  const paging = { page: pageNo, limit: DELIVERIES_PAGE_SIZE, afterMs: null, beforeMs: null, order: 'DESC' as const };
  const list = await call(broker, 'notifier.listDeliveries', { accountId, paging });
  return page({
    title: 'Webhook deliveries',
    session: { accountId, csrf: session.csrf },
    active: 'webhooks',
    body: html`<h1>Webhook deliveries</h1>
${notice ? html`<p class="notice" role="status">${notice}</p>` : ''}
<p class="muted">${list.deliveries.length ? 'Newest first, each with every attempt.' : 'No deliveries yet.'}</p>
<ol class="deliveries">${list.deliveries.map((d) => deliveryItem(d, session.csrf))}</ol>
<nav class="pager" aria-label="Pages">
${pageNo > 1 ? html`<a rel="prev" href="${hrefOf(pageNo - 1)}">← Newer</a>` : ''}<span>Page ${pageNo}</span>
${list.has_more ? html`<a rel="next" href="${hrefOf(pageNo + 1)}">Older →</a>` : ''}
</nav>`,
  });
}

/** POST /console/webhooks/:id/redeliver: notifier.retryDelivery, as POST /webhook_deliveries/:id/retry; then back to the log. */
export async function redeliver(ctx: ConsolePageContext, id: string): Promise<{ redirect: string }> {
  const view = await call(ctx.broker, 'notifier.retryDelivery', { accountId: ctx.session.account.accountId, id });
  return { redirect: `/console/webhooks?redelivered=${encodeURIComponent(view.id)}#delivery-${encodeURIComponent(view.id)}` };
}
