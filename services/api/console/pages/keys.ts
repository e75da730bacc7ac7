/**
 * Keys and secrets: the account's API key (rotated with billing.rotateKey, as the key rotation
 * does; the new key is shown once, on the answer to the POST, and the console's session, ended
 * by the rotation as every session of the old key is, is opened again with the new key), the
 * webhook signing secret (notifier.rotateSecret, as POST /webhook_secret/rotate) and the link
 * signing secret (billing.rotateLinkSecret, as POST /signing_secret/rotate), each new secret
 * shown once; the own AI providers (ai.*, as /ai/providers) and own proxies (proxy.*, as
 * /proxies): listed, added, tested, deleted. A stored AI key or proxy password is never shown.
 * Every change is a POST carrying the token (console.ts checks it before any of these runs).
 */
import { call, OWN_AI_PROVIDERS, type OwnAiProvider, type ProviderRecord, type ProxyRecord } from '../../../shared/contracts';
import { serviceError } from '../../../shared/errors';
import { html, type SafeHtml } from '../html';
import { page, timeOf } from '../layout';
import { CSRF_FIELD } from '../security';
import { setSessionCookie } from '../session';
import type { ConsolePageContext } from './context';

/** What a POST's answer shows above the page: a note, or a secret shown this once. */
export interface KeysNotice {
  text: string;
  /** A new key or secret: shown once in this answer, never again. */
  secret?: { label: string; value: string };
  error?: boolean;
}

/** The notices a redirect back to the page names (?done=), fixed texts only. */
const DONE: Record<string, string> = {
  'ai-removed': 'The provider key was removed.',
  'ai-stored': 'The provider key was verified and stored.',
  'proxy-added': 'The proxy was stored.',
  'proxy-removed': 'The proxy was removed.',
};

type Body = Record<string, unknown>;
const bodyOf = (ctx: ConsolePageContext) => (ctx.request.body ?? {}) as Body;
const field = (body: Body, name: string) => (typeof body[name] === 'string' ? (body[name] as string).trim() : '');

function tokenField(csrf: string): SafeHtml {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${csrf}">`;
}

function button(action: string, label: string, csrf: string, extra: SafeHtml | string = ''): SafeHtml {
  return html`<form class="inline" method="post" action="${action}">${tokenField(csrf)}${extra}<button type="submit">${label}</button></form>`;
}

function noticeOf(n: KeysNotice): SafeHtml {
  return html`<div class="notice${n.error ? ' error' : ''}" role="${n.error ? 'alert' : 'status'}"><p>${n.text}</p>
${n.secret ? html`<p><label for="new-secret">${n.secret.label}</label><input id="new-secret" class="secret" readonly value="${n.secret.value}" size="60"></p><p class="muted">Copy it now: it is shown only this once.</p>` : ''}</div>`;
}

function providersSection(providers: ProviderRecord[], csrf: string): SafeHtml {
  const rows = providers.map(
    (p) => html`<tr class="provider" data-provider="${p.provider}"><th scope="row">${p.label}</th>
<td>${p.verified ? 'Key stored, verified' : 'No key'}${p.verified_at ? html` · ${timeOf(Date.parse(p.verified_at))}` : ''}</td>
<td>${p.default_model ?? ''}</td><td>${p.last_error ?? ''}</td>
<td>${p.verified ? html`${button(`/console/keys/ai/${p.provider}/test`, 'Test', csrf)} ${button(`/console/keys/ai/${p.provider}/delete`, 'Delete', csrf)}` : ''}</td></tr>`,
  );
  return html`<section aria-labelledby="ai-h"><h2 id="ai-h">Own AI providers</h2>
<table><thead><tr><th scope="col">Provider</th><th scope="col">Key</th><th scope="col">Default model</th><th scope="col">Last error</th><th scope="col">Actions</th></tr></thead><tbody>${rows}</tbody></table>
<h3>Store a provider key</h3>
<form method="post" action="/console/keys/ai" autocomplete="off">${tokenField(csrf)}
<div class="field"><label for="ai-provider">Provider</label><select id="ai-provider" name="provider">${OWN_AI_PROVIDERS.map((p) => html`<option value="${p}">${p}</option>`)}</select></div>
<div class="field"><label for="ai-key">API key</label><input id="ai-key" name="api_key" type="password" required autocomplete="off"></div>
<div class="field"><label for="ai-model">Default model (optional)</label><input id="ai-model" name="default_model"></div>
<button type="submit">Verify and store</button></form></section>`;
}

