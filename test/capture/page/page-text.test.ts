/**
 * markdown=true and metadata=true (services/capture/page/page-text.ts), end to end on the real
 * Grid: a news article as real sites serve it (a navigation bar, a sidebar of ads, a footer,
 * the article with headings, a list, a link and an image; Open Graph and Twitter tags, a
 * canonical link, an icon, a web font), reached through a 301 from an old address, with
 * response headers of its own. The Markdown keeps the article and leaves the rest; the
 * metadata names what the page and its server said; both are archived beside the image and
 * linked in the record, for one credit. Also: the text the MCP snap tool hands an agent, a
 * configuration's captures, and (unit) that a capture asking for neither sends nothing more.
 */
import fs from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { expect } from 'chai';
import sinon from 'sinon';
import type { PageSession } from '../../../services/capture/page/page-session';
import { readText, textExpression, toMarkdown } from '../../../services/capture/page/page-text';
import { imageSize, screenshotsUsed, snapSuite } from '../../support/capture-helpers';
import { expectEnvelope } from '../../support/errors';
import { jobFinished, request } from '../../support/http';
import { type LocalServer, serveLocally } from '../../support/local-server';

type Body = Record<string, unknown>;

const FONT_FILE = ['/usr/share/fonts/truetype/dejavu/DejaVuSerif.ttf', '/usr/share/fonts/TTF/DejaVuSerif.ttf', '/usr/share/fonts/dejavu/DejaVuSerif.ttf'].find(
  (f) => fs.existsSync(f),
);

const PARAGRAPHS = [
  'The north coast sees two high tides a day, and the gap between them shifts by almost an hour from one day to the next. Harbour masters publish ' +
    'their tables a year ahead, worked out from the moon and the shape of each bay.',
  'Walkers who cross the sands to the island at low water should leave with at least two hours in hand. The tide comes in faster than a person ' +
    'walks across the flats, and the channels fill first, cutting off the way back long before the beach looks wet.',
  'Fishing boats time their departures to the ebb so the current carries them out past the bar. Coming home they wait for the flood, when there ' +
    'is water enough over the rocks at the mouth of the harbour.',
];

function article(origin: string): string {
  return `<!doctype html><html lang="en-GB"><head><meta charset="utf-8">
<title>Tide tables of the north coast | Coastal Weekly</title>
<meta name="description" content="How the tides of the north coast are worked out, and how to read the tables.">
<link rel="canonical" href="/articles/tides">
<link rel="icon" href="/favicon.png" sizes="32x32" type="image/png">
<link rel="apple-touch-icon" href="/touch.png">
<meta property="og:title" content="Tide tables of the north coast">
<meta property="og:type" content="article">
<meta property="og:image" content="${origin}/og.png">
<meta name="twitter:card" content="summary_large_image">
<meta name="twitter:site" content="@coastalweekly">
<style>
@font-face { font-family: 'Coastal Serif'; src: url(/fonts/coastal.ttf) format('truetype'); }
@font-face { font-family: 'Never Used'; src: url(/fonts/unused.ttf) format('truetype'); }
body { margin: 0; font: 16px sans-serif; }
nav, footer { background: #223; color: #fff; padding: 8px; }
article { font-family: 'Coastal Serif', serif; margin: 0 240px 0 20px; }
aside { position: absolute; right: 0; top: 40px; width: 220px; }
</style></head><body>
<nav class="site-nav"><a href="/">Home</a> <a href="/news">News desk menu</a> <a href="/weather">Weather menu</a></nav>
<aside class="sidebar ads"><div class="ad">Advertisement: buy a boat today at Harbour Marine</div><div class="ad">Sponsored: sea kayak sale</div></aside>
<main><article>
<h1>Tide tables of the north coast</h1>
<p class="byline">By Morwenna Pascoe</p>
${PARAGRAPHS.map((p) => `<p>${p}</p>`).join('\n')}
<h2>Reading the table</h2>
<ul><li>Spring tides come two days after a full or new moon.</li><li>Neap tides fall between them, with the smallest range.</li><li>Times are given in local time.</li></ul>
<p>The <a href="/harbour-office">harbour office</a> posts the day's times on its door every morning.</p>
<figure><img src="/chart.png" alt="Tide chart for March" width="400" height="200"></figure>
</article></main>
<footer class="site-footer">Copyright Coastal Weekly. All rights reserved. Footer links: privacy, terms.</footer>
</body></html>`;
}

