/**
 * The same capture as code: a `curl` of /snap, the official npm client's call
 * (`client.snap({...})`, docs/clients.md), the Python client's and the MCP tool's (`snap` and
 * its arguments), built from the validated options. Text only: the page escapes it.
 */

/** A word for a POSIX shell, in single quotes. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** An option's value as a query parameter sends it (lists and objects as JSON text). */
function queryText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A JSON value written as a Python literal. */
export function pythonLiteral(value: unknown, indent = ''): string {
  if (value === null || value === undefined) return 'None';
  if (value === true) return 'True';
  if (value === false) return 'False';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return JSON.stringify(value);
  const inner = `${indent}    `;
  if (Array.isArray(value)) return `[${value.map((v) => pythonLiteral(v, indent)).join(', ')}]`;
  const entries = Object.entries(value as Record<string, unknown>);
  if (!entries.length) return '{}';
  return `{\n${entries.map(([k, v]) => `${inner}${JSON.stringify(k)}: ${pythonLiteral(v, inner)},`).join('\n')}\n${indent}}`;
}

export interface Snippets {
  curl: string;
  npm: string;
  python: string;
  mcp: string;
}

/** The snippets of a /snap of `options` against `baseUrl` (the key read from PAGEPIXELS_API_KEY, never written). */
export function snapSnippets(baseUrl: string, options: Record<string, unknown>): Snippets {
  const given = Object.entries(options).filter(([, v]) => v !== undefined);
  const curl = [
    `curl -G ${shellQuote(`${baseUrl.replace(/\/$/, '')}/snap`)}`,
    `  -H "Authorization: Bearer $PAGEPIXELS_API_KEY"`,
    ...given.map(([k, v]) => `  --data-urlencode ${shellQuote(`${k}=${queryText(v)}`)}`),
    '  -o screenshot',
  ].join(' \\\n');
  const js = JSON.stringify(Object.fromEntries(given), null, 2);
  const npm = [
    "const ScreenshotsPagepixels = require('screenshots-pagepixels');",
    'const client = new ScreenshotsPagepixels(process.env.PAGEPIXELS_API_KEY);',
    `client.apiBaseUrl = ${JSON.stringify(baseUrl.replace(/\/$/, ''))};`,
    `const image = await client.snap(${js});`,
  ].join('\n');
  const python = [
    'import os',
    'from screenshots_pagepixels import ScreenshotsPagepixels',
    "client = ScreenshotsPagepixels(os.environ['PAGEPIXELS_API_KEY'])",
    `client.base_url = ${JSON.stringify(baseUrl.replace(/\/$/, ''))}`,
    `image = client.snap(${pythonLiteral(Object.fromEntries(given))})`,
  ].join('\n');
  const mcp = JSON.stringify({ name: 'snap', arguments: Object.fromEntries(given) }, null, 2);
  return { curl, npm, python, mcp };
}
