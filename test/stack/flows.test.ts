/**
 * The spec's main flows through the full stack as separate processes (ops/stack.ts), over
 * HTTP only: snaps (image, JSON record, HTML), a scheduled configuration with a webhook and a
 * change step, an AI analysis by the service's own backend (a local server speaking OpenAI's
 * API), a capture through a real location and one through an own proxy (local proxy-chain
 * servers), the lists and /account_limits. Stand-ins only at the edge: the pages, the
 * webhook receiver, the AI provider and the proxies are local servers speaking the real
 * protocols; everything of ours runs as in production.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import { Server as ProxyServer } from 'proxy-chain';
import sharp from 'sharp';
import { Webhook } from 'standardwebhooks';
import type { Stack } from '../../ops/stack';
import { type Receiver, startReceiver } from '../notifier/receivers';
import { type FakeProvider, startFakeProvider } from '../support/ai-providers';
import { tempDir, uniqueName } from '../support/backends';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { qs, request } from '../support/http';
import { processesLeft, runScript } from '../support/processes';
import { startTestStack, stopTestStack } from '../support/stack';
import { sleep, until } from '../support/wait';

type Body = Record<string, unknown>;

describe('the spec’s main flows through the full stack (separate processes)', function () {
  this.timeout(180_000);
  const mark = uniqueName('m');
  const dir = tempDir('flows-');
  let fx: FixtureServer;
  let receiver: Receiver;
  let ai: FakeProvider;
  let location: ProxyServer;
  let own: ProxyServer;
  const viaLocation: string[] = [];
  const viaOwn: string[] = [];
  /** A page whose text the change step watches; the test edits it. */
  let price = 'Price: 10 EUR';
  let shop: http.Server;
  let shopOrigin = '';
  let stack: Stack | undefined;
  let failed = false;
  let key = '';
  /** Captures charged so far, as the suite counts them. */
  let charged = 0;
  /** The scheduled configuration the webhook test creates. */
  let scheduledId = '';

  before(async function () {
    this.timeout(240_000);
    fx = await startFixtures();
    receiver = await startReceiver();
    ai = await startFakeProvider('openai');
    location = new ProxyServer({
      port: 0,
      host: '127.0.0.1',
      prepareRequestFunction: ({ username, password, hostname, port }) => {
        const ok = password === 'provider-secret';
        if (ok) viaLocation.push(`${username} ${hostname}:${port}`);
        return { requestAuthentication: !ok };
      },
    });
    own = new ProxyServer({
      port: 0,
      host: '127.0.0.1',
      prepareRequestFunction: ({ username, password, hostname, port }) => {
        const ok = username === 'carol' && password === 'own-secret';
        if (ok) viaOwn.push(`${hostname}:${port}`);
        return { requestAuthentication: !ok };
      },
    });
    await Promise.all([location.listen(), own.listen()]);
    shop = http.createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><title>shop</title><h1>Item</h1><p id="price">${price}</p>`);
    });
    await new Promise<void>((r) => shop.listen(0, '127.0.0.1', r));
    shopOrigin = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
    const catalogue = path.join(dir, 'locations.json');
    fs.writeFileSync(
      catalogue,
      JSON.stringify({ Berlin: { proxy: `http://cust-berlin-{session}:provider-secret@127.0.0.1:${location.port}` }, Germany: { pick: ['Berlin'] } }),
    );
    stack = await startTestStack({
      env: {
        ALLOW_PRIVATE_NETWORKS: 'true',
        WEBHOOK_POLL_MS: '250',
        SERVICE_AI_PROVIDER: 'openai',
        SERVICE_AI_BASE_URL: ai.baseUrl,
        SERVICE_AI_API_KEY: ai.key,
        SERVICE_AI_MODEL: 'gpt-4o-mini',
        REAL_LOCATIONS_FILE: catalogue,
        SNAP_TEST_MARK: mark,
      },
    });
    const account = JSON.parse(runScript('bin/admin.js', ['accounts', 'create', '--plan', 'paid', '--addons', 'byo_proxy', '--json'], stack.serviceEnv())) as {
      access_token: string;
    };
    key = account.access_token;
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async function () {
    this.timeout(120_000);
    const pids = stack?.pids() ?? [];
    await stopTestStack(stack, failed);
    // Nothing of the stack is left: its processes by id, and every browser and ChromeDriver
    // (they inherit the marker).
    const left = await processesLeft(mark, pids);
    await Promise.all([fx?.stop(), receiver?.stop(), ai?.stop(), location?.close(true), own?.close(true)]);
    await new Promise<void>((r) => {
      shop?.closeAllConnections();
      shop?.close(() => r());
    });
    fs.rmSync(dir, { recursive: true, force: true });
    expect(left, 'processes left after the stack stopped').to.deep.equal([]);
  });

  const api = <T = Body>(method: string, p: string, json?: Body) =>
    request<T>(stack!.url, method, p, { headers: { authorization: `Bearer ${key}` }, ...(json ? { json } : {}) });
  const snap = (params: Record<string, string | number | boolean>) =>
    request<Body>(stack!.url, 'GET', `/snap?${qs({ access_token: key, wait: 0, ttl: 0, ...params })}`);

  it('snaps an image, its JSON record (whose links resolve) and the rendered HTML', async () => {
    const image = await snap({ url: `${fx.origin}/plain`, image_format: 'png', page_width: 640, page_height: 480 });
    expect(image.status).to.equal(200);
    expect(image.headers.get('content-type')).to.equal('image/png');
    const meta = await sharp(image.raw).metadata();
    expect([meta.format, meta.width, meta.height]).to.deep.equal(['png', 640, 480]);
    charged++;

    const record = await snap({ url: `${fx.origin}/plain`, json: true });
    expect(record.status, JSON.stringify(record.body)).to.equal(200);
    const direct = await fetch(record.body.direct_link as string);
    expect(direct.status).to.equal(200);
    expect(direct.headers.get('content-type')).to.match(/^image\/jpeg/);
    charged++;

    const html = await snap({ url: `${fx.origin}/js-rendered`, html_only: true });
    expect(html.status).to.equal(200);
    expect(html.raw.toString()).to.include('rendered by script');
    charged++;
  });

  it('runs a configuration with a webhook and a change step: a signed delivery per capture, one alert when the text changes', async () => {
    const created = await api('POST', '/screenshot_configs', {
      url: `${shopOrigin}/item`,
      wait: 0,
      scheduled_screenshot: true,
      scheduled_every: 2,
      scheduled_interval: 'hours',
      webhook_url: `${receiver.origin}/captures`,
      multi_step_actions: [{ type: 'change', selector: '#price', send_to: 'webhook', url: `${receiver.origin}/alerts` }],
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const id = created.body.screenshot_configuration_id as string;
    scheduledId = id;
    charged++;
    const secret = (await api<{ secret: string }>('GET', '/webhook_secret')).body.secret;
    const hook = new Webhook(secret);
    // Every request the receiver got whose signature checks out with the account's secret.
    const signed = () =>
      receiver.received.flatMap((r) => {
        try {
          return [hook.verify(r.body, r.headers as Record<string, string>) as Body];
        } catch {
          return [];
        }
      });
    const deliveries = () => signed().filter((b) => b.screenshot_config_id === id);
    const alerts = () => signed().filter((b) => b.screenshot_configuration_id === id);
    await until('the first capture delivery', async () => deliveries().length === 1);
    expect(alerts(), 'the first capture sets the baseline').to.deep.equal([]);
    price = 'Price:   12 EUR';
    const again = await api('POST', `/screenshot_configs/${id}/capture`);
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    charged++;
    await until('the second delivery and the alert', async () => deliveries().length === 2 && alerts().length === 1);
    expect(alerts()[0]).to.include({ previous_value: 'Price: 10 EUR', retrieved_value: 'Price: 12 EUR' });
    expect(receiver.received.length, 'every request the receiver got was signed').to.equal(signed().length);
    const listed = await api<{ change_notifications: Body[] }>('GET', '/change_notifications');
    expect(listed.body.change_notifications.map((n) => n.retrieved_value)).to.deep.equal(['Price: 12 EUR']);
  });

  it("analyses a capture with the service's own AI backend, counting one AI credit", async () => {
    const r = await request<Body>(stack!.url, 'POST', '/snap', {
      headers: { authorization: `Bearer ${key}` },
      json: { url: `${fx.origin}/plain`, json: true, wait: 0, ttl: 0, analyze_image_with_ai: true, ai_prompt: 'What is on the page?' },
    });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.ai).to.include({ ai_analyzed: true, ai_provider: 'service', ai_prompt: 'What is on the page?' });
    expect(ai.of('analyze')).to.have.length(1);
    charged++;
  });

  it('captures through a real location (the provider sees it) and through an own proxy', async () => {
    const located = await snap({ url: `${fx.origin}/plain`, real_location: 'Germany', json: true });
    expect(located.status, JSON.stringify(located.body)).to.equal(200);
    expect(located.body).to.include({ is_proxy_screenshot: true, proxy_server: 'Germany' });
    expect(viaLocation.some((v) => v.startsWith('cust-berlin-'))).to.equal(true);
    charged++;

    const put = await api<{ proxy: { id: number } }>('PUT', '/proxies', {
      host: '127.0.0.1',
      port: own.port,
      username: 'carol',
      password: 'own-secret',
      test: false,
    });
    expect(put.status, JSON.stringify(put.body)).to.equal(200);
    const through = await snap({ url: `${fx.origin}/plain`, custom_proxy_id: put.body.proxy.id, json: true });
    expect(through.status, JSON.stringify(through.body)).to.equal(200);
    expect(through.body).to.include({ custom_proxy: `127.0.0.1:${own.port}` });
    expect(viaOwn.length).to.be.greaterThan(0);
    charged++;
  });

  it('lists every capture and counts the month exactly', async () => {
    // Deliveries and counters settle within moments of the last answer.
    await sleep(500);
    const all = await api<{ screenshots: Body[]; has_more: boolean }>('GET', '/screenshots?limit=1000');
    expect(all.status).to.equal(200);
    expect(all.body.screenshots).to.have.length(charged);
    expect(all.body.has_more).to.equal(false);
    // Every snap belongs to a configuration too (the spec's snap configurations), so the list holds more than the scheduled one.
    const configs = await api<{ screenshot_configurations: Array<{ ids: { screenshot_config_id: string } }> }>('GET', '/screenshot_configs');
    expect(configs.body.screenshot_configurations.map((c) => c.ids.screenshot_config_id)).to.include(scheduledId);
    const ofConfig = await api<{ screenshots: Body[] }>('GET', `/screenshot_configs/${scheduledId}/screenshots`);
    expect(ofConfig.status).to.equal(200);
    expect(ofConfig.body.screenshots, 'its first capture and the one asked for').to.have.length(2);
    const limits = await api<{ results: Record<string, number> }>('GET', '/account_limits');
    expect(limits.body.results.screenshot_current_month_usage).to.equal(charged);
    expect(limits.body.results.ai_analysis_requests_current_month_usage).to.equal(1);
    expect(limits.body.results.real_location_bandwidth_current_month_usage_in_bytes).to.be.greaterThan(0);
  });
});
