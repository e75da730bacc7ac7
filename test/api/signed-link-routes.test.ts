/**
 * Signed links end to end: the real system on the shared Grid (Chromium) capturing a local
 * page. A link signed with the account's secret (by a signer written here as docs/api.md
 * tells users to write it, not with our module) answers the PNG of the page through GET
 * /render and spends one credit; wrong, tampered, expired, unsigned links and unknown
 * accounts are refused with the envelope and spend nothing; a rotation with revoke_previous
 * refuses the old link and accepts the new; POST /signed_links answers a link that works; the
 * secret never reaches the log.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import { imageSize, pixel, screenshotsUsed, snapSuite } from '../support/capture-helpers';
import { expectEnvelope } from '../support/errors';
import { type HttpAnswer, request } from '../support/http';

type Body = Record<string, unknown>;

/** The docs' Node example: RFC 3986-encode names and values, sort by name, join with "&", HMAC-SHA256 as hex. */
function signedQuery(secret: string, params: Record<string, string>): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  const canonical = Object.entries(params)
    .map(([k, v]) => [enc(k), enc(v)])
    .sort((a, b) => ((a[0] as string) < (b[0] as string) ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  return `${canonical}&signature=${crypto.createHmac('sha256', secret).update(canonical).digest('hex')}`;
}

describe('signed links: GET /render on a real Grid', function () {
  this.timeout(120_000);
  const lines: string[] = [];
  const t = snapSuite(
    { ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_TIMEOUT_MS: '8000', LOG_LEVEL: 'debug' },
    { logStream: { write: (l: string) => lines.push(l) } },
  );
  const secretsSeen: string[] = [];
  const api = (method: string, path: string, json?: Body) =>
    request<Body>(t.sys.base, method, path, { headers: { authorization: `Bearer ${t.token}` }, ...(json ? { json } : {}) });
  const render = (query: string) => request<Body>(t.sys.base, 'GET', `/render?${query}`);
  const used = () => screenshotsUsed(t.sys, t.token);
  let account = '';
  const current = async () => {
    const r = await api('GET', '/signing_secret');
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body).to.have.all.keys('success', 'secret', 'account');
    secretsSeen.push(String(r.body.secret));
    account = String(r.body.account);
    return String(r.body.secret);
  };
  const box = (extra: Record<string, string> = {}) => ({
    url: `${t.fx.origin}/plain`,
    selectors: '#box',
    image_format: 'png',
    wait: '0',
    ttl: '0',
    account,
    ...extra,
  });
  /** A refusal: the envelope, nothing spent, nothing cached. */
  async function refused(r: HttpAnswer<Body>, before: number, status: number, code: string, ...fragments: string[]) {
    expectEnvelope(r, status, code, ...fragments);
    expect(r.headers.get('cache-control') ?? '').not.to.contain('public');
    expect(await used()).to.equal(before);
  }

  it('answers the PNG of the page for a link signed with the secret, spending one credit', async () => {
    const secret = await current();
    expect(secret).to.match(/^lsk_/);
    expect(account).to.match(/^acct_/);
    const before = await used();
    const r = await render(signedQuery(secret, box({ expires: String(Math.floor(Date.now() / 1000) + 600) })));
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(r.headers.get('content-type')).to.equal('image/png');
    expect(r.raw.subarray(0, 8).toString('hex')).to.equal('89504e470d0a1a0a');
    expect(await imageSize(r.raw)).to.deep.equal([300, 200]);
    expect(await pixel(r.raw, 150, 100)).to.deep.equal([0, 0, 255]);
    expect(r.headers.get('cache-control'), 'ttl=0: not cached').to.equal('no-store');
    expect(await used()).to.equal(before + 1);
  });

  it('serves a link with ttl from the capture cache (free after the first load), cached publicly no longer than ttl and the expiry', async () => {
    const secret = await current();
    // A URL no capture of the earlier tests had: the first load captures.
    const query = signedQuery(secret, box({ url: `${t.fx.origin}/plain?cached`, ttl: '3600', expires: String(Math.floor(Date.now() / 1000) + 120) }));
    const before = await used();
    const first = await render(query);
    expect(first.status).to.equal(200);
    expect(first.headers.get('x-cache')).to.equal('MISS');
    const second = await render(query);
    expect(second.status).to.equal(200);
    expect(second.headers.get('x-cache')).to.equal('HIT');
    expect(second.raw.equals(first.raw)).to.equal(true);
    expect(await used(), 'one credit for two loads').to.equal(before + 1);
    const maxAge = Number(/^public, max-age=(\d+)$/.exec(second.headers.get('cache-control') ?? '')?.[1]);
    expect(maxAge).to.be.within(100, 120);
  });

  it('refuses a wrong signature, a tampered parameter, a missing signature and an unknown account with 403 invalid_signature, spending nothing', async () => {
    const secret = await current();
    const good = signedQuery(secret, box());
    const before = await used();
    const flipped = good.replace(/signature=(.)/, (_m, c: string) => `signature=${c === '0' ? '1' : '0'}`);
    await refused(await render(flipped), before, 403, 'invalid_signature', 'HMAC-SHA256');
    await refused(await render(good.replace('selectors=%23box', 'selectors=%23other')), before, 403, 'invalid_signature');
    await refused(await render(good.replace(/&signature=.*$/, '')), before, 403, 'invalid_signature', 'signature');
    await refused(await render(signedQuery('lsk_made-up', box())), before, 403, 'invalid_signature');
    await refused(await render(signedQuery(secret, box({ account: 'acct_nobody123' }))), before, 403, 'invalid_signature');
    // A parameter added after signing; options after a second "?" (read by the query parser, not covered by the signature).
    await refused(await render(`${good}&fullpage=true`), before, 403, 'invalid_signature');
    await refused(await render(`${good}?&json=true&fullpage=true`), before, 403, 'invalid_signature');
    // A parameter the request carries outside the signed query is refused, never used unsigned.
    // The query parser and the signature's read an invalid escape apart (%FF: the raw text for one, U+FFFD for the other): the parameter the parser reads is not the one signed.
    const signedOther = signedQuery(secret, box({ 'x\uFFFD': '1' }));
    await refused(await render(signedOther.replace('x%EF%BF%BD=1', 'x%FF=1')), before, 403, 'invalid_signature', 'not in the signed query');
    // The signature is checked first: a malformed expiry with a wrong signature is 403, not a note about the expiry.
    await refused(await render(signedQuery('lsk_made-up', box({ expires: 'soon' }))), before, 403, 'invalid_signature');
    await refused(await render(signedQuery(secret, box({ expires: 'soon' }))), before, 400, 'invalid_parameter', 'expires');
  });

  it('refuses an expired link with 410 link_expired, and an API key inside a link with 400, spending nothing', async () => {
    const secret = await current();
    const before = await used();
    await refused(await render(signedQuery(secret, box({ expires: String(Math.floor(Date.now() / 1000) - 5) }))), before, 410, 'link_expired', 'expired');
    await refused(await render(signedQuery(secret, box({ access_token: t.token }))), before, 400, 'invalid_parameter', 'access_token');
    await refused(await render(signedQuery(secret, box({ api_key: 'sk_x' }))), before, 400, 'invalid_parameter', 'api_key');
  });

  it('keeps an old link working for 24 hours after a rotation, and refuses it once a rotation revokes it; the new secret signs', async () => {
    const old = await current();
    const oldLink = signedQuery(old, box({ ttl: '3600' }));
    expect((await render(oldLink)).status).to.equal(200);
    const rotated = await api('POST', '/signing_secret/rotate');
    expect(rotated.status, JSON.stringify(rotated.body)).to.equal(200);
    expect(rotated.body).to.have.all.keys('success', 'secret', 'account', 'previous_valid_until');
    secretsSeen.push(String(rotated.body.secret));
    expect(Date.parse(String(rotated.body.previous_valid_until)) - Date.now()).to.be.within(23.9 * 3600_000, 24 * 3600_000);
    expect((await render(oldLink)).status, 'within the overlap').to.equal(200);
    const revoked = await api('POST', '/signing_secret/rotate', { revoke_previous: true });
    expect(revoked.body.previous_valid_until).to.equal(null);
    const fresh = String(revoked.body.secret);
    secretsSeen.push(fresh);
    expect(await current()).to.equal(fresh);
    const before = await used();
    await refused(await render(oldLink), before, 403, 'invalid_signature');
    const r = await render(signedQuery(fresh, box({ ttl: '3600' })));
    expect(r.status).to.equal(200);
    expect(await imageSize(r.raw)).to.deep.equal([300, 200]);
  });

  it('answers a working signed URL from POST /signed_links, and refuses what a link must not carry', async () => {
    const made = await api('POST', '/signed_links', { url: `${t.fx.origin}/plain`, selectors: '#box', image_format: 'png', wait: 0, ttl: 0, expires_in: 300 });
    expect(made.status, JSON.stringify(made.body)).to.equal(200);
    expect(made.body).to.have.all.keys('success', 'url', 'account', 'expires');
    const url = new URL(String(made.body.url));
    expect(String(made.body.url).startsWith(`${t.sys.config.baseUrl.replace(/\/+$/, '')}/render?`)).to.equal(true);
    expect(url.searchParams.get('account')).to.equal(account);
    expect(Number(url.searchParams.get('expires'))).to.equal(made.body.expires);
    expect(url.searchParams.get('signature')).to.match(/^[0-9a-f]{64}$/);
    expect(url.search).not.to.contain(t.token);
    const before = await used();
    const r = await request(t.sys.base, 'GET', `${url.pathname}${url.search}`);
    expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    expect(r.headers.get('content-type')).to.equal('image/png');
    expect(await pixel(r.raw, 150, 100)).to.deep.equal([0, 0, 255]);
    expect(await used()).to.equal(before + 1);

    expectEnvelope(await api('POST', '/signed_links', { url: `${t.fx.origin}/plain`, api_key: 'sk_x' }), 400, 'invalid_parameter', 'api_key');
    expectEnvelope(await api('POST', '/signed_links', { url: `${t.fx.origin}/plain`, signature: 'ab' }), 400, 'invalid_parameter', 'signature');
    expectEnvelope(await api('POST', '/signed_links', { url: `${t.fx.origin}/plain`, page_width: 'wide' }), 400, 'invalid_parameter', 'page_width');
    expectEnvelope(await api('POST', '/signed_links', { url: `${t.fx.origin}/plain`, expires: 1000 }), 400, 'invalid_parameter', 'expires');
    // A link GET /render could never read (its request line past the head limit: it answered 431 telling to POST).
    const long = await api('POST', '/signed_links', { url: `${t.fx.origin}/plain`, css_inject: `body{color:red}${' '.repeat(60_000)}` });
    expectEnvelope(long, 400, 'invalid_parameter', 'Shorten css_inject, the longest option');
    expect(await used()).to.equal(before + 1);
  });

  it('documents the routes and their refusals in /openapi.json', async () => {
    const doc = (
      await request<{ paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>> }>(t.sys.base, 'GET', '/openapi.json')
    ).body;
    expect(doc.paths['/render']?.get?.security).to.deep.equal([]);
    expect(doc.paths['/render']?.get?.responses).to.include.keys('200', '403', '410');
    expect(JSON.stringify(doc.paths['/render']?.get?.responses['403'])).to.contain('invalid_signature');
    expect(doc.paths).to.include.keys('/signing_secret', '/signing_secret/rotate', '/signed_links');
  });

  it('never writes a signing secret to the log (LOG_LEVEL=debug)', () => {
    expect(secretsSeen.length).to.be.greaterThan(2);
    expect(lines.length).to.be.greaterThan(10);
    for (const secret of new Set(secretsSeen)) {
      for (const spelling of [secret, encodeURIComponent(secret), secret.slice(4)]) {
        expect(
          lines.filter((l) => l.includes(spelling)),
          `lines holding ${spelling}`,
        ).to.deep.equal([]);
      }
    }
  });
});
