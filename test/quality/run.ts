/**
 * `npm run quality [-- name-filter ...]`: the quality corpus outside mocha. Prints one line
 * per page as it is done (PASS/FAIL, name, ms, why) and a score line, "quality: 38/40 pages
 * right"; exits 1 when a page fails (2 when nothing could run). Stops everything it started
 * (the capture system and its browsers' sessions, the shared Grid, the local sites, the test
 * DNS server) at the end, on failure, and on SIGINT/SIGTERM.
 *
 * QUALITY_CONCURRENCY: captures at once (1 to 5, default 3). QUALITY_SAVE_DIR: each page's
 * answer is also written there (<name>.png, or .json for an error). QUALITY_LOG_REQUESTS=1:
 * every request the local sites receive is printed.
 */
import { TEST_DEFAULTS } from '../support/backends';
import { stopSharedGrid } from '../support/grid';
import { startTestDns, stopTestDns } from '../support/test-dns';
import { type Corpus, DEFAULT_CONCURRENCY, type PageResult, startCorpus } from './corpus';
import { selectPages } from './pages';

process.env.LOG_LEVEL ??= 'warn';

function line(r: PageResult, width: number): string {
  const head = `${r.ok ? 'PASS' : 'FAIL'}  ${r.name.padEnd(width)}  ${String(r.ms).padStart(6)} ms`;
  return r.ok ? head : `${head}  ${r.why}${r.knownGap ? ` (known gap: ${r.knownGap})` : ''}`;
}

async function main(): Promise<number> {
  const pages = selectPages(process.argv.slice(2));
  if (pages.length === 0) {
    console.error(`quality: no page matches ${process.argv.slice(2).join(', ')}`);
    return 2;
  }
  const raw = process.env.QUALITY_CONCURRENCY?.trim();
  const concurrency = raw ? Number(raw) : DEFAULT_CONCURRENCY;
  if (!(Number.isInteger(concurrency) && concurrency >= 1 && concurrency <= 5))
    throw new Error(`QUALITY_CONCURRENCY must be 1 to 5 (the shared Grid's sessions), got "${raw}"`);

  let corpus: Corpus | null = null;
  let stopping: Promise<void> | null = null;
  /** Set on SIGINT/SIGTERM: the captures cut short are not reported. */
  let interrupted = false;
  const stopAll = () => {
    stopping ??= (async () => {
      await corpus?.stop().catch((err: Error) => console.error(`quality: stopping the corpus: ${err.message}`));
      await stopSharedGrid().catch((err: Error) => console.error(`quality: stopping the Grid: ${err.message}`));
      await stopTestDns().catch(() => undefined);
    })();
    return stopping;
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      interrupted = true;
      console.error(`quality: ${signal}, stopping everything`);
      void stopAll().then(() => process.exit(signal === 'SIGINT' ? 130 : 143));
    });
  }

  const started = performance.now();
  try {
    TEST_DEFAULTS.EGRESS_DNS_SERVERS = await startTestDns();
    console.error(`quality: starting the Grid, the capture system and the sites for ${pages.length} pages (${concurrency} at once)`);
    corpus = await startCorpus(pages, { concurrency });
    const width = Math.max(...pages.map((p) => p.name.length));
    const results = await corpus.runAll(pages, (r) => {
      if (!interrupted) console.log(line(r, width));
    });
    if (interrupted) return 130;
    const right = results.filter((r) => r.ok).length;
    console.log(`quality: ${right}/${results.length} pages right (${((performance.now() - started) / 1000).toFixed(1)} s)`);
    return right === results.length ? 0 : 1;
  } finally {
    await stopAll();
  }
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(`quality: ${err.stack ?? err.message}`);
    process.exit(2);
  },
);
