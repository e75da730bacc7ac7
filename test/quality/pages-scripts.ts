/**
 * Pages in the world's scripts and in emoji: their text must be drawn with real glyphs (the
 * fonts of the browser's machine), not the missing-glyph box.
 *
 * Layout of a script page (800x600): one character per 80x80 cell at 48 px in the first row
 * (x = 20 + 90 i, y = 20); in the second row (y = 120) three characters no font has
 * (unassigned code points), drawn as the missing-glyph box of the same font at the same size:
 * the reference; a sentence at 32 px below (y = 230). The check (picture.ts expectGlyphs):
 * every sample cell has ink, is unlike the reference boxes and unlike the other samples.
 */
import { type QualityPage, doc } from './page';
import { type Box, expectGlyphs, expectInk, expectOneColourGlyph, expectSaturated, expectSize } from './picture';

const CELL = 80;
const FONT_PX = 48;
/** Code points no font has (unassigned in the Greek block): each is drawn as the missing-glyph box. */
const NO_GLYPH = ['\u0378', '\u0379', '\u0380'];
const cellBox = (i: number, row: number): Box => ({ x: 20 + i * 90, y: 20 + row * 100, w: CELL, h: CELL });
const SENTENCE: Box = { x: 20, y: 230, w: 760, h: 60 };

const cells = (chars: string[], row: number) =>
  chars
    .map((c, i) => {
      const b = cellBox(i, row);
      return (
        `<div style="position:absolute;left:${b.x}px;top:${b.y}px;width:${b.w}px;height:${b.h}px;overflow:hidden;` +
        `font-size:${FONT_PX}px;line-height:${CELL}px;text-align:center">${c}</div>`
      );
    })
    .join('');

export interface Script {
  name: string;
  /** The language's BCP 47 tag, on <html lang>: it picks the font (Simplified or Traditional Chinese, Japanese). */
  lang: string;
  label: string;
  dir?: 'rtl';
  /** Single code points of the script, one per cell. */
  samples: string[];
  sentence: string;
  mimics: string;
}

const SCRIPTS: Script[] = [
  {
    name: 'script-zh-hans',
    lang: 'zh-CN',
    label: 'Chinese (Simplified)',
    samples: ['简', '体', '中', '文', '汉', '语'],
    sentence: '简体中文：我们的网站为您提供最新的新闻。',
    mimics: 'a news site of mainland China (Baidu, Sina): Simplified Chinese text in the default sans-serif',
  },
  {
    name: 'script-zh-hant',
    lang: 'zh-TW',
    label: 'Chinese (Traditional)',
    samples: ['繁', '體', '臺', '灣', '國', '語'],
    sentence: '繁體中文：我們的網站為您提供最新的新聞。',
    mimics: 'a site of Taiwan or Hong Kong: Traditional Chinese text',
  },
  {
    name: 'script-ja',
    lang: 'ja',
    label: 'Japanese',
    samples: ['あ', 'ひ', 'カ', 'ナ', '日', '本'],
    sentence: '日本語のテキスト：ひらがな、カタカナ、漢字。',
    mimics: 'a Japanese site (Yahoo! JAPAN): hiragana, katakana and kanji',
  },
  {
    name: 'script-ko',
    lang: 'ko',
    label: 'Korean',
    samples: ['한', '국', '어', '글', '자', '쓰'],
    sentence: '한국어 텍스트: 오늘의 뉴스를 확인하세요.',
    mimics: 'a Korean site (Naver): Hangul syllables',
  },
  {
    name: 'script-hi',
    lang: 'hi',
    label: 'Hindi (Devanagari)',
    samples: ['क', 'ख', 'ग', 'घ', 'न', 'म'],
    sentence: 'हिन्दी में आज के समाचार पढ़ें',
    mimics: 'a Hindi news site: Devanagari with conjuncts and vowel signs',
  },
  {
    name: 'script-bn',
    lang: 'bn',
    label: 'Bengali',
    samples: ['ক', 'খ', 'গ', 'ঘ', 'ন', 'ম'],
    sentence: 'বাংলা ভাষায় আজকের খবর পড়ুন',
    mimics: 'a Bangladeshi or West Bengal news site: Bengali script',
  },
  {
    name: 'script-ta',
    lang: 'ta',
    label: 'Tamil',
    samples: ['க', 'ங', 'ச', 'ஞ', 'ட', 'ண'],
    sentence: 'தமிழ் செய்திகளைப் படிக்கவும்',
    mimics: 'a Tamil news site: Tamil script',
  },
  {
    name: 'script-th',
    lang: 'th',
    label: 'Thai',
    samples: ['ก', 'ข', 'ค', 'ง', 'จ', 'ฉ'],
    sentence: 'ภาษาไทย อ่านข่าววันนี้',
    mimics: 'a Thai site (Sanook, Pantip): Thai script without spaces between words',
  },
  {
    name: 'script-ar',
    lang: 'ar',
    dir: 'rtl',
    label: 'Arabic',
    samples: ['ع', 'ر', 'ب', 'ي', 'ة', 'ش'],
    sentence: 'اقرأ آخر الأخبار باللغة العربية',
    mimics: 'an Arabic news site (Al Jazeera): joined Arabic letters, right to left',
  },
  {
    name: 'script-he',
    lang: 'he',
    dir: 'rtl',
    label: 'Hebrew',
    samples: ['ע', 'ב', 'ר', 'י', 'ת', 'ש'],
    sentence: 'קראו את החדשות האחרונות בעברית',
    mimics: 'an Israeli news site (Ynet): Hebrew, right to left',
  },
];

