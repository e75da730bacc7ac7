/**
 * /snap_html on the real Grid: the document given in html_content is rendered with the snap
 * options (image, json=true record, html_only), costs one screenshot credit, and everything it
 * asks for goes through the egress gateway and its policy like any capture's: names resolved
 * by a DNS server the test runs, `public.test` a site the operator lets through
 * (EGRESS_ALLOW_ADDRESSES=127.0.0.2), `private.test` an internal address (127.0.0.1). A meta
 * refresh or a script navigation to the internal address is refused as a refused page.
 */
import { expect } from 'chai';
import knex, { type Knex } from 'knex';
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { knexConfig } from '../../services/shared/database';
import { INLINE_DOCUMENT_URL } from '../../services/shared/screenshot-options';
import { imageSize, pixel, screenshotsUsed, startCaptureSystem } from '../support/capture-helpers';
import { type DnsServer, startDnsServer } from '../support/dns-server';
import { expectEnvelope } from '../support/errors';
import { jobFinished, qs, request } from '../support/http';

interface Site {
  port: number;
  seen: string[];
  stop(): Promise<void>;
}

async function serve(host: string): Promise<Site> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    if (req.url?.startsWith('/green.svg')) {
      res.setHeader('content-type', 'image/svg+xml');
      res.end('<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100"><rect width="100" height="100" fill="rgb(0,255,0)"/></svg>');
      return;
    }
    res.setHeader('content-type', 'text/html');
    res.end('<p>internal</p>');
  });
  server.keepAliveTimeout = 500;
  await new Promise<void>((r) => server.listen(0, host, r));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    stop: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** Every text value of every table: its bytes, and how many times it holds `token`. */
async function storedText(db: Knex, token: string): Promise<{ bytes: number; copies: number }> {
  const tables = (await db('sqlite_master').where({ type: 'table' }).pluck('name')) as string[];
  let bytes = 0;
  let copies = 0;
  for (const table of tables) {
    for (const row of (await db(table).select()) as Array<Record<string, unknown>>) {
      for (const value of Object.values(row)) {
        if (typeof value !== 'string') continue;
        bytes += Buffer.byteLength(value);
        copies += value.split(token).length - 1;
      }
    }
  }
  return { bytes, copies };
}

const doc = (body: string, head = '') =>
  `<!doctype html><html><head><meta charset="utf-8"><style>html,body{margin:0}</style>${head}</head><body>${body}</body></html>`;

