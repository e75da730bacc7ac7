/**
 * The frame of every console page: the document head (the style sheet and script from
 * /console/assets, nothing inline), a skip link, the header with the navigation and the
 * sign-out form, and the page's main content. A new page adds its entry to NAV.
 */
import { CSRF_FIELD } from './security';
import { SCRIPT, STYLESHEET } from './assets';
import { html, type SafeHtml } from './html';

/** The navigation, in order; `key` is what a page names as its place. */
export const NAV = [
  { key: 'overview', href: '/console', label: 'Overview' },
  { key: 'captures', href: '/console/captures', label: 'Captures' },
  { key: 'build', href: '/console/build', label: 'Build a capture' },
  { key: 'configs', href: '/console/configs', label: 'Configurations' },
  { key: 'changes', href: '/console/changes', label: 'Changes' },
  { key: 'webhooks', href: '/console/webhooks', label: 'Webhooks' },
  { key: 'keys', href: '/console/keys', label: 'Keys' },
] as const;
export type NavKey = (typeof NAV)[number]['key'];

export interface Frame {
  title: string;
  /** The signed-in account (absent on the sign-in page): the header shows it and a sign-out form. */
  session?: { accountId: string; csrf: string };
  active?: NavKey;
  /** The operator view's frame instead of an account's: its own menu, who is signed in, and its sign-out form's address. */
  operator?: { nav: ReadonlyArray<{ key: string; href: string; label: string }>; active?: string; csrf: string };
  /** Seconds after which the page reloads itself (a capture still running), via <meta refresh> (no script). */
  refreshSeconds?: number;
  body: SafeHtml;
}

/** The whole page, as text. */
export function page(frame: Frame): string {
  const { session, operator } = frame;
  const nav = operator
    ? html`<nav aria-label="Operator"><ul>${operator.nav.map(
        (item) => html`<li><a href="${item.href}"${item.key === operator.active ? html` aria-current="page"` : ''}>${item.label}</a></li>`,
      )}</ul></nav>
      <span class="muted">Operator</span>
      <form class="inline" method="post" action="/console/operator/sign-out"><input type="hidden" name="${CSRF_FIELD}" value="${operator.csrf}"><button type="submit" class="link">Sign out</button></form>`
    : session
      ? html`<nav aria-label="Console"><ul>${NAV.map(
          (item) => html`<li><a href="${item.href}"${item.key === frame.active ? html` aria-current="page"` : ''}>${item.label}</a></li>`,
        )}</ul></nav>
      <span class="muted">${session.accountId}</span>
      <form class="inline" method="post" action="/console/sign-out"><input type="hidden" name="${CSRF_FIELD}" value="${session.csrf}"><button type="submit" class="link">Sign out</button></form>`
      : '';
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
${frame.refreshSeconds ? html`<meta http-equiv="refresh" content="${frame.refreshSeconds}">` : ''}
<title>${frame.title} · snapservice console</title>
<link rel="stylesheet" href="${STYLESHEET}">
<script src="${SCRIPT}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top"><a class="brand" href="${operator ? '/console/operator' : '/console'}">snapservice</a>${nav}</header>
<main id="main" tabindex="-1">
${frame.body}
</main>
</body>
</html>
`.text;
}

/** A page that only says what went wrong (404, 403, 429...). */
export function messagePage(title: string, message: string, session?: Frame['session']): string {
  return page({
    title,
    session,
    body: html`<h1>${title}</h1><p class="notice error" role="alert">${message}</p><p><a href="/console">Back to the overview</a></p>`,
  });
}

/** A time as UTC text in a <time> element (the script shows it in the reader's zone). */
export function timeOf(ms: number | null | undefined): SafeHtml {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return html`<span class="muted">—</span>`;
  const iso = new Date(ms).toISOString();
  return html`<time datetime="${iso}" data-local>${iso.replace('T', ' ').replace(/\.\d{3}Z$/, ' UTC')}</time>`;
}

/** Bytes as a person reads them (1 KiB = 1024 bytes). */
export function bytesText(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v >= 100 ? Math.round(v) : v.toFixed(1)} ${units[i]}`;
}
