/**
 * Full-page captures end to end on the real Grid: fullpage loads lazy images, frames and
 * observer-driven content down the whole page; fullpage_advanced also scrolls (scroll-event
 * loaders, infinite scroll); sticky headers appear once, at the top; pages taller than the
 * maximum are cut at it. Fixture pages are served locally; every image is a solid colour,
 * answered late, so a capture that does not wait for it shows white.
 */
import { expect } from 'chai';
import { MAX_FULLPAGE_HEIGHT } from '../../../services/capture/page/full-page';
import { imageSize, pixelsOf, snapSuite } from '../../support/capture-helpers';
import { type LocalServer, servePages } from '../../support/local-server';

type Rgb = [number, number, number];

const COLOURS: Rgb[] = [
  [220, 20, 60],
  [255, 140, 0],
  [200, 170, 0],
  [50, 160, 50],
  [0, 128, 128],
  [30, 144, 255],
  [75, 0, 130],
  [199, 21, 133],
  [139, 69, 19],
  [112, 128, 144],
];
const FRAME_COLOUR: Rgb = [0, 0, 90];
const WHITE: Rgb = [255, 255, 255];
const HEADER: Rgb = [220, 0, 0];
const FOOTER: Rgb = [20, 30, 110];
const BOX: Rgb = [0, 160, 160];
/** How late every image and frame is answered. */
const LATE_MS = 150;

const doc = (body: string) =>
  `<!DOCTYPE html><html><head><meta ` +
  `charset="utf-8"><style>html,body{margin:0;padding:0}img,iframe{display:block;border:0}</style></head><body>${body}</body></html>`;
const src = (c: Rgb) => `/img/${c.join('-')}.svg`;
const svg = (c: Rgb) => `<svg xmlns="http://www.w3.org/2000/svg" width="400" height="300"><rect width="400" height="300" fill="rgb(${c.join(',')})"/></svg>`;
/** Where image i of a page's column sits (top, CSS px). */
const slot = (i: number, spacing: number) => i * spacing + 100;
/** The first `count` colours as images in a column at x=100, `spacing` apart, in a block `height` tall. */
const column = (height: number, count: number, spacing: number, img: (c: Rgb) => string, extra = '') =>
  `<div style="position:relative;height:${height}px">${COLOURS.slice(0, count)
    .map((c, i) => `<div style="position:absolute;left:100px;top:${slot(i, spacing)}px">${img(c)}</div>`)
    .join('')}${extra}</div>`;
const lazy = (c: Rgb) => `<img loading="lazy" src="${src(c)}" width="400" height="300">`;
const band = (i: number): Rgb => [(i * 10) % 256, 255 - ((i * 10) % 256), (i * 37) % 256];

/** Images that set their src from data-src when a script says so. */
const deferred = (c: Rgb) => `<img data-src="${src(c)}" width="400" height="300">`;

