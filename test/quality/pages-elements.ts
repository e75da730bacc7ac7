/**
 * Captures of one element (selectors) and of pages that scroll smoothly: an article taller than
 * the screen under a fixed header and a sticky sub-navigation, and pages with
 * `html { scroll-behavior: smooth }` (Bootstrap 5's default) whose element, lazy gallery, hover
 * state or cross-site frame is far down. The right picture is the element whole, nothing fixed
 * to the screen drawn across it, and what the page shows once scrolled there.
 * All at 800x600 (page_width, page_height), PNG, wait=0.
 */
import { COLOURS, type QualityPage, type Rgb, css, doc, solidDoc, solidSvg } from './page';
import { expectColour, expectFilled, expectSize, rowsOf } from './picture';

const HEADER: Rgb = COLOURS.blue;
const SUBNAV: Rgb = COLOURS.pink;
const PARTS: Rgb[] = [COLOURS.red, COLOURS.green, COLOURS.yellow];
const BANDS: Rgb[] = [COLOURS.orange, COLOURS.green, COLOURS.teal, COLOURS.indigo, COLOURS.brown];
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
    name: 'element-in-scroller-fullpage',
    mimics:
      'a block inside a box that scrolls on its own (a chat log, a table with a scroll bar), captured alone with fullpage, the page going on below the box',
    routes: {
      '/': {
        body: doc(
          `<div style="height:400px;overflow:auto"><div style="height:1000px"></div><div id="t" style="height:200px;background:${css(COLOURS.blue)}"></div></div>` +
            `<div style="height:2000px;background:${css(COLOURS.yellow)}"></div>`,
        ),
      },
    },
    params: { selectors: '#t', fullpage: true },
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 200);
      expectFilled(p, { x: 5, y: 5, w: 790, h: 190 }, COLOURS.blue, 'the block in the scrolling box', 40);
    },
  },
  {
    name: 'element-in-carousel-fullpage',
    mimics:
      'the third slide of a carousel whose track scrolls sideways (overflow-x: auto, as Swiper in CSS mode and most hand-made sliders), captured alone with fullpage',
    routes: {
      '/': {
        body: doc(
          '<div style="height:100px"></div><div style="display:flex;width:800px;overflow-x:auto">' +
            [COLOURS.red, COLOURS.green, COLOURS.blue]
              .map((c, i) => `<div id="s${i + 1}" style="flex:0 0 600px;height:300px;background:${css(c)}"></div>`)
              .join('') +
            '</div><div style="height:1500px"></div>',
        ),
      },
    },
    params: { selectors: '#s3', fullpage: true },
    async check(a) {
      const p = await a.picture();
      expectSize(p, 600, 300);
      expectFilled(p, { x: 5, y: 5, w: 590, h: 290 }, COLOURS.blue, 'the third slide', 40);
    },
  },
  {
    name: 'element-in-app-panel-fullpage',
    mimics:
      'a single-page app whose own panel scrolls (html, body 100% tall, #app { overflow: auto }, as many dashboards and webmail do), a card far down it captured alone with fullpage',
    routes: {
      '/': {
        body: doc(
          '<div id="app" style="height:100%;overflow:auto"><div style="height:1500px"></div>' +
            `<div id="target" style="width:400px;height:200px;background:${css(COLOURS.green)}"></div><div style="height:1500px"></div></div>`,
          { head: '<style>html,body{height:100%;overflow:hidden}</style>' },
        ),
      },
    },
    params: { selectors: '#target', fullpage: true },
    async check(a) {
      const p = await a.picture();
      expectSize(p, 400, 200);
      expectFilled(p, { x: 5, y: 5, w: 390, h: 190 }, COLOURS.green, 'the card in the panel', 40);
    },
  },
  {
    name: 'element-taller-than-app-panel',
    mimics:
      'a single-page app whose own panel scrolls under a sticky header inside it (html, body 100% tall and overflow hidden, #app { overflow: auto }), a report taller than the screen captured alone',
    routes: {
      '/': {
        body: doc(
          '<div id="app" style="height:100%;overflow:auto">' +
            `<header style="position:sticky;top:0;height:60px;background:${css(COLOURS.red)};z-index:5"></header><div style="height:300px"></div>` +
            `<div id="bigt" style="width:700px">${BANDS.map((c) => `<div style="height:400px;background:${css(c)}"></div>`).join('')}</div>` +
            '<div style="height:1000px"></div></div>',
          { head: '<style>html,body{height:100%;overflow:hidden}</style>' },
        ),
      },
    },
    params: { selectors: '#bigt' },
    async check(a) {
      const p = await a.picture();
      expectSize(p, 700, 2000);
      BANDS.forEach((c, i) => {
        expectColour(p, 350, i * 400 + 10, c, `band ${i + 1}, at its top`);
        expectColour(p, 350, i * 400 + 390, c, `band ${i + 1}, at its bottom`);
      });
      expectNowhere(p, 350, COLOURS.red, 'the sticky header');
    },
  },
  ...[
    { name: 'element-nearly-screen-tall-sticky-header', bar: `position:sticky;top:0;height:60px` },
    { name: 'element-nearly-screen-tall-fixed-header', bar: `position:fixed;top:0;left:0;right:0;height:70px` },
  ].map(
    ({ name, bar }): QualityPage => ({
      name,
      mimics: 'a product card or a form almost as tall as the screen, below the fold under a header that stays on the screen, captured alone',
      routes: {
        '/': {
          body: doc(
            `<header style="${bar};background:${css(HEADER)};z-index:10"></header><div style="height:1200px"></div>` +
              `<div id="card" style="width:600px">${PARTS.map((c) => `<div style="height:190px;background:${css(c)}"></div>`).join('')}</div>` +
              '<div style="height:1200px"></div>',
          ),
        },
      },
      params: { selectors: '#card' },
      async check(a) {
        const p = await a.picture();
        expectSize(p, 600, 570);
        PARTS.forEach((c, i) => {
          expectColour(p, 300, i * 190 + 5, c, `part ${i + 1}, at its top`);
          expectColour(p, 300, i * 190 + 185, c, `part ${i + 1}, at its bottom`);
        });
        expectNowhere(p, 300, HEADER, 'the header');
      },
    }),
  ),
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