describe('markdown and metadata beside the picture (real browser)', function () {
  this.timeout(120_000);
  const t = snapSuite({ ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '2', CAPTURE_TIMEOUT_MS: '20000' });
  let site: LocalServer;
  const at = (path: string) => `${site.origin}${path}`;
  const used = () => screenshotsUsed(t.sys, t.token);
  const api = (method: string, path: string, json?: Body) =>
    request<Body>(t.sys.base, method, path, { headers: { authorization: `Bearer ${t.token}` }, ...(json ? { json } : {}) });

  before(async () => {
    site = await serveLocally((req, res) => {
      const path = (req.url ?? '/').split('?')[0];
      if (path === '/t/tides') {
        res.writeHead(301, { location: '/articles/tides', 'x-old-address': 'yes' });
        res.end();
      } else if (path === '/articles/tides') {
        res.writeHead(200, {
          'content-type': 'text/html; charset=utf-8',
          'cache-control': 'no-store',
          'x-edition': 'north',
          'x-served-by': 'fixture-article',
        });
        res.end(article(site.origin));
      } else if (path === '/fonts/coastal.ttf' && FONT_FILE) {
        res.writeHead(200, { 'content-type': 'font/ttf', 'cache-control': 'no-store' });
        res.end(fs.readFileSync(FONT_FILE));
      } else {
        res.writeHead(404, { 'content-type': 'text/plain' });
        res.end('not found');
      }
    });
  });
  after(() => site?.stop());

  /** The Markdown keeps the article, in order, and leaves the page's navigation, ads and footer. */
  function expectArticle(md: string): void {
    expect(md).to.match(/^# Tide tables of the north coast$/m);
    for (const p of PARAGRAPHS) expect(md).to.contain(p);
    expect(md).to.match(/^## Reading the table$/m);
    expect(md).to.match(/^- +Spring tides come two days after a full or new moon\.$/m);
    expect(md).to.match(/^- +Neap tides fall between them, with the smallest range\.$/m);
    expect(md).to.contain(`[harbour office](${at('/harbour-office')})`);
    expect(md).to.contain(`![Tide chart for March](${at('/chart.png')})`);
    expect(md.indexOf(PARAGRAPHS[0]!)).to.be.lessThan(md.indexOf('## Reading the table'));
    for (const gone of ['News desk menu', 'Weather menu', 'Advertisement', 'sea kayak', 'Copyright Coastal Weekly', 'Footer links']) {
      expect(md, `"${gone}" is not the article's`).not.to.contain(gone);
    }
  }

  it('json=true: the record links both files, answers the metadata, and both come from the same page load as the image, for 1 credit', async () => {
    const before = await used();
    const r = await t.snap({ url: at('/t/tides'), markdown: true, metadata: true, json: true, image_format: 'png', page_width: 1000, page_height: 700 });
    expect(r.status, r.raw.toString().slice(0, 400)).to.equal(200);
    expect(await used(), 'one credit for the image and its text').to.equal(before + 1);
    expect([r.body.status_code, r.body.final_url]).to.deep.equal([200, at('/articles/tides')]);
    const image = Buffer.from(await (await fetch(String(r.body.direct_link))).arrayBuffer());
    expect(await imageSize(image)).to.deep.equal([1000, 700]);

    // The Markdown file, beside the image (same name, .md).
    const mdUrl = String(r.body.markdown_url);
    expect(mdUrl).to.match(/\/cdn\/[A-Za-z0-9_-]+\.md$/);
    expect(mdUrl.replace(/\.md$/, '.png')).to.equal(String(r.body.direct_link));
    const md = await fetch(mdUrl);
    expect(md.headers.get('content-type')).to.match(/^text\/markdown/);
    expectArticle(await md.text());

    // The metadata: the page's head, its server's answer and the redirect that led to it, the font its text used.
    const meta = r.body.metadata as Body;
    expect(meta).to.deep.include({
      url: at('/articles/tides'),
      title: 'Tide tables of the north coast | Coastal Weekly',
      description: 'How the tides of the north coast are worked out, and how to read the tables.',
      language: 'en-GB',
      canonical_url: at('/articles/tides'),
      status_code: 200,
    });
    expect(meta.open_graph).to.deep.equal({ title: 'Tide tables of the north coast', type: 'article', image: at('/og.png') });
    expect(meta.twitter).to.deep.equal({ card: 'summary_large_image', site: '@coastalweekly' });
    expect(meta.icons).to.deep.equal([
      { rel: 'icon', href: at('/favicon.png'), sizes: '32x32', type: 'image/png' },
      { rel: 'apple-touch-icon', href: at('/touch.png') },
    ]);
    expect(meta.redirects).to.deep.equal([{ url: at('/t/tides'), status: 301, location: at('/articles/tides') }]);
    expect(meta.response_headers).to.include({ 'x-edition': 'north', 'x-served-by': 'fixture-article', 'content-type': 'text/html; charset=utf-8' });
    expect(meta.response_headers).not.to.have.property('x-old-address');
    const families = (meta.fonts as Array<{ family: string }>).map((f) => f.family);
    if (FONT_FILE) expect(families).to.include('Coastal Serif');
    expect(families, 'a face no text used is not loaded').not.to.include('Never Used');

    // The metadata file holds the same.
    const metaUrl = String(r.body.metadata_url);
    expect(metaUrl).to.equal(mdUrl.replace(/\.md$/, '.metadata.json'));
    const file = await fetch(metaUrl);
    expect(file.headers.get('content-type')).to.match(/^application\/json/);
    expect(await file.json()).to.deep.equal(meta);

    // The account's list links them too.
    const list = await api('GET', '/screenshots?limit=50');
    const listed = (list.body.screenshots as Body[]).find((s) => s.id === r.body.id);
    expect([listed?.markdown_url, listed?.metadata_url]).to.deep.equal([mdUrl, metaUrl]);
  });

  it('each alone: markdown=true links no metadata, metadata=true no Markdown; neither asked: no links', async () => {
    const md = await t.snap({ url: at('/articles/tides'), markdown: true, json: true });
    expect(md.status, md.raw.toString().slice(0, 400)).to.equal(200);
    expect(md.body).to.have.property('markdown_url');
    expect(md.body).not.to.have.any.keys('metadata_url', 'metadata');
    expectArticle(await (await fetch(String(md.body.markdown_url))).text());
    // The page's scripts off: Readability still runs (the capture's evaluation is not the page's script).
    const noJs = await t.snap({ url: at('/articles/tides'), markdown: true, disable_js: true, json: true });
    expectArticle(await (await fetch(String(noJs.body.markdown_url))).text());
    const meta = await t.snap({ url: at('/articles/tides'), metadata: true, json: true });
    expect(meta.body).to.include.keys('metadata_url', 'metadata');
    expect(meta.body).not.to.have.property('markdown_url');
    expect((meta.body.metadata as Body).redirects).to.deep.equal([]);
    // With every request paused in the page (block_chats: the request guard decides each), the chain is seen the same.
    const paused = await t.snap({ url: at('/t/tides'), metadata: true, block_chats: true, json: true });
    expect((paused.body.metadata as Body).redirects).to.deep.equal([{ url: at('/t/tides'), status: 301, location: at('/articles/tides') }]);
    expect((paused.body.metadata as Body).response_headers).to.include({ 'x-edition': 'north' });
    const plain = await t.snap({ url: at('/articles/tides'), json: true });
    expect(plain.body).not.to.have.any.keys('markdown_url', 'metadata_url', 'metadata');
  });

  it('refuses markdown=maybe and metadata=maybe with 400 invalid_parameter naming the option; nothing charged', async () => {
    const before = await used();
    expectEnvelope(await t.snap({ url: at('/articles/tides'), markdown: 'maybe' }), 400, 'invalid_parameter', 'markdown');
    expectEnvelope(await t.snap({ url: at('/articles/tides'), metadata: 'maybe' }), 400, 'invalid_parameter', 'metadata');
    expect(await used()).to.equal(before);
  });

  it("a configuration's captures archive them too", async () => {
    const created = await api('POST', '/screenshot_configs', { url: at('/t/tides'), wait: 0, markdown: true, metadata: true });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const job = await jobFinished(t.sys.base, t.token, String(created.body.job_id));
    expect(job.body.status, JSON.stringify(job.body)).to.equal('completed');
    const list = await api('GET', '/screenshots?limit=50');
    const shot = (list.body.screenshots as Body[]).find((s) => s.job_id === created.body.job_id);
    expectArticle(await (await fetch(String(shot?.markdown_url))).text());
    const meta = (await (await fetch(String(shot?.metadata_url))).json()) as Body;
    expect(meta.redirects).to.deep.equal([{ url: at('/t/tides'), status: 301, location: at('/articles/tides') }]);
  });

  it('the MCP snap tool hands the agent the image and the Markdown together', async () => {
    const client = new Client({ name: 'page-text-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${t.sys.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${t.token}` } } }));
    try {
      const result = (await client.callTool({ name: 'snap', arguments: { url: at('/articles/tides'), markdown: true, wait: 0, ttl: 0 } })) as CallToolResult;
      expect(result.isError, JSON.stringify(result.content).slice(0, 400)).to.not.equal(true);
      expect(result.content.map((c) => c.type)).to.deep.equal(['text', 'image', 'text', 'text']);
      const text = result.content[3] as { type: 'text'; text: string };
      expect(text.text).to.contain(String((result.structuredContent as Body).markdown_url));
      expectArticle(text.text.slice(text.text.indexOf('\n\n') + 2));
    } finally {
      await client.close();
    }
  });
});

describe('page text (unit)', () => {
  it('a capture that asks for neither sends nothing to the page', async () => {
    const evaluate = sinon.stub().resolves({});
    expect(await readText({ evaluate } as unknown as PageSession, { url: 'https://example.com/' }, null, 200)).to.deep.equal({});
    sinon.assert.notCalled(evaluate);
  });

  it('both asked: one evaluation, which inlines Readability only for markdown', async () => {
    expect(textExpression({ markdown: true, metadata: true }))
      .to.contain('function Readability(')
      .and.contain('head: (');
    expect(textExpression({ metadata: true })).not.to.contain('Readability');
    const evaluate = sinon.stub().resolves({
      article: { title: 'T', html: '<h2>Part</h2><p>Text <em>here</em>.</p>', lang: null },
      head: { url: 'https://e/', title: 'T', description: null, language: null, canonical_url: null, open_graph: {}, twitter: {}, icons: [], fonts: [] },
    });
    const out = await readText({ evaluate } as unknown as PageSession, { url: 'https://e/', markdown: true, metadata: true }, null, 204);
    sinon.assert.calledOnce(evaluate);
    expect(out.markdown).to.equal('# T\n\n## Part\n\nText *here*.\n');
    expect(out.metadata).to.include({ status_code: 204 }).and.deep.include({ redirects: [], response_headers: {} });
  });

  it('toMarkdown keeps an article heading of its own', () => {
    expect(toMarkdown('<h1>Own</h1><p>x</p>', 'Title')).to.equal('# Own\n\nx\n');
  });
});
