/**
 * The console's static files: one style sheet and one small script, served from
 * /console/assets/ (the Content-Security-Policy allows scripts and styles from this origin
 * only, and no inline ones). They live here as text so the build ships them in dist/ with the
 * code; each is named by a hash of its content, so it can be cached for good and a change is
 * fetched at once.
 */
import crypto from 'node:crypto';

const CSS = `
:root { color-scheme: light dark; --fg: #1b1f24; --muted: #59636e; --bg: #ffffff; --panel: #f5f7f9; --line: #d4d9de; --accent: #0b5cad; --bar: #3b82c4; --danger: #b42318; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e9ec; --muted: #a3acb5; --bg: #14171a; --panel: #1d2226; --line: #343b42; --accent: #6cb3ff; --bar: #5aa1e6; --danger: #ff8a80; } }
* { box-sizing: border-box; }
html { -webkit-text-size-adjust: 100%; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
a { color: var(--accent); }
:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
.skip { position: absolute; left: -9999px; }
.skip:focus { left: 8px; top: 8px; background: var(--bg); padding: 8px; z-index: 10; }
header.top { display: flex; flex-wrap: wrap; align-items: center; gap: 8px 16px; padding: 8px 16px; border-bottom: 1px solid var(--line); background: var(--panel); }
header.top .brand { font-weight: 700; margin-right: auto; color: var(--fg); text-decoration: none; }
nav ul { display: flex; flex-wrap: wrap; gap: 4px 12px; list-style: none; margin: 0; padding: 0; }
nav a[aria-current="page"] { font-weight: 700; text-decoration: none; color: var(--fg); }
main { max-width: 1100px; margin: 0 auto; padding: 16px; }
h1 { font-size: 1.5rem; margin: 0.5rem 0 1rem; }
h2 { font-size: 1.2rem; margin: 1.5rem 0 0.5rem; }
.muted { color: var(--muted); }
.notice { padding: 8px 12px; border: 1px solid var(--line); border-left: 4px solid var(--accent); background: var(--panel); margin: 0 0 16px; }
.notice.error { border-left-color: var(--danger); }
form.inline { display: inline; margin: 0; }
button, .button { font: inherit; padding: 6px 14px; border: 1px solid var(--accent); border-radius: 6px; background: var(--accent); color: var(--bg); cursor: pointer; text-decoration: none; display: inline-block; }
button.link { background: none; color: var(--accent); border-color: transparent; padding: 2px 4px; text-decoration: underline; }
label { display: block; font-weight: 600; margin: 0 0 4px; }
input, select { font: inherit; padding: 6px 8px; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); max-width: 100%; }
.field { margin: 0 0 12px; }
.signin { max-width: 420px; margin: 8vh auto; }
.signin input { width: 100%; }
.meters { display: grid; grid-template-columns: repeat(auto-fit, minmax(220px, 1fr)); gap: 12px; }
.meter { border: 1px solid var(--line); border-radius: 8px; padding: 12px; background: var(--panel); }
.meter meter { width: 100%; height: 1.2rem; }
.meter .figure { font-size: 1.25rem; font-weight: 700; }
.chart { width: 100%; height: auto; max-height: 260px; display: block; }
.chart .bar { fill: var(--bar); }
.chart .axis { stroke: var(--line); }
.chart text { fill: var(--muted); font-size: 10px; }
table { border-collapse: collapse; }
th, td { text-align: left; padding: 4px 12px 4px 0; border-bottom: 1px solid var(--line); vertical-align: top; }
.filters { display: flex; flex-wrap: wrap; gap: 8px 16px; align-items: flex-end; margin: 0 0 16px; }
.filters .field { margin: 0; min-width: 0; max-width: 100%; }
.gallery { display: grid; grid-template-columns: repeat(auto-fill, minmax(160px, 1fr)); gap: 12px; list-style: none; padding: 0; margin: 0; }
.gallery li { border: 1px solid var(--line); border-radius: 8px; overflow: hidden; background: var(--panel); }
.gallery a { display: block; color: inherit; text-decoration: none; }
.gallery img { display: block; width: 100%; aspect-ratio: 4 / 3; object-fit: cover; object-position: top; background: var(--line); }
.gallery .caption { padding: 6px 8px; font-size: 0.875rem; overflow-wrap: anywhere; }
.pager { display: flex; gap: 16px; align-items: center; margin: 16px 0; }
.shot { max-width: 100%; height: auto; border: 1px solid var(--line); display: block; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; margin: 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: var(--panel); padding: 8px; border-radius: 6px; }
/* Positioned, so that a visually hidden label inside a table (absolutely placed) scrolls with it, not with the page. */
.scroll, .table-wrap { overflow-x: auto; max-width: 100%; position: relative; }
h1, h2, h3, p, li, dd, .notice { overflow-wrap: anywhere; }
form.plan { display: flex; gap: 6px; align-items: center; margin: 0; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
details.options { border: 1px solid var(--line); border-radius: 8px; padding: 4px 12px; margin: 0 0 8px; }
details.options summary { font-weight: 700; cursor: pointer; padding: 4px 0; }
.hint { font-size: 0.875rem; margin: 4px 0 0; }
.field-note { margin: 4px 0 0; }
textarea { font: inherit; width: 100%; padding: 6px 8px; border: 1px solid var(--line); border-radius: 6px; background: var(--bg); color: var(--fg); }
.builder input[type="text"], .builder input[type="url"] { width: 100%; }
[aria-invalid="true"] { border-color: var(--danger); }
button.danger { background: var(--danger); border-color: var(--danger); }
.table-wrap { overflow-x: auto; }
pre.snippet { font-size: 0.875rem; }
@media (max-width: 480px) { main { padding: 12px; } dl.facts { grid-template-columns: 1fr; } dl.facts dd { margin-bottom: 8px; } }
`;

