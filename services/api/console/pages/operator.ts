/**
 * The operator view's pages (routes and session: ../operator.ts). Each reads what the service
 * already answers, bounded in time: accounts and plans (what bin/admin.ts shows, billing's
 * actions), each capture instance's pool and queue (capture.pressure on every node, as /pressure
 * asks), failed captures by error code (the capture counters /metrics publishes), the Grid's
 * nodes and sessions (its /status, read as the capture service reads it:
 * capture/public/grid-status.ts), and the real locations with a test of each
 * (proxy.testLocation, as `admin locations test`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ServiceBroker } from 'moleculer';
import type { Config } from '../../../shared/config';
import { GridStatusRefused, readGridNodes } from '../../../capture/public/grid-status';
import { call } from '../../../shared/contracts';
import type { MetricsSnapshot } from '../../../shared/contracts';
import { callEveryNode } from '../../../shared/metrics';
import { html, type SafeHtml } from '../html';
import { page, timeOf } from '../layout';
import { CSRF_FIELD } from '../security';

export interface OperatorPageContext {
  broker: ServiceBroker;
  config: Readonly<Config>;
  /** The operator session's CSRF token. */
  csrf: string;
  request: FastifyRequest;
  reply: FastifyReply;
}

export const OPERATOR_NAV = [
  { key: 'accounts', href: '/console/operator', label: 'Accounts and plans' },
  { key: 'capacity', href: '/console/operator/capacity', label: 'Capacity and failures' },
  { key: 'locations', href: '/console/operator/locations', label: 'Real locations' },
] as const;

/** The accounts whose fair-sharing state one page reads. */
const FAIR_SHARING_MAX = 1000;

/** How long the Grid's /status may take before the page says it did not answer. */
const GRID_TIMEOUT_MS = 2_000;

function frame(ctx: OperatorPageContext, active: string, title: string, body: SafeHtml): string {
  return page({ title, operator: { nav: OPERATOR_NAV, active, csrf: ctx.csrf }, body });
}

const csrfField = (ctx: OperatorPageContext) => html`<input type="hidden" name="${CSRF_FIELD}" value="${ctx.csrf}">`;

export function operatorSignInPage(token: string, error?: string): string {
  return page({
    title: 'Operator sign-in',
    body: html`<div class="signin">
<h1>Operator sign-in</h1>
${error ? html`<p class="notice error" role="alert" id="signin-error">${error}</p>` : ''}
<form method="post" action="/console/operator/sign-in" autocomplete="off">
<input type="hidden" name="${CSRF_FIELD}" value="${token}">
<div class="field">
<label for="token">Operator token</label>
<input id="token" name="token" type="password" required autocomplete="current-password" spellcheck="false" aria-describedby="token-help${error ? ' signin-error' : ''}"${error ? html` aria-invalid="true"` : ''} autofocus>
<p id="token-help" class="muted">The service's <code>CONSOLE_OPERATOR_TOKEN</code>. An account's API key does not open this view.</p>
</div>
<button type="submit">Sign in</button>
</form>
</div>`,
  });
}

/** Accounts with their plan and a form to change it; the plans and their limits. */
export async function accountsPage(ctx: OperatorPageContext, done?: string): Promise<string> {
  const [accounts, plans] = await Promise.all([call(ctx.broker, 'billing.listAccounts', {}), call(ctx.broker, 'billing.listPlans', {})]);
  const n = (v: number) => v.toLocaleString('en-US');
  return frame(
    ctx,
    'accounts',
    'Accounts and plans',
    html`<h1>Accounts and plans</h1>
${done ? html`<p class="notice" role="status">${done}</p>` : ''}
<section aria-labelledby="accounts-h">
<h2 id="accounts-h">Accounts (${accounts.length})</h2>
${
  accounts.length
    ? html`<div class="scroll"><table><thead><tr><th scope="col">Account</th><th scope="col">Created</th><th scope="col">Active keys</th><th scope="col">Add-ons</th><th scope="col">Plan</th></tr></thead>
<tbody>${accounts.map(
        (a, i) => html`<tr><td><code>${a.account_id}</code></td><td>${a.created_at}</td><td>${a.active_keys}</td><td>${
          Object.entries(a.addons)
            .map(([k, v]) => `${k} ${v}`)
            .join(', ') || '—'
        }</td>
<td><form class="plan" method="post" action="/console/operator/accounts/${a.account_id}/plan">${csrfField(ctx)}
<label class="visually-hidden" for="plan-${i}">Plan of ${a.account_id}</label>
<select id="plan-${i}" name="plan">${plans.map((p) => html`<option value="${p.name}"${p.name === a.plan ? html` selected` : ''}>${p.name}</option>`)}</select>
<button type="submit">Change<span class="visually-hidden"> the plan of ${a.account_id}</span></button></form></td></tr>`,
      )}</tbody></table></div>`
    : html`<p>No accounts yet (<code>npm run --silent admin -- accounts create --plan free</code>).</p>`
}
</section>
<section aria-labelledby="plans-h">
<h2 id="plans-h">Plans</h2>
<div class="scroll"><table><thead><tr><th scope="col">Plan</th><th scope="col">Paid</th><th scope="col">Screenshots a month</th><th scope="col">At once</th><th scope="col">Waiting</th></tr></thead>
<tbody>${plans.map((p) => html`<tr><td>${p.name}</td><td>${p.paid ? 'yes' : 'no'}</td><td>${n(p.screenshot_limit)}</td><td>${p.max_concurrent}</td><td>${p.max_queued}</td></tr>`)}</tbody></table></div>
<p class="muted">Plans are changed with <code>npm run admin -- plans set</code>.</p>
</section>`,
  );
}

