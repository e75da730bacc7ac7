/**
 * The visual comparison on pictures made here (sharp from SVG): a changed price is found with
 * its box and nothing else; the same picture in PNG, JPEG and WebP compares as unchanged; a
 * masked area is not compared (in either capture); a page that grew is compared over the
 * common area and reported as a size change; a region is compared wherever it moved; the
 * diff image is red where the pixels changed and grey elsewhere.
 */
import { expect } from 'chai';
import sharp from 'sharp';
import { type VisualCapture, changedBoxes, compareCaptures } from '../../../services/notifier/public/visual-diff';

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
});
