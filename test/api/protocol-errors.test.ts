import net from 'node:net';
import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import { ServiceBroker } from 'moleculer';
import { buildHttpServer, publicRoute } from '../../services/api/http';
import { loadConfig } from '../../services/shared/config';
import { backendConfig } from '../support/backends';
import { expectEnvelope } from '../support/errors';
import { type HttpAnswer, qs, request } from '../support/http';
import { type RunningSystem, runSystem } from '../support/system';

/** Writes `text` on a new connection and reads the answer until the server closes it. */
function rawRequest(base: string, text: string): Promise<HttpAnswer> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(port), hostname, () => socket.write(text));
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    socket.on('data', (d: Buffer) => chunks.push(d));
    socket.on('error', reject);
    socket.on('close', () => {
      try {
        resolve(parseAnswer(Buffer.concat(chunks)));
      } catch (err) {
        reject(err);
      }
    });
  });
}

/** The HTTP/1.1 answers on one connection, in order (each with a content-length). */
function parseAnswers(raw: Buffer): HttpAnswer[] {
  const answers: HttpAnswer[] = [];
  let rest = raw;
  while (rest.length > 0) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd === -1) throw new Error(`not an HTTP answer: ${JSON.stringify(rest.toString('utf8').slice(0, 200))}`);
    const [statusLine = '', ...lines] = rest.subarray(0, headEnd).toString('utf8').split('\r\n');
    const headers = new Headers(lines.map((l) => [l.slice(0, l.indexOf(':')), l.slice(l.indexOf(':') + 1).trim()] as [string, string]));
    const end = headEnd + 4 + Number(headers.get('content-length') ?? rest.length - headEnd - 4);
    const body = rest.subarray(headEnd + 4, end);
    const json = (headers.get('content-type') ?? '').includes('json');
    answers.push({ status: Number(statusLine.split(' ')[1]), headers, body: json ? JSON.parse(body.toString('utf8')) : null, raw: rest.subarray(0, end) });
    rest = rest.subarray(end);
  }
  return answers;
}

function parseAnswer(raw: Buffer): HttpAnswer {
  const answers = parseAnswers(raw);
  expect(answers, raw.toString('utf8').slice(0, 400)).to.have.length(1);
  return answers[0]!;
}

/**
 * What is refused before a route runs (Node's HTTP parser, Fastify's router, a method the
 * path does not take) answers in the envelope like everything else, with a note that says
 * what to do.
 */
