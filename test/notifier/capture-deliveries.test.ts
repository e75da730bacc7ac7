/**
 * Capture deliveries end to end (embedded mode on the real Grid): every capture of a
 * configuration with webhook_url (the first at creation, capture now, a scheduled one)
 * is delivered once, with exactly the spec's body, signed so standardwebhooks verifies it;
 * a configuration without webhook_url and a failed capture deliver nothing.
 */
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { backendConfig } from '../support/backends';
import { CAPTURE_SERVICES } from '../support/capture-helpers';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { sharedGrid } from '../support/grid';
import { jobFinished, request } from '../support/http';
import { type RunningSystem, runSystem } from '../support/system';
import { type Receiver, startReceiver } from './receivers';

type Body = Record<string, unknown>;

describe('capture deliveries', function () {
  this.timeout(120_000);
  let fx: FixtureServer;
  let sys: RunningSystem;
  let receiver: Receiver;
  let cleanup: () => Promise<void>;
  let token: string;
  let clock = Date.now();

  const api = (method: string, p: string, json?: Body) =>
    request<Body>(sys.base, method, p, { headers: { authorization: `Bearer ${token}` }, ...(json ? { json } : {}) });
  const finished = (jobId: string) => jobFinished(sys.base, token, jobId);
  async function received(n: number): Promise<void> {
    for (let i = 0; i < 100 && receiver.received.length < n; i++) await new Promise((res) => setTimeout(res, 100));
    expect(receiver.received).to.have.length(n);
  }

  before(async () => {
    const grid = await sharedGrid();
    fx = await startFixtures();
    receiver = await startReceiver();
    const b = await backendConfig('sqlite', {
      SERVICES: CAPTURE_SERVICES,
      SELENIUM_URL: grid.url,
      ALLOW_PRIVATE_NETWORKS: 'true',
      CAPTURE_SESSIONS: '2',
      WEBHOOK_POLL_MS: '200',
    });
    cleanup = b.cleanup;
    sys = await runSystem(b.config, { scheduler: { now: () => clock, autoTick: false } });
    token = (await sys.account('paid')).access_token;
  });
  after(async () => {
    await sys?.stop();
    await receiver?.stop();
    await fx?.stop();
    await cleanup?.();
  });

  it('delivers the first capture, a capture now and a scheduled one, each once, with exactly the spec body, signed', async () => {
    const created = await api('POST', '/screenshot_configs', {
      url: `${fx.origin}/plain`,
      wait: 0,
      page_width: 400,
      page_height: 300,
      custom_title: 'Plain page',
      custom_description: 'Watched for the test',
      webhook_url: `${receiver.origin}/captures`,
      scheduled_screenshot: true,
      scheduled_every: 1,
      scheduled_interval: 'hours',
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const configId = created.body.screenshot_configuration_id as string;
    const first = await finished(created.body.job_id as string);
    await received(1);

    const body = JSON.parse(receiver.received[0]!.body) as Body;
    expect(body).to.have.all.keys(
      'screenshot_config_id',
      'url',
      'id',
      'direct_link',
      'direct_thumbnail_link',
      'embed_url',
      'taken_at',
      'taken_at_timestamp',
      'custom_title',
      'custom_description',
      'ai',
      'is_proxy_screenshot',
      'proxy_server',
      'bandwidth_in_bytes',
      'job_id',
    );
    expect(body).to.deep.include({
      screenshot_config_id: configId,
      url: `${fx.origin}/plain`,
      embed_url: created.body.embed_url,
      custom_title: 'Plain page',
      custom_description: 'Watched for the test',
      ai: { ai_analyzed: false, ai_prompt: '', ai_response: '' },
      is_proxy_screenshot: false,
      proxy_server: null,
      bandwidth_in_bytes: 0,
      job_id: created.body.job_id,
    });
    expect(body.id).to.be.a('number');
    const shot = first.body.screenshot as Body;
    expect(body.direct_link).to.equal(shot.direct_link);
    expect(body.direct_thumbnail_link).to.equal(shot.direct_thumbnail_link);
    expect(body.taken_at_timestamp)
      .to.be.a('string')
      .and.match(/^\d{13}$/);
    expect(Math.floor(Number(body.taken_at_timestamp) / 1000)).to.equal(shot.taken_at_timestamp);
    expect(body.taken_at).to.equal(new Date(Number(body.taken_at_timestamp)).toISOString().replace('Z', '+00:00'));

    const secret = (await api('GET', '/webhook_secret')).body.secret as string;
    const got = receiver.received[0]!;
    expect(new Webhook(secret).verify(got.body, got.headers as Record<string, string>)).to.deep.equal(body);

    const now = await api('POST', `/screenshot_configs/${configId}/capture`);
    await finished(now.body.job_id as string);
    await received(2);
    expect(JSON.parse(receiver.received[1]!.body).job_id).to.equal(now.body.job_id);

    clock += 2 * 3_600_000;
    const started = await sys.scheduler!.tick();
    const scheduled = started.find((s) => s.configId === configId);
    expect(scheduled, 'the configuration was due').to.not.equal(undefined);
    await finished(scheduled!.jobId);
    await received(3);
    const third = JSON.parse(receiver.received[2]!.body) as Body;
    expect(third.job_id).to.equal(scheduled!.jobId);
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).to.equal(3);
    expect(new Set([body.id, JSON.parse(receiver.received[1]!.body).id, third.id]).size).to.equal(3);

    const log = await api('GET', `/webhook_deliveries?screenshot_configuration_id=${configId}`);
    expect(log.body.webhook_deliveries).to.have.length(3);
    expect((log.body.webhook_deliveries as Array<{ status: string }>).every((d) => d.status === 'delivered')).to.equal(true);

    // Deleting the configuration deletes its deliveries.
    expect((await api('DELETE', `/screenshot_configs/${configId}`)).status).to.equal(200);
    expect((await api('GET', '/webhook_deliveries')).body.webhook_deliveries as unknown[]).to.have.length(0);
  });

  it('delivers nothing for a configuration without webhook_url, nor for a failed capture', async () => {
    const before = receiver.received.length;
    const plain = await api('POST', '/screenshot_configs', { url: `${fx.origin}/plain`, wait: 0 });
    await finished(plain.body.job_id as string);
    const dead = await api('POST', '/screenshot_configs', { url: 'http://127.0.0.1:9/dead', wait: 0, webhook_url: `${receiver.origin}/captures` });
    expect((await finished(dead.body.job_id as string)).body.status).to.equal('failed');
    await new Promise((res) => setTimeout(res, 1000));
    expect(receiver.received).to.have.length(before);
    expect((await api('GET', '/webhook_deliveries')).body.webhook_deliveries as unknown[]).to.have.length(0);
  });
});
