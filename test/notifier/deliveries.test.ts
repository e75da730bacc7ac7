/**
 * The notifier's outbox, sender and log against real receivers on 127.0.0.1, with a
 * controllable clock: deliveries are appended through the same outbox writer capture uses
 * in its transaction (the capture path itself is proved in capture-deliveries.test.ts).
 * Signatures are verified with the npm package `standardwebhooks`, never our own code.
 */
import { expect } from 'chai';
import knex, { type Knex } from 'knex';
import { Webhook } from 'standardwebhooks';
import { knexConfig } from '../../services/shared/database';
import { appendDelivery } from '../../services/notifier/public/outbox';
import { backendConfig } from '../support/backends';
import { type DnsServer, startDnsServer } from '../support/dns-server';
import { request } from '../support/http';
import { scrape } from '../support/prometheus';
import { type RunningSystem, runSystem } from '../support/system';
import { type Receiver, startReceiver } from './receivers';

type Body = Record<string, unknown>;
type Delivery = {
  id: string;
  status: string;
  attempts: Array<{ status_code: number | null; error: string | null; duration_ms: number }>;
  next_attempt_at: string | null;
};

interface Harness {
  sys: RunningSystem;
  db: Knex;
  token: string;
  accountId: string;
  clock: { now: number };
  stop(): Promise<void>;
}

async function harness(env: Record<string, string>): Promise<Harness> {
  const clock = { now: Date.UTC(2026, 10, 22, 12) };
  const b = await backendConfig('sqlite', { SERVICES: 'api,billing,scheduler,notifier', WEBHOOK_TIMEOUT_MS: '700', ...env });
  const sys = await runSystem(b.config, { notifier: { now: () => clock.now, autoPoll: false } });
  const db = knex(knexConfig(b.config.database));
  const account = await sys.account('paid');
  return {
    sys,
    db,
    token: account.access_token,
    accountId: account.account_id,
    clock,
    async stop() {
      await db.destroy();
      await sys.stop();
      await b.cleanup();
    },
  };
}

