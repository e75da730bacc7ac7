/**
 * The service's logs as an operator reads them: `node dist/bin/serve.js` as a real process
 * (embedded SQLite, the shared Grid, LOG_LEVEL=debug, the most it ever writes) is driven
 * with calls that carry every kind of secret the service handles: our API key in the query
 * and in Authorization, a wrong key, an AI provider key stored through the API (and a wrong
 * one the provider stand-in quotes back), an own proxy with a password (tested, captured
 * through, and one with a wrong password), the webhook signing secret, a target URL with a
 * token in it; and failing calls. Then every line it wrote is one JSON object, none holds
 * any secret in any spelling, every request's access line carries the X-Request-Id it was
 * answered with, a snap's capture lines carry its request id and its job id, a queued
 * capture's lines its job id, and a webhook delivery's line the webhook-id it was sent with.
 */
import { expect } from 'chai';
import type http from 'node:http';
import { Server as ProxyServer } from 'proxy-chain';
import { type FakeProvider, startFakeProvider } from '../support/ai-providers';
import { NATS_URL, backendConfig, uniqueName } from '../support/backends';
import { sharedGrid } from '../support/grid';
import { type HttpAnswer, jobFinished, qs, request } from '../support/http';
import { type LocalServer, serveLocally } from '../support/local-server';
import { type ServiceProcess, freePort, runScript, startServeProcess } from '../support/processes';

type Body = Record<string, unknown>;
type Line = Record<string, unknown>;

const PROXY_USER = 'dora';
const PROXY_PASSWORD = 'Pr0xy$Pass-w0rd7';
const WRONG_PROXY_PASSWORD = 'Wr0ngProxy$Pass9';
const WRONG_TOKEN = 'sk_wrongTokenForTheLogsTest0123456789';
const WRONG_PROVIDER_KEY = 'sk-proj-wrongKeyForTheLogsTest9876';
/** A token in the captured page's own URL (a signed link): the capture's lines name the URL. */
const PAGE_TOKEN = 'PageT0kenSecret4242';

