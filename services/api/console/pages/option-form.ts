/**
 * The fields of a form over the option table (services/shared/screenshot-options.ts
 * OPTION_TABLE, through the request shape's own list of options): one labelled field per
 * option with its description and default, the input fitting its schema (a choice of words as
 * a select, true/false as a select that may also be left to the default, numbers with their
 * bounds, JSON and long text as a text area), grouped by what the options do. Nothing here
 * lists options: a new row of the table appears in its group by its name and kind.
 */
import { type OptionSpec, OPTION_DEFAULTS } from '../../../shared/screenshot-options';
import { type ShapeName, shapeOptions } from '../../request-schemas';
import { html, type SafeHtml } from '../html';

/** A group of options: the first rule an option matches places it (so the order matters). */
export const OPTION_GROUPS: ReadonlyArray<{ id: string; title: string; holds: (o: OptionSpec) => boolean }> = [
  {
    id: 'page',
    title: 'The page and the picture',
    holds: (o) => o.required === true || /^(url|page_|fullpage|image_format|quality|scale_factor|device|thumb_)/.test(o.name),
  },
  { id: 'schedule', title: 'Schedule', holds: (o) => o.name.startsWith('scheduled_') },
  { id: 'timing', title: 'Waiting and loading', holds: (o) => /^(wait|navigation_|incremental_scroll)/.test(o.name) },
  { id: 'rules', title: 'Failing on purpose', holds: (o) => o.name.startsWith('fail_') },
  { id: 'ai', title: 'AI analysis', holds: (o) => o.name.startsWith('ai_') || o.name.startsWith('analyze_') },
  { id: 'pdf', title: 'PDF', holds: (o) => o.name.startsWith('pdf_') },
  { id: 'answer', title: 'The answer', holds: (o) => o.scope === 'snap' || o.scope === 'html' },
  { id: 'switches', title: 'Clean-up and switches', holds: (o) => o.kind === 'boolean' },
  { id: 'json', title: 'Lists and steps (JSON)', holds: (o) => o.kind === 'json' },
  { id: 'more', title: 'More options', holds: () => true },
];

/** The options of `shape`, by group, in the table's order within each. */
export function groupedOptions(shape: ShapeName): Array<{ id: string; title: string; options: OptionSpec[] }> {
  const groups = OPTION_GROUPS.map((g) => ({ id: g.id, title: g.title, options: [] as OptionSpec[] }));
  for (const o of shapeOptions(shape)) {
    const at = OPTION_GROUPS.findIndex((g) => g.holds(o));
    groups[at]?.options.push(o);
  }
  return groups.filter((g) => g.options.length > 0);
}

/** A value as a form field shows it (JSON-valued options as JSON text). */
export function fieldText(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return JSON.stringify(value);
}

function defaultText(o: OptionSpec): string | null {
  const value = (OPTION_DEFAULTS as Record<string, unknown>)[o.name] ?? o.default;
  return value === undefined ? null : fieldText(value);
}

function input(o: OptionSpec, value: string, described: string, invalid: boolean): SafeHtml {
  const schema = o.schema as unknown as Record<string, unknown>;
  const id = `o-${o.name}`;
  const bad = invalid ? html` aria-invalid="true"` : '';
  const choices = Array.isArray(schema.enum) ? (schema.enum as unknown[]).map(String) : null;
  if (o.kind === 'boolean' || choices) {
    const words = choices ?? ['true', 'false'];
    const dflt = defaultText(o);
    return html`<select id="${id}" name="${o.name}" aria-describedby="${described}"${bad}>
<option value="">${dflt === null ? '(not set)' : `(default: ${dflt})`}</option>
${words.map((w) => html`<option value="${w}"${w === value ? html` selected` : ''}>${w}</option>`)}</select>`;
  }
  if (o.kind === 'integer' || o.kind === 'number') {
    return html`<input id="${id}" name="${o.name}" type="number" inputmode="decimal" step="${o.kind === 'integer' ? '1' : 'any'}"${
      typeof schema.minimum === 'number' ? html` min="${schema.minimum}"` : ''
    }${typeof schema.maximum === 'number' ? html` max="${schema.maximum}"` : ''} value="${value}" aria-describedby="${described}"${bad}>`;
  }
  const long = o.kind === 'json' || (typeof schema.maxLength === 'number' && schema.maxLength > 1000);
  if (long) return html`<textarea id="${id}" name="${o.name}" rows="3" aria-describedby="${described}"${bad}>${value}</textarea>`;
  const type = schema.format === 'http-url' ? 'url' : 'text';
  return html`<input id="${id}" name="${o.name}" type="${type}" value="${value}"${o.required ? html` required` : ''} aria-describedby="${described}"${bad}>`;
}

/**
 * The grouped fields of `shape`, showing `values` (as given); `problem`: the API's note about
 * one parameter, shown beside its field (and its group opened). The first group is open.
 */
export function optionFields(shape: ShapeName, values: Record<string, unknown>, problem: { param: string | null; note: string } | null): SafeHtml {
  return html`${groupedOptions(shape).map((g, i) => {
    const open = i === 0 || g.options.some((o) => o.name === problem?.param || fieldText(values[o.name]) !== '');
    return html`<details class="options" id="g-${g.id}"${open ? html` open` : ''}><summary>${g.title}</summary>
${g.options.map((o) => {
  const invalid = problem?.param === o.name;
  const dflt = defaultText(o);
  const described = `d-${o.name}${invalid ? ` e-${o.name}` : ''}`;
  return html`<div class="field">
<label for="o-${o.name}">${o.name}${o.required ? ' (required)' : ''}</label>
${input(o, fieldText(values[o.name]), described, invalid)}
<p class="hint muted" id="d-${o.name}">${o.description}${dflt !== null && o.kind !== 'boolean' ? ` Default: ${dflt}.` : ''}</p>
${invalid ? html`<p class="notice error field-note" id="e-${o.name}" role="alert">${problem?.note}</p>` : ''}
</div>`;
})}</details>`;
  })}`;
}

/** The options a form sent: every field but the token, as text (empty ones are absent to the API's validation). */
export function formOptions(body: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries((body ?? {}) as Record<string, unknown>)) {
    if (k === '_csrf') continue;
    out[k] = Array.isArray(v) ? v[v.length - 1] : v;
  }
  return out;
}
