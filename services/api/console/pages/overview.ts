/**
 * The overview: this month's usage against the plan (the counters /account_limits answers
 * from, billing.usage), captures by day as a chart (capture.dailyCounts: the screenshots
 * recorded each UTC day; the monthly counters are not kept per day), and the newest captures.
 */
import { call } from '../../../shared/contracts';
import type { Limits } from '../../../shared/contracts';
import { html, type SafeHtml } from '../html';
import { bytesText, page, timeOf } from '../layout';
import { barChart, daysOfMonth } from './chart';
import type { ConsolePageContext } from './context';
import { galleryItems } from './captures';

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

function meter(id: string, label: string, used: number, limit: number, text: (n: number) => string): SafeHtml {
  const left = Math.max(0, limit - used);
  return html`<div class="meter">
<label for="${id}">${label}</label>
<div class="figure">${text(used)} <span class="muted">of ${text(limit)}</span></div>
<meter id="${id}" min="0" max="${Math.max(1, limit)}" value="${Math.min(used, limit)}" low="${limit * 0.8}" high="${limit * 0.95}" optimum="0">${text(used)} of ${text(limit)}</meter>
<div class="muted">${text(left)} left</div>
</div>`;
}

export async function overviewPage(ctx: ConsolePageContext): Promise<string> {
  const { broker, session } = ctx;
  const { account } = session;
  const { limits, usage, month } = await call(broker, 'billing.usage', { account });
  const [year, monthIndex] = month.split('-').map(Number) as [number, number];
  const start = Date.UTC(year, monthIndex - 1, 1);
  const end = Date.UTC(year, monthIndex, 1);
  const days = Math.round((end - start) / 86_400_000);
  const newest = { page: 1, limit: 6, afterMs: null, beforeMs: null, order: 'DESC' as const };
  const [counts, recent] = await Promise.all([
    call(broker, 'capture.dailyCounts', { accountId: account.accountId, fromMs: start, toMs: end }),
    call(broker, 'capture.listForAccount', { accountId: account.accountId, paging: newest }),
  ]);
  const monthName = MONTHS[monthIndex - 1] ?? month;
  const values = daysOfMonth(start, days, counts);
  const today = Math.min(days, Math.floor((Date.now() - start) / 86_400_000) + 1);
  const n = (v: number) => v.toLocaleString('en-US');
  const metric = (k: keyof Limits) => [usage[k], limits[k]] as const;
  return page({
    title: 'Overview',
    session: { accountId: account.accountId, csrf: session.csrf },
    active: 'overview',
    body: html`<h1>Overview</h1>
<p class="muted">Plan <strong>${account.plan.name}</strong> · ${monthName} ${year} (UTC); the limits reset on the 1st.</p>
<section aria-labelledby="usage-h">
<h2 id="usage-h">Usage this month</h2>
<div class="meters">
${meter('m-screenshots', 'Screenshots', ...metric('screenshots'), n)}
${meter('m-ai', 'AI credits', ...metric('ai_credits'), n)}
${meter('m-bandwidth', 'Real-location bandwidth', ...metric('bandwidth_bytes'), bytesText)}
${meter('m-research', 'Domain research', ...metric('research_domains'), n)}
</div>
</section>
<section aria-labelledby="chart-h">
<h2 id="chart-h">Captures by day</h2>
${barChart(values, `Captures recorded each day of ${monthName} ${year}`, monthName)}
<details>
<summary>The same as a table</summary>
<table><thead><tr><th scope="col">Day</th><th scope="col">Captures</th></tr></thead>
<tbody>${values.slice(0, Math.max(1, today)).map((v) => html`<tr><td>${monthName} ${v.day}</td><td>${v.value}</td></tr>`)}</tbody></table>
</details>
<p class="muted">Captures recorded each day (UTC) in the archive; the monthly figures above are the billing counters, which also count captures since deleted.</p>
</section>
<section aria-labelledby="recent-h">
<h2 id="recent-h">Newest captures</h2>
${recent.screenshots.length ? galleryItems(recent.screenshots, new Map()) : html`<p>No captures yet. Take one with <code>/snap</code>, then it shows here.</p>`}
<p><a href="/console/captures">Every capture</a></p>
</section>
<p class="muted">Shown ${timeOf(Date.now())}.</p>`,
  });
}
