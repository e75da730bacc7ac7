/**
 * Full-page captures of the page layouts real sites use: a sticky header over a 100vh hero,
 * content-visibility sections, a fixed footer, a scrolling element inside the page, and what
 * loads lazily (images by attribute and by IntersectionObserver, frames from another site).
 * The right picture is the page as a person scrolling it sees it: everything loaded and
 * drawn, what is sticky or fixed once at its place, viewport units at the viewport's size.
 * All at 800x600 (page_width, page_height), PNG, fullpage, wait=0.
 */
import { COLOURS, PALETTE, type QualityPage, type Rgb, box, css, doc, solidDoc, solidSvg } from './page';
import { expectColour, expectSize, rowsOf } from './picture';

const FULL = { fullpage: true };

const HEADER: Rgb = COLOURS.red;
const HERO: Rgb = COLOURS.grey;
const FOOTER: Rgb = [20, 30, 110];

/** Four sections of the palette, 700 px tall each: a page of 2800 px. */
const SECTIONS = PALETTE.slice(0, 4)
  .map((c) => `<section style="height:700px;background:${css(c)}"></section>`)
  .join('');

/** Four sections of the palette, 600 px tall each, placed from `top` (absolutely, in a relative container). */
const SECTIONS_AT = (top: number) =>
  PALETTE.slice(0, 4)
    .map((c, i) => box(c, 0, top + i * 600, 800, 600))
    .join('');

/** `count` images of the palette, 400x300 at x=100, the first at `top`, `spacing` apart, each answered `delayMs` late. */
const imageColumn = (count: number, top: number, spacing: number, img: (c: Rgb) => string) =>
  PALETTE.slice(0, count)
    .map((c, i) => `<div style="position:absolute;left:100px;top:${top + i * spacing}px">${img(c)}</div>`)
    .join('');

/** The colour of each image of such a column (150 px into it) is its palette colour. */
function expectColumn(p: Parameters<typeof expectColour>[0], count: number, top: number, spacing: number, what: string): void {
  const wrong: string[] = [];
  for (let i = 0; i < count; i++) {
    try {
      expectColour(p, 300, top + i * spacing + 150, PALETTE[i]!, `${what} ${i}`, 12);
    } catch (err) {
      wrong.push((err as Error).message);
    }
  }
  if (wrong.length) throw new Error(wrong.join('; '));
}