describe('notifier: signed deliveries, retries and the delivery log', function () {
  this.timeout(30_000);
  let h: Harness;
  const receivers: Receiver[] = [];
  const api = (method: string, p: string, json?: Body) =>
    request<Body>(h.sys.base, method, p, { headers: { authorization: `Bearer ${h.token}` }, ...(json ? { json } : {}) });
  const receiver = async (script?: Parameters<typeof startReceiver>[0]) => {
    const r = await startReceiver(script);
    receivers.push(r);
    return r;
  };
  const deliver = (url: string, payload: Body = { hello: 'world' }, sendTo: 'webhook' | 'slack' = 'webhook') =>
    appendDelivery(h.db, {
      accountId: h.accountId,
      configId: 'cfg_test',
      kind: 'capture',
      sendTo,
      url,
      body: JSON.stringify(payload),
      jobId: null,
      now: h.clock.now,
    });
  const pump = () => h.sys.notifier!.pump();
  const advance = async (ms: number) => {
    h.clock.now += ms;
    await pump();
  };
  async function delivery(id: string): Promise<Delivery> {
    const r = await api('GET', '/webhook_deliveries?limit=1000');
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    const found = (r.body.webhook_deliveries as Delivery[]).find((d) => d.id === id);
    if (!found) throw new Error(`delivery ${id} is not in the log`);
    return found;
  }
  const secret = async () => (await api('GET', '/webhook_secret')).body.secret as string;

  before(async () => {
    h = await harness({ ALLOW_PRIVATE_NETWORKS: 'true' });
  });
  after(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await h?.stop();
  });

  it('shows one whsec_ secret per account, the same on every call', async () => {
    const r = await api('GET', '/webhook_secret');
    expect(r.status).to.equal(200);
    expect(r.body).to.have.all.keys('success', 'secret');
    expect(r.body.secret).to.match(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(await secret()).to.equal(r.body.secret);
  });

  it('signs what it sends so standardwebhooks verifies it: webhook-id, webhook-timestamp, webhook-signature over the exact bytes', async () => {
    const r = await receiver();
    const id = await deliver(`${r.origin}/hook`, { a: 1, text: 'naïve ✓' });
    await pump();
    expect(r.received).to.have.length(1);
    const got = r.received[0]!;
    expect(got.headers['content-type']).to.equal('application/json');
    expect(got.headers['webhook-id']).to.equal(id);
    expect(got.headers['webhook-timestamp']).to.equal(String(Math.floor(h.clock.now / 1000)));
    const wh = new Webhook(await secret());
    // The receiver's clock is the notifier's (the test's); standardwebhooks checks the timestamp against Date.now.
    const realNow = Date.now;
    Date.now = () => h.clock.now;
    try {
      expect(wh.verify(got.body, got.headers as Record<string, string>)).to.deep.equal({ a: 1, text: 'naïve ✓' });
      expect(() => wh.verify(got.body.replace('1', '2'), got.headers as Record<string, string>)).to.throw();
    } finally {
      Date.now = realNow;
    }
    const d = await delivery(id);
    expect(d.status).to.equal('delivered');
    expect(d.attempts).to.have.length(1);
    expect(d.attempts[0]!.status_code).to.equal(200);
  });

  it('retries a receiver that fails twice, then succeeds: three attempts, one webhook-id, on the schedule', async () => {
    const r = await receiver((n) => (n < 2 ? { status: 500 } : { status: 204 }));
    const id = await deliver(`${r.origin}/flaky`);
    await pump();
    expect(r.received).to.have.length(1);
    let d = await delivery(id);
    expect(d.status).to.equal('pending');
    // The second attempt is due about 5 s later (20% jitter): not at 3.9 s, surely by 6.1 s.
    await advance(3_900);
    expect(r.received).to.have.length(1);
    await advance(2_200);
    expect(r.received).to.have.length(2);
    // The third about 5 minutes after the second.
    await advance(3 * 60_000);
    expect(r.received).to.have.length(2);
    await advance(3 * 60_000);
    expect(r.received).to.have.length(3);
    expect(new Set(r.received.map((x) => x.headers['webhook-id']))).to.deep.equal(new Set([id]));
    d = await delivery(id);
    expect(d.status).to.equal('delivered');
    expect(d.attempts.map((a) => a.status_code)).to.deep.equal([500, 500, 204]);
    expect(d.attempts[0]!.error).to.equal('answered HTTP 500');
    await advance(24 * 3_600_000);
    expect(r.received).to.have.length(3);
  });

  it('times out a receiver that hangs (WEBHOOK_TIMEOUT_MS) and tries it again', async () => {
    const r = await receiver((n) => (n === 0 ? 'hang' : { status: 200 }));
    const id = await deliver(`${r.origin}/slow`);
    const t0 = Date.now();
    await pump();
    expect(Date.now() - t0).to.be.below(5_000);
    let d = await delivery(id);
    expect(d.status).to.equal('pending');
    expect(d.attempts[0]!.status_code).to.equal(null);
    expect(d.attempts[0]!.error).to.equal('no answer within 700 ms');
    await advance(7_000);
    d = await delivery(id);
    expect(d.status).to.equal('delivered');
    expect(r.received).to.have.length(2);
  });

  it('stops at 410 Gone: the delivery fails and is never tried again', async () => {
    const r = await receiver(() => ({ status: 410 }));
    const id = await deliver(`${r.origin}/gone`);
    await pump();
    await advance(48 * 3_600_000);
    expect(r.received).to.have.length(1);
    const d = await delivery(id);
    expect(d.status).to.equal('failed');
    expect(d.next_attempt_at).to.equal(null);
  });

  it('treats a 3xx as a failure (no redirect followed) and marks the delivery failed after the eighth attempt', async () => {
    const r = await receiver(() => ({ status: 302, headers: { location: '/elsewhere' } }));
    const id = await deliver(`${r.origin}/moved`);
    await pump();
    for (let i = 0; i < 10; i++) await advance(12 * 3_600_000);
    expect(r.received.map((x) => x.headers['webhook-id'])).to.have.length(8);
    expect(r.received.every((x) => x.body === '{"hello":"world"}')).to.equal(true);
    const d = await delivery(id);
    expect(d.status).to.equal('failed');
    expect(d.attempts).to.have.length(8);
  });

  it('Slack: delivered only on 200 "ok"; a 429 waits for its Retry-After', async () => {
    const r = await receiver((n) =>
      n === 0
        ? { status: 429, headers: { 'retry-after': '120' }, body: 'rate_limited' }
        : n === 1
          ? { status: 200, body: 'invalid_payload' }
          : { status: 200, body: 'ok' },
    );
    const id = await deliver(`${r.origin}/services/T0/B0/x`, { text: 'hi' }, 'slack');
    await pump();
    // Not at the schedule's 5 s: Slack said 120 s.
    await advance(30_000);
    expect(r.received).to.have.length(1);
    await advance(91_000);
    expect(r.received).to.have.length(2);
    let d = await delivery(id);
    expect(d.status, 'a 200 without "ok" is not delivered').to.equal('pending');
    expect(d.attempts[1]!.error).to.equal('Slack answered "invalid_payload"');
    await advance(6 * 60_000);
    d = await delivery(id);
    expect(d.status).to.equal('delivered');
    expect(d.attempts.map((a) => a.status_code)).to.deep.equal([429, 200, 200]);
  });

  it('retries by hand: POST /webhook_deliveries/:id/retry makes one more attempt at once; another account gets 404', async () => {
    const r = await receiver((n) => (n === 0 ? { status: 410 } : { status: 200 }));
    const id = await deliver(`${r.origin}/again`);
    await pump();
    expect((await delivery(id)).status).to.equal('failed');
    const retried = await api('POST', `/webhook_deliveries/${id}/retry`);
    expect(retried.status, JSON.stringify(retried.body)).to.equal(200);
    await pump();
    expect(r.received).to.have.length(2);
    expect((await delivery(id)).status).to.equal('delivered');
    const other = await h.sys.account('free');
    const foreign = await request<Body>(h.sys.base, 'POST', `/webhook_deliveries/${id}/retry`, { headers: { authorization: `Bearer ${other.access_token}` } });
    expect(foreign.status).to.equal(404);
    expect(foreign.body.error_code).to.equal('not_found');
  });

  it('a failed delivery retried by hand gets that one attempt: failing again, it stays failed and the schedule does not start again', async () => {
    const r = await receiver((n) => (n === 0 ? { status: 410 } : { status: 500 }));
    const id = await deliver(`${r.origin}/once-more`);
    await pump();
    expect((await api('POST', `/webhook_deliveries/${id}/retry`)).status).to.equal(200);
    await pump();
    expect(r.received).to.have.length(2);
    const d = await delivery(id);
    expect(d.status).to.equal('failed');
    expect(d.next_attempt_at).to.equal(null);
    await advance(48 * 3_600_000);
    expect(r.received).to.have.length(2);
  });

  it('a retry asked while an attempt is under way makes the next attempt due as soon as that one is recorded', async () => {
    const r = await receiver((n) => (n === 0 ? 'hang' : { status: 200 }));
    const id = await deliver(`${r.origin}/busy`);
    const attempt = pump();
    for (let i = 0; i < 100 && r.received.length === 0; i++) await new Promise((res) => setTimeout(res, 10));
    const asked = await api('POST', `/webhook_deliveries/${id}/retry`);
    expect(asked.status).to.equal(200);
    await attempt;
    // Without the retry the next attempt would be due about 5 s on; the clock has not moved.
    await pump();
    expect(r.received).to.have.length(2);
    const d = await delivery(id);
    expect(d.status).to.equal('delivered');
    expect(d.attempts.map((a) => a.status_code)).to.deep.equal([null, 200]);
  });

  it('lists deliveries paged with has_more, filtered by status; a bad filter is 400', async () => {
    const page = await api('GET', '/webhook_deliveries?limit=2&order=ASC');
    expect(page.body.has_more).to.equal(true);
    expect(page.body.webhook_deliveries).to.have.length(2);
    const failed = await api('GET', '/webhook_deliveries?status=failed');
    expect((failed.body.webhook_deliveries as Delivery[]).every((d) => d.status === 'failed')).to.equal(true);
    expect(failed.body.webhook_deliveries).to.have.length.greaterThan(0);
    const bad = await api('GET', '/webhook_deliveries?status=lost');
    expect(bad.status).to.equal(400);
    expect(bad.body.error_code).to.equal('invalid_parameter');
    const unknownConfig = await api('GET', '/webhook_deliveries?screenshot_configuration_id=nope');
    expect(unknownConfig.status).to.equal(404);
    // An unknown parameter's note names the filters too, and a page past any row is 400, not a 500.
    const unknown = await api('GET', '/webhook_deliveries?foo=1');
    expect([unknown.status, unknown.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
    expect(String(unknown.body.note)).to.contain('screenshot_configuration_id, status');
    const far = await api('GET', '/webhook_deliveries?limit=5&page=99999999999999999999');
    expect([far.status, far.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
  });

  it('a second rotation within the day keeps the first old secret signing until its own time (a row of one old secret still reads)', async () => {
    const s0 = await secret();
    const s1 = (await api('POST', '/webhook_secret/rotate')).body.secret as string;
    // The row as it was written before secrets were kept as a list: one sealed secret and its end.
    const row = await h.db('webhook_secrets').where({ account_id: h.accountId }).first();
    const [kept] = JSON.parse(row.previous_sealed) as Array<{ sealed: string; until: number }>;
    await h.db('webhook_secrets').where({ account_id: h.accountId }).update({ previous_sealed: kept!.sealed, previous_until_ms: kept!.until });
    h.clock.now += 3_600_000;
    const s2 = (await api('POST', '/webhook_secret/rotate')).body.secret as string;
    const r = await receiver();
    const realNow = Date.now;
    Date.now = () => h.clock.now;
    try {
      await deliver(`${r.origin}/twice-rotated`);
      await pump();
      const both = r.received[0]!;
      expect(String(both.headers['webhook-signature']).split(' ')).to.have.length(3);
      for (const s of [s0, s1, s2]) expect(new Webhook(s).verify(both.body, both.headers as Record<string, string>)).to.deep.equal({ hello: 'world' });
      // A day after the first rotation: s0 is done, s1 signs until a day after the second.
      h.clock.now += 23 * 3_600_000 + 1000;
      await deliver(`${r.origin}/a-day-on`);
      await pump();
      const later = r.received[1]!;
      expect(() => new Webhook(s0).verify(later.body, later.headers as Record<string, string>)).to.throw();
      for (const s of [s1, s2]) expect(new Webhook(s).verify(later.body, later.headers as Record<string, string>)).to.deep.equal({ hello: 'world' });
    } finally {
      Date.now = realNow;
      // Every old secret past its time, for the tests after this one.
      h.clock.now += 25 * 3_600_000;
    }
  });

  it('signs with both secrets for 24 hours after a rotation, then with the new one only', async () => {
    const old = await secret();
    const rotated = await api('POST', '/webhook_secret/rotate');
    expect(rotated.status).to.equal(200);
    const fresh = rotated.body.secret as string;
    expect(fresh)
      .to.match(/^whsec_/)
      .and.not.equal(old);
    expect(await secret()).to.equal(fresh);
    const r = await receiver();
    await deliver(`${r.origin}/rotating`);
    await pump();
    const during = r.received[0]!;
    expect(String(during.headers['webhook-signature']).split(' ')).to.have.length(2);
    const realNow = Date.now;
    Date.now = () => h.clock.now;
    try {
      // A receiver still holding the old secret and one already on the new both verify.
      expect(new Webhook(old).verify(during.body, during.headers as Record<string, string>)).to.deep.equal({ hello: 'world' });
      expect(new Webhook(fresh).verify(during.body, during.headers as Record<string, string>)).to.deep.equal({ hello: 'world' });
      h.clock.now += 24 * 3_600_000 + 1000;
      await deliver(`${r.origin}/rotated`);
      await pump();
      const after = r.received[1]!;
      expect(String(after.headers['webhook-signature']).split(' ')).to.have.length(1);
      expect(() => new Webhook(old).verify(after.body, after.headers as Record<string, string>)).to.throw();
      expect(new Webhook(fresh).verify(after.body, after.headers as Record<string, string>)).to.deep.equal({ hello: 'world' });
    } finally {
      Date.now = realNow;
    }
  });
});

describe('notifier: the egress policy on webhook targets', function () {
  this.timeout(30_000);
  let h: Harness;
  let dnsServer: DnsServer;
  let r: Receiver;
  const api = (method: string, p: string, json?: Body) =>
    request<Body>(h.sys.base, method, p, { headers: { authorization: `Bearer ${h.token}` }, ...(json ? { json } : {}) });

  before(async () => {
    // hooks.test resolves to loopback, through a DNS server speaking the real protocol.
    dnsServer = await startDnsServer((name, type) => (name === 'hooks.test' && type === 'A' ? ['127.0.0.1'] : null));
    h = await harness({ EGRESS_DNS_SERVERS: dnsServer.address });
    r = await startReceiver();
  });
  after(async () => {
    await r?.stop();
    await h?.stop();
    await dnsServer?.stop();
  });

  it('refuses a webhook aimed at 127.0.0.1 through a name: a failed attempt naming the address, nothing sent', async () => {
    const id = await appendDelivery(h.db, {
      accountId: h.accountId,
      configId: 'cfg_test',
      kind: 'capture',
      sendTo: 'webhook',
      url: `http://hooks.test:${r.port}/hook`,
      body: '{}',
      jobId: null,
      now: h.clock.now,
    });
    await h.sys.notifier!.pump();
    expect(dnsServer.questions).to.include('A hooks.test');
    expect(r.received).to.have.length(0);
    const log = await api('GET', '/webhook_deliveries');
    const d = (log.body.webhook_deliveries as Delivery[]).find((x) => x.id === id)!;
    expect(d.status).to.equal('pending');
    expect(d.attempts[0]!.error).to.match(/refused by the egress policy: hooks\.test resolves to 127\.0\.0\.1/);
  });

  it('refuses webhook_url and a change step url naming a private address at create and update: 400 url_not_allowed', async () => {
    const created = await api('POST', '/screenshot_configs', { url: 'http://127.0.0.1:9/page', webhook_url: 'http://127.0.0.1:9/hook' });
    expect(created.status).to.equal(400);
    expect(created.body.error_code).to.equal('url_not_allowed');
    expect(created.body.note).to.match(/webhook_url/);
    const change = await api('POST', '/screenshot_configs', {
      url: 'http://127.0.0.1:9/page',
      multi_step_actions: [{ type: 'change', selector: 'h1', send_to: 'webhook', url: 'http://[::1]:9/alert' }],
    });
    expect(change.status).to.equal(400);
    expect(change.body.error_code).to.equal('url_not_allowed');
    expect(change.body.note).to.match(/multi_step_actions\[0\]\.url/);
    const update = await api('PATCH', '/screenshot_configs/whatever', { url: 'http://127.0.0.1:9/page', webhook_url: 'http://169.254.169.254/latest' });
    expect(update.status).to.equal(400);
    expect(update.body.error_code).to.equal('url_not_allowed');
  });
});

describe('notifier: an address the operator allowed (EGRESS_ALLOW_ADDRESSES)', function () {
  this.timeout(30_000);

  it('stores a webhook_url naming it literally, and still refuses the addresses it does not cover', async () => {
    const h = await harness({ EGRESS_ALLOW_ADDRESSES: '127.0.0.0/24' });
    try {
      const api = (method: string, p: string, json: Body) => request<Body>(h.sys.base, method, p, { headers: { authorization: `Bearer ${h.token}` }, json });
      // Past the literal check, the unknown configuration is what answers.
      const allowed = await api('PATCH', '/screenshot_configs/cfg_none', { url: 'http://127.0.0.1:9/page', webhook_url: 'http://127.0.0.1:9/hook' });
      expect([allowed.status, allowed.body.error_code], JSON.stringify(allowed.body)).to.deep.equal([404, 'not_found']);
      const step = await api('PATCH', '/screenshot_configs/cfg_none', {
        url: 'http://127.0.0.1:9/page',
        multi_step_actions: [{ type: 'change', selector: 'h1', send_to: 'webhook', url: 'http://127.0.0.1:9/alert' }],
      });
      expect(step.status, JSON.stringify(step.body)).to.equal(404);
      const other = await api('PATCH', '/screenshot_configs/cfg_none', { url: 'http://127.0.0.1:9/page', webhook_url: 'http://127.0.1.1:9/hook' });
      expect([other.status, other.body.error_code]).to.deep.equal([400, 'url_not_allowed']);
      expect(other.body.note).to.match(/EGRESS_ALLOW_ADDRESSES/);
      const metadata = await api('PATCH', '/screenshot_configs/cfg_none', { url: 'http://127.0.0.1:9/page', webhook_url: 'http://169.254.169.254/latest' });
      expect([metadata.status, metadata.body.error_code]).to.deep.equal([400, 'url_not_allowed']);
    } finally {
      await h.stop();
    }
  });
});

describe('notifier: the full stack without SECRETS_KEY', function () {
  this.timeout(30_000);

  it('sends nothing unsigned: the attempt fails, in the log, naming SECRETS_KEY', async () => {
    const b = await backendConfig('mysql', { SERVICES: 'api,billing,notifier', ALLOW_PRIVATE_NETWORKS: 'true' });
    const sys = await runSystem(b.config, { notifier: { autoPoll: false } });
    const db = knex(knexConfig(b.config.database));
    const r = await startReceiver();
    try {
      const account = await sys.account('paid');
      const id = await appendDelivery(db, {
        accountId: account.account_id,
        configId: 'cfg',
        kind: 'capture',
        sendTo: 'webhook',
        url: `${r.origin}/x`,
        body: '{}',
        jobId: null,
        now: Date.now(),
      });
      await sys.notifier!.pump();
      expect(r.received).to.have.length(0);
      const log = await request<Body>(sys.base, 'GET', '/webhook_deliveries', { headers: { authorization: `Bearer ${account.access_token}` } });
      const d = (log.body.webhook_deliveries as Delivery[]).find((x) => x.id === id)!;
      expect(d.status).to.equal('pending');
      expect(d.attempts[0]!.error).to.match(/^not sent: .*SECRETS_KEY/);
      const secret = await request<Body>(sys.base, 'GET', '/webhook_secret', { headers: { authorization: `Bearer ${account.access_token}` } });
      expect([secret.status, secret.body.error_code]).to.deep.equal([503, 'secrets_not_configured']);
    } finally {
      await r.stop();
      await db.destroy();
      await sys.stop();
      await b.cleanup();
    }
  });
});

describe('notifier: the connection goes to the address the policy checked', function () {
  this.timeout(30_000);

  it('delivers to a name only the egress DNS servers know: the lookup is done once, by the policy, and pinned', async () => {
    // The system resolver cannot resolve pinned.test; only the policy's DNS server can.
    const dnsServer = await startDnsServer((name, type) => (name === 'pinned.test' && type === 'A' ? ['127.0.0.1'] : null));
    const h = await harness({ EGRESS_DNS_SERVERS: dnsServer.address, ALLOW_PRIVATE_NETWORKS: 'true' });
    const r = await startReceiver();
    try {
      await appendDelivery(h.db, {
        accountId: h.accountId,
        configId: 'cfg_test',
        kind: 'capture',
        sendTo: 'webhook',
        url: `http://pinned.test:${r.port}/hook`,
        body: '{"n":1}',
        jobId: null,
        now: h.clock.now,
      });
      await h.sys.notifier!.pump();
      expect(dnsServer.questions.filter((q) => q === 'A pinned.test')).to.have.length(1);
      expect(r.received).to.have.length(1);
      expect(r.received[0]!.headers.host).to.equal(`pinned.test:${r.port}`);
    } finally {
      await r.stop();
      await h.stop();
      await dnsServer.stop();
    }
  });
});

describe("notifier: one account's dead receivers hold at most WEBHOOK_ACCOUNT_CONCURRENCY senders", function () {
  this.timeout(30_000);
  let h: Harness;
  const receivers: Receiver[] = [];
  before(async () => {
    // Four senders, two at most per account (the default: half of WEBHOOK_CONCURRENCY).
    h = await harness({ ALLOW_PRIVATE_NETWORKS: 'true', WEBHOOK_CONCURRENCY: '4' });
  });
  after(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await h?.stop();
  });

  it("another account's delivery goes at once while the first's backlog hangs on a receiver that never answers", async () => {
    const dead = await startReceiver(() => 'hang');
    const alive = await startReceiver(() => ({ status: 200 }));
    receivers.push(dead, alive);
    const other = await h.sys.account('paid');
    const deliver = (accountId: string, url: string) =>
      appendDelivery(h.db, { accountId, configId: 'cfg_f', kind: 'capture', sendTo: 'webhook', url, body: '{}', jobId: null, now: h.clock.now });
    for (let i = 0; i < 6; i++) await deliver(h.accountId, `${dead.origin}/backlog-${i}`);
    h.clock.now += 1;
    await deliver(other.account_id, `${alive.origin}/mine`);
    const t0 = Date.now();
    const round = h.sys.notifier!.pump();
    for (let i = 0; i < 100 && alive.received.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(alive.received, "the other account's delivery").to.have.length(1);
    expect(Date.now() - t0, 'before the backlog timed out (700 ms)').to.be.below(600);
    expect(dead.received, 'senders the backlog holds').to.have.length(2);
    await round;
  });
});

describe('notifier metrics', function () {
  this.timeout(30_000);
  let h: Harness;
  const receivers: Receiver[] = [];
  before(async () => {
    h = await harness({ ALLOW_PRIVATE_NETWORKS: 'true' });
  });
  after(async () => {
    await Promise.all(receivers.map((r) => r.stop()));
    await h?.stop();
  });

  it('counts attempts by outcome and shows the pending deliveries in /metrics', async () => {
    const flaky = await startReceiver((n) => (n === 0 ? { status: 500 } : { status: 200 }));
    const gone = await startReceiver(() => ({ status: 410 }));
    receivers.push(flaky, gone);
    const deliver = (url: string) =>
      appendDelivery(h.db, { accountId: h.accountId, configId: 'cfg_m', kind: 'capture', sendTo: 'webhook', url, body: '{}', jobId: null, now: h.clock.now });
    const attempts = async (outcome: string) => (await scrape(h.sys.base)).value('snap_webhook_delivery_attempts_total', { send_to: 'webhook', outcome }) ?? 0;

    await deliver(`${flaky.origin}/flaky`);
    await deliver(`${gone.origin}/gone`);
    expect((await scrape(h.sys.base)).value('snap_webhook_deliveries_pending')).to.equal(2);
    await h.sys.notifier!.pump();
    let m = await scrape(h.sys.base);
    expect(m.types.get('snap_webhook_delivery_attempts_total')).to.equal('counter');
    expect(m.value('snap_webhook_delivery_attempts_total', { send_to: 'webhook', outcome: 'retrying' })).to.equal(1);
    expect(m.value('snap_webhook_delivery_attempts_total', { send_to: 'webhook', outcome: 'failed' })).to.equal(1);
    expect(await attempts('delivered')).to.equal(0);
    expect(m.value('snap_webhook_deliveries_pending')).to.equal(1);

    h.clock.now += 7_000;
    await h.sys.notifier!.pump();
    m = await scrape(h.sys.base);
    expect(m.value('snap_webhook_delivery_attempts_total', { send_to: 'webhook', outcome: 'delivered' })).to.equal(1);
    expect(m.value('snap_webhook_delivery_attempts_total', { send_to: 'webhook', outcome: 'retrying' })).to.equal(1);
    expect(m.value('snap_webhook_deliveries_pending')).to.equal(0);
    expect(m.value('snap_metrics_scrape_nodes', { service: 'notifier' })).to.equal(1);
  });
});