describe('/snap_html: a given document rendered through the egress gateway', function () {
  this.timeout(120_000);
  let dns: DnsServer;
  let pub: Site;
  let internal: Site;
  let sys: Awaited<ReturnType<typeof startCaptureSystem>>;

  before(async () => {
    pub = await serve('127.0.0.2');
    internal = await serve('127.0.0.1');
    dns = await startDnsServer((name, type) => {
      if (type === 'AAAA') return name.endsWith('.test') ? [] : null;
      if (name === 'public.test') return ['127.0.0.2'];
      if (name === 'private.test') return ['127.0.0.1'];
      return null;
    });
    sys = await startCaptureSystem({ EGRESS_GATEWAY: 'on', EGRESS_DNS_SERVERS: dns.address, EGRESS_ALLOW_ADDRESSES: '127.0.0.2', CAPTURE_SESSIONS: '1' });
  });
  after(async () => {
    await sys?.cleanup();
    await pub.stop();
    await internal.stop();
    await dns.stop();
  });
  beforeEach(() => {
    pub.seen.length = 0;
    internal.seen.length = 0;
  });

  const get = (params: Record<string, string | number | boolean>) =>
    request(sys.sys.base, 'GET', `/snap_html?${qs({ access_token: sys.token, wait: 0, ttl: 0, ...params })}`);
  const post = (json: Record<string, unknown>) =>
    request(sys.sys.base, 'POST', '/snap_html', { headers: { authorization: `Bearer ${sys.token}` }, json: { wait: 0, ttl: 0, ...json } });
  const used = () => screenshotsUsed(sys.sys, sys.token);

  it('renders html_content as the image, at the size asked, with an image it loads from a public site', async () => {
    const before = await used();
    const html = doc(
      `<div style="width:100%;height:100vh;background:rgb(255,0,0)"><img src="http://public.test:${pub.port}/green.svg" width="100" height="100"></div>`,
    );
    const r = await post({ html_content: html, page_width: 400, page_height: 300, image_format: 'png', wait: 200 });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(r.headers.get('content-type')).to.equal('image/png');
    expect(await imageSize(r.raw)).to.deep.equal([400, 300]);
    expect(await pixel(r.raw, 300, 250)).to.deep.equal([255, 0, 0]);
    expect(await pixel(r.raw, 50, 50)).to.deep.equal([0, 255, 0]);
    expect(pub.seen).to.deep.equal(['/green.svg']);
    expect(await used()).to.equal(before + 1);
  });

  it('answers the JSON record with json=true and the rendered HTML with html_only (GET, as the n8n node sends it)', async () => {
    const record = await get({ html_content: doc('<p>record</p>'), json: true });
    expect(record.status).to.equal(200);
    expect(record.body).to.include.keys(
      'id',
      'embed_url',
      'screenshot_configuration_id',
      'direct_link',
      'direct_thumbnail_link',
      'taken_at_timestamp',
      'taken_at',
      'job_id',
    );
    const image = await fetch(String(record.body.direct_link));
    expect(image.headers.get('content-type')).to.equal('image/jpeg');
    const html = await get({
      html_content: doc('<p id="s">static</p><script>document.getElementById("s").textContent = "by script"</script>'),
      html_only: true,
    });
    expect(html.body.success).to.equal(true);
    expect(html.body.html).to.contain('<p id="s">by script</p>');
  });

  it('is a secure context, as a page of a site is: the geolocation asked for, crypto.subtle and crypto.randomUUID work', async () => {
    const html = doc(
      '<p id="secure"></p><p id="geo">waiting</p><p id="uuid"></p>' +
        '<script>document.getElementById("secure").textContent = String(isSecureContext);' +
        'document.getElementById("uuid").textContent = typeof crypto.randomUUID === "function" && crypto.subtle ? "crypto" : "no crypto";' +
        'navigator.geolocation.getCurrentPosition((p) => { const g = document.getElementById("geo"); g.textContent = p.coords.latitude + "," + p.coords.longitude; g.className = "done"; },' +
        ' (e) => { const g = document.getElementById("geo"); g.textContent = "error " + e.code; g.className = "done"; });</script>',
    );
    const r = await post({ html_content: html, html_only: true, wait_for: '#geo.done', latitude: 48.8584, longitude: 2.2945 });
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(r.body.html).to.contain('<p id="secure">true</p>');
    expect(r.body.html).to.contain('48.8584,2.2945');
    expect(r.body.html).to.contain('<p id="uuid">crypto</p>');
  });

  it('reuses the capture of the same document within ttl for free (X-Cache: HIT)', async () => {
    const html = doc('<p>cached</p>');
    const first = await post({ html_content: html, ttl: 3600, json: true });
    const before = await used();
    const again = await post({ html_content: html, ttl: 3600, json: true });
    expect(again.headers.get('x-cache')).to.equal('HIT');
    expect(again.body.id).to.equal(first.body.id);
    const other = await post({ html_content: doc('<p>other</p>'), ttl: 3600, json: true });
    expect(other.headers.get('x-cache')).to.equal('MISS');
    expect(await used()).to.equal(before + 1);
  });

  it('leaves an image at an internal address empty: it never reaches the internal server', async () => {
    const r = await post({ html_content: doc(`<img id="i" src="http://private.test:${internal.port}/green.svg">`), html_only: true, wait: 300 });
    expect(r.status).to.equal(200);
    expect(internal.seen).to.deep.equal([]);
  });

  for (const [how, html] of [
    ['a meta refresh', (port: number) => doc('<p>leaving</p>', `<meta http-equiv="refresh" content="0;url=http://private.test:${port}/secret">`)],
    [
      'a script navigation',
      (port: number) => doc(`<p>leaving</p><script>setTimeout(() => { location.href = "http://private.test:${port}/secret"; }, 50)</script>`),
    ],
  ] as const) {
    it(`refuses ${how} to an internal address with 400 url_not_allowed; nothing reaches it, no credit is spent`, async () => {
      const before = await used();
      const r = await post({ html_content: html(internal.port), wait: 1000 });
      expectEnvelope(r, 400, 'url_not_allowed', `http://private.test:${internal.port}/secret`);
      expect(internal.seen).to.deep.equal([]);
      expect(await used()).to.equal(before);
    });
  }

  it('keeps a document once in the database, its configuration shown with it and captured again from it', async () => {
    const db = knex(knexConfig(sys.sys.config.database));
    try {
      // About 300 KB, holding a token once: each copy of the document stored holds it once.
      const token = `copy-${crypto.randomUUID()}`;
      const html = doc(`<div style="width:100%;height:100vh;background:rgb(0,0,255)"><p>${token}</p></div><!--${'x'.repeat(300_000)}-->`);
      const before = await storedText(db, token);
      const r = await post({ html_content: html, json: true, page_width: 400, page_height: 300, image_format: 'png' });
      expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
      const after = await storedText(db, token);
      expect(after.copies, 'copies of the document stored').to.equal(1);
      expect(after.bytes - before.bytes, 'bytes stored by the snap').to.be.below(html.length + 20_000);

      // Its configuration shows the document as the snap gave it (json and ttl, about the answer, left out).
      const id = r.body.screenshot_configuration_id as string;
      const auth = { authorization: `Bearer ${sys.token}` };
      const shown = { html_content: html, page_width: 400, page_height: 300, image_format: 'png', wait: 0, url: INLINE_DOCUMENT_URL };
      const read = await request(sys.sys.base, 'GET', `/screenshot_configs/${id}`, { headers: auth });
      expect(read.status).to.equal(200);
      expect(read.body.config).to.deep.equal(shown);
      const listed = await request(sys.sys.base, 'GET', '/screenshot_configs?limit=100', { headers: auth });
      const entry = (listed.body.screenshot_configurations as Array<{ config: unknown; ids: { screenshot_config_id: string } }>).find(
        (c) => c.ids.screenshot_config_id === id,
      );
      expect(entry?.config).to.deep.equal(shown);

      // Captured again (capture-now, as a schedule does) from what is kept: the same document.
      const now = await request(sys.sys.base, 'POST', `/screenshot_configs/${id}/capture`, { headers: auth });
      expect(now.status, JSON.stringify(now.body)).to.equal(200);
      const done = await jobFinished(sys.sys.base, sys.token, now.body.job_id as string);
      expect(done.body.status, JSON.stringify(done.body)).to.equal('completed');
      const link = (done.body.screenshot as { direct_link: string }).direct_link;
      const image = Buffer.from(await (await fetch(link)).arrayBuffer());
      expect(await pixel(image, 200, 250)).to.deep.equal([0, 0, 255]);
      // Its job ended, the configuration's copy is the one left.
      expect((await storedText(db, token)).copies, 'copies of the document stored after capture-now').to.equal(1);
    } finally {
      await db.destroy();
    }
  });

  it('refuses what it cannot do: no html_content, a url beside it', async () => {
    expectEnvelope(await post({}), 400, 'invalid_parameter', 'html_content is required');
    expectEnvelope(
      await post({ html_content: '<p>x</p>', url: 'https://example.com' }),
      400,
      'invalid_parameter',
      'url is not taken by /snap_html: it is an option of /snap',
    );
  });
});
