/**
 * POST /ai/analyze end to end: the real api, billing and ai services, images served by local
 * servers under names a DNS server of this test resolves (images.test: a site the operator
 * lets through, EGRESS_ALLOW_ADDRESSES=127.0.0.2; private.test: an internal address,
 * 127.0.0.1, refused), and the AI backends as local stand-ins speaking the providers' wire
 * formats to the official SDKs. What the provider was sent, what the caller gets, what is
 * charged, and what is refused before anything is fetched or charged.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import sharp from 'sharp';
import { call } from '../../services/shared/contracts';
import { createFileStore } from '../../services/shared/storage';
import { type FakeProvider, startFakeProvider } from '../support/ai-providers';
import { backendConfig } from '../support/backends';
import { type DnsServer, startDnsServer } from '../support/dns-server';
import { expectEnvelope } from '../support/errors';
import { type HttpAnswer, request } from '../support/http';
import { type RunningSystem, runSystem } from '../support/system';

type Body = Record<string, unknown>;

interface ImageServer {
  port: number;
  seen: string[];
  stop(): Promise<void>;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, port: number) => void;

async function serve(host: string, routes: Record<string, Handler>): Promise<ImageServer> {
  const seen: string[] = [];
  let port = 0;
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    const handle = routes[(req.url ?? '').split('?')[0] ?? ''];
    if (handle) handle(req, res, port);
    else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('not found');
    }
  });
  server.keepAliveTimeout = 500;
  await new Promise<void>((r) => server.listen(0, host, r));
  port = (server.address() as AddressInfo).port;
  return {
    port,
    seen,
    stop: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

const solid = (width: number, height: number, background: string) => sharp({ create: { width, height, channels: 3, background } });

describe('POST /ai/analyze: prompts about images from anywhere (local image servers, provider stand-ins)', function () {
  this.timeout(60_000);
  let dns: DnsServer;
  let site: ImageServer;
  let internal: ImageServer;
  let service: FakeProvider;
  let openai: FakeProvider;
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  const img = {} as Record<'png' | 'jpeg' | 'webp' | 'gif', Buffer>;
  /** Bytes /big-streamed.png got to hand to its reader before it went away. */
  let streamed = 0;
  const sendImage =
    (data: () => Buffer, type: string, delayMs = 0): Handler =>
    (_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': type });
        res.end(data());
      }, delayMs);
    };

  before(async () => {
    img.png = await solid(40, 30, '#f00').png().toBuffer();
    img.jpeg = await solid(50, 20, '#0f0').jpeg().toBuffer();
    img.webp = await solid(30, 30, '#00f').webp().toBuffer();
    img.gif = await solid(16, 12, '#ff0').gif().toBuffer();
    internal = await serve('127.0.0.1', { '/secret.png': sendImage(() => img.png, 'image/png') });
    site = await serve('127.0.0.2', {
      '/a.png': sendImage(() => img.png, 'image/png'),
      '/b.jpg': sendImage(() => img.jpeg, 'image/jpeg'),
      '/c.webp': sendImage(() => img.webp, 'image/webp'),
      '/d.gif': sendImage(() => img.gif, 'image/gif'),
      // A PNG served as text: its bytes decide.
      '/png-as-text': sendImage(() => img.png, 'text/plain'),
      // A page that says it is a PNG.
      '/lie.png': sendImage(() => Buffer.from('<!doctype html><title>not an image</title>'), 'image/png'),
      // 21 MB announced, and 21 MB streamed with no length announced.
      '/big-declared.png': (_req, res) => {
        res.writeHead(200, { 'content-type': 'image/png', 'content-length': String(21 * 1024 * 1024) });
        res.write(img.png);
        setTimeout(() => res.destroy(), 2000);
      },
      // 64 MB offered with no length announced, written as fast as the reader takes it.
      '/big-streamed.png': (_req, res) => {
        res.on('error', () => undefined);
        res.writeHead(200, { 'content-type': 'image/png' });
        streamed = 0;
        const chunk = Buffer.alloc(1024 * 1024);
        const more = () => {
          while (!res.destroyed && streamed < 64 * chunk.length) {
            streamed += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', more);
          }
          if (!res.destroyed) res.end();
        };
        res.write(img.png);
        more();
      },
      '/slow.png': sendImage(() => img.png, 'image/png', 4_000),
      '/to-private': (_req, res, port) => {
        res.writeHead(302, { location: `http://private.test:${internal.port}/secret.png?via=${port}` });
        res.end();
      },
      '/hop': (_req, res) => {
        res.writeHead(302, { location: '/a.png' });
        res.end();
      },
      '/loop': (_req, res) => {
        res.writeHead(302, { location: '/loop' });
        res.end();
      },
    });
    dns = await startDnsServer((name, type) => {
      if (type !== 'A') return [];
      if (name === 'images.test') return ['127.0.0.2'];
      if (name === 'private.test') return ['127.0.0.1'];
      return null;
    });
    service = await startFakeProvider('openai');
    openai = await startFakeProvider('openai');
    const b = await backendConfig('sqlite', {
      SERVICES: 'api,billing,ai,proxy',
      EGRESS_DNS_SERVERS: dns.address,
      EGRESS_ALLOW_ADDRESSES: '127.0.0.2',
      AI_IMAGE_TIMEOUT_MS: '1500',
      AI_TIMEOUT_MS: '3000',
      SERVICE_AI_PROVIDER: 'openai',
      SERVICE_AI_BASE_URL: service.baseUrl,
      SERVICE_AI_API_KEY: service.key,
      SERVICE_AI_MODEL: 'gpt-4o-mini',
      OPENAI_BASE_URL: openai.baseUrl,
    });
    sys = await runSystem(b.config);
    cleanup = b.cleanup;
  });
  after(async () => {
    await sys?.stop();
    await cleanup?.();
    for (const s of [site, internal, service, openai, dns]) await s?.stop();
  });

  const url = (path: string) => `http://images.test:${site.port}${path}`;
  const analyze = (key: string, json: Body): Promise<HttpAnswer<Body>> =>
    request<Body>(sys.base, 'POST', '/ai/analyze', { headers: { authorization: `Bearer ${key}` }, json });
  const aiUsed = async (key: string) => {
    const r = await request<{ results: Record<string, number> }>(sys.base, 'GET', '/account_limits', { headers: { authorization: `Bearer ${key}` } });
    return r.body.results.ai_analysis_requests_current_month_usage;
  };
  /** The parts of the last chat completion `fake` got: 'text:…' or the image's bytes. */
  const lastSent = (fake: FakeProvider): Array<string | Buffer> => {
    const body = fake.of('analyze').at(-1)?.body as { messages: Array<{ role: string; content: Array<Record<string, unknown>> }> };
    const user = body.messages.find((m) => m.role === 'user')!;
    return user.content.map((c) =>
      c.type === 'text' ? `text:${c.text}` : Buffer.from(String((c.image_url as { url: string }).url).replace(/^data:[^,]+,/, ''), 'base64'),
    );
  };

  it('answers every prompt from one provider request carrying every image, in order, and every prompt; one AI credit per prompt', async () => {
    const { access_token: key } = await sys.account('free');
    service.queue('analyze', { structured: { answer_1: 'Four images: red, green, blue, yellow.', answer_2: 'Image 2 is the widest.' } });
    const r = await analyze(key, {
      urls: [url('/a.png'), url('/b.jpg'), url('/c.webp'), url('/d.gif')],
      prompts: ['What colours do the images show?', 'Which image is the widest?'],
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body).to.deep.equal({
      success: true,
      ai_provider: 'service',
      ai_model: null,
      images: [
        { url: url('/a.png'), content_type: 'image/png', width: 40, height: 30, bytes: img.png.length },
        { url: url('/b.jpg'), content_type: 'image/jpeg', width: 50, height: 20, bytes: img.jpeg.length },
        { url: url('/c.webp'), content_type: 'image/webp', width: 30, height: 30, bytes: img.webp.length },
        { url: url('/d.gif'), content_type: 'image/gif', width: 16, height: 12, bytes: img.gif.length },
      ],
      results: [
        { prompt: 'What colours do the images show?', ai_response: 'Four images: red, green, blue, yellow.' },
        { prompt: 'Which image is the widest?', ai_response: 'Image 2 is the widest.' },
      ],
      ai_credits_used: 2,
    });
    const parts = lastSent(service);
    expect(parts.filter((p) => typeof p === 'string' && p.startsWith('text:Image '))).to.deep.equal([
      'text:Image 1:',
      'text:Image 2:',
      'text:Image 3:',
      'text:Image 4:',
    ]);
    const images = parts.filter((p): p is Buffer => Buffer.isBuffer(p));
    expect(images).to.have.length(4);
    expect(images[0]!.equals(img.png)).to.equal(true);
    expect(images[1]!.equals(img.jpeg)).to.equal(true);
    expect(images[2]!.equals(img.webp)).to.equal(true);
    // The GIF goes as a PNG of its first frame.
    expect(await sharp(images[3]!).metadata()).to.include({ format: 'png', width: 16, height: 12 });
    const text = String(parts.at(-1));
    expect(text).to.contain('What colours do the images show?').and.contain('Which image is the widest?');
    expect(service.of('analyze').at(-1)?.body?.model).to.equal('gpt-4o-mini');
    expect(await aiUsed(key)).to.equal(2);
  });

  it("runs at most the plan's max_concurrent analyses of one account at once (429 past it, nothing spent); another account is not held up", async () => {
    // The free plan runs one at once.
    const { access_token: key } = await sys.account('free');
    const { access_token: other } = await sys.account('free');
    service.queue('analyze', { delayMs: 1_000, structured: { answer_1: 'slow' } });
    const before = service.of('analyze').length;
    const first = analyze(key, { urls: [url('/a.png')], prompts: ['first?'] });
    for (let i = 0; i < 100 && service.of('analyze').length === before; i++) await new Promise((r) => setTimeout(r, 10));
    const asked = service.of('analyze').length;
    const second = await analyze(key, { urls: [url('/a.png')], prompts: ['second?'] });
    expectEnvelope(second, 429, 'concurrency_limit_reached', 'max_concurrent 1');
    expect(second.headers.get('retry-after')).to.equal('1');
    const theirs = await analyze(other, { urls: [url('/a.png')], prompts: ['theirs?'] });
    expect(theirs.status, JSON.stringify(theirs.body)).to.equal(200);
    expect((await first).status).to.equal(200);
    expect(service.of('analyze').length, 'the refused one asked nothing').to.equal(asked + 1);
    expect(await aiUsed(key)).to.equal(1);
    expect((await analyze(key, { urls: [url('/a.png')], prompts: ['third?'] })).status).to.equal(200);
  });

  it("reads this service's own stored files (CDN links) from storage, never over the network", async () => {
    const { access_token: key } = await sys.account('free');
    const store = createFileStore(sys.config);
    await store.put('storedForAnalysis01.png', img.png, 'image/png');
    await store.close();
    const link = `${sys.config.cdnUrl}/storedForAnalysis01.png`;
    // The CDN is on localhost, which this system may not fetch from: only storage can answer.
    const r = await analyze(key, { urls: [link, url('/png-as-text')], prompts: ['Same image twice?'] });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect((r.body.images as Body[]).map((i) => i.content_type)).to.deep.equal(['image/png', 'image/png']);
    const images = lastSent(service).filter((p): p is Buffer => Buffer.isBuffer(p));
    expect(images.map((i) => i.equals(img.png))).to.deep.equal([true, true]);
    expectEnvelope(
      await analyze(key, { urls: [`${sys.config.cdnUrl}/noSuchFile0000.png`], prompts: ['x'] }),
      422,
      'image_unreachable',
      'urls[0]',
      'not a stored file',
    );
  });

  it("runs on an own provider's key (Bring Your Own AI) with no credit spent", async () => {
    const { access_token: key } = await sys.account('paid', { byo_ai: 1 });
    expect(
      (await request(sys.base, 'PUT', '/ai/providers/openai', { headers: { authorization: `Bearer ${key}` }, json: { api_key: openai.key } })).status,
    ).to.equal(200);
    const before = service.of('analyze').length;
    const r = await analyze(key, { urls: [url('/hop')], prompts: ['What is it?'], ai_provider: 'openai', ai_model: 'gpt-4o' });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body).to.deep.include({ ai_provider: 'openai', ai_model: 'gpt-4o', ai_credits_used: 0 });
    const sent = openai.of('analyze').at(-1)!;
    expect(sent.auth).to.equal('valid');
    expect(sent.body?.model).to.equal('gpt-4o');
    expect(service.of('analyze')).to.have.length(before);
    expect(await aiUsed(key)).to.equal(0);
  });

  it('refuses bad parameters, plan gates and exhausted credits before any image is fetched or any credit spent', async () => {
    const { access_token: key, account_id } = await sys.account('free');
    const seen = site.seen.length;
    const six = Array.from({ length: 6 }, (_, i) => url(`/a.png?${i}`));
    const cases: Array<[Body, number, string, ...string[]]> = [
      [{ prompts: ['x'] }, 400, 'invalid_parameter', 'urls is required'],
      [{ urls: [url('/a.png')] }, 400, 'invalid_parameter', 'prompts is required'],
      [{ urls: six, prompts: ['x'] }, 400, 'invalid_parameter', 'urls', 'at most 5'],
      [{ urls: [url('/a.png')], prompts: ['1', '2', '3', '4', '5', '6'] }, 400, 'invalid_parameter', 'prompts', 'at most 5'],
      [{ urls: [url('/a.png')], prompts: ['x'.repeat(2501)] }, 400, 'invalid_parameter', 'prompts[0]', 'at most 2500'],
      [{ urls: [url('/a.png')], prompts: ['ok', '   '] }, 400, 'invalid_parameter', 'prompts[1]', 'blank'],
      [{ urls: ['ftp://images.test/a.png'], prompts: ['x'] }, 400, 'invalid_parameter', 'urls[0]', 'http'],
      [{ urls: [url('/a.png')], prompts: ['x'], extra: 1 }, 400, 'invalid_parameter', 'extra'],
      [{ urls: [url('/a.png')], prompts: ['x'], ai_provider: 'gemini' }, 400, 'ai_provider_unsupported'],
      [{ urls: [url('/a.png')], prompts: ['x'], ai_provider: 'openai' }, 402, 'byok_plan_required'],
      [{ urls: [`http://127.0.0.1:${internal.port}/secret.png`], prompts: ['x'] }, 400, 'url_not_allowed', 'urls[0]', '127.0.0.1'],
    ];
    for (const [json, status, code, ...fragments] of cases) expectEnvelope(await analyze(key, json), status, code, ...fragments);
    // Credits: one left, two prompts asked: refused before any image is fetched.
    await call(sys.broker, 'billing.charge', { accountId: account_id, amounts: { ai_credits: 24 } });
    expectEnvelope(await analyze(key, { urls: [url('/a.png')], prompts: ['one', 'two'] }), 402, 'ai_credits_exhausted');
    expect(site.seen.length).to.equal(seen);
    expect(internal.seen).to.deep.equal([]);
    expect(await aiUsed(key)).to.equal(24);
    // Form fields take the lists as JSON text, or one value alone.
    const form = await request<Body>(sys.base, 'POST', '/ai/analyze', {
      form: { access_token: key, urls: JSON.stringify([url('/a.png')]), prompts: 'What colour?' },
    });
    expect(form.status, JSON.stringify(form.body)).to.equal(200);
    expect(await aiUsed(key)).to.equal(25);
  });

  it(
    'refuses an image that is private (by name, after a redirect), too large, not an image, unreachable or slow, naming it and why; ' + 'nothing is charged',
    async () => {
      const { access_token: key } = await sys.account('free');
      const calls = service.of('analyze').length;
      const cases: Array<[string, number, string, ...string[]]> = [
        [`http://private.test:${internal.port}/secret.png`, 400, 'url_not_allowed', 'private.test', '127.0.0.1'],
        [url('/to-private'), 400, 'url_not_allowed', 'redirects to', '127.0.0.1'],
        [url('/big-declared.png'), 400, 'image_too_large', '20 MB'],
        [url('/big-streamed.png'), 400, 'image_too_large', '20 MB'],
        [url('/lie.png'), 400, 'image_not_supported', 'not a PNG, JPEG, WebP or GIF'],
        [url('/missing.png'), 422, 'image_unreachable', 'HTTP 404'],
        [url('/loop'), 422, 'image_unreachable', 'redirected more than 3 times'],
        [url('/slow.png'), 422, 'image_unreachable', 'within 1.5 s'],
        [`http://nowhere.invalid:${site.port}/a.png`, 422, 'image_unreachable', 'could not be resolved'],
        ['http://images.test:1/a.png', 422, 'image_unreachable', 'ECONNREFUSED'],
      ];
      for (const [bad, status, code, ...fragments] of cases) {
        // The bad image second: the note names it by its place.
        const r = await analyze(key, { urls: [url('/a.png'), bad], prompts: ['x'] });
        expectEnvelope(r, status, code, 'urls[1]', bad.slice(0, 40), ...fragments);
      }
      expect(internal.seen).to.deep.equal([]);
      // The reader stopped soon after the limit, not at the end of the 64 MB.
      expect(streamed)
        .to.be.above(20 * 1024 * 1024)
        .and.below(40 * 1024 * 1024);
      expect(service.of('analyze')).to.have.length(calls);
      expect(await aiUsed(key)).to.equal(0);
    },
  );

  it('gives the credits back when the provider fails, answering as the provider endpoints do (503, 502)', async () => {
    const { access_token: key } = await sys.account('free');
    service.queue('analyze', { status: 500 }, { status: 500 });
    expectEnvelope(await analyze(key, { urls: [url('/a.png')], prompts: ['a', 'b'] }), 503, 'ai_provider_unavailable');
    service.queue('analyze', { structured: { answer_1: 'only one' } });
    expectEnvelope(await analyze(key, { urls: [url('/a.png')], prompts: ['a', 'b'] }), 502, 'ai_provider_error');
    service.queue('analyze', { status: 401 });
    expectEnvelope(await analyze(key, { urls: [url('/a.png')], prompts: ['a'] }), 502, 'ai_provider_error', "operator's key");
    expect(await aiUsed(key)).to.equal(0);
  });
});
