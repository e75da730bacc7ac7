/**
 * The quality corpus (pages.ts) on the real Grid: one test per page, each the check of the
 * picture the service made of it. The pages are captured a few at a time from the start
 * (corpus.ts), so a test mostly waits for a result already under way.
 */
import type { PageResult } from './corpus';
import { type Corpus, startCorpus } from './corpus';
import { QUALITY_PAGES } from './pages';

describe('quality corpus: real-world page patterns, checked on the picture (real Grid)', function () {
  this.timeout(180_000);
  let corpus: Corpus | null = null;
  const results = new Map<string, Promise<PageResult>>();

  before(async () => {
    corpus = await startCorpus(QUALITY_PAGES);
    const each = corpus.schedule(QUALITY_PAGES);
    for (const [i, page] of QUALITY_PAGES.entries()) results.set(page.name, each[i]!);
  });
  after(async () => {
    await corpus?.stop();
  });

  for (const page of QUALITY_PAGES) {
    it(`${page.name}: ${page.mimics}`, async () => {
      const r = await results.get(page.name);
      if (!r) throw new Error('the corpus did not start');
      if (!r.ok) throw new Error(`${r.why}${r.knownGap ? ` (known gap: ${r.knownGap})` : ''}`);
    });
  }
});
