/**
 * Captures of one element (selectors) and of pages that scroll smoothly: an article taller than
 * the screen under a fixed header and a sticky sub-navigation, and pages with
 * `html { scroll-behavior: smooth }` (Bootstrap 5's default) whose element, lazy gallery, hover
 * state or cross-site frame is far down. The right picture is the element whole, nothing fixed
 * to the screen drawn across it, and what the page shows once scrolled there.
 * All at 800x600 (page_width, page_height), PNG, wait=0.
 */
import { COLOURS, type QualityPage, type Rgb, css, doc, solidDoc, solidSvg } from './page';
import { expectColour, expectSize, rowsOf } from './picture';

const HEADER: Rgb = COLOURS.blue;
const SUBNAV: Rgb = COLOURS.pink;
const PARTS: Rgb[] = [COLOURS.red, COLOURS.green, COLOURS.yellow];
const SMOOTH = '<style>html{scroll-behavior:smooth}</style>';

/** No row of column `x` of the picture has `colour`. */
function expectNowhere(p: Parameters<typeof rowsOf>[0], x: number, colour: Rgb, what: string): void {
  const rows = rowsOf(p, x, colour, 0, p.height);
  if (rows.length) throw new Error(`${what} is drawn across the element, at rows ${rows.slice(0, 5).join(', ')}…`);
}

export const ELEMENT_PAGES: QualityPage[] = [
  {
    name: 'element-taller-than-screen',
    mimics:
      'a news article or a long form captured alone (selectors) under a fixed site header and a sticky section navigation, as most news and docs sites have',
    routes: {
      '/': {
        body: doc(
          `<header style="position:fixed;top:0;left:0;right:0;height:60px;background:${css(HEADER)};z-index:10"></header>` +
            `<nav style="position:sticky;top:60px;height:40px;margin-top:60px;background:${css(SUBNAV)};z-index:9"></nav>` +
            '<div style="height:200px"></div>' +
            `<article style="width:800px">${PARTS.map((c) => `<div style="height:600px;background:${css(c)}"></div>`).join('')}</article>` +
            '<div style="height:1200px"></div>',
        ),
      },
    },
    params: { selectors: 'article' },
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 1800);
      PARTS.forEach((c, i) => {
        expectColour(p, 400, i * 600 + 20, c, `part ${i + 1}, at its top`);
        expectColour(p, 400, i * 600 + 580, c, `part ${i + 1}, at its bottom`);
      });
      expectNowhere(p, 400, HEADER, 'the fixed header');
      expectNowhere(p, 400, SUBNAV, 'the sticky navigation');
    },
  },
  {
    name: 'smooth-scroll-element-lazy',
    mimics:
      'a Bootstrap 5 page (scroll-behavior: smooth) whose gallery far down (images and a caption bar) loads its images when scrolled into view, captured alone',
    routes: {
      '/': {
        body: doc(
          '<div style="position:relative;height:6000px">' +
            '<div id="gallery" style="position:absolute;top:4000px;left:0;width:800px;height:340px;display:flex;flex-wrap:wrap">' +
            [COLOURS.red, COLOURS.teal]
              .map((c) => `<img class="lazy" data-src="${solidSvg(c, 400, 300, 300)}" width="400" height="300" style="background:${css(COLOURS.grey)}">`)
              .join('') +
            `<div style="width:800px;height:40px;background:${css(COLOURS.black)}"></div></div></div>` +
            '<script>const io = new IntersectionObserver((es) => { for (const e of es) if (e.isIntersecting) { e.target.src = e.target.dataset.src; io.unobserve(e.target); } });' +
            "document.querySelectorAll('img.lazy').forEach((i) => io.observe(i));</script>",
          { head: SMOOTH },
        ),
      },
    },
    params: { selectors: '#gallery' },
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 340);
      expectColour(p, 200, 150, COLOURS.red, 'the first image, loaded once scrolled to');
      expectColour(p, 600, 150, COLOURS.teal, 'the second image, loaded once scrolled to');
    },
  },
  {
    name: 'smooth-scroll-hover',
    mimics: 'a Bootstrap 5 page (scroll-behavior: smooth) with a call-to-action button far down, captured hovered (hover_on_selected)',
    routes: {
      '/': {
        body: doc(
          '<style>#cta{position:absolute;top:3000px;left:300px;width:200px;height:80px;background:rgb(30,144,255)}#cta:hover{background:rgb(220,20,60)}</style>' +
            '<div style="position:relative;height:5000px"><button id="cta"></button></div>',
          { head: SMOOTH },
        ),
      },
    },
    params: { selectors: '#cta', hover_on_selected: true },
    async check(a) {
      const p = await a.picture();
      expectSize(p, 200, 80);
      expectColour(p, 100, 40, COLOURS.red, 'the button in its :hover style');
    },
  },
  {
    name: 'smooth-scroll-cross-site-frame',
    mimics: 'a Bootstrap 5 page (scroll-behavior: smooth) with an embed from another site (a map, a video) below the first screen, captured whole',
    routes: {
      '/': ({ origins }) => ({
        body: doc(
          '<div style="position:relative;height:4000px">' +
            `<iframe src="${origins.other}/smooth-scroll-cross-site-frame/embed" width="400" height="300" style="position:absolute;left:200px;top:3000px"></iframe></div>`,
          { head: SMOOTH },
        ),
      }),
    },
    otherRoutes: { '/embed': { body: solidDoc(COLOURS.green) } },
    params: { fullpage: true },
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 4000);
      expectColour(p, 400, 3150, COLOURS.green, 'the frame of another site');
    },
  },
];
