/**
 * Reading the project's Markdown as GitHub shows it, for the docs tests: the links a file
 * holds, the anchors its headings get (GitHub's slugs, from github-slugger), and its tables.
 * Parsed with markdown-it, so code spans and fenced blocks never count as links or headings.
 */
import fs from 'node:fs';
import path from 'node:path';
import MarkdownIt from 'markdown-it';

// github-slugger is an ES module: its default export is the class that numbers repeated
// headings as GitHub does (`a`, `a-1`, `a-2`).
const { default: GithubSlugger } = require('github-slugger') as typeof import('github-slugger');

type Token = ReturnType<MarkdownIt['parse']>[number];

/** The repository's root (tests run from dist/test/docs). */
export const ROOT = path.resolve(__dirname, '..', '..', '..');

const md = new MarkdownIt({ html: true });

export function parse(text: string): Token[] {
  return md.parse(text, {});
}

/** The text of an inline token as GitHub reads a heading: text and code spans, markup dropped. */
function plainText(inline: Token | undefined): string {
  return (inline?.children ?? [])
    .filter((t) => t.type === 'text' || t.type === 'code_inline')
    .map((t) => t.content)
    .join('');
}

/** Every anchor GitHub makes for the headings of this Markdown, in order. */
export function headingAnchors(text: string): string[] {
  const slugger = new GithubSlugger();
  const tokens = parse(text);
  const anchors: string[] = [];
  tokens.forEach((t, i) => {
    if (t.type === 'heading_open') anchors.push(slugger.slug(plainText(tokens[i + 1])));
  });
  return anchors;
}

export interface Link {
  /** The link's target as written (after markdown-it's normalisation). */
  href: string;
  /** The line it is on (1-based), for the failure message. */
  line: number;
}

/** Every link and image target in this Markdown (inline, reference-style and autolinks). */
export function links(text: string): Link[] {
  const found: Link[] = [];
  let line = 1;
  for (const block of parse(text)) {
    // A table cell's inline token has no line of its own: its row's is the last one seen.
    if (block.map) line = block.map[0] + 1;
    if (block.type !== 'inline') continue;
    for (const t of block.children ?? []) {
      const href = t.type === 'link_open' ? t.attrGet('href') : t.type === 'image' ? t.attrGet('src') : null;
      if (href !== null) found.push({ href, line });
    }
  }
  return found;
}

/** A table: its header cells and its rows, each cell as the inline tokens' children. */
export interface Table {
  header: string[];
  rows: Token[][][];
}

/** Every table of this Markdown. A header cell is its plain text; a body cell, its inline tokens. */
export function tables(text: string): Table[] {
  const tokens = parse(text);
  const result: Table[] = [];
  let current: Table | null = null;
  let row: Token[][] | null = null;
  let inHead = false;
  for (const t of tokens) {
    if (t.type === 'table_open') current = { header: [], rows: [] };
    else if (t.type === 'thead_open') inHead = true;
    else if (t.type === 'thead_close') inHead = false;
    else if (t.type === 'tr_open' && !inHead) row = [];
    else if (t.type === 'tr_close' && row && current) {
      current.rows.push(row);
      row = null;
    } else if (t.type === 'inline' && current) {
      if (inHead) current.header.push(plainText(t));
      else row?.push(t.children ?? []);
    } else if (t.type === 'table_close' && current) {
      result.push(current);
      current = null;
    }
  }
  return result;
}

/** Every code span of this Markdown (`text`), outside fenced blocks, in order. */
export function allCodeSpans(text: string): string[] {
  return parse(text).flatMap((block) => (block.children ?? []).filter((t) => t.type === 'code_inline').map((t) => t.content));
}

/** The code spans of a cell (`NAME`), in order. */
export function codeSpans(cell: Token[]): string[] {
  return cell.filter((t) => t.type === 'code_inline').map((t) => t.content);
}

/** README.md and every Markdown file under docs/, as paths relative to the root. */
export function projectDocs(): string[] {
  const files = ['README.md'];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const rel = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(rel);
      else if (entry.name.endsWith('.md')) files.push(rel);
    }
  };
  walk('docs');
  return files.sort();
}