describe('http: answers refused before a route runs are in the envelope', () => {
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  let token: string;

  before(async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing' });
    cleanup = b.cleanup;
    sys = await runSystem(b.config);
    token = (await sys.account('free')).access_token;
  });
  after(async () => {
    await sys.stop();
    await cleanup();
  });

  describe('long URLs and large headers', () => {
    it('a 20 000-character GET URL reaches the route, which names the parameter that is too long', async () => {
      const path = `/snap?${qs({ access_token: token, url: `https://example.com/?q=${'a'.repeat(20_000)}` })}`;
      expect(path.length).to.be.greaterThan(20_000);
      expectEnvelope(await request(sys.base, 'GET', path), 400, 'invalid_parameter', 'url');
    });

    it('a GET whose parameters are each within their limits fits, even percent-encoded (a full ai_prompt in a non-Latin script)', async () => {
      const path = `/snap?${qs({ access_token: token, url: 'https://example.com', analyze_image_with_ai: true, ai_prompt: '描'.repeat(2500) })}`;
      expect(path.length).to.be.greaterThan(22_000);
      // Past the head limit this would be a 431; the request is valid, so the route goes on to
      // the analysis check, and no ai service runs here.
      expectEnvelope(await request(sys.base, 'GET', path), 503, 'capacity_exhausted');
    });

    it('a URL longer than the 64 KB head limit is 431 headers_too_large, pointing to a POST body', async () => {
      const r = await request(sys.base, 'GET', `/snap?${qs({ access_token: token, url: `https://example.com/?q=${'a'.repeat(70_000)}` })}`);
      expectEnvelope(r, 431, 'headers_too_large', '64 KB', 'send the parameters in a POST body');
    });

    it('an oversized header is 431 headers_too_large, naming the limit', async () => {
      const r = await request(sys.base, 'GET', `/account_limits?access_token=${token}`, { headers: { cookie: `session=${'c'.repeat(70_000)}` } });
      expectEnvelope(r, 431, 'headers_too_large', '64 KB', 'smaller headers');
    });
  });

  describe('malformed requests (raw sockets)', () => {
    it('a request line that is not HTTP is 400 malformed_request, naming the methods', async () => {
      const r = await rawRequest(sys.base, 'HELLO WORLD\r\n\r\n');
      expectEnvelope(r, 400, 'malformed_request', 'Invalid method', 'GET', 'POST', 'DELETE');
      expect(r.headers.get('connection')).to.equal('close');
    });

    it('a URL with an unencoded space is 400 malformed_request, saying to percent-encode it', async () => {
      expectEnvelope(await rawRequest(sys.base, 'GET /snap?url=https://example.com/a b HTTP/1.1\r\nHost: x\r\n\r\n'), 400, 'malformed_request', '%20');
    });

    it('a malformed header is 400 malformed_request', async () => {
      expectEnvelope(await rawRequest(sys.base, 'GET /health HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n'), 400, 'malformed_request', 'Invalid header token');
    });

    it('an Expect header other than 100-continue is 400 malformed_request (Node answered a bare 417), and CONNECT is 405 (Node closed the connection)', async () => {
      const expectation = await rawRequest(sys.base, `POST /account_limits HTTP/1.1\r\nHost: x\r\nExpect: banana\r\nContent-Length: 0\r\n\r\n`);
      expectEnvelope(expectation, 400, 'malformed_request', 'Expect header "banana"', '100-continue');
      const connect = await rawRequest(sys.base, 'CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n');
      expectEnvelope(connect, 405, 'method_not_allowed', 'not a proxy', 'GET', 'POST');
      expect(connect.headers.get('allow')).to.contain('GET').and.contain('POST');
    });
  });

  describe('JSON bodies parsing accepts', () => {
    const post = (text: string) =>
      fetch(`${sys.base}/snap`, { method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: text }).then(
        async (r) => ({ status: r.status, headers: r.headers, body: (await r.json()) as Record<string, unknown>, raw: Buffer.alloc(0) }),
      );

    it('nesting deeper than any request needs is 400 invalid_parameter (it was a 500: the note writing the value out ran out of stack)', async () => {
      const deep = `{"url":${'['.repeat(10_000)}${']'.repeat(10_000)}}`;
      expectEnvelope(await post(deep), 400, 'invalid_parameter', 'nests more than 64 levels');
      // A body as deep as a real one passes on to the parameters' checks.
      expectEnvelope(
        await post(`{"url":"https://example.com","multi_step_actions":${'['.repeat(3)}${']'.repeat(3)}}`),
        400,
        'invalid_parameter',
        'multi_step_actions',
      );
    });

    it('a number too large for JSON (read as Infinity) is 400 invalid_parameter', async () => {
      expectEnvelope(await post('{"url":"https://example.com","page_width":1e309}'), 400, 'invalid_parameter', 'too large to read');
    });
  });

  describe('paths and methods', () => {
    it('a method the path does not take is 405 method_not_allowed with Allow naming those it takes', async () => {
      const r = await request(sys.base, 'DELETE', `/snap?access_token=${token}`);
      expectEnvelope(r, 405, 'method_not_allowed', 'GET, POST');
      expect(r.headers.get('allow')).to.equal('GET, POST');
      const put = await request(sys.base, 'PUT', '/jobs/some-job');
      expectEnvelope(put, 405, 'method_not_allowed', '/jobs/some-job does not take PUT');
      expect(put.headers.get('allow')).to.equal('GET, HEAD');
    });

    it('HEAD is not taken where a GET captures (it would capture and spend a credit for headers alone); it is where a GET only reads', async () => {
      for (const path of ['/snap', '/snap_html', '/snap_ai_analysis', '/snap_real_location', '/render']) {
        const head = await fetch(`${sys.base}${path}?access_token=${token}&url=${encodeURIComponent('http://127.0.0.1:9/')}`, { method: 'HEAD' });
        expect(head.status, path).to.equal(405);
        expect(head.headers.get('allow'), path).to.equal(path === '/render' ? 'GET' : 'GET, POST');
      }
      const read = await fetch(`${sys.base}/openapi.json`, { method: 'HEAD' });
      expect(read.status).to.equal(200);
      expect(read.headers.get('content-type')).to.match(/^application\/json/);
    });

    it('an unknown path stays 404 not_found', async () => {
      expectEnvelope(await request(sys.base, 'DELETE', '/nowhere'), 404, 'not_found', 'DELETE /nowhere');
    });

    it('a path segment longer than any id is 404 not_found, and bad percent-encoding 400 malformed_request', async () => {
      expectEnvelope(await request(sys.base, 'GET', `/jobs/${'j'.repeat(150)}?access_token=${token}`), 404, 'not_found', 'longer than 100 characters');
      expectEnvelope(await rawRequest(sys.base, 'GET /jobs/%zz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), 400, 'malformed_request', '%25');
    });
  });
});

/** What the server itself gives up on: a request too slow to arrive, a request that arrives while it closes. */
describe('http: a request the server gives up on is answered in the envelope', () => {
  let app: FastifyInstance;
  let base: string;
  let release: () => void = () => undefined;
  let entered: Promise<void>;
  let enter: () => void = () => undefined;

  beforeEach(async () => {
    entered = new Promise((resolve) => {
      enter = resolve;
    });
    const common = { summary: 'test', tag: 'test', auth: false as const, response: { type: 'object' }, errors: [] };
    app = buildHttpServer(new ServiceBroker({ logger: false }), loadConfig({}), [
      publicRoute({ ...common, method: 'GET', url: '/fast', handler: async () => ({ success: true }) }),
      publicRoute({
        ...common,
        method: 'GET',
        url: '/slow',
        handler: async () => {
          enter();
          await new Promise<void>((resolve) => {
            release = resolve;
          });
          return { success: true };
        },
      }),
    ]);
    // Node checks its request timers every 30 s by default; a test waits a fraction of that.
    // (read when the server starts listening; Node's typings lack it).
    Object.assign(app.server, { headersTimeout: 300, connectionsCheckingInterval: 50 });
    await app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(app.server.address() as net.AddressInfo).port}`;
  });
  afterEach(async () => {
    release();
    await app.close();
  });

  it('headers that do not arrive in time are 408 request_timeout', async () => {
    // The head is never finished (no blank line): Node's headers timeout fires.
    expectEnvelope(await rawRequest(base, 'GET /fast HTTP/1.1\r\nHost: x\r\n'), 408, 'request_timeout', 'send it again');
  });

  it('a request arriving on an open connection while the server closes is 503 capacity_exhausted with Retry-After', async () => {
    const { port } = new URL(base);
    const socket = net.connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (d: Buffer) => chunks.push(d));
    const closed = new Promise<void>((resolve, reject) => {
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });
    socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await entered;
    const closing = app.close();
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.write('GET /fast HTTP/1.1\r\nHost: x\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 50));
    release();
    await closed;
    await closing;
    const [first, second] = parseAnswers(Buffer.concat(chunks));
    expect(first?.status).to.equal(200);
    expectEnvelope(second!, 503, 'capacity_exhausted', 'shutting down');
    expect(second?.headers.get('retry-after')).to.equal('1');
  });
});

describe('http: closing the server', function () {
  this.timeout(10_000);

  it("is not held by a connection that never sent a request (a browser's preconnect), which Node would keep for its 60 s headers timeout", async () => {
    const common = { summary: 'test', tag: 'test', auth: false as const, response: { type: 'object' }, errors: [] };
    const app = buildHttpServer(new ServiceBroker({ logger: false }), loadConfig({}), [
      publicRoute({ ...common, method: 'GET', url: '/fast', handler: async () => ({ success: true }) }),
    ]);
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as net.AddressInfo;
    // One connection used and left idle (keep-alive), one opened and never used.
    const used = await request<{ success: boolean }>(`http://127.0.0.1:${port}`, 'GET', '/fast');
    expect(used.status).to.equal(200);
    const unused = net.connect(port, '127.0.0.1');
    await new Promise<void>((resolve, reject) => {
      unused.once('connect', () => resolve());
      unused.once('error', reject);
    });
    const ended = new Promise<void>((resolve) => unused.once('close', () => resolve()));
    const t0 = Date.now();
    await app.close();
    await ended;
    expect(Date.now() - t0, 'the close took (ms)').to.be.below(2_000);
  });
});