function proxiesSection(proxies: ProxyRecord[], csrf: string): SafeHtml {
  return html`<section aria-labelledby="proxy-h"><h2 id="proxy-h">Own proxies</h2>
${
  proxies.length
    ? html`<table><thead><tr><th scope="col">Proxy</th><th scope="col">Address</th><th scope="col">User</th><th scope="col">Checked</th><th scope="col">Actions</th></tr></thead><tbody>${proxies.map(
        (p) => html`<tr class="proxy" id="proxy-${p.id}"><th scope="row">${p.label}</th><td>${p.protocol}://${p.host}:${p.port}</td>
<td>${p.username ?? ''}${p.has_password ? ' (password stored)' : ''}</td>
<td>${p.verified ? `verified${p.exit_ip ? `, exit ${p.exit_ip}` : ''}` : 'not verified'}${p.last_test_ms ? html` · ${timeOf(p.last_test_ms)}` : ''}${p.last_error ? html`<br><span class="error">${p.last_error}</span>` : ''}</td>
<td>${button(`/console/keys/proxies/${p.id}/test`, 'Test', csrf)} ${button(`/console/keys/proxies/${p.id}/delete`, 'Delete', csrf)}</td></tr>`,
      )}</tbody></table>`
    : html`<p class="muted">No own proxies.</p>`
}
<h3>Add a proxy</h3>
<form method="post" action="/console/keys/proxies" autocomplete="off">${tokenField(csrf)}
<div class="field"><label for="px-protocol">Protocol</label><select id="px-protocol" name="protocol"><option value="http">http</option><option value="https">https</option><option value="socks5">socks5</option></select></div>
<div class="field"><label for="px-host">Host</label><input id="px-host" name="host" required></div>
<div class="field"><label for="px-port">Port</label><input id="px-port" name="port" inputmode="numeric"></div>
<div class="field"><label for="px-user">User name (optional)</label><input id="px-user" name="username" autocomplete="off"></div>
<div class="field"><label for="px-password">Password (optional)</label><input id="px-password" name="password" type="password" autocomplete="new-password"></div>
<div class="field"><label><input type="checkbox" name="test" value="true" checked> Test the connection now</label></div>
<button type="submit">Add</button></form></section>`;
}

/** The page; `notice`: what a POST's answer shows (a new secret once). */
export async function keysPage(ctx: ConsolePageContext, notice?: KeysNotice): Promise<string> {
  const { broker, session } = ctx;
  const accountId = session.account.accountId;
  const query = (ctx.request.query ?? {}) as Record<string, unknown>;
  const done = !notice && typeof query.done === 'string' ? DONE[query.done] : undefined;
  const [providers, proxies] = await Promise.all([call(broker, 'ai.listProviders', { accountId }), call(broker, 'proxy.list', { accountId })]);
  const csrf = session.csrf;
  return page({
    title: 'Keys and secrets',
    session: { accountId, csrf },
    active: 'keys',
    body: html`<h1>Keys and secrets</h1>
${notice ? noticeOf(notice) : done ? noticeOf({ text: done }) : ''}
<section aria-labelledby="key-h"><h2 id="key-h">API key</h2>
<p>Rotating revokes every key of the account at once and issues one new key, shown once. This console stays signed in with the new key.</p>
${button('/console/keys/rotate-key', 'Rotate the API key', csrf)}</section>
<section aria-labelledby="wh-h"><h2 id="wh-h">Webhook signing secret</h2>
<p>A new secret signs deliveries from now on; for 24 hours they carry a second signature made with the old one.</p>
${button('/console/keys/rotate-webhook-secret', 'Rotate the webhook secret', csrf)}</section>
<section aria-labelledby="ls-h"><h2 id="ls-h">Link signing secret</h2>
<p>Links signed with the old secret verify for 24 hours more, unless you revoke it at once.</p>
${button('/console/keys/rotate-signing-secret', 'Rotate the signing secret', csrf, html`<label class="inline-check"><input type="checkbox" name="revoke_previous" value="true"> Revoke the old one at once</label> `)}</section>
${providersSection(providers, csrf)}
${proxiesSection(proxies, csrf)}`,
  });
}

function providerParam(name: string): OwnAiProvider {
  if (!(OWN_AI_PROVIDERS as readonly string[]).includes(name)) {
    throw serviceError('ai_provider_unsupported', `There is no provider "${name}"; own keys are for ${OWN_AI_PROVIDERS.join(', ')}.`, { param: 'provider' });
  }
  return name as OwnAiProvider;
}

function proxyId(raw: string): number {
  if (!/^\d{1,9}$/.test(raw) || Number(raw) < 1) throw serviceError('not_found', `No proxy "${raw}" in this account.`);
  return Number(raw);
}

/** What each POST under /console/keys does: a page to answer with (a secret in it once), or where to go next. */
export type KeysAction = (ctx: ConsolePageContext, param: string) => Promise<string | { redirect: string }>;

