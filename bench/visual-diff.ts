/**
 * What a visual change step's comparison costs (issue 44, item 5): two captures of one page,
 * as PNG, decoded, masked and compared the way the capture job compares them after it recorded
 * the capture (services/notifier/public/visual-diff.ts, compareCaptures), at 1920x1000 and a
 * 1920x10000 full page. Pages are drawn here (sharp from SVG: lines of text, a header, a price
 * box, a masked carousel, a footer), PNG like Chromium's screenshots. The cases: unchanged (the
 * same bytes; or a masked carousel turned), a changed price (a full comparison with its boxes),
 * the diff image an alert stores (encoded only then), each with the baseline decoded in memory
 * and on a miss (the baseline's image and row prints: its differing rows decoded), a change in
 * the last rows (the dearest miss), and a selector. CPU is this process's (its main thread and
 * libvips's threads, process.cpuUsage), per comparison, the median of the iterations; sharp
 * runs one thread as in the capture process (jobs/files.ts).
 *
 * Environment: BENCH_VISUAL_ITERATIONS (default 30 at 1920x1000, a third of it for the full
 * page). A run with it set prints its report but leaves docs/benchmark.md alone.
 */
import os from 'node:os';
import sharp from 'sharp';
import { type VisualCapture, compareCaptures, decodeArea, printsFromText, printsToText, rowPrints } from '../services/notifier/public/visual-diff';
import { envPositiveInt, publishResults, runBench } from './run';

const FULL_ITERATIONS = 30;
const ITERATIONS = envPositiveInt('BENCH_VISUAL_ITERATIONS', FULL_ITERATIONS);
const FULL_RUN = !process.env.BENCH_VISUAL_ITERATIONS?.trim();
const progress = (msg: string) => process.stderr.write(`[visual] ${msg}\n`);

/** The targets (issue 44): CPU per comparison. */
const TARGETS: Record<number, number> = { 1000: 30, 10000: 200 };

