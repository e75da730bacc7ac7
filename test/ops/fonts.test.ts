/**
 * Chromium on this machine draws every script the capture pages are written in, with real
 * glyphs, and emoji in colour: the fonts scripts/ensure-system-deps.js installs (FONT_PACKAGES)
 * are there and fontconfig finds them. Checked twice: `fc-list` finds a font for each script's
 * language and a colour font with 😀; and Chromium itself, asked over DevTools which fonts drew
 * each line of a page (CSS.getPlatformFontsForNode), used only fonts fontconfig lists for that
 * language. A missing glyph is drawn with some other font's empty box, so a box fails the test.
 */
import { execFileSync } from 'node:child_process';
import { expect } from 'chai';
import chrome from 'selenium-webdriver/chrome';
import CHROME_ARGS from '../../grid/config/chrome-args.json';

const { DEFAULT_CHROME_BIN, DEFAULT_CHROMEDRIVER_BIN } = require('../../../scripts/ensure-system-deps.js') as {
  DEFAULT_CHROME_BIN: string;
  DEFAULT_CHROMEDRIVER_BIN: string;
};

/** Each script issue 41 names, as fontconfig's language tag and a line written in it (no space or punctuation, which any font draws). */
const SCRIPTS: Array<{ name: string; lang: string; text: string }> = [
  { name: 'Chinese (Simplified)', lang: 'zh-cn', text: '简体中文你好世界' },
  { name: 'Chinese (Traditional)', lang: 'zh-tw', text: '繁體中文你好世界' },
  { name: 'Japanese', lang: 'ja', text: 'こんにちはカタカナ日本語' },
  { name: 'Korean', lang: 'ko', text: '안녕하세요세계' },
  { name: 'Hindi (Devanagari)', lang: 'hi', text: 'नमस्तेदुनिया' },
  { name: 'Bengali', lang: 'bn', text: 'হ্যালোবিশ্ব' },
  { name: 'Tamil', lang: 'ta', text: 'வணக்கம்உலகம்' },
  { name: 'Telugu', lang: 'te', text: 'నమస్కారంప్రపంచం' },
  { name: 'Gujarati', lang: 'gu', text: 'નમસ્તેદુનિયા' },
  { name: 'Thai', lang: 'th', text: 'สวัสดีชาวโลก' },
  { name: 'Arabic', lang: 'ar', text: 'مرحبابالعالم' },
  { name: 'Hebrew', lang: 'he', text: 'שלוםעולם' },
];
const EMOJI = { pattern: ':charset=1f600:color=True', text: '😀🎉🚀👍🏽🍣' };

/** The family names (each with its other names) of the fonts matching a fontconfig pattern. */
function fontFamilies(pattern: string): string[] {
  const out = execFileSync('fc-list', [pattern, 'family'], { encoding: 'utf8' });
  const names = out.split('\n').flatMap((line) => line.split(','));
  return [...new Set(names.map((n) => n.replace(/\\/g, '').trim()).filter(Boolean))].sort();
}

const INSTALL_HINT = 'run `node scripts/ensure-system-deps.js` (as root) to install the font packages';

describe('fonts for every script and colour emoji (this machine)', function () {
  this.timeout(60_000);

  describe('fontconfig finds', () => {
    for (const script of SCRIPTS) {
      it(`a font for ${script.name} (fc-list :lang=${script.lang})`, () => {
        expect(fontFamilies(`:lang=${script.lang}`), `no font for ${script.name}: ${INSTALL_HINT}`).not.to.be.empty;
      });
    }

    it(`a colour emoji font (fc-list ${EMOJI.pattern})`, () => {
      expect(fontFamilies(EMOJI.pattern), `no colour emoji font: ${INSTALL_HINT}`).not.to.be.empty;
    });
  });

  describe('Chromium draws each with such a font', () => {
    let driver: chrome.Driver | null = null;
    const used = new Map<string, string[]>();

    before(async function () {
      this.timeout(60_000);
      const options = new chrome.Options().setChromeBinaryPath(process.env.CHROME_BIN || DEFAULT_CHROME_BIN).addArguments(...CHROME_ARGS);
      driver = chrome.Driver.createSession(options, new chrome.ServiceBuilder(process.env.CHROMEDRIVER_BIN || DEFAULT_CHROMEDRIVER_BIN).build());
      const lines = [...SCRIPTS.map((s) => ({ id: s.lang, lang: s.lang, text: s.text })), { id: 'emoji', lang: 'en', text: EMOJI.text }];
      const html = `<!doctype html><meta charset="utf-8"><body style="font-family: sans-serif">${lines.map((l) => `<p id="${l.id}" lang="${l.lang}">${l.text}</p>`).join('')}`;
      await driver.get(`data:text/html;charset=utf-8,${encodeURIComponent(html)}`);
      await driver.sendAndGetDevToolsCommand('DOM.enable', {});
      await driver.sendAndGetDevToolsCommand('CSS.enable', {});
      const doc = (await driver.sendAndGetDevToolsCommand('DOM.getDocument', {})) as unknown as { root: { nodeId: number } };
      for (const line of lines) {
        const node = (await driver.sendAndGetDevToolsCommand('DOM.querySelector', { nodeId: doc.root.nodeId, selector: `#${line.id}` })) as unknown as {
          nodeId: number;
        };
        const fonts = (await driver.sendAndGetDevToolsCommand('CSS.getPlatformFontsForNode', { nodeId: node.nodeId })) as unknown as {
          fonts: Array<{ familyName: string }>;
        };
        used.set(line.id, fonts.fonts.map((f) => f.familyName).sort());
      }
    });

    after(async () => {
      // ChromeDriver's quit leaves Chromium's headless shell running (as BrowserSlot.quit says): close the browser first.
      await driver?.sendAndGetDevToolsCommand('Browser.close', {}).catch(() => undefined);
      await driver?.quit().catch(() => undefined);
    });

    for (const script of SCRIPTS) {
      it(`${script.name}: only fonts fontconfig lists for :lang=${script.lang}`, () => {
        const fonts = used.get(script.lang) ?? [];
        const fit = fontFamilies(`:lang=${script.lang}`);
        expect(fonts, 'the fonts Chromium used').not.to.be.empty;
        expect(
          fonts.filter((f) => !fit.includes(f)),
          `${script.name} drawn with fonts that lack its glyphs (boxes): ${fonts.join(', ')}; ${INSTALL_HINT}`,
        ).to.deep.equal([]);
      });
    }

    it('emoji: only colour emoji fonts', () => {
      const fonts = used.get('emoji') ?? [];
      const colour = fontFamilies(EMOJI.pattern);
      expect(fonts, 'the fonts Chromium used').not.to.be.empty;
      expect(
        fonts.filter((f) => !colour.includes(f)),
        `emoji drawn with fonts that are not colour emoji fonts (outlines or boxes): ${fonts.join(', ')}; ${INSTALL_HINT}`,
      ).to.deep.equal([]);
    });
  });
});
