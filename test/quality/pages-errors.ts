/**
 * Pages whose server answers an error status with a page of its own (a shop's "not found"
 * page, an application's error page): the capture shows what the server rendered, as a
 * browser does, with 200 from /snap.
 *
 * Pages whose right answer is an error of the service (a dialog that never closes, a page
 * that crashes, a server that never answers) check the status and the error envelope with
 * expectError (page.ts), e.g.:
 *   { name: 'never-answers', mimics: '…', routes: { '/': { delayMs: 60_000, body: '' } }, params: { timeout… },
 *     check: (a) => expectError(a, 504, 'capture_timeout') }
 */
import { COLOURS, type QualityPage, type Rgb, box, css, doc } from './page';
import { expectColour, expectInk, expectSize } from './picture';

const BRAND: Rgb = COLOURS.indigo;
const WARNING: Rgb = [230, 120, 0];

function errorPage(status: number, title: string, colour: Rgb): string {
  return doc(
    box(BRAND, 0, 0, 800, 70) +
      `<div style="position:absolute;left:100px;top:150px;width:600px;height:120px;background:${css(colour)}"></div>` +
      `<h1 style="position:absolute;left:100px;top:300px;margin:0;font:40px sans-serif">${status} ${title}</h1>` +
      '<p style="position:absolute;left:100px;top:360px;margin:0;font:20px sans-serif">Try the search, or go back to the home page.</p>',
    { title: `${status} ${title}` },
  );
}

/** The server's own page is in the picture: its header bar, its coloured panel and its text. */
function expectServerPage(colour: Rgb) {
  return async (a: Parameters<QualityPage['check']>[0]) => {
    const p = await a.picture();
    expectSize(p, 800, 600);
    expectColour(p, 400, 35, BRAND, 'the site header of the error page');
    expectColour(p, 400, 210, colour, 'the error page’s panel');
    expectInk(p, { x: 100, y: 300, w: 600, h: 90 }, 'the error page’s text');
  };
}

export const ERROR_PAGES: QualityPage[] = [
  {
    name: 'http-404-page',
    mimics: 'a shop or blog answering 404 with its own branded "page not found" page',
    routes: { '/': { status: 404, body: errorPage(404, 'Page not found', COLOURS.slate) } },
    params: {},
    check: expectServerPage(COLOURS.slate),
  },
  {
    name: 'http-500-page',
    mimics: 'an application answering 500 with its error page (a framework’s or a CDN’s error page)',
    routes: { '/': { status: 500, body: errorPage(500, 'Something went wrong', WARNING) } },
    params: {},
    check: expectServerPage(WARNING),
  },
];
