/**
 * The CPU-bound part of a visual comparison runs off the event loop (visual-match.ts): a
 * comparison of two captures that differ everywhere (noise, as a page of changing pictures or
 * a canvas gives) leaves the event loop free for the process's other requests, and answers
 * the same as pixelmatch would on it.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import sharp from 'sharp';
import { compareCaptures, decodeArea } from '../../../services/notifier/public/visual-diff';
import { closeOffThread, matchBand } from '../../../services/notifier/public/visual-match';

/** A PNG of random pixels. */
function noise(width: number, height: number): Promise<Buffer> {
  return sharp(crypto.randomBytes(width * height * 3), { raw: { width, height, channels: 3 } })
    .png({ compressionLevel: 0 })
    .toBuffer();
}

/** The longest the event loop went without running a timer due every 5 ms, while `work` ran. */
async function longestStall<T>(work: () => Promise<T>): Promise<{ result: T; stallMs: number }> {
  let last = performance.now();
  let stallMs = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 5);
  try {
    const result = await work();
    return { result, stallMs: Math.max(stallMs, performance.now() - last) };
  } finally {
    clearInterval(timer);
  }
}

describe('visual comparison off the event loop', function () {
  this.timeout(60_000);
  after(() => closeOffThread());

  it('sends the thread only the band of rows that differ, not the whole capture: a small change on a tall page stalls the event loop for a few ms', async () => {
    const [width, height] = [1920, 12_000];
    // A page of stripes (every row alike across, so it compresses), and the same with one box changed near its end.
    const rows = Buffer.alloc(width * height * 3);
    for (let y = 0; y < height; y++) rows.fill((y * 7) % 256, y * width * 3, (y + 1) * width * 3);
    const changed = Buffer.from(rows);
    for (let y = 11_500; y < 11_540; y++) changed.fill(0, (y * width + 100) * 3, (y * width + 300) * 3);
    const png = (raw: Buffer) =>
      sharp(raw, { raw: { width, height, channels: 3 } })
        .png({ compressionLevel: 1 })
        .toBuffer();
    const [before, after] = await Promise.all([png(rows), png(changed)]);
    const capture = (image: Buffer) => ({ image, region: null, masks: [], frameWidth: 0 });
    // Decoded already, as the capture process keeps a baseline and the new capture (decoding is sharp's, on its own threads).
    const [a, b] = await Promise.all([before, after].map((image) => decodeArea(capture(image))));
    const { result, stallMs } = await longestStall(() => compareCaptures({ ...capture(before), decoded: a }, { ...capture(after), decoded: b }, 0.1));
    expect(result.boxes).to.deep.equal([{ x: 100, y: 11_500, width: 200, height: 40 }]);
    expect(stallMs, `the event loop stalled ${Math.round(stallMs)} ms`).to.be.below(80);
  });

  it('compares two captures that differ everywhere without stalling the event loop (pixelmatch on it stalled it for the whole comparison)', async () => {
    const [width, height] = [1200, 2000];
    const [before, after] = await Promise.all([noise(width, height), noise(width, height)]);
    const capture = (image: Buffer) => ({ image, region: null, masks: [], frameWidth: 0 });
    // On the event loop, for comparison: pixelmatch alone over these pixels.
    const [a, b] = await Promise.all([before, after].map((png) => sharp(png).ensureAlpha().raw().toBuffer()));
    const started = performance.now();
    const inline = matchBand({ imgNew: b as Buffer, imgOld: a as Buffer, width, height, threshold: 0.1 });
    const inlineMs = performance.now() - started;
    const { result, stallMs } = await longestStall(async () => {
      const r = await compareCaptures(capture(before), capture(after), 0.1);
      await r.diffPng();
      return r;
    });
    expect(result.changedPixels).to.equal(inline.changedPixels);
    expect(result.changedPercent).to.be.greaterThan(50);
    expect(stallMs, `the event loop stalled ${Math.round(stallMs)} ms; pixelmatch alone takes ${Math.round(inlineMs)} ms`).to.be.below(
      Math.min(300, inlineMs / 2),
    );
  });
});