/**
 * Progressive enhancement only (every page works without it): times written as UTC are shown
 * in the reader's own time zone; a form whose select has data-autosubmit submits on change; a
 * page with a capture still running ([data-poll]) asks its state and shows itself again when done.
 */
const JS = `'use strict';
(function () {
  var fmt = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  document.querySelectorAll('time[data-local]').forEach(function (el) {
    var d = new Date(el.getAttribute('datetime'));
    if (!isNaN(d.getTime())) { el.title = el.textContent; el.textContent = fmt.format(d); }
  });
  // A capture still running (data-poll: its state's address): asks until it is done, then shows the page again with the result.
  var poll = document.querySelector('[data-poll]');
  if (poll && window.fetch) {
    var ask = function () {
      fetch(poll.getAttribute('data-poll'), { credentials: 'same-origin', headers: { accept: 'application/json' } })
        .then(function (r) { return r.json(); })
        .then(function (s) { if (s.status === 'queued' || s.status === 'running') setTimeout(ask, 1500); else location.reload(); })
        .catch(function () { setTimeout(ask, 5000); });
    };
    setTimeout(ask, 1000);
  }
})();
`;

function named(base: string, ext: string, body: string) {
  const hash = crypto.createHash('sha256').update(body).digest('hex').slice(0, 12);
  return { name: `${base}.${hash}.${ext}`, body };
}

/** Each asset by its file name (content-hashed), with its type. */
export const ASSETS: Record<string, { body: string; type: string }> = {};
const css = named('console', 'css', CSS);
const js = named('console', 'js', JS);
ASSETS[css.name] = { body: css.body, type: 'text/css; charset=utf-8' };
ASSETS[js.name] = { body: js.body, type: 'text/javascript; charset=utf-8' };

/** The paths the pages link to. */
export const STYLESHEET = `/console/assets/${css.name}`;
export const SCRIPT = `/console/assets/${js.name}`;