const PAGES: Record<string, string> = {
  // Ten native lazy images down 10 000 px, and a lazy frame beside the last one.
  '/long': doc(
    column(
      10_000,
      10,
      1000,
      lazy,
      `<iframe loading="lazy" src="/frame" width="300" height="200" style="position:absolute;left:600px;top:${slot(9, 1000)}px"></iframe>`,
    ),
  ),
  '/frame': `<!DOCTYPE html><html><body style="margin:0;background:rgb(${FRAME_COLOUR.join(',')})"></body></html>`,
  // Images an IntersectionObserver loads as they enter the viewport.
  '/observed': doc(
    `${column(6000, 5, 1200, deferred)}<script>const io = new IntersectionObserver((es) => { for (const e of es) if (e.isIntersecting) { e.target.src = ` +
      `e.target.dataset.src; io.unobserve(e.target); } });` +
      "document.querySelectorAll('img[data-src]').forEach((i) => io.observe(i));</script>",
  ),
  // A full-screen header (100vh) above native lazy images.
  '/hero': doc(`<div style="height:100vh;background:rgb(200,200,200)"></div>${column(5000, 4, 1200, lazy)}`),
  // The same under a full-screen header, loaded by an IntersectionObserver.
  '/hero-observed': doc(
    `<div style="height:100vh;background:rgb(200,200,200)"></div>${column(5000, 4, 1200, deferred)}<script>const io = new IntersectionObserver((es) => { ` +
      `for (const e of es) if (e.isIntersecting) { e.target.src = e.target.dataset.src; io.unobserve(e.target); } });` +
      "document.querySelectorAll('img[data-src]').forEach((i) => io.observe(i));</script>",
  ),
  // Images loaded by a scroll handler (throttled, as such handlers usually are) for what is in the viewport.
  '/on-scroll': doc(
    `${column(6000, 5, 1200, deferred)}<script>function check() { for (const img of document.querySelectorAll('img[data-src]')) { const r = ` +
      `img.getBoundingClientRect(); if (r.top < innerHeight && r.bottom > 0) { img.src = img.dataset.src; img.removeAttribute('data-src'); } } }` +
      "let last = 0; addEventListener('scroll', () => { const now = Date.now(); if (now - last < 100) return; last = now; check(); }); check();</script>",
  ),
  // An endless feed: a new part is fetched whenever the reader nears the bottom.
  '/infinite': doc(
    '<div id="feed"></div><script>let n = 0, busy = false;' +
      "function more() { busy = true; fetch('/part?n=' + n).then((r) => r.text()).then((html) => { " +
      "document.getElementById('feed').insertAdjacentHTML('beforeend', html); n++; busy = false; }); }" +
      "addEventListener('scroll', () => { if (!busy && scrollY + innerHeight > document.documentElement.scrollHeight - 300) more(); }); more();</script>",
  ),
  // A sticky header over a striped page taller than the maximum (growing the viewport to
  // the maximum does not bring such a page back to its top by itself).
  '/sticky': doc(
    `<header style="position:sticky;top:0;height:80px;background:rgb(${HEADER.join(',')})"></header>` +
      '<div style="height:20000px;background:repeating-linear-gradient(#fff 0 200px,#ddd 200px 400px)"></div>',
  ),
  // 24 000 px of 1 000 px bands, each its own colour.
  '/taller': doc(Array.from({ length: 24 }, (_, i) => `<div style="height:1000px;background:rgb(${band(i).join(',')})"></div>`).join('')),
  // The same with a bar fixed to the bottom of the viewport.
  '/taller-fixed': doc(
    Array.from({ length: 24 }, (_, i) => `<div style="height:1000px;background:rgb(${band(i).join(',')})"></div>`).join('') +
      `<footer style="position:fixed;left:0;right:0;bottom:0;height:40px;background:rgb(${FOOTER.join(',')})"></footer>`,
  ),
  // A section taller than the viewport with a lazy image near its bottom, under a sticky header.
  '/section': doc(
    `<div id="page"><header style="position:sticky;top:0;height:60px;background:rgb(${HEADER.join(',')})"></header><div style="height:700px"></div>` +
      `<section id="s" style="position:relative;height:3000px;background:rgb(238,238,238)"><img loading="lazy" src="${src(COLOURS[4]!)}" width="400" ` +
      `height="300" style="position:absolute;left:100px;top:2500px"></section><div style="height:2000px"></div></div>`,
  ),
  // Eight 700 px sections the renderer skips while they are away from the viewport (content-visibility: auto).
  '/skipped': doc(
    COLOURS.slice(0, 8)
      .map(
        (c) =>
          `<section style="content-visibility:auto;contain-intrinsic-size:auto 700px"><div style="height:700px;background:rgb(${c.join(',')})"></div></section>`,
      )
      .join(''),
  ),
  // Four 700 px bands under a bar fixed to the bottom of the viewport, a launcher fixed at its bottom right, and a header fixed at its top.
  '/fixed-bottom': doc(
    COLOURS.slice(0, 4)
      .map((c) => `<div style="height:700px;background:rgb(${c.join(',')})"></div>`)
      .join('') +
      `<header style="position:fixed;left:0;right:0;top:0;height:40px;background:rgb(${HEADER.join(',')})"></header>` +
      `<footer style="position:fixed;left:0;right:0;bottom:0;height:50px;background:rgb(${FOOTER.join(',')})"></footer>` +
      `<div style="position:fixed;right:20px;bottom:70px;width:60px;height:60px;background:rgb(${FRAME_COLOUR.join(',')})"></div>` +
      // A fixed box holding a fixed badge: the box stays on the first screen, the badge goes down alone.
      `<div style="position:fixed;left:20px;bottom:70px;width:60px;height:60px;background:rgb(${BOX.join(',')})">` +
      `<div style="position:fixed;left:30px;bottom:80px;width:20px;height:20px;background:rgb(${HEADER.join(',')})"></div></div>`,
  ),
};

