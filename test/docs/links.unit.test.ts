/**
 * Every link in README.md and docs/ leads somewhere: a relative link names a file or folder
 * of this repository that exists (never one outside it, which a clone would not have), and a
 * `#anchor` is a heading of its target as GitHub slugs it. Links with a scheme (https:,
 * mailto:) are not followed: the tests reach no other host. And every repository path the
 * docs name in a code span (`services/capture/jobs/pipeline.ts`) exists, so a reader sent to a
 * file finds it after the code moves.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { ROOT, allCodeSpans, headingAnchors, links, projectDocs } from './markdown';

/** A code span that names a path in this repository (no placeholder, no glob). */
const REPO_PATH = /^(services|test|bench|ops|bin|db|grid|scripts|deploy|docs)\/[A-Za-z0-9_./-]+$/;

/** Why a link of `file` does not resolve, or null when it does. */
function brokenLink(file: string, href: string): string | null {
  if (/^[a-z][a-z0-9+.-]*:/i.test(href)) return null;
  const hash = href.indexOf('#');
  const target = decodeURIComponent(hash === -1 ? href : href.slice(0, hash));
  const anchor = hash === -1 ? null : decodeURIComponent(href.slice(hash + 1));
  const resolved = target === '' ? path.join(ROOT, file) : target.startsWith('/') ? path.join(ROOT, target) : path.resolve(ROOT, path.dirname(file), target);
  const inRepo = path.relative(ROOT, resolved);
  if (inRepo.startsWith('..') || path.isAbsolute(inRepo)) return `${target} is outside the repository`;
  if (!fs.existsSync(resolved)) return `${inRepo} does not exist`;
  if (anchor === null) return null;
  if (!resolved.endsWith('.md')) return `#${anchor}: ${inRepo} is not Markdown, so it has no heading anchors`;
  const anchors = headingAnchors(fs.readFileSync(resolved, 'utf8'));
  return anchors.includes(anchor) ? null : `${inRepo} has no heading whose anchor is #${anchor}`;
}

describe('docs: links', () => {
  const files = projectDocs();

  it('reads README.md and the docs (the files this test covers)', () => {
    expect(files).to.include.members(['README.md', 'docs/configuration.md', 'docs/api.md', 'docs/operations.md']);
  });

  for (const file of files) {
    it(`${file}: every relative link and #anchor resolves`, () => {
      const text = fs.readFileSync(path.join(ROOT, file), 'utf8');
      const broken = links(text)
        .map((l) => ({ ...l, why: brokenLink(file, l.href) }))
        .filter((l) => l.why !== null)
        .map((l) => `${file}:${l.line} (${l.href}): ${l.why}`);
      expect(broken, broken.join('\n')).to.deep.equal([]);
    });
  }

  for (const file of files) {
    it(`${file}: every repository path named in a code span exists`, () => {
      const missing = allCodeSpans(fs.readFileSync(path.join(ROOT, file), 'utf8')).filter((p) => REPO_PATH.test(p) && !fs.existsSync(path.join(ROOT, p)));
      expect(missing, `${file} names paths that do not exist: ${missing.join(', ')}`).to.deep.equal([]);
    });
  }

  it('slugs headings as GitHub does (punctuation and code marks dropped, repeats numbered)', () => {
    const anchors = headingAnchors(
      [
        '# Operations: /health, /pressure, /metrics',
        '## Capturing: `GET /snap` and `POST /snap`',
        '## Fair sharing: each account’s limits',
        '## Logs',
        '## Logs',
        '```',
        '# not a heading',
        '```',
      ].join('\n'),
    );
    expect(anchors).to.deep.equal([
      'operations-health-pressure-metrics',
      'capturing-get-snap-and-post-snap',
      'fair-sharing-each-accounts-limits',
      'logs',
      'logs-1',
    ]);
  });

  it('finds inline, reference-style and image links, and none inside code', () => {
    const found = links(['See [a](a.md#x), [b][ref], ![c](img.png) and `[d](d.md)`.', '', '```', '[e](e.md)', '```', '', '[ref]: b.md'].join('\n'));
    expect(found.map((l) => l.href)).to.deep.equal(['a.md#x', 'b.md', 'img.png']);
  });

  it('reports a missing file, a missing anchor and a path outside the repository', () => {
    expect(brokenLink('README.md', 'docs/no-such-file.md')).to.match(/does not exist/);
    expect(brokenLink('README.md', 'docs/api.md#no-such-heading')).to.match(/no heading whose anchor/);
    expect(brokenLink('README.md', '../shared/DESIGN.md')).to.match(/outside the repository/);
    expect(brokenLink('README.md', 'https://example.com/x')).to.equal(null);
  });
});