export const KEYS_ACTIONS: Record<string, KeysAction> = {
  async 'rotate-key'(ctx) {
    const { access_token } = await call(ctx.broker, 'billing.rotateKey', { accountId: ctx.session.account.accountId });
    const secret = { label: 'Your new API key', value: access_token };
    // The rotation ended every session of the old key, this one too: open one with the new key
    // (not a sign-in attempt). Whatever happens, the new key is shown: it is shown only here.
    const opened = await call(ctx.broker, 'billing.openSession', { token: access_token, client: ctx.request.ip, signIn: false }).catch(() => null);
    if (!opened) {
      return page({
        title: 'Keys and secrets',
        body: html`<h1>Keys and secrets</h1>
${noticeOf({ text: 'The API key was rotated: the old key no longer works, anywhere. This session ended with it; sign in again with the new key.', secret })}
<p><a href="/console/sign-in">Sign in</a></p>`,
      });
    }
    setSessionCookie(ctx.reply, ctx.request, opened.session, ctx.config.console.sessionMaxSeconds);
    return keysPage({ ...ctx, session: opened }, { text: 'The API key was rotated: the old key no longer works, anywhere.', secret });
  },
  async 'rotate-webhook-secret'(ctx) {
    const r = await call(ctx.broker, 'notifier.rotateSecret', { accountId: ctx.session.account.accountId });
    return keysPage(ctx, {
      text: `The webhook secret was rotated; deliveries also carry a signature with the old one until ${r.previous_valid_until}.`,
      secret: { label: 'Your new webhook secret', value: r.secret },
    });
  },
  async 'rotate-signing-secret'(ctx) {
    const revokePrevious = field(bodyOf(ctx), 'revoke_previous') === 'true';
    const r = await call(ctx.broker, 'billing.rotateLinkSecret', { accountId: ctx.session.account.accountId, revokePrevious });
    return keysPage(ctx, {
      text: r.previous_valid_until
        ? `The signing secret was rotated; links signed with the old one verify until ${r.previous_valid_until}.`
        : 'The signing secret was rotated; links signed with the old one no longer verify.',
      secret: { label: 'Your new link signing secret', value: r.secret },
    });
  },
  async ai(ctx) {
    const body = bodyOf(ctx);
    const apiKey = field(body, 'api_key');
    if (!apiKey) throw serviceError('invalid_parameter', 'api_key: enter the provider API key.', { param: 'api_key' });
    const defaultModel = field(body, 'default_model');
    await call(ctx.broker, 'ai.putKey', {
      account: ctx.session.account,
      provider: providerParam(field(body, 'provider')),
      apiKey,
      ...(defaultModel ? { defaultModel } : {}),
    });
    return { redirect: '/console/keys?done=ai-stored' };
  },
  async 'ai-test'(ctx, provider) {
    const r = await call(ctx.broker, 'ai.testProvider', { account: ctx.session.account, provider: providerParam(provider) });
    return keysPage(ctx, { text: `The ${provider} key works: ${r.model} answered in ${r.seconds.toFixed(1)} s: “${r.text}”` });
  },
  async 'ai-delete'(ctx, provider) {
    await call(ctx.broker, 'ai.removeKey', { accountId: ctx.session.account.accountId, provider: providerParam(provider) });
    return { redirect: '/console/keys?done=ai-removed' };
  },
  async proxies(ctx) {
    const body = bodyOf(ctx);
    const port = field(body, 'port');
    if (port && !/^\d{1,5}$/.test(port)) throw serviceError('invalid_proxy', 'port: a whole number from 1 to 65535.', { param: 'port' });
    const input = {
      protocol: field(body, 'protocol') || undefined,
      host: field(body, 'host') || undefined,
      port: port ? Number(port) : undefined,
      username: field(body, 'username') || undefined,
      // The password as typed (spaces may belong to it); never written back to a page.
      password: typeof body.password === 'string' && body.password !== '' ? body.password : undefined,
    };
    const given = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as typeof input;
    await call(ctx.broker, 'proxy.put', { account: ctx.session.account, input: given, test: field(body, 'test') === 'true' });
    return { redirect: '/console/keys?done=proxy-added' };
  },
  async 'proxy-test'(ctx, id) {
    const { proxy, result } = await call(ctx.broker, 'proxy.test', { account: ctx.session.account, id: proxyId(id) });
    return keysPage(ctx, { text: `Proxy ${proxy.label} works: exit address ${result.exit_ip ?? 'unknown'}, ${result.ms} ms.` });
  },
  async 'proxy-delete'(ctx, id) {
    const n = proxyId(id);
    const { removed } = await call(ctx.broker, 'proxy.remove', { accountId: ctx.session.account.accountId, id: n });
    if (!removed) throw serviceError('not_found', `No proxy ${n} in this account.`);
    return { redirect: '/console/keys?done=proxy-removed' };
  },
};
