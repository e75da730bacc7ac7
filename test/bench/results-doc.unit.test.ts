/**
 * How `npm run bench` keeps docs/benchmark.md current: a full run of each bench replaces its
 * own block of "Current results" (between its two marker lines) with its report, headings
 * nested under the section, and leaves every other byte of the page alone; a reduced run
 * leaves the page as it was. The real page has every bench's markers exactly once, and each
 * bench script publishes into its own block, so a full run cannot lose its figures at the end.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import sinon from 'sinon';
import { BENCH_DOC, type ResultsSection, nestHeadings, publishResults, resultsMarkers, withResults } from '../../bench/run';

const SECTIONS: ResultsSection[] = ['snap', 'mix', 'soak', 'lists', 'ttl', 'stack', 'stackmix', 'fairness', 'failures', 'encoder'];
const ROOT = path.resolve(__dirname, '..', '..', '..');

/** A page with prose around two blocks, as docs/benchmark.md is laid out. */
function page(snapBlock: string, ttlBlock: string): string {
  const s = resultsMarkers('snap');
  const t = resultsMarkers('ttl');
  return [
    '# Benchmark',
    '',
    'Method.',
    '',
    '## Current results',
    '',
    s.begin,
    snapBlock,
    s.end,
    '',
    t.begin,
    ttlBlock,
    t.end,
    '',
    '## What the figures show',
    '',
    'Prose.',
    '',
  ].join('\n');
}

describe('bench: the results written into docs/benchmark.md', () => {
  it('replaces only its own block, keeping everything around it byte for byte', () => {
    const before = page('old snap table', 'old ttl table');
    const after = withResults(before, 'snap', '# Benchmark: GET /snap\n\n| a | b |\n|---|---|\n| 1 | 2 |');
    expect(after).to.equal(page('\n### Benchmark: GET /snap\n\n| a | b |\n|---|---|\n| 1 | 2 |\n', 'old ttl table'));
    expect(withResults(after, 'ttl', '## A ttl hit\n\nnew')).to.equal(
      page('\n### Benchmark: GET /snap\n\n| a | b |\n|---|---|\n| 1 | 2 |\n', '\n### A ttl hit\n\nnew\n'),
    );
  });

  it('is stable: writing the same report twice gives the same page', () => {
    const once = withResults(page('x', 'y'), 'ttl', '## A ttl hit\n\nfigures');
    expect(withResults(once, 'ttl', '## A ttl hit\n\nfigures')).to.equal(once);
  });

  it('nests a report under "Current results": its top heading becomes level 3, the others follow', () => {
    expect(nestHeadings('# Top\n\ntext # not a heading\n\n## Sub\n\n### Subsub')).to.equal('### Top\n\ntext # not a heading\n\n#### Sub\n\n##### Subsub');
    expect(nestHeadings('## Top\n\n### Sub')).to.equal('### Top\n\n#### Sub');
    expect(nestHeadings('no heading')).to.equal('no heading');
  });

  it('refuses a page whose markers are missing, doubled or out of order', () => {
    const s = resultsMarkers('snap');
    expect(() => withResults('# Benchmark\n', 'snap', 'r')).to.throw(/exactly once \(found none\)/);
    expect(() => withResults(`${s.begin}\n${s.end}\n${s.begin}\n`, 'snap', 'r')).to.throw(/exactly once \(found more\)/);
    expect(() => withResults(`${s.end}\n${s.begin}\n`, 'snap', 'r')).to.throw(/comes before/);
  });

  it('a full run writes the page; a reduced run only prints', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-doc-'));
    const doc = path.join(dir, 'benchmark.md');
    const write = sinon.stub(process.stdout, 'write').returns(true);
    const messages: string[] = [];
    try {
      fs.writeFileSync(doc, page('old', 'old'));
      publishResults('ttl', '## A ttl hit\n\nreduced', false, (m) => messages.push(m), doc);
      expect(fs.readFileSync(doc, 'utf8')).to.equal(page('old', 'old'));
      publishResults('ttl', '## A ttl hit\n\nfull', true, (m) => messages.push(m), doc);
      expect(fs.readFileSync(doc, 'utf8')).to.equal(page('old', '\n### A ttl hit\n\nfull\n'));
      expect(write.callCount).to.equal(2);
    } finally {
      write.restore();
      fs.rmSync(dir, { recursive: true, force: true });
    }
    expect(messages[0]).to.match(/reduced run/);
    expect(messages[1]).to.match(/written to .*benchmark\.md \(its "ttl" results\)/);
  });

  it('docs/benchmark.md has every bench block once, and each holds a report', () => {
    const text = fs.readFileSync(BENCH_DOC, 'utf8');
    for (const section of SECTIONS) {
      const { begin, end } = resultsMarkers(section);
      expect(text.split(begin).length - 1, `${section} begin marker`).to.equal(1);
      expect(text.split(end).length - 1, `${section} end marker`).to.equal(1);
      const block = text.slice(text.indexOf(begin) + begin.length, text.indexOf(end));
      expect(block, `${section} results`).to.match(/^### /m);
      expect(block, `${section} verdict`).to.match(/\*\*MET\*\*|\*\*NOT MET\*\*/);
    }
  });

  it('each bench script publishes into its own block', () => {
    const scripts: Record<ResultsSection, string> = {
      snap: 'bench.ts',
      mix: 'mix.ts',
      soak: 'soak.ts',
      lists: 'lists.ts',
      ttl: 'ttl.ts',
      stack: 'stack.ts',
      stackmix: 'stack-mix.ts',
      fairness: 'fairness.ts',
      failures: 'failures.ts',
      encoder: 'encoder.ts',
      visual: 'visual-diff.ts',
      gateway: 'gateway.ts',
      guard: 'guard.ts',
    };
    for (const section of SECTIONS) {
      const source = fs.readFileSync(path.join(ROOT, 'bench', scripts[section]), 'utf8');
      expect(source, scripts[section]).to.include(`publishResults('${section}',`);
    }
    const npmBench = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.bench;
    for (const script of Object.values(scripts)) expect(npmBench, 'npm run bench runs it').to.include(`dist/bench/${script.replace('.ts', '.js')}`);
  });
});
