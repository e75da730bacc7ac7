/**
 * PDF options end to end on the real Grid: each PDF is read back with pdf.js (Mozilla's PDF
 * reader) for its page sizes, its page count, where its text sits and what its header and
 * footer say. A long local page whose end loads when scrolled into view shows that a PDF on
 * paper loads lazy content first, as a full page does; a page with a bar fixed to the bottom of
 * the screen, that the bar is printed on every sheet, as a browser prints it. With fullpage, the
 * one sheet is the page as the full-page image shows it: screens sized on the viewport keep its
 * height (printing lays them out at the sheet's), what is fixed is where the image has it.
 */
import { expect } from 'chai';
import { pageCount } from '../../../services/capture/page/pdf';
import { screenshotsUsed, snapSuite } from '../../support/capture-helpers';
import { expectEnvelope } from '../../support/errors';
import { type LocalServer, servePages } from '../../support/local-server';

interface PdfPage {
  width: number;
  height: number;
  /** Its text items: the string and where it starts (x, y from the bottom, in points). */
  text: { str: string; x: number; y: number }[];
}

/** pdf.js is an ES module; Node 20 loads it with require. */
async function readPdf(bytes: Buffer): Promise<PdfPage[]> {
  const pdfjs = require('pdfjs-dist/legacy/build/pdf.mjs') as typeof import('pdfjs-dist');
  const doc = await pdfjs.getDocument({ data: new Uint8Array(bytes), useSystemFonts: false, isEvalSupported: false }).promise;
  const pages: PdfPage[] = [];
  for (let i = 1; i <= doc.numPages; i++) {
    const page = await doc.getPage(i);
    const { width, height } = page.getViewport({ scale: 1 });
    const content = await page.getTextContent();
    const text = content.items.flatMap((it) =>
      'str' in it && it.str.trim() ? [{ str: it.str, x: it.transform[4] as number, y: it.transform[5] as number }] : [],
    );
    pages.push({ width, height, text });
  }
  await doc.destroy();
  return pages;
}

const SECTIONS = 6;
const LONG =
  '<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0;padding:0;font:20px sans-serif}' +
  'section{height:1400px;background:#eef}</style></head><body>' +
  Array.from({ length: SECTIONS }, (_, i) => `<section><p>Section ${i + 1}</p></section>`).join('') +
  // Content a script loads when its place scrolls into view (an infinite list, a lazy widget):
  // printing alone never scrolls there.
  '<div id="more" style="height:50px"></div><script>new IntersectionObserver((es, o) => { if (!es[0].isIntersecting) return; o.disconnect(); ' +
  "fetch('/more').then((r) => r.text()).then((t) => { document.getElementById('more').textContent = t; }); }).observe(document.getElementById('more'));" +
  '</script></body></html>';

// A shop's page with a bar fixed to the bottom of the screen: a browser prints such a bar on every sheet.
const FIXED_BAR =
  '<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0;padding:0;font:20px sans-serif}' +
  'section{height:700px;background:#eef}</style></head><body>' +
  Array.from({ length: 4 }, (_, i) => `<section><p>Part ${i + 1}</p></section>`).join('') +
  '<div style="position:fixed;left:0;right:0;bottom:0;height:50px;background:rgb(20,30,110);color:#fff">Add to cart</div></body></html>';

// A page taller than a full-page capture may be (16 000 CSS px): 20 parts of 1000 px.
const TALL =
  '<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0;padding:0;font:20px sans-serif}' +
  'section{height:1000px;background:#efe}</style></head><body>' +
  Array.from({ length: 20 }, (_, i) => `<section><p>Part ${i + 1}</p></section>`).join('') +
  '</body></html>';

