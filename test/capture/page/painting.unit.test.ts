/**
 * painting.ts with the page stubbed (sinon) and real images (sharp): a picture of one colour
 * is told from a page with content, and taken again while the page has something to show;
 * the wait for web fonts is bounded.
 */
import { expect } from 'chai';
import sharp from 'sharp';
import sinon from 'sinon';
import { DRAWING_MS, REPAINT_TRIES, isOneColour, mayBeOneColour, settleDrawing, untilPainted } from '../../../services/capture/page/painting';
import { PageSession } from '../../../services/capture/page/page-session';

const solid = (format: 'jpeg' | 'png', rgb: [number, number, number]) =>
  sharp({ create: { width: 800, height: 600, channels: 3, background: { r: rgb[0], g: rgb[1], b: rgb[2] } } })
    [format]()
    .toBuffer();

/** A white picture with a dark block in it: what a page with content looks like. */
const drawn = (format: 'jpeg' | 'png') =>
  sharp({ create: { width: 800, height: 600, channels: 3, background: { r: 255, g: 255, b: 255 } } })
    .composite([{ input: { create: { width: 120, height: 40, channels: 3, background: { r: 20, g: 20, b: 20 } } }, left: 30, top: 30 }])
    [format]()
    .toBuffer();

function stubPage() {
  const page = sinon.createStubInstance(PageSession);
  return page;
}

