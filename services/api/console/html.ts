/**
 * The console's one way to write HTML: the `html` tagged template escapes every value put into
 * it (text, attribute values, URLs as text), so a title, URL or AI answer that carries markup
 * shows as text and never runs. Markup that is already safe is a SafeHtml: what `html` itself
 * returns, or a string wrapped in `raw()` on purpose (only for markup this code wrote, never for
 * data). Values go in quoted attributes only (`href="${url}"`), never in a script or a style;
 * a URL that came from outside goes into href through `safeUrl`, which lets only http(s) and
 * relative addresses through (no `javascript:`).
 */

/** Markup that may be written as it is. */
export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

/** What a template takes: text (escaped), numbers, markup, lists of them; null, undefined and false write nothing. */
export type HtmlValue = SafeHtml | string | number | boolean | null | undefined | readonly HtmlValue[];

const ENTITIES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Text made safe for an element's content and for a quoted attribute value. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"'`]/g, (c) => ENTITIES[c] as string);
}

function write(value: HtmlValue): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof SafeHtml) return value.text;
  if (Array.isArray(value)) return value.map(write).join('');
  return escapeHtml(String(value));
}

/** `html\`<p>${text}</p>\``: every value escaped unless it is SafeHtml. */
export function html(strings: TemplateStringsArray, ...values: HtmlValue[]): SafeHtml {
  let out = strings[0] ?? '';
  for (let i = 0; i < values.length; i++) out += write(values[i] as HtmlValue) + (strings[i + 1] ?? '');
  return new SafeHtml(out);
}

/** Markup this code wrote, passed through as it is. Never give it data. */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/** An address fit for href/src: http(s) absolute, or relative to this site; anything else (javascript:, data:) becomes "#". */
export function safeUrl(address: string | null | undefined): string {
  if (!address) return '#';
  const text = address.trim();
  if (/^\/(?![/\\])/.test(text)) return text;
  try {
    const url = new URL(text);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.toString() : '#';
  } catch {
    return '#';
  }
}