export function scriptPage(s: Script): QualityPage {
  // Cells are placed from the left whatever the direction (absolute boxes); the sentence follows the page's direction.
  const body =
    cells(s.samples, 0) +
    cells(NO_GLYPH, 1) +
    `<p style="position:absolute;left:${SENTENCE.x}px;top:${SENTENCE.y}px;width:${SENTENCE.w}px;height:${SENTENCE.h}px;margin:0;font-size:32px;` +
    `line-height:${SENTENCE.h}px;overflow:hidden">${s.sentence}</p>`;
  return {
    name: s.name,
    mimics: s.mimics,
    knownGap: 'needs the fonts of scripts/ensure-system-deps.js on the Chrome node',
    routes: { '/': { body: doc(body, { lang: s.lang, ...(s.dir ? { dir: s.dir } : {}) }) } },
    params: {},
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 600);
      expectGlyphs(
        p,
        s.samples.map((char, i) => ({ char, box: cellBox(i, 0) })),
        NO_GLYPH.map((_, i) => cellBox(i, 1)),
        s.label,
      );
      expectInk(p, SENTENCE, `${s.label} sentence`);
    },
  };
}

/** Emoji at 48 px in cells `width` wide (left aligned), the missing-glyph row below for reference. */
export function emojiPage(name: string, mimics: string, emoji: Array<[string, string]>, width: number, check: 'colour' | 'one-glyph'): QualityPage {
  const rowTop = (i: number) => 20 + i * 90;
  const boxOf = (i: number): Box => ({ x: 20, y: rowTop(i), w: width, h: CELL });
  const body = emoji
    .map(
      ([e], i) =>
        `<div style="position:absolute;left:20px;top:${rowTop(i)}px;width:${width}px;height:${CELL}px;overflow:hidden;font-size:${FONT_PX}px;` +
        `line-height:${CELL}px;white-space:nowrap">${e}</div>`,
    )
    .join('');
  return {
    name,
    mimics,
    knownGap: 'needs a colour emoji font (fonts-noto-color-emoji) on the Chrome node',
    routes: { '/': { body: doc(body, { lang: 'en' }) } },
    params: {},
    async check(a) {
      const p = await a.picture();
      expectSize(p, 800, 600);
      const problems: string[] = [];
      for (const [i, [, label]] of emoji.entries()) {
        try {
          // A single emoji is about 1.2 em wide (flags 1.3 em); two side by side are more than 2 em.
          if (check === 'one-glyph') expectOneColourGlyph(p, boxOf(i), label, Math.round(FONT_PX * 1.6));
          else expectSaturated(p, boxOf(i), label);
        } catch (err) {
          problems.push((err as Error).message);
        }
      }
      if (problems.length) throw new Error(problems.join('; '));
    },
  };
}

export const SCRIPT_PAGES: QualityPage[] = [
  ...SCRIPTS.map(scriptPage),
  emojiPage(
    'emoji-colour',
    'social posts, reviews and chat (Twitter/X, WhatsApp Web): emoji in running text, drawn in colour',
    [
      ['😀', 'grinning face'],
      ['🍕', 'pizza'],
      ['🚀', 'rocket'],
      ['❤️', 'red heart (with VS16)'],
      ['🎉', 'party popper'],
      ['🌍', 'globe'],
    ],
    CELL,
    'colour',
  ),
  emojiPage(
    'emoji-flags',
    'country pickers and sports scores: flags as regional-indicator pairs and tag sequences',
    [
      ['🇫🇷', 'flag of France'],
      ['🇯🇵', 'flag of Japan'],
      ['🇧🇷', 'flag of Brazil'],
      ['🇺🇦', 'flag of Ukraine'],
      ['🏴󠁧󠁢󠁳󠁣󠁴󠁿', 'flag of Scotland (tag sequence)'],
    ],
    240,
    'one-glyph',
  ),
  emojiPage(
    'emoji-zwj',
    // Coloured ones: Noto's family and polar bear are grey by design.
    'profiles and messages: ZWJ sequences and skin tones, each one glyph',
    [
      ['👩‍❤️‍👨', 'couple with heart (ZWJ)'],
      ['🏳️‍🌈', 'rainbow flag (ZWJ)'],
      ['👩🏽‍💻', 'woman technologist, medium skin tone (ZWJ)'],
      ['🧑‍🤝‍🧑', 'people holding hands (ZWJ)'],
      ['❤️‍🔥', 'heart on fire (ZWJ)'],
    ],
    320,
    'one-glyph',
  ),
];