async function servePagesWithImages(): Promise<LocalServer> {
  return servePages(({ path, query }) => {
    const img = /^\/img\/(\d+)-(\d+)-(\d+)\.svg$/.exec(path);
    if (img) return { delayMs: LATE_MS, headers: { 'content-type': 'image/svg+xml' }, body: svg([Number(img[1]), Number(img[2]), Number(img[3])]) };
    if (path === '/frame') return { delayMs: LATE_MS, body: PAGES[path]! };
    if (path === '/part') {
      const n = Number(new URLSearchParams(query).get('n'));
      return { delayMs: 50, body: `<div style="height:2500px;background:rgb(${band(n).join(',')})">part ${n}</div>` };
    }
    const body = PAGES[path];
    return body ? { body } : undefined;
  });
}

const near = (a: Rgb, b: Rgb) => a.every((v, i) => Math.abs(v - b[i]!) <= 8);

const p50 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe('fullpage and fullpage_advanced (real Grid)', function () {
  this.timeout(120_000);
  const t = snapSuite({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '2', CAPTURE_TIMEOUT_MS: '30000' });
  let site: LocalServer;
  before(async () => {
    site = await servePagesWithImages();
  });
  after(() => site?.stop());
  const url = (path: string) => `${site.origin}${path}`;

  /** The colour at each image slot of a column (x=300, 150 px into the image). */
  async function columnColours(image: Buffer, spacing: number, count: number): Promise<Rgb[]> {
    const px = await pixelsOf(image);
    return Array.from({ length: count }, (_, i) => px.at(300, slot(i, spacing) + 150));
  }

  it('fullpage loads every lazy image and the lazy frame down a 10 000 px page', async () => {
    const r = await t.snap({ url: url('/long'), fullpage: true, page_width: 1000, image_format: 'png' });
    expect(r.status).to.equal(200);
    expect(await imageSize(r.raw)).to.deep.equal([1000, 10_000]);
    const seen = await columnColours(r.raw, 1000, 10);
    seen.forEach((c, i) => {
      expect(near(c, COLOURS[i]!), `image ${i} at y=${slot(i, 1000)}: ${c}`).to.equal(true);
    });
    const px = await pixelsOf(r.raw);
    expect(px.at(750, slot(9, 1000) + 100)).to.satisfy((c: Rgb) => near(c, FRAME_COLOUR));
  });

  it('fullpage leaves the DOM as the page made it (the loading attributes are still there)', async () => {
    const r = await t.snap({ url: url('/long'), fullpage: true, html_only: true });
    expect((r.body.html as string).match(/loading="lazy"/g)).to.have.length(11);
  });

  it('fullpage loads what an IntersectionObserver loads as it enters the viewport', async () => {
    const r = await t.snap({ url: url('/observed'), fullpage: true, page_width: 800, image_format: 'png' });
    const seen = await columnColours(r.raw, 1200, 5);
    seen.forEach((c, i) => {
      expect(near(c, COLOURS[i]!), `image ${i}: ${c}`).to.equal(true);
    });
  });

  it('fullpage keeps a 100vh header at the viewport height and still loads the lazy images under it', async () => {
    const r = await t.snap({ url: url('/hero'), fullpage: true, page_width: 800, page_height: 600, image_format: 'png' });
    expect(await imageSize(r.raw)).to.deep.equal([800, 600 + 5000]);
    const px = await pixelsOf(r.raw);
    expect(px.at(10, 595)).to.deep.equal([200, 200, 200]);
    expect(px.at(10, 605)).to.deep.equal(WHITE);
    for (let i = 0; i < 4; i++) expect(near(px.at(300, 600 + slot(i, 1200) + 150), COLOURS[i]!), `image ${i}`).to.equal(true);
  });

  it('under a 100vh header, what an observer loads comes with fullpage_advanced (scrolled into view), not with fullpage (documented)', async () => {
    const at = (i: number) => 600 + slot(i, 1200) + 150;
    const advanced = await pixelsOf(
      (await t.snap({ url: url('/hero-observed'), fullpage_advanced: true, page_width: 800, page_height: 600, image_format: 'png' })).raw,
    );
    expect(advanced.height).to.equal(5600);
    for (let i = 0; i < 4; i++) expect(near(advanced.at(300, at(i)), COLOURS[i]!), `fullpage_advanced, image ${i}`).to.equal(true);
    // Growing the viewport grows the header with it, and the images stay below the viewport.
    const plain = await pixelsOf((await t.snap({ url: url('/hero-observed'), fullpage: true, page_width: 800, page_height: 600, image_format: 'png' })).raw);
    for (let i = 0; i < 4; i++) expect(plain.at(300, at(i)), `fullpage, image ${i}`).to.deep.equal(WHITE);
  });

  it('images loaded only by scroll events: fullpage_advanced loads them all; fullpage (no scrolling) only those in the first viewport', async () => {
    const advanced = await t.snap({ url: url('/on-scroll'), fullpage_advanced: true, page_width: 800, image_format: 'png' });
    const all = await columnColours(advanced.raw, 1200, 5);
    all.forEach((c, i) => {
      expect(near(c, COLOURS[i]!), `fullpage_advanced, image ${i}: ${c}`).to.equal(true);
    });
    // Documented: growing the viewport sends no scroll event, so such a loader never runs below the first viewport.
    const plain = await t.snap({ url: url('/on-scroll'), fullpage: true, page_width: 800, image_format: 'png' });
    const some = await columnColours(plain.raw, 1200, 5);
    expect(near(some[0]!, COLOURS[0]!), `fullpage, image 0: ${some[0]}`).to.equal(true);
    some.slice(1).forEach((c, i) => {
      expect(c, `fullpage, image ${i + 1}`).to.deep.equal(WHITE);
    });
  });

  it('fullpage_advanced follows an infinite scroll down to the maximum height and answers 200, cut there', async () => {
    const started = Date.now();
    const r = await t.snap({ url: url('/infinite'), fullpage_advanced: true, page_width: 400, image_format: 'png' });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(await imageSize(r.raw)).to.deep.equal([400, MAX_FULLPAGE_HEIGHT]);
    // The parts are 2 500 px each: the last rows are part 6's.
    expect((await pixelsOf(r.raw)).at(200, MAX_FULLPAGE_HEIGHT - 10)).to.deep.equal(band(6));
    console.log(`      infinite scroll to ${MAX_FULLPAGE_HEIGHT} px: ${Date.now() - started} ms`);
  });

  it("incremental_scroll on an endless page stops scrolling within the spec's 10 seconds", async () => {
    const started = Date.now();
    const r = await t.snap({ url: url('/infinite'), incremental_scroll: true, page_width: 400, page_height: 200, image_format: 'png' });
    const elapsed = Date.now() - started;
    expect(r.status).to.equal(200);
    expect(await imageSize(r.raw)).to.deep.equal([400, 200]);
    // Back at the top: the viewport shows the first part.
    expect((await pixelsOf(r.raw)).at(200, 100)).to.deep.equal(band(0));
    console.log(`      incremental_scroll on the endless page: ${elapsed} ms`);
    // 10 s of scrolling, plus the page's load and the capture.
    expect(elapsed).to.be.within(9_000, 11_500);
  });

  for (const mode of ['fullpage', 'fullpage_advanced'] as const) {
    it(`${mode}: a sticky header appears once, at the top, even when the page was left scrolled down`, async () => {
      const scrolled = JSON.stringify([{ type: 'javascript', value: 'window.scrollTo(0, 3000)' }]);
      const r = await t.snap({ url: url('/sticky'), [mode]: true, page_width: 400, image_format: 'png', multi_step_actions: scrolled });
      expect(await imageSize(r.raw)).to.deep.equal([400, MAX_FULLPAGE_HEIGHT]);
      const px = await pixelsOf(r.raw);
      expect(px.at(10, 40)).to.deep.equal(HEADER);
      const red: number[] = [];
      for (let y = 80; y < MAX_FULLPAGE_HEIGHT; y += 20) if (near(px.at(10, y), HEADER)) red.push(y);
      expect(red, 'rows below the header showing it').to.deep.equal([]);
    });
  }

  it(`fullpage cuts a page taller than the maximum (${MAX_FULLPAGE_HEIGHT} CSS px) at it, times scale_factor, with 200`, async () => {
    for (const scale of [1, 2]) {
      const r = await t.snap({ url: url('/taller'), fullpage: true, page_width: 400, scale_factor: scale, image_format: 'png' });
      expect(r.status).to.equal(200);
      expect(await imageSize(r.raw)).to.deep.equal([400 * scale, MAX_FULLPAGE_HEIGHT * scale]);
      // Cut, not scaled: the last rows are band 15's, the first band 0's.
      const px = await pixelsOf(r.raw);
      expect(px.at(10, 10)).to.deep.equal(band(0));
      expect(px.at(10, (MAX_FULLPAGE_HEIGHT - 10) * scale)).to.deep.equal(band(15));
    }
  });

  it("selectors with fullpage: the element's whole box, taller than the viewport, cut out of the page at its top, its lazy content loaded", async () => {
    const section = await t.snap({ url: url('/section'), selectors: '#s', fullpage: true, page_width: 800, page_height: 600, image_format: 'png' });
    expect(await imageSize(section.raw)).to.deep.equal([800, 3000]);
    let px = await pixelsOf(section.raw);
    expect(near(px.at(300, 2650), COLOURS[4]!), `the lazy image: ${px.at(300, 2650)}`).to.equal(true);
    for (let y = 0; y < 3000; y += 20) expect(px.at(10, y), `row ${y}`).to.deep.equal([238, 238, 238]);
    // The element that holds the sticky header: the header once, at its top, as on the page's full-page image.
    const whole = await t.snap({ url: url('/section'), selectors: '#page', fullpage: true, page_width: 800, page_height: 600, image_format: 'png' });
    expect(await imageSize(whole.raw)).to.deep.equal([800, 5760]);
    px = await pixelsOf(whole.raw);
    expect(px.at(10, 30)).to.deep.equal(HEADER);
    const red: number[] = [];
    for (let y = 60; y < 5760; y += 20) if (near(px.at(10, y), HEADER)) red.push(y);
    expect(red, 'rows below the header showing it').to.deep.equal([]);
    expect(near(px.at(300, 760 + 2650), COLOURS[4]!)).to.equal(true);
  });

  it('fullpage draws the sections the renderer skips away from the viewport (content-visibility: auto), and leaves their DOM as it is', async () => {
    const r = await t.snap({ url: url('/skipped'), fullpage: true, page_width: 800, page_height: 600, image_format: 'png' });
    expect(await imageSize(r.raw)).to.deep.equal([800, 5600]);
    const px = await pixelsOf(r.raw);
    for (let i = 0; i < 8; i++) expect(px.at(400, i * 700 + 350), `section ${i}`).to.deep.equal(COLOURS[i]);
    const html = await t.snap({ url: url('/skipped'), fullpage: true, html_only: true });
    expect(html.body.html as string).to.contain(PAGES['/skipped']!.slice(PAGES['/skipped']!.indexOf('<section'), PAGES['/skipped']!.indexOf('</body>')));
  });

  for (const mode of ['fullpage', 'fullpage_advanced'] as const) {
    it(`${mode}: what is fixed in the lower half of the viewport is drawn once, at the bottom of the page, not over the first screen; a fixed header stays at the top`, async () => {
      const r = await t.snap({ url: url('/fixed-bottom'), [mode]: true, page_width: 800, page_height: 600, image_format: 'png' });
      expect(await imageSize(r.raw)).to.deep.equal([800, 2800]);
      const px = await pixelsOf(r.raw);
      expect(px.at(400, 2775), 'the bar, in the last 50 rows').to.deep.equal(FOOTER);
      expect(px.at(750, 2800 - 100), 'the launcher, 70 px above the bottom').to.deep.equal(FRAME_COLOUR);
      expect(px.at(40, 2800 - 90), 'the badge, moved alone').to.deep.equal(HEADER);
      expect(px.at(70, 600 - 100), 'its box, left on the first screen').to.deep.equal(BOX);
      const covered: number[] = [];
      // Above where they belong: the launcher's 60 px end 70 px above the bottom, the bar is the last 50.
      for (let y = 0; y < 2750; y += 10) if (near(px.at(400, y), FOOTER) || (y < 2670 && near(px.at(750, y), FRAME_COLOUR))) covered.push(y);
      expect(covered, 'rows above the bottom showing the bar or the launcher').to.deep.equal([]);
      for (let i = 0; i < 4; i++) expect(px.at(400, i * 700 + 575), `band ${i}, where the bar is on the first screen`).to.deep.equal(COLOURS[i]);
      expect(px.at(400, 20), 'the fixed header, at the top').to.deep.equal(HEADER);
      expect(px.at(400, 2700), 'no header at the bottom').to.deep.equal(COLOURS[3]);
    });
  }

  it('a page cut at the maximum height: what is fixed at the bottom of the viewport is at the bottom of the image', async () => {
    const r = await t.snap({ url: url('/taller-fixed'), fullpage: true, page_width: 400, image_format: 'png' });
    expect(await imageSize(r.raw)).to.deep.equal([400, MAX_FULLPAGE_HEIGHT]);
    const px = await pixelsOf(r.raw);
    expect(px.at(200, MAX_FULLPAGE_HEIGHT - 20)).to.deep.equal(FOOTER);
    expect(px.at(200, MAX_FULLPAGE_HEIGHT - 60)).to.deep.equal(band(15));
    expect(px.at(200, 1000 - 20), 'where the bar is on the first screen').to.deep.equal(band(0));
  });

  it('captures the long page fast (prints the times: fullpage and fullpage_advanced, JPEG, 1920 wide)', async () => {
    const times: Record<string, number[]> = { fullpage: [], fullpage_advanced: [] };
    for (let i = 0; i < 5; i++) {
      for (const mode of Object.keys(times)) {
        const started = performance.now();
        const r = await t.snap({ url: url('/long'), [mode]: true, quality: 80 });
        times[mode]!.push(performance.now() - started);
        expect(r.status).to.equal(200);
      }
    }
    for (const [mode, ms] of Object.entries(times)) console.log(`      ${mode}: p50 ${p50(ms).toFixed(0)} ms (${ms.map((m) => m.toFixed(0)).join(', ')})`);
    // Generous bounds: these catch a fixed sleep or a missed signal, not a slow machine.
    expect(p50(times.fullpage!)).to.be.below(3000);
    expect(p50(times.fullpage_advanced!)).to.be.below(4000);
  });
});