/** The Grid's nodes as its /status says, and how many sessions each holds. */
interface GridNodeRow {
  uri: string;
  availability: string;
  slots: number;
  sessions: number;
}

/** The Grid's nodes, or why they are not shown; null when the service runs its own browsers (no SELENIUM_URL). */
export async function gridNodes(seleniumUrl: string | null, fetchFn: typeof fetch = fetch): Promise<{ nodes: GridNodeRow[] } | { error: string } | null> {
  if (!seleniumUrl) return null;
  try {
    const nodes = await readGridNodes(seleniumUrl, { fetchFn, timeoutMs: GRID_TIMEOUT_MS });
    return { nodes: nodes.map((node) => ({ uri: node.uri, availability: node.availability, slots: node.slots, sessions: node.sessions.length })) };
  } catch (err) {
    if (err instanceof GridStatusRefused) return { error: `The Grid's /status answered ${err.status}.` };
    return { error: `The Grid did not answer (${(err as Error).name === 'TimeoutError' ? `no answer in ${GRID_TIMEOUT_MS} ms` : (err as Error).message}).` };
  }
}

/** Failed captures by error code, summed over the capture instances' counters. */
export function failuresByCode(snapshots: MetricsSnapshot[]): Array<{ code: string; count: number }> {
  const counts = new Map<string, number>();
  for (const snapshot of snapshots) {
    for (const metric of snapshot) {
      if (!metric.name.endsWith('captures_total')) continue;
      for (const v of metric.values) {
        if (v.labels.outcome !== 'failure' || !v.value) continue;
        const code = String(v.labels.error_code ?? 'unknown');
        counts.set(code, (counts.get(code) ?? 0) + v.value);
      }
    }
  }
  return [...counts].map(([code, count]) => ({ code, count })).sort((a, b) => b.count - a.count || a.code.localeCompare(b.code));
}

/** Accounts with captures running or waiting, or started lately (most busy first, at most 50), against their plans' limits. */
async function fairSharing(broker: ServiceBroker): Promise<
  | {
      rows: Array<{
        account_id: string;
        plan: string;
        running: number;
        waiting: number;
        max_concurrent: number;
        max_queued: number;
        last_start_ms: number | null;
      }>;
      unread: number;
    }
  | { error: string }
> {
  try {
    const [accounts, plans] = await Promise.all([call(broker, 'billing.listAccounts', {}), call(broker, 'billing.listPlans', {})]);
    // Read per account: bounded, so a large installation's page stays quick (the rest are named as not read).
    const read = accounts.slice(0, FAIR_SHARING_MAX);
    const states = await call(broker, 'capture.accountSlots', { accountIds: read.map((a) => a.account_id) }, { timeout: GRID_TIMEOUT_MS });
    const planOf = new Map(accounts.map((a) => [a.account_id, a.plan]));
    const limits = new Map(plans.map((p) => [p.name, p]));
    const rows = states
      .filter((s) => s.running > 0 || s.waiting > 0 || s.last_start_ms !== null)
      .sort((a, b) => b.running + b.waiting - (a.running + a.waiting) || (b.last_start_ms ?? 0) - (a.last_start_ms ?? 0))
      .slice(0, 50)
      .map((s) => {
        const plan = planOf.get(s.account_id) ?? '?';
        return { ...s, plan, max_concurrent: limits.get(plan)?.max_concurrent ?? 0, max_queued: limits.get(plan)?.max_queued ?? 0 };
      });
    return { rows, unread: accounts.length - read.length };
  } catch (err) {
    return { error: `The capture service did not answer (${(err as Error).message}).` };
  }
}

