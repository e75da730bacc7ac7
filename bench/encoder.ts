/**
 * What `Page.captureScreenshot`'s `optimizeForSpeed` saves in CPU and costs in bytes (issue 46,
 * item 3): the bench's pages loaded once each in one Grid session's tab, then screenshots taken
 * in PNG, JPEG (quality 80) and WebP (quality 80), alternately without and with the flag, so
 * drift on a busy machine falls on both sides alike. The CPU is the browser's (ChromeDriver's
 * tree: browser, GPU and renderer processes, where the encoder runs) from /proc, over
 * SCREENSHOTS of each kind; the bytes are the decoded image's. Two shapes: the 1280x800
 * viewport of /heavy and /simple, and /long grown to its full 10 000 px (where the encoder's
 * share of a capture is largest).
 *
 * Environment: BENCH_ENCODER_SCREENSHOTS (default 24 per kind). A run with it set prints its
 * report but leaves docs/benchmark.md alone.
 */
import { performance } from 'node:perf_hooks';
import { type FloorTab, STEP_TIMEOUT_MS, growToFullPage, oneBrowserOnGrid } from './floor';
import { VIEWPORT, envPositiveInt, publishResults, runBench } from './run';

const FULL_SCREENSHOTS = 24;
const SCREENSHOTS = envPositiveInt('BENCH_ENCODER_SCREENSHOTS', FULL_SCREENSHOTS);
const FULL_RUN = !process.env.BENCH_ENCODER_SCREENSHOTS?.trim();

const progress = (msg: string) => process.stderr.write(`[encoder] ${msg}\n`);

type Format = 'png' | 'jpeg' | 'webp';
const FORMATS: readonly Format[] = ['png', 'jpeg', 'webp'];
const QUALITY = 80;

interface Shape {
  name: string;
  page: string;
  fullPage: boolean;
}
const SHAPES: readonly Shape[] = [
  { name: '/simple, viewport', page: 'simple', fullPage: false },
  { name: '/heavy, viewport', page: 'heavy', fullPage: false },
  { name: '/long, full page', page: 'long', fullPage: true },
];

interface Tally {
  cpuMs: number;
  wallMs: number;
  bytes: number;
  n: number;
}

async function screenshot(tab: FloorTab, format: Format, optimizeForSpeed: boolean): Promise<number> {
  const params: Record<string, unknown> = { format, optimizeForSpeed };
  if (format !== 'png') params.quality = QUALITY;
  const shot = await tab.slot.cdp.send<{ data: string }>('Page.captureScreenshot', params, tab.sessionId);
  return Buffer.from(shot.data, 'base64').length;
}

async function load(tab: FloorTab, url: string, fullPage: boolean): Promise<void> {
  const { cdp } = tab.slot;
  await cdp.send('Emulation.setDeviceMetricsOverride', { ...VIEWPORT, deviceScaleFactor: 1, mobile: false }, tab.sessionId);
  const loaded = cdp.waitFor('Page.loadEventFired', tab.sessionId, STEP_TIMEOUT_MS);
  loaded.catch(() => undefined);
  const nav = await cdp.send<{ errorText?: string }>('Page.navigate', { url }, tab.sessionId);
  if (nav.errorText) throw new Error(`navigating to ${url} failed: ${nav.errorText}`);
  await loaded;
  if (fullPage) await growToFullPage(tab);
}

const fmt = (n: number, digits = 1) => n.toFixed(digits);

runBench('encoder', async (cleanups) => {
  progress('starting the Selenium Grid and the page server');
  const { tab, pages, browserCpuMs: browserTree } = await oneBrowserOnGrid(cleanups);

  const rows: string[] = [];
  /** Per format, whether the flag saved CPU on every shape, and whether it left the bytes as they were on every shape. */
  const saved: Record<Format, boolean> = { png: true, jpeg: true, webp: true };
  const sameBytes: Record<Format, boolean> = { png: true, jpeg: true, webp: true };
  const t0 = performance.now();
  for (const shape of SHAPES) {
    await load(tab, `${pages.origin}${pages.pages[shape.page]}`, shape.fullPage);
    for (const format of FORMATS) {
      const tally: Record<'off' | 'on', Tally> = { off: { cpuMs: 0, wallMs: 0, bytes: 0, n: 0 }, on: { cpuMs: 0, wallMs: 0, bytes: 0, n: 0 } };
      // Two warm-up shots each, then the two kinds in turn.
      for (const on of [false, true, false, true]) await screenshot(tab, format, on);
      for (let i = 0; i < 2 * SCREENSHOTS; i++) {
        const on = i % 2 === 1;
        const t = tally[on ? 'on' : 'off'];
        const cpu0 = browserTree();
        const w0 = performance.now();
        t.bytes += await screenshot(tab, format, on);
        t.wallMs += performance.now() - w0;
        t.cpuMs += browserTree() - cpu0;
        t.n++;
      }
      const per = (t: Tally) => ({ cpu: t.cpuMs / t.n, wall: t.wallMs / t.n, kb: t.bytes / t.n / 1024 });
      const off = per(tally.off);
      const on = per(tally.on);
      if (!(on.cpu < off.cpu)) saved[format] = false;
      if (tally.on.bytes !== tally.off.bytes) sameBytes[format] = false;
      progress(`${shape.name} ${format}: cpu ${fmt(off.cpu)} → ${fmt(on.cpu)} ms, ${fmt(off.kb)} → ${fmt(on.kb)} KB`);
      rows.push(
        `| ${shape.name} | ${format} | ${fmt(off.cpu)} | ${fmt(on.cpu)} | ${fmt(off.cpu - on.cpu)} | ${fmt(off.wall)} | ${fmt(on.wall)} | ` +
          `${fmt(off.kb)} | ${fmt(on.kb)} | ${fmt(on.kb / off.kb, 2)}x |`,
      );
    }
  }
  const report = [
    '## Encoder: optimizeForSpeed',
    '',
    `${SCREENSHOTS} screenshots of each kind per row, without and with \`optimizeForSpeed\` in turn, of a page loaded once in one Grid ` +
      `session's tab (viewport ${VIEWPORT.width}x${VIEWPORT.height}; /long grown to its full height). CPU: the browser's process tree ` +
      `(ChromeDriver, browser, GPU, renderer) per screenshot, from /proc; wall: the CDP call's time; bytes: the decoded image. ` +
      `JPEG and WebP at quality ${QUALITY}. ${fmt((performance.now() - t0) / 1000, 0)} s.`,
    '',
    '| shape | format | CPU ms off | CPU ms on | saved ms | wall ms off | wall ms on | KB off | KB on | bytes on/off |',
    '|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...rows,
    '',
    `- PNG: optimize_for_speed saves the browser's CPU on every shape: ${saved.png ? '**MET**' : '**NOT MET**'} ` +
      '(so it is offered for PNG, on by default; `optimize_for_speed=false` gives the smallest file).',
    `- JPEG and WebP: the flag leaves every image byte for byte as it was: ${sameBytes.jpeg && sameBytes.webp ? '**MET**' : '**NOT MET**'} ` +
      '(so the option is refused with them rather than accepted and ignored).',
  ].join('\n');
  publishResults('encoder', report, FULL_RUN, progress);
});