describe('logs: JSON lines with request and job ids, secrets redacted (npm start as a process)', function () {
  this.timeout(180_000);
  let site: LocalServer;
  let upstream: ProxyServer;
  let openai: FakeProvider;
  let proc: ServiceProcess | null = null;
  let cleanup: (() => Promise<void>) | null = null;
  const hooks: { id: string; body: string }[] = [];
  /** Every answer the test got, with the request id it was answered with. */
  const answers: { what: string; answer: HttpAnswer<Body> }[] = [];
  let token = '';
  let webhookSecret = '';
  let snapRequestId = '';
  let configJobId = '';
  let lines: Line[] = [];
  let rawLines: string[] = [];

  const secrets = (): string[] => [token, WRONG_TOKEN, openai.key, WRONG_PROVIDER_KEY, PROXY_PASSWORD, WRONG_PROXY_PASSWORD, webhookSecret, PAGE_TOKEN];

  before(async () => {
    const grid = await sharedGrid();
    site = await serveLocally((req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.method === 'POST' && req.url === '/hook') {
        let body = '';
        req.on('data', (d) => (body += d));
        req.on('end', () => {
          hooks.push({ id: String(req.headers['webhook-id']), body });
          res.end('ok');
        });
        return;
      }
      if (req.url === '/ip') {
        res.setHeader('content-type', 'application/json');
        res.end('{"ip":"127.0.0.1"}');
        return;
      }
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>logs</title><p>a page to capture</p>');
    });
    upstream = new ProxyServer({
      port: 0,
      host: '127.0.0.1',
      prepareRequestFunction: ({ username, password }) => ({ requestAuthentication: !(username === PROXY_USER && password === PROXY_PASSWORD) }),
    });
    await upstream.listen();
    openai = await startFakeProvider('openai');

    const b = await backendConfig('sqlite', {
      SELENIUM_URL: grid.url,
      ALLOW_PRIVATE_NETWORKS: 'true',
      CAPTURE_SESSIONS: '1',
      OPENAI_BASE_URL: openai.baseUrl,
      PROXY_TEST_URL: `${site.origin}/ip`,
      WEBHOOK_POLL_MS: '200',
      LOG_LEVEL: 'debug',
    });
    cleanup = b.cleanup;
    proc = await startServeProcess(b.env, /Screenshot service ready/, { timeoutMs: 60_000 });
    const base = `http://127.0.0.1:${b.env.PORT}`;
    token = (
      JSON.parse(runScript('bin/admin.js', ['accounts', 'create', '--plan', 'paid', '--addons', 'byo_ai,byo_proxy', '--json'], b.env)) as {
        access_token: string;
      }
    ).access_token;

    const bearer = { authorization: `Bearer ${token}` };
    const call = async (what: string, method: string, path: string, opts: Parameters<typeof request>[3] = {}) => {
      const answer = await request<Body>(base, method, path, opts);
      answers.push({ what, answer });
      return answer;
    };

    // Our key in the query, in the header (with the caller's own request id), and a wrong one.
    await call('limits, key in the query', 'GET', `/account_limits?access_token=${token}`);
    const tagged = await call('limits, key in the header', 'GET', '/account_limits', { headers: { ...bearer, 'x-request-id': 'logs-test-req-1' } });
    expect(tagged.headers.get('x-request-id')).to.equal('logs-test-req-1');
    expect((await call('a wrong key', 'GET', `/account_limits?access_token=${WRONG_TOKEN}`)).status).to.equal(401);
    // An id that does not look like one is replaced.
    const odd = await call('an odd request id', 'GET', '/account_limits', { headers: { ...bearer, 'x-request-id': 'has spaces "and quotes"' } });
    expect(odd.headers.get('x-request-id')).to.match(/^req_/);
    expect((await call('an unknown route', 'GET', `/nowhere?access_token=${token}`)).status).to.equal(404);

    // A provider key stored through the API, and a wrong one the provider quotes back in its 401.
    const stored = await call('provider key', 'PUT', '/ai/providers/openai', { headers: bearer, json: { api_key: openai.key, default_model: 'gpt-4o' } });
    expect(stored.status, JSON.stringify(stored.body)).to.equal(200);
    expect(
      (await call('wrong provider key', 'PUT', '/ai/providers/openai', { headers: bearer, json: { api_key: WRONG_PROVIDER_KEY } })).status,
    ).to.be.greaterThanOrEqual(400);
    // The right one again, for the analysis below.
    await call('provider key again', 'PUT', '/ai/providers/openai', { headers: bearer, json: { api_key: openai.key, default_model: 'gpt-4o' } });

    // An own proxy with a password, tested through; one with a wrong password, whose test fails.
    const proxy = await call('own proxy', 'PUT', '/proxies', {
      headers: bearer,
      json: { host: '127.0.0.1', port: upstream.port, username: PROXY_USER, password: PROXY_PASSWORD, test: true },
    });
    expect(proxy.status, JSON.stringify(proxy.body)).to.equal(200);
    const proxyId = (proxy.body.proxy as { id: number }).id;
    const badProxy = await call('own proxy, wrong password', 'PUT', '/proxies', {
      headers: bearer,
      form: { host: '127.0.0.1', port: String(upstream.port), username: PROXY_USER, password: WRONG_PROXY_PASSWORD, test: 'true' },
    });
    expect(badProxy.status, JSON.stringify(badProxy.body)).to.be.greaterThanOrEqual(400);

    // The webhook signing secret.
    webhookSecret = String((await call('webhook secret', 'GET', '/webhook_secret', { headers: bearer })).body.secret);
    expect(webhookSecret).to.match(/^whsec_/);

    // A snap through the own proxy, of a URL with a token in it, analysed with the stored provider key.
    const pageUrl = `${site.origin}/page?access_token=${PAGE_TOKEN}`;
    const snap = await call(
      'snap',
      'GET',
      `/snap?${qs({
        access_token: token,
        url: pageUrl,
        custom_proxy_id: proxyId,
        ttl: 0,
        wait: 0,
        json: true,
        analyze_image_with_ai: true,
        ai_provider: 'openai',
      })}`,
    );
    expect(snap.status, JSON.stringify(snap.body)).to.equal(200);
    snapRequestId = snap.headers.get('x-request-id') ?? '';
    // A snap that fails (nothing listens on port 9).
    expect(
      (await call('failing snap', 'GET', `/snap?${qs({ access_token: token, url: 'http://127.0.0.1:9/', ttl: 0, wait: 0 })}`)).status,
    ).to.be.greaterThanOrEqual(400);

    // A queued capture, delivered to a webhook.
    const created = await call('configuration', 'POST', '/screenshot_configs', {
      headers: bearer,
      json: { url: pageUrl, wait: 0, webhook_url: `${site.origin}/hook` },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    configJobId = String(created.body.job_id);
    expect((await jobFinished(base, token, configJobId)).body.status).to.equal('completed');
    for (let i = 0; i < 100 && !(hooks.length && proc.output().includes(`"delivery_id":"${hooks[0]?.id}"`)); i++) await new Promise((r) => setTimeout(r, 100));
    expect(hooks, 'the webhook was delivered').to.have.length(1);

    await proc.stop();
    rawLines = proc
      .output()
      .split('\n')
      .filter((l) => l.length > 0);
    lines = rawLines.map((l) => {
      try {
        return JSON.parse(l) as Line;
      } catch {
        return { unparsed: l };
      }
    });
  });

  after(async () => {
    await proc?.stop();
    await upstream?.close(true);
    await openai?.stop();
    await site?.stop();
    await cleanup?.();
  });

  it('writes only JSON lines, each with time, level, node, module and msg', () => {
    expect(rawLines.length).to.be.greaterThan(50);
    const notJson = lines.filter((l) => 'unparsed' in l);
    expect(notJson, 'lines that are not JSON').to.deep.equal([]);
    for (const l of lines) expect(l).to.include.keys('time', 'level', 'node', 'module', 'msg');
    expect(lines.some((l) => String(l.msg).startsWith('Screenshot service ready on '))).to.equal(true);
  });

  it('never writes a secret, in any spelling, on any line', () => {
    const spellings = (s: string) => [s, encodeURIComponent(s), Buffer.from(s).toString('base64')];
    const forms = [
      ...secrets().flatMap(spellings),
      Buffer.from(`${PROXY_USER}:${PROXY_PASSWORD}`).toString('base64'),
      Buffer.from(`${PROXY_USER}:${WRONG_PROXY_PASSWORD}`).toString('base64'),
    ];
    for (const secret of forms) {
      expect(secret.length, 'each secret was known').to.be.greaterThan(8);
      const leaking = rawLines.filter((l) => l.includes(secret));
      expect(leaking, `lines holding "${secret}"`).to.deep.equal([]);
    }
    expect(
      rawLines.some((l) => l.includes('[REDACTED]')),
      'something was redacted (the test saw secrets reach the log writer)',
    ).to.equal(true);
  });

  it('writes one access line per request, with method, path without query, status, duration and the X-Request-Id it answered', () => {
    const access = lines.filter((l) => l.module === 'http' && typeof l.status === 'number');
    for (const { what, answer } of answers) {
      const id = answer.headers.get('x-request-id');
      expect(id, `${what}: X-Request-Id`).to.be.a('string').and.not.equal('');
      const mine = access.filter((l) => l.request_id === id);
      expect(mine, `${what}: its access line`).to.have.length(1);
      expect(mine[0]).to.include({ status: answer.status });
      expect(mine[0]).to.include.keys('method', 'path', 'ms');
      expect(String(mine[0]?.path)).not.to.contain('?');
    }
    expect(access.find((l) => l.request_id === 'logs-test-req-1')).to.include({ method: 'GET', path: '/account_limits', status: 200 });
  });

  it("carries a snap's request id and job id on its capture lines", () => {
    const capture = lines.filter((l) => l.module === 'capture' && l.request_id === snapRequestId);
    const recorded = capture.find((l) => l.msg === 'capture recorded');
    expect(recorded, "the snap's 'capture recorded' line").to.have.property('job_id').that.is.a('string');
    expect(capture.find((l) => l.msg === 'capture started')).to.include({ job_id: recorded?.job_id });
  });

  it("carries a queued capture's job id on its lines, and no request's id", () => {
    const mine = lines.filter((l) => l.job_id === configJobId);
    expect(mine.map((l) => l.msg)).to.include.members(['capture started', 'capture recorded']);
    for (const l of mine) expect(l).not.to.have.property('request_id');
  });

  it("carries a webhook delivery's id (its webhook-id header) on the delivery's line", () => {
    const delivery = lines.find((l) => l.module === 'notifier' && l.delivery_id === hooks[0]?.id);
    expect(delivery, 'the delivery line').to.include({ outcome: 'delivered', status_code: 200 });
  });
});

describe('logs: a request id crosses NATS into the capture process (api and the rest as two processes)', function () {
  this.timeout(180_000);
  let site: LocalServer;
  const procs: ServiceProcess[] = [];
  let cleanup: (() => Promise<void>) | null = null;
  let env: Record<string, string> = {};

  before(async () => {
    const grid = await sharedGrid();
    site = await serveLocally((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>nats</title><p>captured on another node</p>');
    });
    const port = await freePort();
    const b = await backendConfig('mysql', {
      TRANSPORTER: NATS_URL,
      NAMESPACE: uniqueName('ns'),
      PORT: String(port),
      SELENIUM_URL: grid.url,
      ALLOW_PRIVATE_NETWORKS: 'true',
      CAPTURE_SESSIONS: '1',
      LOG_LEVEL: 'debug',
    });
    cleanup = b.cleanup;
    env = b.env;
    runScript('db/migrate.js', [], b.env);
    procs.push(
      await startServeProcess({ ...b.env, SERVICES: 'billing,capture,scheduler,ai,proxy,notifier' }, /ServiceBroker .* started/, { timeoutMs: 60_000 }),
    );
    procs.push(await startServeProcess({ ...b.env, SERVICES: 'api' }, /Screenshot service ready/, { timeoutMs: 60_000 }));
  });
  after(async () => {
    for (const p of procs.reverse()) await p.stop();
    await site?.stop();
    await cleanup?.();
  });

  it("writes the capture process's lines for a snap under the request id the api answered", async () => {
    const [workers, api] = procs as [ServiceProcess, ServiceProcess];
    const base = `http://127.0.0.1:${env.PORT}`;
    const { access_token } = JSON.parse(runScript('bin/admin.js', ['accounts', 'create', '--plan', 'paid', '--json'], env)) as { access_token: string };
    // The api node must have discovered the other one (billing and capture arrive together).
    for (let i = 0; i < 50; i++) {
      if ((await request(base, 'GET', `/account_limits?access_token=${access_token}`)).status === 200) break;
      await new Promise((res) => setTimeout(res, 200));
    }
    const snap = await request(base, 'GET', `/snap?${qs({ access_token, url: `${site.origin}/`, ttl: 0, wait: 0, json: true })}`, {
      headers: { 'x-request-id': 'logs-nats-snap-1' },
    });
    expect(snap.status, JSON.stringify(snap.body)).to.equal(200);
    expect(snap.headers.get('x-request-id')).to.equal('logs-nats-snap-1');
    const linesOf = (p: ServiceProcess) =>
      p
        .output()
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as Line);
    // The access line is written once the answer is sent, and reaches this process a moment later.
    const accessLine = async () => {
      for (let i = 0; i < 50; i++) {
        const found = linesOf(api).find((l) => l.module === 'http' && l.request_id === 'logs-nats-snap-1');
        if (found) return found;
        await new Promise((res) => setTimeout(res, 100));
      }
      return undefined;
    };
    expect(await accessLine(), "the api's access line").to.include({ path: '/snap', status: 200 });
    const recorded = linesOf(workers).find((l) => l.module === 'capture' && l.msg === 'capture recorded' && l.request_id === 'logs-nats-snap-1');
    expect(recorded, "the capture process's 'capture recorded' line").to.have.property('job_id').that.is.a('string');
    for (const p of procs) expect(p.output()).not.to.contain(access_token);
  });
});
