/**
 * The quality corpus's picture checks on pictures drawn here (SVG shapes through sharp, no
 * browser): missing-glyph boxes look alike and glyphs do not, colour is told from black, a
 * glyph drawn as two is too wide; and the corpus refuses a page name twice.
 */
import { expect } from 'chai';
import sharp from 'sharp';
import { checkPages } from './corpus';
import type { QualityPage } from './page';
import {
  type Box,
  decodePicture,
  expectBlank,
  expectColour,
  expectGlyphs,
  expectInk,
  expectOneColourGlyph,
  expectSaturated,
  unlikeness,
  UNLIKE,
} from './picture';

/** An 80x80 cell at column i of row r, as the script pages place them. */
const cell = (i: number, r: number): Box => ({ x: 20 + i * 90, y: 20 + r * 100, w: 80, h: 80 });

/** A missing-glyph box: a rectangle outline, the same in every cell. */
const tofu = (b: Box) => `<rect x="${b.x + 24}" y="${b.y + 12}" width="32" height="56" fill="none" stroke="#000" stroke-width="3"/>`;
/** Three different "glyphs". */
const GLYPHS = [
  (b: Box) => `<path d="M${b.x + 10} ${b.y + 40} h60 M${b.x + 40} ${b.y + 10} v60" stroke="#000" stroke-width="5"/>`,
  (b: Box) => `<circle cx="${b.x + 40}" cy="${b.y + 40}" r="25" fill="none" stroke="#000" stroke-width="5"/>`,
  (b: Box) => `<path d="M${b.x + 10} ${b.y + 70} L${b.x + 40} ${b.y + 10} L${b.x + 70} ${b.y + 70}" fill="none" stroke="#000" stroke-width="5"/>`,
];

async function picture(shapes: string): Promise<Awaited<ReturnType<typeof decodePicture>>> {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300"><rect width="400" height="300" fill="#fff"/>${shapes}</svg>`;
  return decodePicture(await sharp(Buffer.from(svg)).png().toBuffer());
}

const throws = (fn: () => void): string => {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected the check to fail');
};

describe('quality corpus: picture checks', () => {
  it('missing-glyph boxes are alike; glyphs are unlike them and unlike each other', async () => {
    const p = await picture(GLYPHS.map((g, i) => g(cell(i, 0))).join('') + [0, 1, 2].map((i) => tofu(cell(i, 1))).join(''));
    expect(unlikeness(p, cell(0, 1), cell(2, 1))).to.equal(0);
    expect(unlikeness(p, cell(0, 0), cell(0, 1))).to.be.above(UNLIKE);
    expectGlyphs(
      p,
      GLYPHS.map((_, i) => ({ char: `g${i}`, box: cell(i, 0) })),
      [0, 1, 2].map((i) => cell(i, 1)),
      'shapes',
    );
  });

  it('text drawn as missing-glyph boxes fails, as do two samples drawn alike and a blank sample', async () => {
    const boxes = await picture([0, 1, 2].map((i) => tofu(cell(i, 0)) + tofu(cell(i, 1))).join(''));
    const samples = [0, 1, 2].map((i) => ({ char: `c${i}`, box: cell(i, 0) }));
    expect(throws(() => expectGlyphs(boxes, samples, [cell(0, 1)], 'tofu'))).to.match(/c0 looks like the missing-glyph box/);
    const same = await picture(GLYPHS[1]!(cell(0, 0)) + GLYPHS[1]!(cell(1, 0)) + tofu(cell(0, 1)));
    expect(throws(() => expectGlyphs(same, samples.slice(0, 2), [cell(0, 1)], 'same'))).to.match(/c1 looks like c0/);
    const blank = await picture(GLYPHS[0]!(cell(0, 0)) + tofu(cell(0, 1)));
    expect(throws(() => expectGlyphs(blank, samples.slice(0, 2), [cell(0, 1)], 'blank'))).to.match(/c1 is blank/);
  });

  it('colour is told from black and grey; one glyph from two side by side', async () => {
    const p = await picture(
      '<circle cx="60" cy="60" r="25" fill="rgb(250,200,40)"/><circle cx="160" cy="60" r="25" fill="#000"/><circle cx="260" cy="60" r="25" fill="#888"/>' +
        '<circle cx="60" cy="160" r="25" fill="rgb(220,20,60)"/><circle cx="115" cy="160" r="25" fill="rgb(220,20,60)"/>',
    );
    expectSaturated(p, { x: 20, y: 20, w: 80, h: 80 }, 'yellow');
    expect(throws(() => expectSaturated(p, { x: 120, y: 20, w: 80, h: 80 }, 'black'))).to.match(/0 of the \d+ ink pixels/);
    expect(throws(() => expectSaturated(p, { x: 220, y: 20, w: 80, h: 80 }, 'grey'))).to.match(/0 of the \d+ ink pixels/);
    expectOneColourGlyph(p, { x: 20, y: 120, w: 50, h: 80 }, 'one', 77);
    expect(throws(() => expectOneColourGlyph(p, { x: 20, y: 120, w: 200, h: 80 }, 'two', 77))).to.match(/its ink is 1\d\d px wide/);
  });

  it('colours, ink and blank boxes say where and what they saw', async () => {
    const p = await picture('<rect x="0" y="0" width="100" height="100" fill="rgb(30,144,255)"/>');
    expectColour(p, 50, 50, [30, 144, 255], 'blue');
    expect(throws(() => expectColour(p, 150, 50, [30, 144, 255], 'blue'))).to.equal('blue: at (150,50) saw rgb(255,255,255), expected rgb(30,144,255)');
    expectInk(p, { x: 0, y: 0, w: 200, h: 200 }, 'ink');
    expect(throws(() => expectInk(p, { x: 200, y: 0, w: 100, h: 100 }, 'ink'))).to.match(/^ink: the 100x100 at \(200,0\) box is blank/);
    expect(throws(() => expectBlank(p, { x: 50, y: 50, w: 100, h: 100 }, 'blank'))).to.match(/2500 pixels that are not rgb\(255,255,255\)/);
  });

  it('the corpus refuses a page name twice, or one that is not a folder name', () => {
    const page = (name: string): QualityPage => ({ name, mimics: '', routes: {}, params: {}, check: () => undefined });
    expect(() => checkPages([page('a'), page('a')])).to.throw(/"a" is listed twice/);
    expect(() => checkPages([page('Has Space')])).to.throw(/lower case letters, digits and dashes/);
    checkPages([page('a'), page('b-2')]);
  });
});