export const FULLPAGE_PAGES: QualityPage[] = [
  {
    name: 'fullpage-hero-sticky',
    mimics: 'a landing page (Stripe, Apple, most SaaS sites): a sticky header over a 100vh hero, sections below',
    routes: {
      '/': {
        body: doc(
          `<header style="position:sticky;top:0;height:60px;background:${css(HEADER)};z-index:10"></header>` +
            `<section style="height:100vh;background:${css(HERO)}"></section>` +
            PALETTE.slice(1, 5)
              .map((c) => `<section style="height:600px;background:${css(c)}"></section>`)
              .join(''),
        ),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      // The hero is as tall as the viewport (600), not as the grown page.
      expectSize(p, 800, 60 + 600 + 4 * 600);
      expectColour(p, 400, 30, HEADER, 'the sticky header, at the top');
      expectColour(p, 400, 65, HERO, 'the hero, under the header');
      expectColour(p, 400, 655, HERO, 'the hero, 600 px tall');
      for (let i = 0; i < 4; i++) expectColour(p, 400, 660 + i * 600 + 300, PALETTE[i + 1]!, `section ${i + 1}`);
      const again = rowsOf(p, 10, HEADER, 60, p.height);
      if (again.length) throw new Error(`the sticky header is drawn again below the top, at rows ${again.slice(0, 5).join(', ')}…`);
    },
  },
  {
    name: 'fullpage-content-visibility',
    mimics: 'long articles and docs sites (web.dev, large SPAs) that skip rendering offscreen sections with content-visibility: auto',
    routes: {
      '/': {
        body: doc(
          PALETTE.slice(0, 8)
            .map(
              (c, i) =>
                `<section style="content-visibility:auto;contain-intrinsic-size:auto 700px"><div style="height:700px;background:${css(c)}">` +
                `<h2 style="margin:0;padding:20px">Section ${i + 1}</h2></div></section>`,
            )
            .join(''),
        ),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 8 * 700);
      const wrong: string[] = [];
      for (let i = 0; i < 8; i++) {
        try {
          expectColour(p, 400, i * 700 + 400, PALETTE[i]!, `section ${i + 1} (content-visibility: auto)`);
        } catch (err) {
          wrong.push((err as Error).message);
        }
      }
      if (wrong.length) throw new Error(wrong.join('; '));
    },
  },
  {
    name: 'fullpage-fixed-footer',
    mimics: 'shops and web apps with a position: fixed bottom bar (add-to-cart, app navigation, a promotion strip)',
    routes: {
      '/': {
        body: doc(SECTIONS + `<footer style="position:fixed;left:0;right:0;bottom:0;height:50px;background:${css(FOOTER)}"></footer>`),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 2800);
      // Once, at the bottom of the page, where a person who scrolled to the end sees it; nowhere over the content above.
      expectColour(p, 400, 2775, FOOTER, 'the fixed footer, at the bottom of the page');
      const elsewhere = rowsOf(p, 400, FOOTER, 0, 2750);
      if (elsewhere.length)
        throw new Error(`the fixed footer covers the content at rows ${elsewhere.slice(0, 5).join(', ')}…, expected it only in the last 50 rows`);
      for (let i = 0; i < 4; i++) expectColour(p, 400, i * 700 + 350, PALETTE[i]!, `section ${i + 1}`);
    },
  },
  {
    name: 'fullpage-inner-scroll',
    mimics: 'web apps and chat/feed UIs (Slack, Gmail, dashboards) whose content scrolls inside an element, not the page',
    routes: {
      '/': {
        body: doc(
          `<header style="height:100px;background:${css(HERO)}"></header>` +
            '<div id="feed" style="margin-left:150px;width:420px;height:400px;overflow-y:auto">' +
            PALETTE.slice(0, 8)
              .map((c) => `<img loading="lazy" src="${solidSvg(c, 400, 300, 150)}" width="400" height="300">`)
              .join('') +
            '</div>' +
            `<footer style="height:700px;background:${css(FOOTER)}"></footer>`,
        ),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      // The page's own height (100 + 400 + 700), not the inner element's content (8 x 300).
      expectSize(p, 800, 1200);
      // The element as a person sees it at its scroll position: its first image, and the top of the second.
      expectColour(p, 350, 100 + 150, PALETTE[0]!, 'the first image inside the scrolling element');
      expectColour(p, 350, 100 + 350, PALETTE[1]!, 'the second image, at the bottom of the scrolling element');
      expectColour(p, 50, 300, COLOURS.white, 'beside the scrolling element');
      expectColour(p, 400, 1150, FOOTER, 'the footer under the scrolling element');
    },
  },
  {
    name: 'lazy-img-attribute',
    mimics: 'blogs and shops using native lazy loading (<img loading="lazy">, WordPress since 5.5) down a long page',
    // Far apart: Chromium loads native lazy images up to about 3000 px below the viewport by itself.
    routes: {
      '/': {
        body: doc(
          `<div style="position:relative;height:8000px">${imageColumn(5, 100, 1500, (c) => `<img loading="lazy" src="${solidSvg(c, 400, 300, 200)}" width="400" height="300">`)}</div>`,
        ),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 8000);
      expectColumn(p, 5, 100, 1500, 'lazy image');
    },
  },
  {
    name: 'lazy-img-observer',
    mimics: 'lazy-loading libraries (vanilla-lazyload, lozad) and frameworks (Next.js before native): data-src swapped in by an IntersectionObserver',
    routes: {
      '/': {
        body: doc(
          `<div style="position:relative;height:8000px">${imageColumn(5, 100, 1500, (c) => `<img class="lazy" data-src="${solidSvg(c, 400, 300, 200)}" width="400" height="300">`)}</div>` +
            '<script>const io = new IntersectionObserver((es) => { for (const e of es) if (e.isIntersecting) { e.target.src = e.target.dataset.src; ' +
            "e.target.classList.add('loaded'); io.unobserve(e.target); } }, { rootMargin: '100px' });" +
            "document.querySelectorAll('img.lazy').forEach((i) => io.observe(i));</script>",
        ),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 8000);
      expectColumn(p, 5, 100, 1500, 'observer-loaded image');
    },
  },
  {
    name: 'lazy-iframe',
    mimics: 'embedded maps, forms and players served from the site itself as loading="lazy" frames, far down an article',
    routes: {
      // Far down: Chromium loads lazy frames up to about 4000 px below the viewport by itself.
      '/': {
        body: doc(
          '<div style="position:relative;height:8000px"><iframe loading="lazy" src="embed" width="400" height="300" style="position:absolute;left:100px;top:7000px"></iframe></div>',
        ),
      },
      '/embed': { delayMs: 150, body: solidDoc(COLOURS.teal) },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 8000);
      expectColour(p, 300, 7150, COLOURS.teal, 'the lazy frame');
    },
  },
  {
    name: 'lazy-iframe-cross-site',
    mimics: 'embedded videos and posts from another site (YouTube, Vimeo, Twitter/X, Instagram embeds) as loading="lazy" frames, far down an article',
    routes: {
      '/': ({ origins }) => ({
        body: doc(
          '<div style="position:relative;height:8000px">' +
            `<iframe loading="lazy" src="${origins.other}/lazy-iframe-cross-site/player" width="400" height="300" style="position:absolute;left:100px;top:7000px"></iframe></div>`,
        ),
      }),
    },
    otherRoutes: { '/player': { delayMs: 150, body: solidDoc(COLOURS.indigo) } },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 8000);
      expectColour(p, 300, 7150, COLOURS.indigo, 'the lazy cross-site frame');
    },
  },
  {
    name: 'cross-site-frames-retina',
    mimics: 'an article with several embeds from other sites (maps, videos, posts) down the page, captured at scale_factor 2 as JPEG',
    routes: {
      '/': ({ origins }) => ({
        body: doc(
          `<div style="position:relative;height:5000px">${[1500, 3000, 4500]
            .map(
              (top, i) =>
                `<iframe src="${origins.other}/cross-site-frames-retina/embed?c=${i}" width="300" height="200" style="position:absolute;left:${100 + i * 150}px;top:${top}px"></iframe>`,
            )
            .join('')}</div>`,
        ),
      }),
    },
    otherRoutes: {
      '/embed': ({ query }) => ({ body: solidDoc([COLOURS.teal, COLOURS.pink, COLOURS.brown][Number(query.get('c'))] ?? COLOURS.black) }),
    },
    params: { ...FULL, scale_factor: 2, image_format: 'jpeg' },
    async check(a) {
      const p = await a.picture();
      expectSize(p, 1600, 10_000);
      [COLOURS.teal, COLOURS.pink, COLOURS.brown].forEach((c, i) => {
        expectColour(p, (100 + i * 150 + 150) * 2, ([1500, 3000, 4500][i]! + 100) * 2, c, `embed ${i + 1} of another site`);
      });
      expectColour(p, 20, 3100 * 2, COLOURS.white, 'the page beside the embeds');
    },
  },
  {
    name: 'fullpage-device-desktop-layout',
    mimics: 'a desktop site without a meta viewport (980 px wide, as older and many B2B sites are) captured as a phone with a device preset',
    routes: {
      '/': {
        body: doc(
          '<div style="position:relative;width:980px;height:3000px">' + `${box(COLOURS.red, 0, 0, 490, 3000)}${box(COLOURS.blue, 490, 0, 490, 3000)}</div>`,
        ),
      },
    },
    // The preset's own viewport and scale factor (the corpus's 800x600 cleared).
    params: { ...FULL, device: 'iPhone 15 Pro', page_width: '', page_height: '' },
    async check(a) {
      const p = await a.picture();
      // A phone lays a page without a meta viewport out 980 px wide and shows all of it, zoomed
      // out to the screen's width: both halves side by side, down the whole image.
      for (const y of [0.1, 0.5, 0.9].map((f) => Math.round(p.height * f))) {
        expectColour(p, Math.round(p.width * 0.25), y, COLOURS.red, `the left half at row ${y}`);
        expectColour(p, Math.round(p.width * 0.75), y, COLOURS.blue, `the right half (of the 980 px layout) at row ${y}`);
      }
    },
  },
  {
    name: 'fullpage-body-scroller',
    mimics:
      'sites that stop sideways scrolling with html,body{height:100%;overflow-x:hidden} (common in WordPress themes and landing pages): the body becomes the element that scrolls',
    routes: {
      '/': {
        body: doc(`<section style="height:100%;background:${css(HERO)}"></section>` + SECTIONS, {
          head: '<style>html,body{height:100%;overflow-x:hidden}</style>',
        }),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      // The hero, sized in percents of the body, is one screen tall, as a person sees it.
      expectSize(p, 800, 600 + 2800);
      expectColour(p, 400, 590, HERO, 'the hero (height: 100%), a screen tall');
      for (let i = 0; i < 4; i++) expectColour(p, 400, 600 + i * 700 + 350, PALETTE[i]!, `section ${i + 1}`);
    },
  },
  {
    name: 'fullpage-body-scroller-locked-root',
    mimics: 'app-like sites that lock the root (html{overflow:hidden}, against overscroll bounce) and let the body scroll, 100% tall',
    routes: {
      '/': {
        body: doc(SECTIONS, { head: '<style>html{height:100%;overflow:hidden}body{height:100%;overflow-y:auto}</style>' }),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 2800);
      for (let i = 0; i < 4; i++) expectColour(p, 400, i * 700 + 350, PALETTE[i]!, `section ${i + 1}`);
    },
  },
  {
    name: 'fullpage-advanced-scroll-lock',
    mimics: 'a slide-in (a newsletter, an offer) opened once the reader scrolls past 300 px, which locks the page the common way: body fixed at top: -scrollY',
    routes: {
      '/': {
        body: doc(
          `<div style="position:relative;height:2800px">${box(HEADER, 0, 0, 800, 80)}${SECTIONS_AT(200)}</div>` +
            `<div id="slidein" style="display:none;position:fixed;right:20px;bottom:20px;width:200px;height:120px;background:${css(COLOURS.slate)}"></div>` +
            "<script>let locked = false; addEventListener('scroll', () => { if (locked || scrollY < 300) return; locked = true; const y = scrollY; " +
            "document.getElementById('slidein').style.display = 'block'; Object.assign(document.body.style, { position: 'fixed', top: -y + 'px', width: '100%' }); });</script>",
        ),
      },
    },
    params: { fullpage_advanced: true },
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 2800);
      expectColour(p, 400, 40, HEADER, 'the header, at the top of the page');
      for (const [i, c] of PALETTE.slice(0, 4).entries()) expectColour(p, 400, 200 + i * 600 + 300, c, `section ${i + 1}, where the page has it`);
    },
  },
  {
    name: 'fullpage-late-launcher',
    mimics: 'chat launchers and bottom bars a script adds a moment after the load (Intercom, Drift, HubSpot chat deferred; cookie bars), captured with a wait',
    routes: {
      '/': {
        body: doc(
          SECTIONS +
            "<script>addEventListener('load', () => setTimeout(() => { const d = document.createElement('div'); " +
            `d.style.cssText = 'position:fixed;right:20px;bottom:20px;width:60px;height:60px;border-radius:30px;background:${css(FOOTER)}'; ` +
            'document.body.appendChild(d); }, 800));</script>',
        ),
      },
    },
    params: { ...FULL, wait: 1500 },
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 2800);
      // Once, at the bottom of the page, as after the fixed footer; nowhere over the first screen.
      expectColour(p, 750, 2750, FOOTER, 'the launcher, at the bottom of the page');
      const elsewhere = rowsOf(p, 750, FOOTER, 0, 2700);
      if (elsewhere.length)
        throw new Error(`the launcher is drawn over the content at rows ${elsewhere.slice(0, 5).join(', ')}…, expected it only near the bottom`);
    },
  },
  {
    name: 'fullpage-shadow-launcher',
    mimics: 'chat launchers and consent bars drawn inside a shadow root (web-component widgets: Usercentrics, Zendesk, Shopify apps)',
    routes: {
      '/': {
        body: doc(
          SECTIONS +
            "<div id=\"widget\"></div><script>document.getElementById('widget').attachShadow({ mode: 'open' }).innerHTML = " +
            `'<div><div style="position:fixed;right:20px;bottom:20px;width:60px;height:60px;background:${css(FOOTER)}"></div></div>';</script>`,
        ),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 2800);
      expectColour(p, 750, 2750, FOOTER, 'the launcher in the shadow root, at the bottom of the page');
      const elsewhere = rowsOf(p, 750, FOOTER, 0, 2700);
      if (elsewhere.length)
        throw new Error(`the launcher is drawn over the content at rows ${elsewhere.slice(0, 5).join(', ')}…, expected it only near the bottom`);
    },
  },
  {
    name: 'fullpage-shadow-launcher-fixed-host',
    mimics: 'widgets whose host is itself fixed in a corner and whose launcher inside its shadow root is fixed too (Intercom-style containers)',
    routes: {
      '/': {
        body: doc(
          SECTIONS +
            '<div id="widget" style="position:fixed;right:0;bottom:0;width:100px;height:100px"></div>' +
            "<script>document.getElementById('widget').attachShadow({ mode: 'open' }).innerHTML = " +
            `'<div style="position:fixed;right:20px;bottom:20px;width:60px;height:60px;background:${css(FOOTER)}"></div>';</script>`,
        ),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 2800);
      // Moved once, with its host: not twice (translated, the host holds the launcher).
      expectColour(p, 750, 2750, FOOTER, 'the launcher in the fixed host, at the bottom of the page');
      const elsewhere = rowsOf(p, 750, FOOTER, 0, 2700);
      if (elsewhere.length)
        throw new Error(`the launcher is drawn over the content at rows ${elsewhere.slice(0, 5).join(', ')}…, expected it only near the bottom`);
    },
  },
  {
    name: 'fullpage-centred-bar',
    mimics: 'Tailwind CSS v4 sites: a bar centred at the bottom with fixed bottom-4 left-1/2 -translate-x-1/2, which v4 writes with the CSS translate property',
    routes: {
      '/': {
        body: doc(SECTIONS + `<div style="position:fixed;bottom:16px;left:50%;width:400px;height:60px;translate:-50% 0;background:${css(FOOTER)}"></div>`),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 2800);
      // x 200..600, 16 px above the bottom of the page.
      expectColour(p, 210, 2754, FOOTER, 'the left end of the centred bar');
      expectColour(p, 590, 2754, FOOTER, 'the right end of the centred bar');
      expectColour(p, 650, 2754, PALETTE[3]!, 'right of the centred bar');
      const elsewhere = rowsOf(p, 400, FOOTER, 0, 2700);
      if (elsewhere.length) throw new Error(`the bar is drawn over the content at rows ${elsewhere.slice(0, 5).join(', ')}…, expected it only near the bottom`);
    },
  },
  {
    name: 'fullpage-sticky-bottom',
    mimics: 'shops and articles with a position: sticky; bottom: 0 call-to-action bar that ends the document (add to cart, subscribe)',
    routes: {
      '/': {
        body: doc(SECTIONS + `<div style="position:sticky;bottom:0;height:50px;background:${css(FOOTER)}"></div>`),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 2850);
      // At its place, the end of the page, where a person who scrolled there sees it; not over the first screen.
      expectColour(p, 400, 2825, FOOTER, 'the sticky bar, at the end of the page');
      expectColour(p, 400, 575, PALETTE[0]!, 'section 1, where the bar is stuck on the first screen');
      const elsewhere = rowsOf(p, 400, FOOTER, 0, 2790);
      if (elsewhere.length)
        throw new Error(`the sticky bar is drawn over the content at rows ${elsewhere.slice(0, 5).join(', ')}…, expected it only at the end`);
    },
  },
  {
    name: 'fullpage-fixed-bg-layer',
    mimics: 'landing pages with a full-screen background (a gradient, a video) on a position: fixed layer behind transparent sections',
    routes: {
      '/': {
        body: doc(
          `<div style="position:fixed;inset:0;z-index:-1;background:${css(COLOURS.teal)}"></div>` +
            Array.from({ length: 5 }, (_, i) => `<section style="height:600px;color:#fff;font:bold 60px sans-serif">Section ${i + 1}</section>`).join(''),
          { head: '<style>html,body{background:transparent !important}</style>' },
        ),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 3000);
      // Behind every screen, as a person scrolling sees it.
      for (let i = 0; i < 5; i++) expectColour(p, 700, i * 600 + 300, COLOURS.teal, `the fixed background behind section ${i + 1}`);
    },
  },
  {
    name: 'fullpage-fixed-bg-attachment',
    mimics: 'sites with a page background that stays put while the content scrolls (background-attachment: fixed on the body)',
    routes: {
      '/': {
        body: doc(
          Array.from({ length: 5 }, (_, i) => `<section style="height:600px;color:#fff;font:bold 60px sans-serif">Section ${i + 1}</section>`).join(''),
          {
            head: `<style>html,body{background:linear-gradient(${css(COLOURS.teal)},${css(COLOURS.teal)}) fixed !important}</style>`,
          },
        ),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 3000);
      for (let i = 0; i < 5; i++) expectColour(p, 700, i * 600 + 300, COLOURS.teal, `the fixed background behind section ${i + 1}`);
    },
  },
  {
    name: 'fullpage-parallax-strip',
    mimics: 'WordPress page builders (Elementor, Divi) and themes with "fixed background" parallax strips down the page',
    routes: {
      '/': {
        body: doc(
          `<div style="height:1800px;background:${css(HERO)}"></div>` +
            `<section style="height:400px;background:linear-gradient(${css(COLOURS.teal)},${css(COLOURS.teal)}) fixed;color:#fff;font:bold 40px sans-serif">Parallax</section>` +
            `<div style="height:800px;background:${css(HERO)}"></div>`,
        ),
      },
    },
    params: FULL,
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 3000);
      expectColour(p, 700, 1850, COLOURS.teal, 'the parallax strip, top');
      expectColour(p, 700, 2150, COLOURS.teal, 'the parallax strip, bottom');
    },
  },
];
