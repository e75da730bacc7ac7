/**
 * optimize_for_speed on the real Grid: a PNG of a page of gradients and noise encoded for
 * speed (the default) and for size holds the same pixels (PNG is lossless either way) and
 * differs in bytes as the bench measured; with a format it does not change it is refused,
 * before anything is spent.
 */
import { expect } from 'chai';
import sharp from 'sharp';
import { screenshotsUsed, snapSuite } from '../../support/capture-helpers';
import { expectEnvelope } from '../../support/errors';
import { type LocalServer, servePages } from '../../support/local-server';

/** Gradients and a deterministic noise field: what zlib's level changes the size of. */
const PAGE =
  '<!DOCTYPE html><html><head><meta charset="utf-8"><style>html,body{margin:0}' +
  'body{background:linear-gradient(135deg,#fde,#9cf 40%,#fc9)}canvas{display:block;margin:20px}</style></head><body>' +
  '<h1 style="font:32px sans-serif;margin:20px">Encoder test</h1><canvas id="c" width="600" height="300"></canvas>' +
  '<script>const c=document.getElementById("c").getContext("2d");let s=7;const r=()=>(s=(s*1664525+1013904223)>>>0)/4294967296;' +
  'for(let y=0;y<300;y+=3)for(let x=0;x<600;x+=3){c.fillStyle="hsl("+Math.floor(r()*360)+",70%,60%)";c.fillRect(x,y,3,3);}</script></body></html>';

async function rawPixels(png: Buffer): Promise<Buffer> {
  return sharp(png).ensureAlpha().raw().toBuffer();
}

describe('optimize_for_speed: a PNG encoded for speed or for size (real Grid)', function () {
  this.timeout(60_000);
  const t = snapSuite({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1' });
  let site: LocalServer;
  before(async () => {
    site = await servePages((r) => (r.path === '/noise' ? { body: PAGE } : undefined));
  });
  after(() => site.stop());

  const png = async (extra: Record<string, string | boolean>) => {
    const r = await t.snap({ url: `${site.origin}/noise`, image_format: 'png', page_width: 800, page_height: 500, ...extra });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(r.headers.get('content-type')).to.equal('image/png');
    return r.raw;
  };

  it('the same pixels either way; for size is smaller, and the default is for speed', async () => {
    const small = await png({ optimize_for_speed: false });
    const fast = await png({ optimize_for_speed: true });
    const plain = await png({});
    expect((await rawPixels(fast)).equals(await rawPixels(small)), 'lossless either way').to.equal(true);
    expect(fast.length, 'the fast PNG is the larger one').to.be.above(small.length * 1.05);
    expect(Math.abs(plain.length - fast.length), 'the default is the fast encoding').to.be.below(Math.abs(plain.length - small.length));
  });

  it('with jpeg, webp or pdf it is refused (400 invalid_parameter naming the fix), nothing charged', async () => {
    const { access_token } = await t.sys.account('free');
    for (const image_format of ['jpeg', 'webp', 'pdf']) {
      const r = await t.snap({ url: `${site.origin}/noise`, image_format, optimize_for_speed: false }, access_token);
      expectEnvelope(r, 400, 'invalid_parameter', 'optimize_for_speed', 'image_format=png');
    }
    // The default format (jpeg) too.
    expectEnvelope(await t.snap({ url: `${site.origin}/noise`, optimize_for_speed: true }, access_token), 400, 'invalid_parameter', 'optimize_for_speed');
    expect(await screenshotsUsed(t.sys, access_token)).to.equal(0);
  });

  it('a bad value is 400 invalid_parameter', async () => {
    expectEnvelope(
      await t.snap({ url: `${site.origin}/noise`, image_format: 'png', optimize_for_speed: 'sometimes' }),
      400,
      'invalid_parameter',
      'optimize_for_speed',
    );
  });
});
