/**
 * The embedded mode's own browser (a local ChromeDriver the service starts, no Grid), and
 * captures stored in Google Cloud Storage (a local server speaking the GCS JSON API).
 */
import { expect } from 'chai';
import sharp from 'sharp';
import { backendConfig } from '../support/backends';
import { expectEnvelope } from '../support/errors';
import { startFakeGcs } from '../support/fake-gcs-server';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { qs, request } from '../support/http';
import { type RunningSystem, runSystem } from '../support/system';

describe('snap in embedded mode with a local ChromeDriver, storing in GCS', function () {
  this.timeout(120_000);
  let fx: FixtureServer;
  let gcs: Awaited<ReturnType<typeof startFakeGcs>>;
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;

  before(async () => {
    fx = await startFixtures();
    gcs = await startFakeGcs();
    const b = await backendConfig('sqlite', {
      ALLOW_PRIVATE_NETWORKS: 'true',
      CAPTURE_SESSIONS: '1',
      STORAGE_URL: 'gs://snap-bucket/captures',
      GCS_API_ENDPOINT: gcs.endpoint,
    });
    expect(b.config.seleniumUrl).to.equal(null);
    cleanup = b.cleanup;
    sys = await runSystem(b.config);
  });
  after(async () => {
    await sys?.stop();
    await gcs?.stop();
    await fx?.stop();
    await cleanup?.();
  });

  it('captures through the ChromeDriver it started and serves the stored files from GCS', async () => {
    const { access_token } = await sys.account();
    const r = await request(
      sys.base,
      'GET',
      `/snap?${qs({ access_token, url: `${fx.origin}/plain`, wait: 0, page_width: 700, page_height: 500, image_format: 'png', json: true })}`,
    );
    expect(r.status, r.raw.toString()).to.equal(200);
    const link = String(r.body.direct_link);
    const name = link.split('/').pop() as string;
    // The image was uploaded to the bucket under the prefix; its thumbnail is made (and
    // uploaded) when first asked for.
    expect([...gcs.objects.keys()]).to.deep.equal([`snap-bucket/captures/${name}`]);
    const thumbLink = String(r.body.direct_thumbnail_link);
    const thumb = await fetch(thumbLink);
    expect(thumb.status).to.equal(200);
    expect(await sharp(Buffer.from(await thumb.arrayBuffer())).metadata()).to.include({ width: 400, height: 286, format: 'png' });
    expect([...gcs.objects.keys()].sort()).to.deep.equal([`snap-bucket/captures/${name}`, `snap-bucket/captures/${thumbLink.split('/').pop()}`].sort());
    const image = await fetch(link);
    expect(image.headers.get('content-type')).to.equal('image/png');
    const meta = await sharp(Buffer.from(await image.arrayBuffer())).metadata();
    expect([meta.width, meta.height]).to.deep.equal([700, 500]);
    // The default answer streams the same bytes from storage.
    const bytes = await request(
      sys.base,
      'GET',
      `/snap?${qs({ access_token, url: `${fx.origin}/plain`, wait: 0, page_width: 700, page_height: 500, image_format: 'png' })}`,
    );
    expect(bytes.headers.get('x-cache')).to.equal('HIT');
    expect(bytes.raw.equals(Buffer.from(gcs.objects.get(`snap-bucket/captures/${name}`)!.data))).to.equal(true);
  });

  it('answers 404 not_found for a CDN name that does not exist', async () => {
    const r = await request(sys.base, 'GET', '/cdn/nothere123.png');
    expectEnvelope(r, 404, 'not_found');
  });
});