export async function capacityPage(ctx: OperatorPageContext): Promise<string> {
  const [pressure, metrics, grid, sharing] = await Promise.all([
    callEveryNode(ctx.broker, 'capture.pressure', {}),
    callEveryNode(ctx.broker, 'capture.metrics', {}),
    gridNodes(ctx.config.seleniumUrl),
    fairSharing(ctx.broker),
  ]);
  const failures = failuresByCode(metrics.answers.map((a) => a.value));
  return frame(
    ctx,
    'capacity',
    'Capacity and failures',
    html`<h1>Capacity and failures</h1>
<section aria-labelledby="pool-h">
<h2 id="pool-h">Browser pool and queue per capture instance</h2>
${
  pressure.answers.length
    ? html`<div class="scroll"><table><thead><tr><th scope="col">Instance</th><th scope="col">Running</th><th scope="col">Waiting</th><th scope="col">Browsers</th><th scope="col">Queue limit</th><th scope="col">Refused last minute</th></tr></thead>
<tbody>${pressure.answers.map(
        ({ nodeID, value: p }) =>
          html`<tr><td><code>${nodeID}</code></td><td>${p.running}</td><td>${p.queued}</td><td>${p.slots} of ${p.slots_configured}</td><td>${p.queue_max}</td><td>${p.recently_rejected}</td></tr>`,
      )}</tbody></table></div>`
    : html`<p>No capture instance answered.</p>`
}
${pressure.failed.length ? html`<p class="notice error">No answer from ${pressure.failed.join(', ')}.</p>` : ''}
</section>
<section aria-labelledby="sharing-h">
<h2 id="sharing-h">Fair sharing per account</h2>
${
  'error' in sharing
    ? html`<p class="notice error">${sharing.error}</p>`
    : sharing.rows.length
      ? html`<div class="scroll"><table><thead><tr><th scope="col">Account</th><th scope="col">Plan</th><th scope="col">Running</th><th scope="col">Waiting</th><th scope="col">Last start</th></tr></thead>
<tbody>${sharing.rows.map(
          (r) =>
            html`<tr><td><code>${r.account_id}</code></td><td>${r.plan}</td><td>${r.running} of ${r.max_concurrent}</td><td>${r.waiting} of ${r.max_queued}</td><td>${timeOf(r.last_start_ms)}</td></tr>`,
        )}</tbody></table></div>`
      : html`<p>No account has started a capture lately.</p>`
}
${'unread' in sharing && sharing.unread > 0 ? html`<p class="muted">${sharing.unread} more accounts not read (the first ${FAIR_SHARING_MAX} are).</p>` : ''}
<p class="muted">Each account runs at most its plan's captures at once and keeps at most its plan's number waiting, over every instance; waiting captures take turns by account, the one that started least recently first.</p>
</section>
<section aria-labelledby="failures-h">
<h2 id="failures-h">Failed captures by error code</h2>
${
  failures.length
    ? html`<div class="scroll"><table><thead><tr><th scope="col">Error code</th><th scope="col">Failures</th></tr></thead>
<tbody>${failures.map((f) => html`<tr><td><code>${f.code}</code></td><td>${f.count}</td></tr>`)}</tbody></table></div>`
    : html`<p>No failed captures.</p>`
}
<p class="muted">Counted since each capture instance started (the <code>captures_total</code> counter of <code>/metrics</code>).</p>
</section>
<section aria-labelledby="grid-h">
<h2 id="grid-h">Grid nodes</h2>
${
  grid === null
    ? html`<p>No Grid: this service runs its own browsers (no <code>SELENIUM_URL</code>).</p>`
    : 'error' in grid
      ? html`<p class="notice error">${grid.error}</p>`
      : grid.nodes.length
        ? html`<div class="scroll"><table><thead><tr><th scope="col">Node</th><th scope="col">Availability</th><th scope="col">Sessions</th></tr></thead>
<tbody>${grid.nodes.map((node) => html`<tr><td><code>${node.uri}</code></td><td>${node.availability}</td><td>${node.sessions} of ${node.slots}</td></tr>`)}</tbody></table></div>`
        : html`<p>The Grid lists no node.</p>`
}
</section>
<p class="muted">Shown ${timeOf(Date.now())}.</p>`,
  );
}

export async function locationsPage(ctx: OperatorPageContext, tested?: { ok: boolean; name: string; text: string }): Promise<string> {
  const names = await call(ctx.broker, 'proxy.realLocations', {});
  return frame(
    ctx,
    'locations',
    'Real locations',
    html`<h1>Real locations</h1>
${tested ? html`<p class="notice${tested.ok ? '' : ' error'}" role="status">Test of ${tested.name}: ${tested.text}</p>` : ''}
${
  names.length
    ? html`<form method="post" action="/console/operator/locations/test" class="filters">${csrfField(ctx)}
<div class="field"><label for="location">Location</label>
<select id="location" name="location">${names.map((name) => html`<option value="${name}"${name === tested?.name ? html` selected` : ''}>${name}</option>`)}</select></div>
<button type="submit">Test through it</button></form>
<p class="muted">A test loads a small page through the location's upstream and shows the address it left from, as <code>npm run admin -- locations test</code> does.</p>`
    : html`<p>No real location is configured (<code>REAL_LOCATIONS</code>).</p>`
}`,
  );
}