// Screens sized on the viewport's height: a full-screen header (100vh), one at least as tall
// (min-height in svh), one of half the screen less 100 px (dvh), then parts of 400 px each.
const HEROES = (parts: number) =>
  '<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0;padding:0;font:20px sans-serif}' +
  'section{height:400px;background:#eef}</style></head><body>' +
  '<div style="height:100vh;background:rgb(0,128,255)">Hero</div>' +
  '<div style="min-height:100svh;background:rgb(255,140,0)">Second screen</div>' +
  '<div style="height:calc(50dvh - 100px);background:#ccc">Third</div>' +
  Array.from({ length: parts }, (_, i) => `<section><p style="margin:0">Part ${i + 1}</p></section>`).join('') +
  '</body></html>';

// A page sized on its root (html and body 100% high, a section 100% of the body) and a sidebar
// fixed from the top to the bottom of the screen.
const ROOT_SIZED =
  '<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0;padding:0;height:100%;font:20px sans-serif}' +
  'section{height:400px;background:#eef}</style></head><body>' +
  '<div style="height:100%;background:rgb(0,128,255)">Hero</div>' +
  Array.from({ length: 5 }, (_, i) => `<section><p style="margin:0">Part ${i + 1}</p></section>`).join('') +
  '<nav style="position:fixed;top:0;bottom:0;right:0;width:100px;background:#333;color:#fff;display:flex;flex-direction:column;justify-content:flex-end">Side end</nav>' +
  '</body></html>';

// Fixed to the lower half of the screen by its top (a notice 700 px down) rather than by its bottom.
const TOP_FIXED =
  '<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0;padding:0;font:20px sans-serif}' +
  'section{height:700px;background:#eef}</style></head><body>' +
  Array.from({ length: 4 }, (_, i) => `<section><p style="margin:0">Part ${i + 1}</p></section>`).join('') +
  '<div style="position:fixed;left:0;top:700px;height:50px;background:rgb(20,30,110);color:#fff">Notice</div></body></html>';

