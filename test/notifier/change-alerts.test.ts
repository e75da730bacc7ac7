/**
 * Change alerts end to end (embedded mode on the real Grid, the scheduler on a controllable
 * clock): a page whose watched text the test edits between scheduled captures gives exactly
 * one alert per change, none for the baseline or a whitespace-only change; the webhook
 * alert carries the spec body (verified with standardwebhooks), the Slack one a Slack
 * message; both endpoints list the alerts; deleting the configuration deletes them.
 */
import { expect } from 'chai';
import { Webhook } from 'standardwebhooks';
import { backendConfig } from '../support/backends';
import { CAPTURE_SERVICES } from '../support/capture-helpers';
import { sharedGrid } from '../support/grid';
import { jobFinished, request } from '../support/http';
import { type LocalServer, serveLocally } from '../support/local-server';
import { type RunningSystem, runSystem } from '../support/system';
import { type Receiver, startReceiver } from './receivers';

type Body = Record<string, unknown>;

describe('change alerts', function () {
  this.timeout(180_000);
  let site: LocalServer;
  let sys: RunningSystem;
  let hooks: Receiver;
  let slack: Receiver;
  let cleanup: () => Promise<void>;
  let token: string;
  let clock = Date.now();
  let price = '10 EUR';
  let configId: string;

  const api = (method: string, p: string, json?: Body) =>
    request<Body>(sys.base, method, p, { headers: { authorization: `Bearer ${token}` }, ...(json ? { json } : {}) });
  const finished = (jobId: string) => jobFinished(sys.base, token, jobId);
  /** One scheduled capture of the configuration, finished, and what was due sent. */
  async function scheduledCapture(): Promise<void> {
    clock += 2 * 3_600_000;
    const started = (await sys.scheduler!.tick()).find((s) => s.configId === configId);
    expect(started, 'the configuration was due').to.not.equal(undefined);
    const done = await finished(started!.jobId);
    expect(done.body.status, JSON.stringify(done.body)).to.equal('completed');
    await sys.notifier!.pump();
  }

  before(async () => {
    const grid = await sharedGrid();
    site = await serveLocally((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(`<!DOCTYPE html><html><body><h1>Shop</h1><p id="price" style="white-space:pre-wrap">${price}</p></body></html>`);
    });
    hooks = await startReceiver();
    slack = await startReceiver(() => ({ status: 200, body: 'ok' }));
    const b = await backendConfig('sqlite', { SERVICES: CAPTURE_SERVICES, SELENIUM_URL: grid.url, ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1' });
    cleanup = b.cleanup;
    sys = await runSystem(b.config, { scheduler: { now: () => clock, autoTick: false }, notifier: { autoPoll: false } });
    token = (await sys.account('paid')).access_token;
  });
  after(async () => {
    await sys?.stop();
    await Promise.all([hooks?.stop(), slack?.stop(), site?.stop()]);
    await cleanup?.();
  });

  it('sets the baseline with the first capture and alerts once per change, never for whitespace', async () => {
    const created = await api('POST', '/screenshot_configs', {
      url: `${site.origin}/`,
      wait: 0,
      page_width: 400,
      page_height: 300,
      custom_title: 'Price watch',
      scheduled_screenshot: true,
      scheduled_every: 1,
      scheduled_interval: 'hours',
      multi_step_actions: [
        { type: 'change', selector: '#price', send_to: 'webhook', url: `${hooks.origin}/alerts` },
        { type: 'change', selector: '#price', send_to: 'slack', url: `${slack.origin}/services/T0/B0/x` },
      ],
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    configId = created.body.screenshot_configuration_id as string;
    await finished(created.body.job_id as string);
    await sys.notifier!.pump();
    expect(hooks.received, 'the baseline sends nothing').to.have.length(0);

    await scheduledCapture();
    expect(hooks.received, 'unchanged text sends nothing').to.have.length(0);

    price = '12 EUR';
    await scheduledCapture();
    expect(hooks.received).to.have.length(1);
    expect(slack.received).to.have.length(1);

    price = '  12\n   EUR ';
    await scheduledCapture();
    expect(hooks.received, 'whitespace only is no change').to.have.length(1);

    price = '9 EUR';
    await scheduledCapture();
    expect(hooks.received).to.have.length(2);
    expect(slack.received).to.have.length(2);

    const first = hooks.received[0]!;
    const body = JSON.parse(first.body) as Body;
    expect(body).to.have.all.keys('id', 'screenshot_configuration_id', 'previous_value', 'retrieved_value', 'config', 'sent_at');
    expect(body).to.deep.include({
      screenshot_configuration_id: configId,
      previous_value: '10 EUR',
      retrieved_value: '12 EUR',
      config: { type: 'change', selector: '#price', send_to: 'webhook', url: `${hooks.origin}/alerts` },
    });
    expect(body.id).to.be.a('string');
    expect(body.sent_at)
      .to.be.a('string')
      .and.match(/^\d{13}$/);
    const secret = (await api('GET', '/webhook_secret')).body.secret as string;
    const realNow = Date.now;
    Date.now = () => Number(first.headers['webhook-timestamp']) * 1000;
    try {
      expect(new Webhook(secret).verify(first.body, first.headers as Record<string, string>)).to.deep.equal(body);
    } finally {
      Date.now = realNow;
    }
    expect(JSON.parse(hooks.received[1]!.body)).to.deep.include({ previous_value: '12 EUR', retrieved_value: '9 EUR' });

    const message = JSON.parse(slack.received[0]!.body) as { text: string; blocks: Array<Record<string, unknown>> };
    expect(message).to.have.all.keys('text', 'blocks');
    expect(message.text).to.contain('Price watch').and.contain('#price');
    const blocksText = JSON.stringify(message.blocks);
    expect(blocksText).to.contain('Price watch').and.contain('#price').and.contain('10 EUR').and.contain('12 EUR');

    const all = await api('GET', '/change_notifications?order=ASC');
    expect(all.status).to.equal(200);
    expect(all.body).to.have.all.keys('success', 'change_notifications', 'has_more');
    const records = all.body.change_notifications as Body[];
    expect(records).to.have.length(4);
    expect(records[0]).to.deep.equal(body);
    const perConfig = await api('GET', `/screenshot_configs/${configId}/change_notifications?limit=3`);
    expect(perConfig.body.change_notifications).to.have.length(3);
    expect(perConfig.body.has_more).to.equal(true);
    expect((await api('GET', '/screenshot_configs/nope/change_notifications')).status).to.equal(404);
    // The history: the same alerts, a text one with its word diff (the alert itself stays the spec's).
    const history = await api('GET', `/screenshot_configs/${configId}/changes?order=ASC`);
    expect(history.status).to.equal(200);
    const changes = history.body.changes as Body[];
    expect(changes).to.have.length(4);
    expect(changes[0]).to.deep.include({
      ...body,
      word_diff: [
        { op: 'delete', text: '10' },
        { op: 'insert', text: '12' },
        { op: 'equal', text: 'EUR' },
      ],
    });

    expect((await api('DELETE', `/screenshot_configs/${configId}`)).status).to.equal(200);
    expect((await api('GET', '/change_notifications')).body.change_notifications).to.have.length(0);
  });
});
