/**
 * Layouts and markup of real pages, in one viewport (800x600, PNG, wait=0): right-to-left
 * layout, a huge DOM, a page drawn with SVG, responsive images (srcset, sizes, <picture>).
 */
import { COLOURS, type QualityPage, type Rgb, css, doc, solidPng, solidSvg } from './page';
import { expectBlank, expectColour, expectInk, expectNotColour, expectSize } from './picture';

const LOGO: Rgb = COLOURS.blue;
const NAV: Rgb = COLOURS.grey;
const SIDEBAR: Rgb = COLOURS.teal;

/** Rows of the huge table, 5 elements each (tr and 4 td) besides their text. */
const HUGE_ROWS = 20_000;
const ROW_A: Rgb = [235, 240, 250];
const ROW_B: Rgb = [250, 235, 235];

function hugeTable(): string {
  const rows: string[] = [];
  for (let i = 0; i < HUGE_ROWS; i++) rows.push(`<tr><td>${i}</td><td>item ${i}</td><td>${(i * 7) % 1000}</td><td><span>ok</span></td></tr>`);
  return doc(`<table style="width:800px;border-collapse:collapse"><tbody>${rows.join('')}</tbody></table>`, {
    head:
      `<style>td{height:20px;padding:0 4px;font:14px sans-serif;white-space:nowrap}tr:nth-child(odd){background:${css(ROW_A)}}` +
      `tr:nth-child(even){background:${css(ROW_B)}}</style>`,
  });
}

/** 600 inline SVG icons (20 a row, 40 px apart), a sprite's <use>, an <img> SVG, a CSS background SVG, a gradient. */
const ICON_COLOURS: Rgb[] = [COLOURS.red, COLOURS.green, COLOURS.blue];
function svgPage(): string {
  const icons = Array.from(
    { length: 600 },
    (_, i) =>
      `<svg width="40" height="40" viewBox="0 0 40 40"><circle cx="20" cy="20" r="16" fill="${css(ICON_COLOURS[i % 3]!)}"/>` +
      '<path d="M12 20 l6 6 l10 -12" stroke="#fff" stroke-width="3" fill="none"/></svg>',
  ).join('');
  const background = encodeURIComponent(
    `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10" fill="${css(COLOURS.orange)}"/></svg>`,
  );
  return doc(
    '<svg width="0" height="0" style="position:absolute"><defs><symbol id="star" viewBox="0 0 100 100">' +
      `<rect width="100" height="100" fill="${css(COLOURS.pink)}"/></symbol>` +
      `<linearGradient id="g"><stop offset="0" stop-color="${css(COLOURS.yellow)}"/><stop offset="1" stop-color="${css(COLOURS.indigo)}"/></linearGradient></defs></svg>` +
      `<div style="position:absolute;left:0;top:0;width:800px;line-height:0;font-size:0">${icons}</div>` +
      '<svg style="position:absolute;left:20px;top:420px" width="100" height="100"><use href="#star"/></svg>' +
      `<img src="${solidSvg(COLOURS.brown, 100, 100)}" style="position:absolute;left:140px;top:420px" width="100" height="100">` +
      `<div style="position:absolute;left:260px;top:420px;width:100px;height:100px;background:url('data:image/svg+xml,${background}')"></div>` +
      '<svg style="position:absolute;left:380px;top:420px" width="400" height="100"><rect width="400" height="100" fill="url(#g)"/>' +
      '<text x="20" y="60" font-size="32" fill="#fff">SVG text</text></svg>',
  );
}