describe('PDF options, read back from the PDF (real Grid)', function () {
  this.timeout(60_000);
  const t = snapSuite({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '2' });
  let site: LocalServer;
  let lazyAsked = 0;
  before(async () => {
    site = await servePages((r) => {
      if (r.path === '/long') return { body: LONG };
      if (r.path === '/fixed-bar') return { body: FIXED_BAR };
      if (r.path === '/tall') return { body: TALL };
      if (r.path === '/heroes') return { body: HEROES(Number(new URLSearchParams(r.query).get('parts') ?? 6)) };
      if (r.path === '/root-sized') return { body: ROOT_SIZED };
      if (r.path === '/top-fixed') return { body: TOP_FIXED };
      if (r.path === '/more') {
        lazyAsked++;
        return { body: 'Loaded when scrolled to', headers: { 'content-type': 'text/plain' } };
      }
      return undefined;
    });
  });
  after(() => site.stop());

  const printed = async (params: Record<string, string | number | boolean>) => {
    const r = await t.snap({ url: `${site.origin}/long`, image_format: 'pdf', ...params });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(r.headers.get('content-type')).to.equal('application/pdf');
    const pages = await readPdf(r.raw);
    // The service's own count of a PDF's pages (pdf_page_ranges' check) agrees with pdf.js on every PDF printed here.
    expect(pageCount(r.raw), 'pageCount').to.equal(pages.length);
    return pages;
  };
  const points = (inches: number) => inches * 72;
  /** Chromium rounds a paper's size to its own units: about a point either way. */
  const TOL = 1.5;

  it('without options: one sheet per viewport height at the viewport width, as before', async () => {
    const pages = await printed({ page_width: 960, page_height: 540 });
    expect(pages[0]?.width).to.be.closeTo(points(960 / 96), TOL);
    expect(pages[0]?.height).to.be.closeTo(points(540 / 96), TOL);
  });

  it('with fullpage, a page taller than the maximum is one sheet cut there (16 000 px of paper), not continued on more sheets', async () => {
    const r = await t.snap({ url: `${site.origin}/tall`, image_format: 'pdf', fullpage: true, page_width: 800, page_height: 600 });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    const pages = await readPdf(r.raw);
    expect(pages).to.have.length(1);
    expect(pages[0]!.height).to.be.closeTo(points(16_000 / 96), TOL);
    const parts = pages[0]!.text.map((x) => x.str);
    expect(parts).to.include('Part 1').and.include('Part 16');
    expect(parts).to.not.include('Part 17');
  });

  /** Where each text item's line starts on a one-sheet PDF: CSS px down from the sheet's top (the text's baseline, less the line's ascent). */
  const linesDown = (page: PdfPage) => new Map(page.text.map((x) => [x.str, (page.height - x.y) / 0.75 - 18] as const));
  const fullPagePdf = async (path: string) => {
    const r = await t.snap({ url: `${site.origin}${path}`, image_format: 'pdf', fullpage: true, page_width: 1280, page_height: 800 });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    const pages = await readPdf(r.raw);
    expect(pages, 'one sheet').to.have.length(1);
    return pages[0] as PdfPage;
  };

  it('with fullpage, screens sized on the viewport (vh, svh, dvh) keep the viewport height on the sheet, which is as tall as the page seen on the screen', async () => {
    const sheet = await fullPagePdf('/heroes?parts=6');
    // 800 + 800 + 300 + 6 x 400 px, as the full-page image has it (the sheet laid out at its own
    // height made each screen the sheet's height, and the parts went onto sheets of their own).
    expect(sheet.height).to.be.closeTo(points(4300 / 96), TOL);
    const at = linesDown(sheet);
    const expected: Array<[string, number]> = [
      ['Hero', 0],
      ['Second screen', 800],
      ['Third', 1600],
      ['Part 1', 1900],
      ['Part 6', 3900],
    ];
    for (const [text, top] of expected) expect(at.get(text), `${text}: ${JSON.stringify([...at])}`).to.be.closeTo(top, 4);
  });

  it('with fullpage, a page with a full-screen header taller than the maximum: the sheet is cut at it, the header a screen tall', async () => {
    const sheet = await fullPagePdf('/heroes?parts=50');
    expect(sheet.height).to.be.closeTo(points(16_000 / 96), TOL);
    const at = linesDown(sheet);
    expect(at.get('Part 1'), JSON.stringify([...at].slice(0, 6))).to.be.closeTo(1900, 4);
    // Part 36 starts at 1900 + 35 x 400 = 15 900 px, on the sheet; part 37 at 16 300, past its end.
    expect(at.get('Part 36')).to.be.closeTo(15_900, 4);
    expect(at.has('Part 37')).to.equal(false);
  });

  it('with fullpage, a root sized to the screen (height: 100%) and a sidebar fixed from top to bottom keep their screen heights on the sheet', async () => {
    const sheet = await fullPagePdf('/root-sized');
    expect(sheet.height).to.be.closeTo(points(2800 / 96), TOL);
    const at = linesDown(sheet);
    expect(at.get('Part 1'), JSON.stringify([...at])).to.be.closeTo(800, 4);
    // The sidebar's text ends its 800 px (as on the first screen of the full-page image).
    expect(at.get('Side end'), JSON.stringify([...at])).to.be.closeTo(800 - 23, 6);
  });

  it('with fullpage, a bar fixed to the bottom of the screen is once at the bottom of the sheet, as in the full-page image', async () => {
    const sheet = await fullPagePdf('/fixed-bar');
    const bars = sheet.text.filter((x) => x.str.includes('Add to cart'));
    expect(bars, sheet.text.map((x) => x.str).join(' ')).to.have.length(1);
    // Its line starts within the bar's 50 CSS px (37.5 pt) above the sheet's bottom.
    expect(bars[0]?.y).to.be.within(0, 40);
    expect(sheet.text.map((x) => x.str)).to.include('Part 4');
  });

  it('with fullpage, an element fixed in the lower half of the screen by its top (which the sheet leaves there) is at the bottom of the sheet, as in the full-page image', async () => {
    const sheet = await fullPagePdf('/top-fixed');
    const at = linesDown(sheet);
    // 700 px down the screen: 100 px above the bottom of the last screen of 2 800 px.
    expect(at.get('Notice'), JSON.stringify([...at])).to.be.closeTo(2700, 4);
  });

  it('pdf_paper_format=a4 prints the whole document on A4 sheets, content loaded on scrolling loaded first', async () => {
    lazyAsked = 0;
    const pages = await printed({ pdf_paper_format: 'a4' });
    expect(pages.length).to.be.greaterThan(SECTIONS);
    for (const p of pages) {
      expect(p.width).to.be.closeTo(595.4, TOL);
      expect(p.height).to.be.closeTo(842.4, TOL);
    }
    const all = pages.flatMap((p) => p.text.map((x) => x.str)).join(' ');
    for (let i = 1; i <= SECTIONS; i++) expect(all).to.contain(`Section ${i}`);
    expect(lazyAsked, 'the content loaded on scrolling to the end was asked for before printing').to.be.greaterThan(0);
    expect(all).to.contain('Loaded when scrolled to');
  });

  for (const fullpage of [false, true]) {
    it(`on paper${fullpage ? ' (with fullpage)' : ''}, a bar fixed to the bottom of the screen is printed at the bottom of every sheet, as a browser prints it`, async () => {
      const r = await t.snap({ url: `${site.origin}/fixed-bar`, image_format: 'pdf', pdf_paper_format: 'a5', ...(fullpage ? { fullpage } : {}) });
      expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
      const pages = await readPdf(r.raw);
      expect(pages.length).to.be.greaterThan(2);
      pages.forEach((p, i) => {
        const bar = p.text.find((x) => x.str.includes('Add to cart'));
        expect(bar, `sheet ${i + 1} of ${pages.length}: ${p.text.map((x) => x.str).join(' ')}`).to.not.equal(undefined);
        // Its line starts within the bar's 50 CSS px (37.5 pt) above the sheet's bottom.
        expect(bar?.y, `sheet ${i + 1}: the bar's text, points from the bottom`).to.be.within(0, 40);
      });
    });
  }

  it('pdf_landscape turns the paper; pdf_paper_width and pdf_paper_height set it', async () => {
    const turned = await printed({ pdf_paper_format: 'letter', pdf_landscape: true });
    expect(turned[0]?.width).to.be.closeTo(792, TOL);
    expect(turned[0]?.height).to.be.closeTo(612, TOL);
    const sized = await printed({ pdf_paper_width: '100mm', pdf_paper_height: '150mm' });
    expect(sized[0]?.width).to.be.closeTo((100 / 25.4) * 72, TOL);
    expect(sized[0]?.height).to.be.closeTo((150 / 25.4) * 72, TOL);
  });

  it('pdf_margin moves the content in; pdf_scale shrinks it onto fewer pages', async () => {
    const plain = await printed({ pdf_paper_format: 'a4' });
    const margined = await printed({ pdf_paper_format: 'a4', pdf_margin: '2in' });
    const x = (pages: PdfPage[]) => pages[0]?.text.find((i) => i.str.includes('Section 1'))?.x ?? Number.NaN;
    expect(x(plain)).to.be.below(points(0.5));
    expect(x(margined)).to.be.at.least(points(2) - 1);
    const half = await printed({ pdf_paper_format: 'a4', pdf_scale: 0.5 });
    expect(half.length).to.be.below(plain.length * 0.7);
  });

  it('pdf_page_ranges keeps the pages named, a range running past the end to the last page; a page past the end is 400 invalid_parameter, nothing charged', async () => {
    const all = await printed({ pdf_paper_format: 'a4' });
    const two = await printed({ pdf_paper_format: 'a4', pdf_page_ranges: '2-3' });
    expect(two).to.have.length(2);
    const onwards = await printed({ pdf_paper_format: 'a4', pdf_page_ranges: '2-999' });
    expect(onwards).to.have.length(all.length - 1);
    const { access_token } = await t.sys.account('free');
    const snap = (pdf_page_ranges: string) =>
      t.snap({ url: `${site.origin}/long`, image_format: 'pdf', pdf_paper_format: 'a4', pdf_page_ranges }, access_token);
    expectEnvelope(await snap('500'), 400, 'invalid_parameter', 'pdf_page_ranges');
    // Chromium prints page 1 and leaves out the rest: refused, not one page answered for two asked.
    expectEnvelope(await snap(`1,${all.length + 1}`), 400, 'invalid_parameter', 'pdf_page_ranges', `fewer than ${all.length + 1} pages`);
    expectEnvelope(await snap(`1-2,${all.length + 3}-${all.length + 9}`), 400, 'invalid_parameter', 'pdf_page_ranges');
    expect(await screenshotsUsed(t.sys, access_token)).to.equal(0);
  });

  it('pdf_header_template and pdf_footer_template print on every page, page numbers filled in', async () => {
    const pages = await printed({
      pdf_paper_format: 'a5',
      pdf_margin: '1in',
      pdf_header_template: '<div style="font-size:10px">Quarterly report</div>',
      pdf_footer_template: '<div style="font-size:10px">Page <span class="pageNumber"></span> of <span class="totalPages"></span></div>',
    });
    expect(pages.length).to.be.greaterThan(2);
    pages.forEach((p, i) => {
      const words = p.text.map((x) => x.str).join(' ');
      expect(words).to.contain('Quarterly report');
      expect(words.replace(/\s+/g, ' ')).to.contain(`Page ${i + 1} of ${pages.length}`);
    });
  });

  it('refuses PDF options it cannot take as given, with a note saying what to send', async () => {
    const url = `${site.origin}/long`;
    expectEnvelope(await t.snap({ url, image_format: 'png', pdf_landscape: true }), 400, 'invalid_parameter', 'image_format=pdf');
    expectEnvelope(await t.snap({ url, pdf_paper_format: 'a4' }), 400, 'invalid_parameter', 'shapes a PDF only');
    expectEnvelope(await t.snap({ url, image_format: 'pdf', pdf_paper_width: '4in' }), 400, 'invalid_parameter', 'pdf_paper_height');
    expectEnvelope(
      await t.snap({ url, image_format: 'pdf', pdf_paper_format: 'a4', pdf_paper_width: '4in', pdf_paper_height: '6in' }),
      400,
      'invalid_parameter',
      'format or by pdf_paper_width',
    );
    expectEnvelope(await t.snap({ url, image_format: 'pdf', pdf_margin: '10pt' }), 400, 'invalid_parameter', 'pdf_margin');
    expectEnvelope(await t.snap({ url, image_format: 'pdf', pdf_paper_format: 'b5' }), 400, 'invalid_parameter', 'pdf_paper_format');
    expectEnvelope(await t.snap({ url, image_format: 'pdf', pdf_scale: 3 }), 400, 'invalid_parameter', 'pdf_scale');
    expectEnvelope(await t.snap({ url, image_format: 'pdf', pdf_page_ranges: '0-2' }), 400, 'invalid_parameter', 'pdf_page_ranges');
    // A paper so small the page would print on thousands of sheets, or larger than a PDF page can be: refused before the page loads.
    const tiny = await t.snap({ url, image_format: 'pdf', pdf_paper_width: '1px', pdf_paper_height: '1px' });
    expectEnvelope(tiny, 400, 'invalid_parameter', 'pdf_paper_width', 'at least 1in');
    expectEnvelope(
      await t.snap({ url, image_format: 'pdf', pdf_paper_width: '8in', pdf_paper_height: '9999in' }),
      400,
      'invalid_parameter',
      'pdf_paper_height',
      'at most 200in',
    );
    // Margins that leave no room are named as sent, not as an option the request did not send.
    const margins = await t.snap({ url, image_format: 'pdf', pdf_paper_format: 'a4', pdf_margin_top: '20cm', pdf_margin_bottom: '10cm' });
    expectEnvelope(margins, 400, 'invalid_parameter', 'pdf_margin_top or pdf_margin_bottom');
  });
});
