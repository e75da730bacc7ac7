/**
 * A capture through a real location, end to end on the Grid: the catalogue names a local
 * upstream proxy (proxy-chain, with authentication); the capture's traffic goes through it
 * with the catalogue's credentials and a fresh session id, the bytes the upstream counted
 * are the account's bandwidth and the record's, and a month with no bandwidth left is 402
 * before the capture.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Server as ProxyServer } from 'proxy-chain';
import { tempDir } from '../support/backends';
import { screenshotsUsed, startCaptureSystem } from '../support/capture-helpers';
import { expectEnvelope } from '../support/errors';
import { qs, request } from '../support/http';
import { scrape } from '../support/prometheus';
import { S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, startS3Server } from '../support/s3-server';

describe('capture through a real location (egress gateway chaining to a local upstream)', function () {
  this.timeout(120_000);
  const dir = tempDir('real-location-');
  let upstream: ProxyServer;
  /** Proxy user names the upstream saw. */
  const users: string[] = [];
  let upstreamBytes = 0;
  let target: http.Server;
  let targetPort = 0;
  const targetSeen: string[] = [];
  let sys: Awaited<ReturnType<typeof startCaptureSystem>>;
  let accountId = '';
  let key = '';

  before(async () => {
    upstream = new ProxyServer({
      port: 0,
      host: '127.0.0.1',
      prepareRequestFunction: ({ username, password }) => {
        users.push(username);
        return { requestAuthentication: password !== 'provider-secret' };
      },
    });
    upstream.on('connectionClosed', ({ stats }: { stats?: { srcTxBytes: number; srcRxBytes: number } }) => {
      upstreamBytes += (stats?.srcTxBytes ?? 0) + (stats?.srcRxBytes ?? 0);
    });
    await upstream.listen();
    target = http.createServer((req, res) => {
      targetSeen.push(req.url ?? '');
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><title>located</title><p>${'padding '.repeat(2000)}</p>`);
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    targetPort = (target.address() as AddressInfo).port;
    const file = path.join(dir, 'locations.json');
    fs.writeFileSync(
      file,
      JSON.stringify({
        Berlin: { proxy: `http://cust-de-city-berlin-session-{session}:provider-secret@127.0.0.1:${upstream.port}` },
        Munich: { proxy: `http://cust-de-city-munich-session-{session}:provider-secret@127.0.0.1:${upstream.port}` },
        Germany: { pick: ['Berlin', 'Munich'] },
      }),
    );
    sys = await startCaptureSystem({ EGRESS_GATEWAY: 'on', ALLOW_PRIVATE_NETWORKS: 'true', REAL_LOCATIONS_FILE: file, CAPTURE_SESSIONS: '2' });
    const account = await sys.sys.account('big');
    accountId = account.account_id;
    key = account.access_token;
  });
  after(async () => {
    await sys?.cleanup();
    await upstream.close(true);
    await new Promise<void>((r) => {
      target.closeAllConnections();
      target.close(() => r());
    });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const snap = (params: Record<string, string | number | boolean>) =>
    request<Record<string, unknown>>(
      sys.sys.base,
      'GET',
      `/snap?${qs({ access_token: key, ttl: 0, wait: 0, html_only: true, url: `http://127.0.0.1:${targetPort}/page`, ...params })}`,
    );
  const bandwidthUsed = async () =>
    (await request<{ results: { real_location_bandwidth_current_month_usage_in_bytes: number } }>(sys.sys.base, 'GET', `/account_limits?access_token=${key}`))
      .body.results.real_location_bandwidth_current_month_usage_in_bytes;

  it('goes out through the location with its credentials and a fresh session; bandwidth is what the upstream counted; the record says so', async () => {
    const before = upstreamBytes;
    const r = await snap({ real_location: 'berlin' });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(targetSeen).to.include('/page');
    const sessions = users.filter((u) => u.startsWith('cust-de-city-berlin-session-'));
    expect(sessions).to.have.length.greaterThan(0);
    expect(sessions[0]).to.not.include('{session}');
    // The gateway closes the capture's connections when it ends; the upstream counts them on close.
    let used = 0;
    for (let i = 0; i < 50; i++) {
      used = await bandwidthUsed();
      if (used > 0 && upstreamBytes - before >= used) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(used).to.be.greaterThan(16_000);
    expect(used).to.equal(upstreamBytes - before);
    const list = await request<{ screenshots: Array<Record<string, unknown>> }>(sys.sys.base, 'GET', `/screenshots?access_token=${key}`);
    expect(list.body.screenshots[0]).to.include({ is_proxy_screenshot: true, proxy_server: 'Berlin' });
    expect(JSON.stringify(list.body)).to.not.include('provider-secret');
  });

  it("counts the location's bytes in /metrics under route=real_location: the bytes billed", async () => {
    const bytes = async () => (await scrape(sys.sys.base)).value('snap_egress_gateway_bytes_total', { route: 'real_location' }) ?? 0;
    const [metricBefore, billedBefore] = [await bytes(), await bandwidthUsed()];
    expect((await snap({ real_location: 'Munich' })).status).to.equal(200);
    const billed = (await bandwidthUsed()) - billedBefore;
    expect(billed).to.be.greaterThan(16_000);
    expect((await bytes()) - metricBefore).to.equal(billed);
  });

  it('a country picks one of its cities', async () => {
    users.length = 0;
    expect((await snap({ real_location: 'Germany' })).status).to.equal(200);
    expect(users.some((u) => /^cust-de-city-(berlin|munich)-session-/.test(u))).to.equal(true);
  });

  it('concurrent captures: usage and bandwidth exact (each slot has its own gateway)', async () => {
    const shots = await screenshotsUsed(sys.sys, key);
    const used = await bandwidthUsed();
    const before = upstreamBytes;
    const answers = await Promise.all([snap({ real_location: 'Berlin' }), snap({ real_location: 'Munich' }), snap({ real_location: 'Berlin' })]);
    expect(answers.map((a) => a.status)).to.deep.equal([200, 200, 200]);
    let now = 0;
    for (let i = 0; i < 50; i++) {
      now = await bandwidthUsed();
      if (upstreamBytes - before >= now - used) break;
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(now - used).to.be.greaterThan(3 * 16_000);
    expect(now - used).to.equal(upstreamBytes - before);
    expect(await screenshotsUsed(sys.sys, key)).to.equal(shots + 3);
  });

  it('a capture that fails after its bytes went through the location (its store_to upload) is not charged them', async () => {
    const s3 = await startS3Server(['archive']);
    try {
      const auth = { authorization: `Bearer ${key}` };
      const destination = await request(sys.sys.base, 'POST', '/storage_destinations', {
        headers: auth,
        json: {
          name: 'archive',
          type: 's3',
          endpoint: s3.endpoint,
          region: 'us-east-1',
          bucket: 'archive',
          access_key_id: S3_ACCESS_KEY_ID,
          secret_access_key: S3_SECRET_ACCESS_KEY,
        },
      });
      expect(destination.status, destination.raw.toString()).to.equal(200);
    } finally {
      // The bucket is gone once the destination is stored: the upload after the capture fails.
      await s3.stop();
    }
    const before = await bandwidthUsed();
    const relayed = upstreamBytes;
    const seen = targetSeen.length;
    expectEnvelope(await snap({ real_location: 'Berlin', store_to: 'archive' }), 502, 'storage_upload_failed', 'not charged');
    expect(targetSeen.length, 'the page was fetched through the location').to.equal(seen + 1);
    await new Promise((res) => setTimeout(res, 500));
    expect(upstreamBytes - relayed, 'bytes relayed by the upstream').to.be.greaterThan(16_000);
    expect(await bandwidthUsed()).to.equal(before);
  });

  it('a month with no bandwidth left is 402 real_location_bandwidth_exhausted before the capture, spending nothing', async () => {
    const { limits, usage } = await sys.sys.broker.call<{ limits: { bandwidth_bytes: number }; usage: { bandwidth_bytes: number } }, unknown>('billing.usage', {
      account: await sys.sys.broker.call('billing.authenticate', { token: key }),
    });
    await sys.sys.broker.call('billing.charge', { accountId, amounts: { bandwidth_bytes: limits.bandwidth_bytes - usage.bandwidth_bytes } });
    const shots = await screenshotsUsed(sys.sys, key);
    const seen = targetSeen.length;
    expectEnvelope(await snap({ real_location: 'Berlin' }), 402, 'real_location_bandwidth_exhausted');
    expect(targetSeen.length).to.equal(seen);
    expect(await screenshotsUsed(sys.sys, key)).to.equal(shots);
    // Without a location the capture still goes out directly.
    expect((await snap({})).status).to.equal(200);
  });
});
