/**
 * Web fonts: one that comes late (the text must end up drawn, in it) and one that never comes
 * (the fallback must be drawn). The web font is a font file of this machine (DejaVu Serif
 * Bold, assets.ts), so the same text in the local family is the reference of what it looks
 * like; the fallback is monospace, which looks nothing like it.
 *
 * Layout (800x600), the same text at 40 px in three 760x60 boxes: A (y=20) in the page's web
 * font, B (y=100) the reference as the web font would draw it, C (y=180) the fallback.
 */
import { type Answer, type QualityPage, doc } from './page';
import { type Box, expectInk, unlikeness, UNLIKE } from './picture';

const TEXT = 'Hamburgefonstiv 0123';
const A: Box = { x: 20, y: 20, w: 760, h: 60 };
const B: Box = { x: 20, y: 100, w: 760, h: 60 };
const C: Box = { x: 20, y: 180, w: 760, h: 60 };
const line = (b: Box, font: string) =>
  `<div style="position:absolute;left:${b.x}px;top:${b.y}px;width:${b.w}px;height:${b.h}px;overflow:hidden;white-space:nowrap;font:${font};` +
  `line-height:${b.h}px">${TEXT}</div>`;

/** How late the slow font comes: longer than a page takes to load, shorter than the 3 s a block period lasts. */
const FONT_DELAY_MS = 1500;

/** Box A shows the text, drawn in the web font: like the reference B, unlike the fallback C. */
async function expectWebFontDrawn(a: Answer): Promise<void> {
  const p = await a.picture();
  expectInk(p, A, 'text in the slow web font (invisible while the font loads)');
  expectInk(p, B, 'the reference');
  const asFallback = unlikeness(p, A, C);
  const asFont = unlikeness(p, A, B);
  if (asFallback < UNLIKE) throw new Error(`the text is drawn in the fallback font (unlikeness to it ${asFallback.toFixed(2)}), expected the web font`);
  if (asFont >= asFallback)
    throw new Error(`the text is not drawn in the web font: unlikeness to it ${asFont.toFixed(2)}, to the fallback ${asFallback.toFixed(2)}`);
}

export const FONT_PAGES: QualityPage[] = [
  {
    name: 'webfont-slow',
    mimics: 'a brand font from a slow CDN with font-display: block (Typekit, self-hosted @font-face): text stays invisible until the font comes',
    routes: {
      '/': {
        body: doc(line(A, "40px 'QualitySlow', monospace") + line(B, "bold 40px 'DejaVu Serif'") + line(C, '40px monospace'), {
          head: `<style>@font-face{font-family:'QualitySlow';src:url(/_/font/DejaVuSerif-Bold.ttf?delay=${FONT_DELAY_MS}) format('truetype');font-display:block}</style>`,
        }),
      },
    },
    params: {},
    check: expectWebFontDrawn,
  },
  {
    name: 'webfont-slow-app',
    mimics: 'a single-page app (React, Vue) that renders its text after load, in a brand font that then starts loading and comes late',
    knownGap: 'the font starts loading after the load event: the capture must wait for the page’s fonts (document.fonts), being added',
    routes: {
      '/': {
        body: doc(
          "<div id='app'></div><script>addEventListener('load', () => { document.getElementById('app').innerHTML = " +
            JSON.stringify(line(A, "40px 'QualitySlow', monospace") + line(B, "bold 40px 'DejaVu Serif'") + line(C, '40px monospace')) +
            '; });</script>',
          {
            head: `<style>@font-face{font-family:'QualitySlow';src:url(/_/font/DejaVuSerif-Bold.ttf?delay=${FONT_DELAY_MS}) format('truetype');font-display:block}</style>`,
          },
        ),
      },
    },
    params: {},
    check: expectWebFontDrawn,
  },
  {
    name: 'webfont-404',
    mimics: 'a site whose web font file is gone (404 after a redeploy): the fallback in the font stack must be drawn',
    routes: {
      '/': {
        body: doc(line(A, "40px 'QualityMissing', monospace") + line(B, '40px monospace') + line(C, "bold 40px 'DejaVu Serif'"), {
          head: "<style>@font-face{font-family:'QualityMissing';src:url(missing.woff2) format('woff2');font-display:block}</style>",
        }),
      },
    },
    params: {},
    async check(a) {
      const p = await a.picture();
      expectInk(p, A, 'text whose web font is missing');
      const asFallback = unlikeness(p, A, B);
      if (asFallback >= UNLIKE) throw new Error(`the text is not drawn in the fallback (monospace): unlikeness to it ${asFallback.toFixed(2)}`);
    },
  },
];