function pageSvg(height: number, price: string, carousel = '#e63946', footer = 'Contact us'): Buffer {
  let body = '';
  for (let y = 140; y < height - 20; y += 26) {
    body += `<text x="40" y="${y}" font-size="17" font-family="sans-serif">Paragraph ${y}: lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore.</text>`;
  }
  return Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="1920" height="${height}"><rect width="100%" height="100%" fill="#ffffff"/>` +
      '<rect width="1920" height="80" fill="#1d3557"/><text x="40" y="52" font-size="30" fill="#ffffff" font-family="sans-serif">Shop</text>' +
      `${body}<rect x="1300" y="200" width="420" height="110" fill="#f1f1f1"/><text x="1330" y="275" font-size="56" font-family="sans-serif">${price}</text>` +
      `<rect x="1300" y="400" width="420" height="260" fill="${carousel}"/>` +
      `<text x="40" y="${height - 4}" font-size="14" font-family="sans-serif">${footer}</text></svg>`,
  );
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)] as number;
};

async function cpuOf(n: number, fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const samples: number[] = [];
  for (let i = 0; i < n; i++) {
    const c0 = process.cpuUsage();
    await fn();
    const c = process.cpuUsage(c0);
    samples.push((c.user + c.system) / 1000);
  }
  return median(samples);
}

runBench('visual', async () => {
  sharp.concurrency(1);
  const rows: string[] = [];
  const missRows: string[] = [];
  const verdicts: string[] = [];
  for (const height of [1000, 10000]) {
    const n = height > 1000 ? Math.max(3, Math.round(ITERATIONS / 3)) : ITERATIONS;
    progress(`1920x${height}: drawing the pages`);
    // Encoded as Chromium encodes screenshots by default (optimize_for_speed: its fastest zlib
    // level, no adaptive filtering), which is also the slower of the two to decode here.
    const png = (svg: Buffer) => sharp(svg).png({ compressionLevel: 1, adaptiveFiltering: false }).toBuffer();
    const before = await png(pageSvg(height, '$10.00'));
    const after = await png(pageSvg(height, '$249.99'));
    const turned = await png(pageSvg(height, '$10.00', '#457b9d'));
    const footer = await png(pageSvg(height, '$10.00', '#e63946', 'Contact us: open on Sundays'));
    // The carousel is masked, as ignore_selectors would.
    const capture = (image: Buffer, region: VisualCapture['region'] = null): VisualCapture => ({
      image,
      region,
      masks: [{ x: 1300, y: 400, width: 420, height: 260 }],
      frameWidth: 1920,
    });
    // The scheduled path: the baseline's area is in memory (VisualRasterCache), decoded when
    // it was itself the new capture; a comparison decodes the new capture only, and prints its
    // rows for its baseline record (visual-alerts.ts, those that differ from the baseline's), as the job does.
    const baseline = await decodeArea(capture(before));
    // Printed when it was the new capture: a comparison prints only the new capture's rows that differ.
    const prints = printsToText(rowPrints(baseline));
    const known = (image: Buffer): VisualCapture => ({ ...capture(image), decoded: baseline });
    const job = async (old: VisualCapture, now: VisualCapture) => {
      const r = await compareCaptures(old, now, 0.1);
      if (r.decodedAfter) JSON.stringify(printsToText(rowPrints(r.decodedAfter)));
      return r;
    };
    progress(`1920x${height}: ${n} comparisons of each kind`);
    const same = await cpuOf(n, () => job(known(before), capture(Buffer.from(before))));
    // A fresh capture object each time: its rows are printed anew, as a new capture's are.
    const masked = await cpuOf(n, () => job(known(before), capture(Buffer.from(turned))));
    const changed = await cpuOf(n, () => job(known(before), capture(Buffer.from(after))));
    const result = await compareCaptures(known(before), capture(after), 0.1);
    const diff = await cpuOf(n, () => result.diffPng());
    // A miss (a restart, evicted from the bound, or another instance): the baseline's image
    // and the row prints its record keeps; only its rows that differ are decoded.
    const stored = (image: Buffer, region: VisualCapture['region'] = null): VisualCapture => ({ ...capture(image, region), prints: printsFromText(prints) });
    const missMasked = await cpuOf(n, () => job(stored(before), capture(Buffer.from(turned))));
    const missChanged = await cpuOf(n, () => job(stored(before), capture(Buffer.from(after))));
    const missFooter = await cpuOf(n, () => job(stored(before), capture(Buffer.from(footer))));
    // A baseline recorded without prints (by a version before them): decoded whole, once.
    const missWhole = await cpuOf(n, () => job(capture(before), capture(Buffer.from(after))));
    // A step with a selector (the price box): only its region is decoded, even on a miss.
    const price = { x: 1300, y: 200, width: 420, height: 110 };
    const missRegion = await cpuOf(n, () => compareCaptures(capture(before, price), capture(after, price), 0.1));
    const first = await cpuOf(n, async () => printsToText(rowPrints(await decodeArea(capture(before)))));
    const kept = (baseline.data.byteLength + before.byteLength) / 1024 / 1024;
    rows.push(
      `| 1920x${height} | ${same.toFixed(1)} | ${masked.toFixed(1)} | ${changed.toFixed(1)} | ${diff.toFixed(1)} | ${result.changedPercent}% in ${result.boxes.length} box(es) | ${TARGETS[height]} |`,
    );
    missRows.push(
      `| 1920x${height} | ${missMasked.toFixed(1)} | ${missChanged.toFixed(1)} | ${missFooter.toFixed(1)} | ${missRegion.toFixed(1)} | ${missWhole.toFixed(1)} | ${first.toFixed(1)} | ${kept.toFixed(1)} |`,
    );
    const target = TARGETS[height] as number;
    const worst = Math.max(same, masked, changed);
    const worstMiss = Math.max(missMasked, missChanged, missFooter);
    verdicts.push(
      `- 1920x${height}: a comparison costs under ${target} ms of CPU, the baseline in memory: **${worst < target ? 'MET' : 'NOT MET'}** (${worst.toFixed(1)} ms at most); and not (a miss, by the baseline's row prints): **${worstMiss < target ? 'MET' : 'NOT MET'}** (${worstMiss.toFixed(1)} ms at most).`,
    );
  }
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  const report = [
    '# Visual change comparison: CPU per comparison',
    '',
    `Run ${new Date().toISOString()} on ${cpu}, ${os.cpus().length} cores, Node ${process.version}; medians of ${ITERATIONS} iterations (1920x1000) and ${Math.max(3, Math.round(ITERATIONS / 3))} (1920x10000); load average (1 min) at the end ${os.loadavg()[0]?.toFixed(2)}.`,
    '',
    "A scheduled configuration's comparison: the baseline's decoded area is in the capture process's memory (the path each capture after the first takes while the process runs and the bound holds it):",
    '',
    '| Capture size | Unchanged, same bytes (ms CPU) | Unchanged, masked carousel turned (ms CPU) | Changed price (ms CPU) | Diff image, alerts only (ms CPU) | Found | Target (ms) |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...rows,
    '',
    "A miss (the first comparison after the process started, a baseline dropped from the bound, or one taken by another capture instance): the baseline's image is read and, by the row prints its record keeps, only its rows that differ are decoded; and what keeping a baseline costs:",
    '',
    '| Capture size | Miss, masked carousel turned (ms CPU) | Miss, changed price (ms CPU) | Miss, changed footer (its last rows) (ms CPU) | Miss, a selector (420x110 price box) (ms CPU) | Miss without prints (a baseline recorded before them: decoded whole) (ms CPU) | Decoding and printing one capture, kept as the next baseline (ms CPU) | Memory kept per baseline (MB) |',
    '| --- | --- | --- | --- | --- | --- | --- | --- |',
    ...missRows,
    '',
    "CPU includes the kernel's: about a third of a full-page decode is the kernel giving the 77 MB of its output fresh pages, which a busy machine makes dearer, so figures vary by 20-40 % between runs. Two captures with the same bytes (a still page) are not decoded. Otherwise a comparison decodes the new capture (most of its cost), prints its rows (about a tenth of decoding it; kept with its baseline record), masks, runs pixelmatch over the rows that differ and boxes the changed pixels; the baseline comes decoded from memory, or on a miss its image is read and only its rows whose prints differ from the new capture's are decoded (PNG is inflated from the top: a change in the last rows costs inflating the whole image, without writing it out); a selector decodes its region only. The diff image is drawn and encoded only when an alert is raised. All of it runs in the capture job after the capture is recorded, never in the request path of `/snap`. The first capture of a configuration (no baseline yet) is decoded once so that the next comparison finds it in memory.",
    '',
    ...verdicts,
  ].join('\n');
  publishResults('visual', report, FULL_RUN, progress);
});