export const LAYOUT_PAGES: QualityPage[] = [
  {
    name: 'rtl-layout',
    mimics: 'Arabic and Hebrew sites (dir="rtl" on <html>): logo on the right, navigation on the left, sidebar on the right, text aligned right',
    routes: {
      '/': {
        body: doc(
          `<header style="display:flex;justify-content:space-between;height:60px"><div style="width:120px;background:${css(LOGO)}"></div>` +
            `<nav style="width:300px;background:${css(NAV)}"></nav></header>` +
            `<div style="display:grid;grid-template-columns:200px 1fr;height:300px"><aside style="background:${css(SIDEBAR)}"></aside>` +
            '<main><p style="margin:20px;font-size:24px">שלום</p></main></div>',
          { lang: 'he', dir: 'rtl' },
        ),
      },
    },
    params: {},
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 600);
      expectColour(p, 740, 30, LOGO, 'the logo, at the start of the line (right)');
      expectColour(p, 60, 30, NAV, 'the navigation, at the end of the line (left)');
      expectColour(p, 700, 200, SIDEBAR, 'the sidebar, the first grid column (right)');
      expectColour(p, 100, 200, COLOURS.white, 'the main column (left of the sidebar)');
      // The short paragraph sits against the main column's right edge (x 580), not its left.
      expectInk(p, { x: 480, y: 80, w: 100, h: 40 }, 'the paragraph, aligned right');
      expectBlank(p, { x: 0, y: 80, w: 300, h: 40 }, 'the left of the paragraph line');
    },
  },
  {
    name: 'huge-dom',
    mimics: 'admin tables, long forums and unpaginated listings: a 20 000-row table (100 000 elements)',
    routes: { '/': { body: hugeTable() } },
    params: {},
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 600);
      for (let row = 0; row < 28; row += 9) expectColour(p, 790, row * 20 + 10, row % 2 ? ROW_B : ROW_A, `row ${row}'s background`, 4);
      expectInk(p, { x: 0, y: 0, w: 300, h: 600 }, 'the rows’ text', 0.01, ROW_A);
      if (a.ms > 20_000) throw new Error(`the capture took ${a.ms} ms, expected a huge DOM to take less than 20 s`);
    },
  },
  {
    name: 'svg-heavy',
    mimics: 'icon-heavy dashboards and marketing pages: hundreds of inline SVG icons, a sprite with <use>, SVG images, backgrounds and gradients',
    routes: { '/': { body: svgPage() } },
    params: {},
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 600);
      // Icon i is at column i % 20, row floor(i / 20); a circle of colour i % 3.
      for (const i of [0, 1, 2, 57, 119, 199]) expectColour(p, (i % 20) * 40 + 8, Math.floor(i / 20) * 40 + 20, ICON_COLOURS[i % 3]!, `inline icon ${i}`);
      expectColour(p, 70, 470, COLOURS.pink, 'the sprite symbol drawn by <use>');
      expectColour(p, 190, 470, COLOURS.brown, 'the <img> SVG');
      expectColour(p, 310, 470, COLOURS.orange, 'the CSS background SVG');
      expectColour(p, 385, 425, COLOURS.yellow, 'the gradient, left', 30);
      expectColour(p, 775, 425, COLOURS.indigo, 'the gradient, right', 30);
      expectInk(p, { x: 390, y: 430, w: 200, h: 60 }, 'the SVG text', 0.01, [230, 230, 230]);
    },
  },
  {
    name: 'srcset-picture',
    mimics: 'responsive images of news sites and CMSs (WordPress srcset, <picture> with art direction and modern formats)',
    routes: {
      '/': {
        body: doc(
          // A: density descriptors at scale_factor 1 pick the 1x image.
          `<img style="position:absolute;left:20px;top:20px" width="200" height="100" src="${solidSvg(COLOURS.grey, 200, 100)}" ` +
            `srcset="${solidSvg(COLOURS.red, 200, 100)} 1x, ${solidSvg(COLOURS.green, 400, 200)} 2x">` +
            // B: width descriptors; sizes makes the slot 50vw (400 px), so the 400w image.
            `<img style="position:absolute;left:240px;top:20px" width="200" height="100" src="${solidSvg(COLOURS.grey, 200, 100)}" ` +
            `srcset="${solidSvg(COLOURS.indigo, 400, 200)} 400w, ${solidSvg(COLOURS.teal, 1600, 800)} 1600w" sizes="(max-width: 600px) 100vw, 50vw">` +
            // C: art direction by media query: the first source whose media matches 800 px.
            `<picture><source media="(min-width: 1200px)" srcset="${solidSvg(COLOURS.orange, 200, 100)}">` +
            `<source media="(min-width: 700px)" srcset="${solidSvg(COLOURS.blue, 200, 100)}">` +
            `<img style="position:absolute;left:460px;top:20px" width="200" height="100" src="${solidSvg(COLOURS.grey, 200, 100)}"></picture>` +
            // D: a format the browser does not know is skipped for the next source.
            `<picture><source type="image/x-quality-unknown" srcset="${solidSvg(COLOURS.red, 200, 100)}">` +
            `<source type="image/png" srcset="${solidPng(COLOURS.pink, 200, 100)}">` +
            `<img style="position:absolute;left:20px;top:140px" width="200" height="100" src="${solidSvg(COLOURS.grey, 200, 100)}"></picture>`,
        ),
      },
    },
    params: {},
    async check(a) {
      const p = await a.picture();
      expectColour(p, 120, 70, COLOURS.red, 'srcset with 1x/2x at scale_factor 1');
      expectColour(p, 340, 70, COLOURS.indigo, 'srcset with widths and sizes (a 400 px slot)');
      expectColour(p, 560, 70, COLOURS.blue, '<picture> with media queries at 800 px');
      expectColour(p, 120, 190, COLOURS.pink, '<picture> skipping an unknown type for PNG');
      expectNotColour(p, 120, 190, COLOURS.grey, '<picture> fallback');
    },
  },
];
