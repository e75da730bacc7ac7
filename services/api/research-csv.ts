/**
 * A domain research report as CSV (RFC 4180): one row per domain, in the order given, one
 * column per field, the domain's state and error, and where each value came from. Made to
 * open in a spreadsheet as it is: UTF-8 with a byte order mark (so Excel reads it as UTF-8),
 * CRLF line ends, every cell that needs it quoted, a list's items joined by "; ", and a text
 * cell that a spreadsheet would take for a formula (=, +, -, @ first) prefixed with ' (the
 * values come from websites; see OWASP's "CSV Injection").
 */
import type { ResearchField, ResearchResult } from '../shared/domain-research';

/** The columns before the fields', and between the fields' and their sources'. */
export const LEADING_COLUMNS = ['domain', 'status'] as const;
export const ERROR_COLUMNS = ['error_code', 'error_note'] as const;

/** The column of a field's source page. */
export const sourceColumn = (name: string) => `${name} (source)`;

/** Every column, in order. */
export function csvColumns(fields: readonly Pick<ResearchField, 'data_field_name'>[]): string[] {
  const names = fields.map((f) => f.data_field_name);
  return [...LEADING_COLUMNS, ...names, ...ERROR_COLUMNS, ...names.map(sourceColumn)];
}

function text(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  const s = Array.isArray(value) ? value.map((v) => String(v)).join('; ') : String(value);
  return /^[=+\-@\t\r]/.test(s) ? `'${s}` : s;
}

function cell(value: unknown): string {
  const s = text(value);
  return /[",\r\n]|^\s|\s$/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

const row = (cells: unknown[]) => cells.map(cell).join(',');

export function reportCsv(fields: readonly ResearchField[], results: readonly ResearchResult[]): string {
  const names = fields.map((f) => f.data_field_name);
  const lines = [
    csvColumns(fields).map(cell).join(','),
    ...results.map((r) =>
      row([
        r.domain,
        r.status,
        ...names.map((n) => r.data?.[n] ?? null),
        r.error?.error_code ?? null,
        r.error?.note ?? null,
        ...names.map((n) => r.sources?.[n] ?? null),
      ]),
    ),
  ];
  return `\ufeff${lines.join('\r\n')}\r\n`;
}
