/**
 * The visual comparison on pictures made here (sharp from SVG): a changed price is found with
 * its box and nothing else; the same picture in PNG, JPEG and WebP compares as unchanged; a
 * masked area is not compared (in either capture); a page that grew is compared over the
 * common area and reported as a size change; a region is compared wherever it moved; the
 * diff image is red where the pixels changed and grey elsewhere. A baseline decoded earlier
 * (kept by VisualRasterCache, bounded) is compared without decoding it again, with the same
 * result; a selector's region alone is decoded; overlapping masks count once. A baseline not
 * decoded but given with its row prints is compared by decoding only its rows that differ, to
 * the same result.
 */
import { expect } from 'chai';
import sharp from 'sharp';
import {
  type VisualCapture,
  VisualRasterCache,
  compareCaptures,
  decodeArea,
  printsFromText,
  printsToText,
  rowPrints,
  unionArea,
} from '../../../services/notifier/public/visual-diff';
import { changedBoxes } from '../../../services/notifier/public/visual-match';

function page(opts: { price?: string; banner?: string; height?: number; width?: number; shiftY?: number } = {}): Buffer {
  const { price = '$10.00', banner = 'Welcome', height = 600, width = 800, shiftY = 0 } = opts;
  let lines = '';
  for (let y = 120; y < height - 20; y += 24)
    lines += `<text x="20" y="${y}" font-size="16" font-family="sans-serif">Line ${y} lorem ipsum dolor sit amet</text>`;
  return Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}"><rect width="100%" height="100%" fill="#ffffff"/>` +
      `<rect x="0" y="0" width="${width}" height="60" fill="#224488"/><text x="20" y="40" font-size="24" fill="#ffffff" font-family="sans-serif">${banner}</text>` +
      `${lines}<rect x="500" y="${200 + shiftY}" width="200" height="60" fill="#eeeeee"/><text x="520" y="${240 + shiftY}" font-size="28" font-family="sans-serif">${price}</text></svg>`,
  );
}

const png = (svg: Buffer) => sharp(svg).png().toBuffer();
const capture = (image: Buffer, extra: Partial<VisualCapture> = {}): VisualCapture => ({ image, region: null, masks: [], frameWidth: 0, ...extra });

