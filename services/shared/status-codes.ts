/**
 * fail_on_status: the HTTP statuses of a page's main document that fail its capture, as a list
 * of codes, ranges and classes (`404,500-599`, `4xx`, `5xx`). Read once by the api's schema
 * check (the `status-codes` format, whose note says what is wrong) and by the capture, which
 * compares the document's final status with it.
 */

/** Inclusive ranges of statuses. */
export type StatusRanges = ReadonlyArray<readonly [number, number]>;

/** The longest fail_on_status accepted (characters). */
export const MAX_STATUS_LIST = 200;

const MIN_STATUS = 100;
const MAX_STATUS = 599;

/** A list that shows each form: what a note about a bad value gives as its one example. */
export const STATUS_CODES_EXAMPLE = '404,500-599 or 4xx,5xx';

/** What is wrong with a code of `entry` (the entry itself, or one end of a range), or null. */
function codeProblem(code: number, digits: string, entry: string): string | null {
  if (code >= MIN_STATUS && code <= MAX_STATUS) return null;
  const subject = digits === entry ? `"${entry}"` : `"${entry}": ${digits}`;
  return `${subject} is not an HTTP status (${MIN_STATUS} to ${MAX_STATUS})`;
}

/**
 * Reads a list (entries separated by commas, spaces around them allowed): a code (`404`), a
 * range (`500-599`) or a class (`4xx`, `5XX`). Answers the ranges, or what is wrong, in words:
 * the entry at fault (or the whole value, for an empty entry) quoted once, without an example
 * (the note adds STATUS_CODES_EXAMPLE).
 */
export function parseStatusCodes(text: string): { ranges: StatusRanges } | { problem: string } {
  const ranges: Array<readonly [number, number]> = [];
  const entries = text.split(',').map((e) => e.trim());
  for (const entry of entries) {
    if (entry === '') return { problem: `"${text}" has an empty entry; separate the entries with single commas` };
    const cls = /^([1-5])xx$/i.exec(entry);
    if (cls) {
      const base = Number(cls[1]) * 100;
      ranges.push([base, base + 99]);
      continue;
    }
    const range = /^(\d{3})\s*-\s*(\d{3})$/.exec(entry);
    if (range) {
      const lo = Number(range[1]);
      const hi = Number(range[2]);
      const problem = codeProblem(lo, range[1] ?? '', entry) ?? codeProblem(hi, range[2] ?? '', entry);
      if (problem) return { problem };
      if (lo > hi) return { problem: `"${entry}" is an empty range; write the lower code first` };
      ranges.push([lo, hi]);
      continue;
    }
    if (/^\d{3}$/.test(entry)) {
      const code = Number(entry);
      const problem = codeProblem(code, entry, entry);
      if (problem) return { problem };
      ranges.push([code, code]);
      continue;
    }
    return { problem: `"${entry}" is not a status code, a range of them or a class` };
  }
  return { ranges };
}

/** What is wrong with a fail_on_status value, or null when it reads. */
export function statusCodesProblem(text: string): string | null {
  const read = parseStatusCodes(text);
  return 'problem' in read ? read.problem : null;
}

/** The status is in one of the ranges. */
export function statusMatches(ranges: StatusRanges, status: number): boolean {
  return ranges.some(([lo, hi]) => status >= lo && status <= hi);
}