describe('painting: blank pictures and web fonts (unit: the page stubbed)', () => {
  afterEach(() => sinon.restore());

  it('tells a picture of one colour, in JPEG and PNG, from one with content', async () => {
    expect(await isOneColour(await solid('jpeg', [255, 255, 255]))).to.equal(true);
    expect(await isOneColour(await solid('png', [12, 80, 200]))).to.equal(true);
    expect(await isOneColour(await drawn('jpeg'))).to.equal(false);
    expect(await isOneColour(await drawn('png'))).to.equal(false);
    // Within the tolerance: one colour; a single dot, which averaging all but hides: not.
    const near = await sharp({ create: { width: 800, height: 600, channels: 3, background: { r: 250, g: 250, b: 250 } } })
      .composite([{ input: { create: { width: 400, height: 300, channels: 3, background: { r: 252, g: 248, b: 250 } } }, left: 0, top: 0 }])
      .png()
      .toBuffer();
    expect(await isOneColour(near)).to.equal(true);
    const dot = await sharp({ create: { width: 800, height: 600, channels: 3, background: { r: 255, g: 255, b: 255 } } })
      .composite([{ input: { create: { width: 1, height: 1, channels: 3, background: { r: 0, g: 0, b: 0 } } }, left: 403, top: 301 }])
      .png()
      .toBuffer();
    expect(await isOneColour(dot)).to.equal(false);
  });

  it('reads a large picture that looks flat in full off the event loop (a JavaScript pass held it for the whole read)', async () => {
    // A full page drawn in one colour (a page whose text is in its background's colour).
    const [width, height] = [3000, 6000];
    const page = await sharp({ create: { width, height, channels: 3, background: { r: 255, g: 255, b: 255 } } })
      .png({ compressionLevel: 9 })
      .toBuffer();
    expect(mayBeOneColour('png', width, height, page.length), 'small enough in bytes to be looked at').to.equal(true);
    let last = performance.now();
    let stall = 0;
    const timer = setInterval(() => {
      stall = Math.max(stall, performance.now() - last);
      last = performance.now();
    }, 5);
    try {
      expect(await isOneColour(page)).to.equal(true);
      stall = Math.max(stall, performance.now() - last);
    } finally {
      clearInterval(timer);
    }
    expect(stall, `the event loop stalled ${Math.round(stall)} ms`).to.be.below(100);
  });

  it('tells a page with content at a glance: a 1280x800 JPEG of one line of text in a few ms, not the 40 of a full read', async () => {
    const page = await sharp(
      Buffer.from(
        '<svg xmlns="http://www.w3.org/2000/svg" width="1280" height="800"><rect width="100%" height="100%" fill="#fff"/>' +
          '<text x="20" y="60" font-size="16" font-family="sans-serif">Loading</text></svg>',
      ),
    )
      .jpeg({ quality: 80 })
      .toBuffer();
    expect(mayBeOneColour('jpeg', 1280, 800, page.length), 'small enough in bytes to be looked at').to.equal(true);
    const reads = sinon.spy(sharp.prototype, 'raw');
    expect(await isOneColour(page)).to.equal(false);
    expect(reads.callCount, 'the glance only').to.equal(1);
  });

  it('does not decode a picture too large in bytes to be of one colour in its format: a sparse page, heading, paragraph and box', async () => {
    const page = await sharp(
      Buffer.from(
        '<svg xmlns="http://www.w3.org/2000/svg" width="1280" height="800"><rect width="100%" height="100%" fill="#fff"/>' +
          '<text x="24" y="56" font-size="32" font-weight="bold" font-family="sans-serif">A simple page</text>' +
          '<text x="24" y="110" font-size="16" font-family="sans-serif">One heading, one paragraph, one box.</text>' +
          '<rect x="24" y="140" width="300" height="200" fill="#2a6df4"/></svg>',
      ),
    )
      .jpeg({ quality: 80 })
      .toBuffer();
    const reads = sinon.spy(sharp.prototype, 'raw');
    expect(await isOneColour(page)).to.equal(false);
    expect(reads.callCount, 'not decoded').to.equal(0);
  });

  it("bounds a picture of one colour by what Chromium writes for one, in each format, and looks at a small element's", async () => {
    // Chromium 156's bytes for a page of one colour (the largest of four colours; PNG with optimize_for_speed).
    for (const [format, width, height, bytes] of [
      ['jpeg', 320, 200, 1152],
      ['jpeg', 1280, 800, 6762],
      ['jpeg', 2560, 1600, 24762],
      ['png', 320, 200, 1747],
      ['png', 1280, 800, 18180],
      ['png', 2560, 1600, 65283],
      ['webp', 320, 200, 688],
      ['webp', 1280, 800, 2390],
    ] as const)
      expect(mayBeOneColour(format, width, height, bytes), `${format} ${width}x${height}`).to.equal(true);
    expect(mayBeOneColour('jpeg', 1280, 800, 14971), "the bench's simple page, as Chromium writes it").to.equal(false);
    expect(mayBeOneColour('gif', 1280, 800, 10 ** 7), 'a format not measured is looked at').to.equal(true);
    // A 100x40 element of one colour: its headers alone are far more than a few hundredths of a byte per pixel.
    const element = await sharp({ create: { width: 100, height: 40, channels: 3, background: { r: 255, g: 255, b: 255 } } })
      .jpeg()
      .toBuffer();
    expect(element.length / 4000).to.be.above(0.05);
    expect(await isOneColour(element)).to.equal(true);
  });

  it("reads a picture's size from its header without sharp, in JPEG, PNG and WebP", async () => {
    const metadata = sinon.spy(sharp.prototype, 'metadata');
    const raw = sinon.spy(sharp.prototype, 'raw');
    const content = await drawn('jpeg');
    const big = Buffer.concat([content, Buffer.alloc(20_000)]);
    // Too large for one colour at 800x600 in its format, so neither read nor decoded.
    expect(await isOneColour(big)).to.equal(false);
    expect(raw.callCount, 'not decoded').to.equal(0);
    for (const format of ['jpeg', 'png', 'webp'] as const) {
      const blank = await sharp({ create: { width: 800, height: 600, channels: 3, background: { r: 240, g: 240, b: 240 } } })
        [format]()
        .toBuffer();
      expect(await isOneColour(blank), format).to.equal(true);
    }
    expect(metadata.callCount, "sharp's metadata()").to.equal(0);
  });

  it('takes the picture again, after the next frames, while it is blank and the page has content', async () => {
    const page = stubPage();
    page.evaluate.resolves(true);
    const blank = { image: await solid('jpeg', [255, 255, 255]), contentType: 'image/jpeg' };
    const painted = { image: await drawn('jpeg'), contentType: 'image/jpeg' };
    const again = sinon.stub().onFirstCall().resolves(blank).onSecondCall().resolves(painted);
    const shot = await untilPainted(page, blank, again, Date.now() + 30_000);
    expect(shot).to.equal(painted);
    sinon.assert.calledTwice(again);
    // One look at the page's content, then a wait for two frames before each try.
    expect(page.evaluate.args.filter(([expr]) => expr.includes('requestAnimationFrame'))).to.have.length(2);
  });

  it('keeps a picture with content as it is, without looking at the page', async () => {
    const page = stubPage();
    const painted = { image: await drawn('png'), contentType: 'image/png' };
    const again = sinon.stub();
    expect(await untilPainted(page, painted, again, Date.now() + 30_000)).to.equal(painted);
    sinon.assert.notCalled(again);
    sinon.assert.notCalled(page.evaluate);
  });

  it('keeps a blank picture of a page with nothing to show, after one look at the page', async () => {
    const page = stubPage();
    page.evaluate.resolves(false);
    const blank = { image: await solid('png', [255, 255, 255]), contentType: 'image/png' };
    const again = sinon.stub();
    expect(await untilPainted(page, blank, again, Date.now() + 30_000)).to.equal(blank);
    sinon.assert.notCalled(again);
    sinon.assert.calledOnce(page.evaluate);
  });

  it(`gives up after ${REPAINT_TRIES} tries, and takes none when the deadline is near`, async () => {
    const page = stubPage();
    page.evaluate.resolves(true);
    const blank = { image: await solid('jpeg', [0, 0, 0]), contentType: 'image/jpeg' };
    const again = sinon.stub().resolves(blank);
    expect(await untilPainted(page, blank, again, Date.now() + 30_000)).to.equal(blank);
    sinon.assert.callCount(again, REPAINT_TRIES);
    again.resetHistory();
    await untilPainted(page, blank, again, Date.now() + 500);
    sinon.assert.notCalled(again);
  });

  it('leaves a PDF alone', async () => {
    const page = stubPage();
    const pdf = { image: Buffer.from('%PDF-1.7'), contentType: 'application/pdf' };
    expect(await untilPainted(page, pdf, sinon.stub(), Date.now() + 30_000)).to.equal(pdf);
    sinon.assert.notCalled(page.evaluate);
  });

  it(`waits for the page's fonts and the images in view at most ${DRAWING_MS} ms`, async () => {
    const clock = sinon.useFakeTimers();
    const page = stubPage();
    page.evaluate.returns(new Promise(() => undefined));
    let done = false;
    const settled = settleDrawing(page, Date.now() + 60_000, true).then(() => {
      done = true;
    });
    await clock.tickAsync(DRAWING_MS - 1);
    expect(done).to.equal(false);
    await clock.tickAsync(1);
    await settled;
    expect(done).to.equal(true);
    expect(page.evaluate.firstCall.args[0]).to.include('loadingdone');
  });
});