describe('visual diff', () => {
  it('finds a changed price, with one box around it', async () => {
    const r = await compareCaptures(capture(await png(page())), capture(await png(page({ price: '$12.50' }))), 0.1);
    expect(r.changedPixels).to.be.greaterThan(0);
    expect(r.sizeChanged).to.equal(false);
    expect(r.boxes).to.have.length(1);
    const box = r.boxes[0]!;
    expect(box.x).to.be.at.least(500).and.below(700);
    expect(box.y).to.be.at.least(200).and.below(260);
    expect(box.x + box.width).to.be.at.most(700);
    expect(r.changedPercent).to.be.greaterThan(0).and.below(2);
  });

  it('gives nothing for the same picture, whatever its format', async () => {
    const svg = page();
    const shots = [await png(svg), await sharp(svg).jpeg({ quality: 80 }).toBuffer(), await sharp(svg).webp({ quality: 80 }).toBuffer()];
    for (const a of shots) {
      for (const b of shots) {
        const r = await compareCaptures(capture(a), capture(b), 0.1);
        // JPEG and WebP noise stays under the tolerance or is taken for anti-aliasing: well under 0.5%.
        expect(r.changedPercent, `${a.length} against ${b.length}`).to.be.below(0.5);
      }
    }
    expect((await compareCaptures(capture(shots[0]!), capture(shots[0]!), 0.1)).changedPixels).to.equal(0);
  });

  it('does not compare masked areas, masked in either capture', async () => {
    const before = await png(page());
    const after = await png(page({ banner: 'Sale! 50% off everything' }));
    expect((await compareCaptures(capture(before), capture(after), 0.1)).changedPixels).to.be.greaterThan(0);
    const banner = { x: 0, y: 0, width: 800, height: 60 };
    const masked = await compareCaptures(capture(before), capture(after, { masks: [banner] }), 0.1);
    expect(masked.changedPixels).to.equal(0);
    expect(masked.comparedPixels).to.equal(800 * 600 - 800 * 60);
    expect((await compareCaptures(capture(before, { masks: [banner] }), capture(after), 0.1)).changedPixels).to.equal(0);
  });

  it('scales the areas by the image pixels per CSS pixel', async () => {
    const before = await sharp(page()).resize(1600).png().toBuffer();
    const after = await sharp(page({ banner: 'Another banner' }))
      .resize(1600)
      .png()
      .toBuffer();
    const banner = { x: 0, y: 0, width: 800, height: 60 };
    const r = await compareCaptures(capture(before, { frameWidth: 800 }), capture(after, { frameWidth: 800, masks: [banner] }), 0.1);
    expect(r.changedPixels).to.equal(0);
  });

  it('compares the common area of a page that grew, and says its size changed', async () => {
    const r = await compareCaptures(capture(await png(page({ height: 600 }))), capture(await png(page({ height: 900 }))), 0.1);
    expect(r.sizeChanged).to.equal(true);
    expect(r.before).to.deep.equal({ width: 800, height: 600 });
    expect(r.after).to.deep.equal({ width: 800, height: 900 });
    // The lines below 580 of the short page are not drawn in it: the bottom edge only differs.
    expect(r.comparedPixels).to.equal(800 * 600);
    expect(r.boxes.every((b) => b.y + b.height <= 600)).to.equal(true);
  });

  it('compares a region wherever it moved (a layout shift above it)', async () => {
    const before = await png(page());
    const after = await png(page({ shiftY: 40 }));
    expect((await compareCaptures(capture(before), capture(after), 0.1)).changedPixels).to.be.greaterThan(0);
    const region = { x: 500, y: 200, width: 200, height: 60 };
    const r = await compareCaptures(capture(before, { region }), capture(after, { region: { ...region, y: 240 } }), 0.1);
    expect(r.changedPixels).to.equal(0);
    expect(r.after).to.deep.equal({ width: 200, height: 60 });
  });

  it('draws the diff image: red where pixels changed, grey elsewhere', async () => {
    const r = await compareCaptures(capture(await png(page())), capture(await png(page({ price: '$99.99' }))), 0.1);
    const diff = await sharp(await r.diffPng())
      .raw()
      .toBuffer({ resolveWithObject: true });
    expect(diff.info).to.include({ width: 800, height: 600 });
    const at = (x: number, y: number) => [...diff.data.subarray((y * 800 + x) * diff.info.channels, (y * 800 + x) * diff.info.channels + 3)];
    const box = r.boxes[0]!;
    let red = 0;
    for (let y = box.y; y < box.y + box.height; y++) for (let x = box.x; x < box.x + box.width; x++) if (at(x, y).join() === '255,0,0') red++;
    expect(red).to.equal(r.changedPixels);
    const [gr, gg, gb] = at(10, 300);
    expect(gr).to.equal(gg).and.equal(gb);
  });

  it('groups changed pixels into boxes by cells', () => {
    const w = 100;
    const h = 100;
    const mask = new Uint8Array(w * h * 4);
    const mark = (x: number, y: number) => mask.set([255, 0, 0, 255], (y * w + x) * 4);
    mark(5, 5);
    mark(20, 8);
    mark(90, 90);
    const boxes = changedBoxes(mask, w, h, 16);
    expect(boxes).to.deep.equal([
      { x: 5, y: 5, width: 16, height: 4 },
      { x: 90, y: 90, width: 1, height: 1 },
    ]);
  });

  it('compares with the baseline decoded earlier, without decoding it again, to the same result', async () => {
    const before = await png(page());
    const after = await png(page({ price: '$12.50' }));
    const fresh = await compareCaptures(capture(before), capture(after), 0.1);
    const decoded = await decodeArea(capture(before));
    // Bytes that are no image: a comparison that decoded them would throw.
    const kept = await compareCaptures(capture(Buffer.from('not an image'), { decoded }), capture(after), 0.1);
    expect(kept.changedPixels).to.equal(fresh.changedPixels).and.greaterThan(0);
    expect(kept.boxes).to.deep.equal(fresh.boxes);
    // The new capture comes back decoded: the next comparison's baseline.
    expect(kept.decodedAfter).to.deep.include({ width: 800, height: 600, x: 0, y: 0 });
    const next = await compareCaptures(capture(Buffer.from('not an image either'), { decoded: kept.decodedAfter! }), capture(before), 0.1);
    expect(next.changedPixels).to.equal(fresh.changedPixels);
  });

  it('compares a baseline given with its row prints to the same result as decoding it whole', async () => {
    const base = page();
    const cases: Array<[string, Buffer, Buffer, Partial<VisualCapture>]> = [
      ['a changed price', await png(base), await png(page({ price: '$12.50' })), {}],
      ['a banner under a mask', await png(base), await png(page({ banner: 'Sale' })), { masks: [{ x: 0, y: 0, width: 800, height: 60 }] }],
      ['a page that grew', await png(base), await png(page({ height: 900, price: '$1' })), {}],
      [
        'a region, two pixels per CSS pixel',
        await sharp(base).resize(1600).png().toBuffer(),
        await sharp(page({ price: '$3' }))
          .resize(1600)
          .png()
          .toBuffer(),
        { region: { x: 480, y: 180, width: 240, height: 100 }, frameWidth: 800 },
      ],
      ['the same pixels, other bytes', await png(base), await sharp(base).png({ compressionLevel: 1 }).toBuffer(), {}],
    ];
    for (const [what, before, after, extra] of cases) {
      const whole = await compareCaptures(capture(before, extra), capture(after, extra), 0.1);
      const prints = printsFromText(printsToText(rowPrints(await decodeArea(capture(before, extra)))));
      const byPrints = await compareCaptures(capture(before, { ...extra, prints }), capture(after, extra), 0.1);
      expect(byPrints.decodedBefore, `${what}: not decoded whole`).to.equal(null);
      for (const k of ['changedPixels', 'comparedPixels', 'changedPercent', 'boxes', 'before', 'after', 'sizeChanged'] as const) {
        expect(byPrints[k], `${what}: ${k}`).to.deep.equal(whole[k]);
      }
      expect(await byPrints.diffPng(), `${what}: the diff image`).to.deep.equal(await whole.diffPng());
    }
  });

  it("prints a new capture's rows from its baseline's where they are the same, to the prints it would have alone", async () => {
    const before = await png(page());
    for (const after of [await png(page({ price: '$12.50' })), await png(page({ height: 900 })), await png(page({ height: 500, banner: 'Hi' })), before]) {
      const baseline = await decodeArea(capture(before));
      rowPrints(baseline);
      const r = await compareCaptures(capture(Buffer.from('not an image'), { decoded: baseline }), capture(Buffer.from(after)), 0.1);
      const alone = rowPrints(await decodeArea(capture(after)));
      expect(Buffer.from(rowPrints(r.decodedAfter!).words.buffer).equals(Buffer.from(alone.words.buffer))).to.equal(true);
    }
  });

  it("decodes only the baseline's rows whose prints differ from the new capture's", async () => {
    // Prints of a page whose banner differs from the one the image holds: by its prints the
    // banner rows are the same as the new capture's, so they are not decoded and their
    // difference is not seen; the price, whose prints differ, is.
    const image = await png(page({ banner: 'Closed' }));
    const prints = rowPrints(await decodeArea(capture(await png(page()))));
    const after = await png(page({ price: '$12.50' }));
    expect((await compareCaptures(capture(image), capture(after), 0.1)).boxes, 'decoded whole: banner and price').to.have.length(2);
    const r = await compareCaptures(capture(image, { prints }), capture(after), 0.1);
    expect(r.boxes, 'the price only').to.have.length(1);
    expect(r.boxes[0]!.y).to.be.at.least(200);
    // Prints of an area of another width do not stand for it: decoded whole.
    const narrow = rowPrints(await decodeArea(capture(await png(page({ width: 700 })))));
    const whole = await compareCaptures(capture(image, { prints: narrow }), capture(after), 0.1);
    expect(whole.boxes).to.have.length(2);
    expect(whole.decodedBefore).to.not.equal(null);
    // Prints tell rows apart: one pixel changed in a row changes its print, whatever its place.
    const area = await decodeArea(capture(await png(page())));
    const p0 = rowPrints(area).words.slice();
    for (const at of [0, 1, 2, 3, 799]) {
      const changed = { ...area, data: Buffer.from(area.data) };
      changed.data[(300 * 800 + at) * 4] = (changed.data[(300 * 800 + at) * 4]! + 1) % 256;
      const p1 = rowPrints(changed).words;
      expect([p1[600] === p0[600] && p1[601] === p0[601], p1[598] === p0[598]], `pixel ${at} of row 300`).to.deep.equal([false, true]);
    }
  });

  it("decodes a selector's region only, where it is", async () => {
    const region = { x: 500, y: 200, width: 200, height: 60 };
    const area = await decodeArea(capture(await png(page()), { region }));
    expect(area).to.deep.include({ width: 200, height: 60, x: 500, y: 200, scale: 1 });
    expect(area.data.byteLength).to.equal(200 * 60 * 4);
    const twice = await decodeArea(capture(await sharp(page()).resize(1600).png().toBuffer(), { region, frameWidth: 800 }));
    expect(twice).to.deep.include({ width: 400, height: 120, x: 1000, y: 400, scale: 2 });
    const outside = await decodeArea(capture(await png(page()), { region: { x: 900, y: 0, width: 10, height: 10 } }));
    expect(outside).to.deep.include({ width: 0, height: 0 });
  });

  it('counts pixels under overlapping masks once', async () => {
    expect(
      unionArea([
        { x0: 0, y0: 0, x1: 10, y1: 10 },
        { x0: 5, y0: 5, x1: 15, y1: 15 },
        { x0: 2, y0: 2, x1: 4, y1: 4 },
      ]),
    ).to.equal(100 + 100 - 25);
    const before = await png(page());
    const r = await compareCaptures(
      capture(before, { masks: [{ x: 0, y: 0, width: 800, height: 60 }] }),
      capture(await png(page({ banner: 'Other' })), { masks: [{ x: 0, y: 30, width: 400, height: 100 }] }),
      0.1,
    );
    expect(r.changedPixels).to.equal(0);
    expect(r.comparedPixels).to.equal(800 * 600 - 800 * 60 - 400 * 70);
  });

  it('keeps decoded baselines within its bound, the least recently used dropped first', () => {
    const area = (bytes: number) => ({ data: Buffer.alloc(bytes), width: 1, height: 1, x: 0, y: 0, scale: 1 });
    const cache = new VisualRasterCache(1000);
    const key = (name: string) => VisualRasterCache.key(name, null, 800);
    cache.set(key('a'), Buffer.alloc(100), area(300));
    cache.set(key('b'), Buffer.alloc(100), area(300));
    expect(cache.get(key('a'))).to.not.equal(undefined);
    cache.set(key('c'), Buffer.alloc(100), area(300));
    expect(cache.bytes).to.be.at.most(1000);
    expect(cache.get(key('b')), 'the least recently used').to.equal(undefined);
    expect(cache.get(key('a'))).to.not.equal(undefined);
    expect(cache.get(key('c'))).to.not.equal(undefined);
    cache.set(key('huge'), Buffer.alloc(10), area(2000));
    expect(cache.get(key('huge')), 'larger than the bound: not kept').to.equal(undefined);
    expect(cache.size).to.equal(2);
    cache.delete(key('a'));
    expect(cache.bytes).to.equal(400);
    expect(VisualRasterCache.key('a', { x: 1, y: 2, width: 3, height: 4 }, 800)).to.not.equal(key('a'));
  });
});
