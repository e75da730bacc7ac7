/**
 * painting.ts with the page stubbed (sinon) and real images (sharp): a picture of one colour
 * is told from a page with content, and taken again while the page has something to show;
 * the wait for web fonts is bounded.
 */
import { expect } from 'chai';
import sharp from 'sharp';
import sinon from 'sinon';
import { DRAWING_MS, REPAINT_TRIES, isOneColour, settleDrawing, untilPainted } from '../../../services/capture/page/painting';
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

  it('tells a page with content at a glance: a 1280x800 JPEG of text in a few ms, not the 40 of a full read', async () => {
    let text = '';
    for (let y = 60; y < 300; y += 24) text += `<text x="20" y="${y}" font-size="16" font-family="sans-serif">Line ${y} lorem ipsum</text>`;
    const page = await sharp(
      Buffer.from(`<svg xmlns="http://www.w3.org/2000/svg" width="1280" height="800"><rect width="100%" height="100%" fill="#fff"/>${text}</svg>`),
    )
      .jpeg({ quality: 80 })
      .toBuffer();
    expect(page.length, 'small enough in bytes to be looked at').to.be.below(1280 * 800 * 0.03);
    const reads = sinon.spy(sharp.prototype, 'raw');
    expect(await isOneColour(page)).to.equal(false);
    expect(reads.callCount, 'the glance only').to.equal(1);
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
