/**
 * The key template of store_key: the name a capture's file gets in the account's own bucket
 * (store_to). Text with placeholders in braces, each replaced when the capture is uploaded;
 * an unknown placeholder, an unclosed brace or a key that could climb out of its folder is
 * refused when the option is given (the `object-key-template` format, 400), never at upload.
 */

/** The placeholders and what each becomes. */
export const KEY_PLACEHOLDERS = {
  id: "the capture's file id, the random name in its direct_link without the extension",
  job_id: "the capture's job id",
  config_id: 'the screenshot configuration id',
  account: 'the account id',
  date: 'the capture date, YYYY-MM-DD (UTC)',
  time: 'the capture time, HH-mm-ss (UTC)',
  ext: 'the file extension: jpeg, png, webp, pdf or html',
} as const;
export type KeyPlaceholder = keyof typeof KEY_PLACEHOLDERS;

export const DEFAULT_KEY_TEMPLATE = '{id}.{ext}';
export const MAX_KEY_TEMPLATE = 512;

/** What is wrong with a template, or null when it is usable. */
export function keyTemplateProblem(template: string): string | null {
  const stripped = template.replace(/\{([^{}]*)\}/g, (whole, name: string) => (Object.hasOwn(KEY_PLACEHOLDERS, name) ? '' : whole));
  const unknown = /\{([^{}]*)\}/.exec(stripped);
  if (unknown) return `has the unknown placeholder {${unknown[1]}}; the placeholders are ${placeholderList()}`;
  if (/[{}]/.test(stripped)) return 'has a brace that opens or closes no placeholder';
  if (template.startsWith('/')) return 'starts with /; a key is relative to the bucket';
  if (template.split('/').some((part) => part === '..' || part === '.')) return 'has a . or .. path segment';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f\\]/.test(template)) return 'has a control character or a backslash';
  return null;
}

export function placeholderList(): string {
  return Object.keys(KEY_PLACEHOLDERS)
    .map((k) => `{${k}}`)
    .join(', ');
}

/** The key of one capture's file; the template has been validated (keyTemplateProblem). */
export function expandKeyTemplate(template: string, values: Record<KeyPlaceholder, string>): string {
  return template.replace(/\{([a-z_]+)\}/g, (_whole, name: string) => values[name as KeyPlaceholder]);
}

/** {date} and {time} of a moment, UTC. */
export function keyDateTime(ms: number): { date: string; time: string } {
  const iso = new Date(ms).toISOString();
  return { date: iso.slice(0, 10), time: iso.slice(11, 19).replaceAll(':', '-') };
}
