/**
 * The image POST /ai/providers/:provider/test sends: a small drawn web page (a heading, a
 * line of text, a button), so the model has something real to describe and the test costs
 * a few hundred input tokens. Drawn once per process.
 */
import sharp from 'sharp';

export const SAMPLE_PROMPT = 'This is a test. In one short sentence, what does this web page show?';

const SVG = `<svg xmlns="http://www.w3.org/2000/svg" width="480" height="270">
  <rect width="100%" height="100%" fill="#ffffff"/>
  <rect width="100%" height="44" fill="#1f3a5f"/>
  <text x="20" y="29" font-family="sans-serif" font-size="18" fill="#ffffff">Example Shop</text>
  <text x="20" y="100" font-family="sans-serif" font-size="28" fill="#111111">Summer sale: 20% off</text>
  <text x="20" y="140" font-family="sans-serif" font-size="16" fill="#444444">Free delivery on every order this week.</text>
  <rect x="20" y="175" width="150" height="44" rx="6" fill="#e4572e"/>
  <text x="42" y="203" font-family="sans-serif" font-size="17" fill="#ffffff">Shop now</text>
</svg>`;

let drawn: Promise<Buffer> | null = null;

/** The sample page as PNG bytes. */
export function sampleImage(): Promise<Buffer> {
  drawn ??= sharp(Buffer.from(SVG)).png().toBuffer();
  return drawn;
}
