/**
 * Captures through an own proxy (custom_proxy_id), on the Grid: the stored proxy (a local
 * proxy-chain server with authentication) relays the capture with the stored credentials,
 * it wins over real_location, no bandwidth is charged, the record names it; after DELETE,
 * a snap and a configuration's next capture fail with 412 custom_proxy_not_found.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Server as ProxyServer } from 'proxy-chain';
import { startCaptureSystem } from '../support/capture-helpers';
import { expectEnvelope } from '../support/errors';
import { qs, request } from '../support/http';

describe('capture through an own proxy (custom_proxy_id)', function () {
  this.timeout(120_000);
  let upstream: ProxyServer;
  const relayed: string[] = [];
  let target: http.Server;
  let targetPort = 0;
  let sys: Awaited<ReturnType<typeof startCaptureSystem>>;
  let key = '';
  let proxyId = 0;

  before(async () => {
    upstream = new ProxyServer({
      port: 0,
      host: '127.0.0.1',
      prepareRequestFunction: ({ username, password, hostname, port }) => {
        const ok = username === 'carol' && password === 'own-secret';
        if (ok) relayed.push(`${hostname}:${port}`);
        return { requestAuthentication: !ok };
      },
    });
    await upstream.listen();
    target = http.createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end('<!doctype html><title>own</title><p>through my proxy</p>');
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    targetPort = (target.address() as AddressInfo).port;
    sys = await startCaptureSystem({ EGRESS_GATEWAY: 'on', ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1' });
    key = (await sys.sys.account('big', { byo_proxy: 1 })).access_token;
    const put = await request<{ proxy: { id: number } }>(sys.sys.base, 'PUT', '/proxies', {
      headers: { authorization: `Bearer ${key}` },
      json: { host: '127.0.0.1', port: upstream.port, username: 'carol', password: 'own-secret', test: false },
    });
    proxyId = put.body.proxy.id;
  });
  after(async () => {
    await sys?.cleanup();
    await upstream.close(true);
    await new Promise<void>((r) => {
      target.closeAllConnections();
      target.close(() => r());
    });
  });

  const snap = (params: Record<string, string | number | boolean>) =>
    request<Record<string, unknown>>(
      sys.sys.base,
      'GET',
      `/snap?${qs({ access_token: key, ttl: 0, wait: 0, html_only: true, url: `http://127.0.0.1:${targetPort}/`, ...params })}`,
    );

  it('goes out through the stored proxy with its credentials (winning over real_location); no bandwidth; the record names it', async () => {
    const r = await snap({ custom_proxy_id: proxyId, real_location: 'Nowhere' });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(relayed).to.include(`127.0.0.1:${targetPort}`);
    const limits = await request<{ results: Record<string, number> }>(sys.sys.base, 'GET', `/account_limits?access_token=${key}`);
    expect(limits.body.results.real_location_bandwidth_current_month_usage_in_bytes).to.equal(0);
    const list = await request<{ screenshots: Array<Record<string, unknown>> }>(sys.sys.base, 'GET', `/screenshots?access_token=${key}`);
    expect(list.body.screenshots[0]).to.include({ is_proxy_screenshot: false, proxy_server: null, custom_proxy: `127.0.0.1:${upstream.port}` });
    expect(JSON.stringify(list.body)).to.not.include('own-secret');
    // The snap's own JSON record names it too (spec: custom_proxy added, not a proxy screenshot).
    const record = await snap({ custom_proxy_id: proxyId, html_only: false, json: true });
    expect(record.body).to.include({ is_proxy_screenshot: false, proxy_server: null, custom_proxy: `127.0.0.1:${upstream.port}` });
  });

  it('reuses a capture within ttl only while the own proxy still points where it did: one changed in place to another proxy captures anew through it', async () => {
    let second = 0;
    const other = new ProxyServer({
      port: 0,
      host: '127.0.0.1',
      prepareRequestFunction: () => {
        second++;
        return {};
      },
    });
    await other.listen();
    try {
      const put = (body: Record<string, unknown>) =>
        request<{ proxy: { id: number } }>(sys.sys.base, 'PUT', '/proxies', {
          headers: { authorization: `Bearer ${key}` },
          json: { host: '127.0.0.1', username: 'carol', password: 'own-secret', test: false, ...body },
        });
      const id = (await put({ port: upstream.port })).body.proxy.id;
      const params = { custom_proxy_id: id, ttl: 600, html_only: false, json: true };
      const first = await snap(params);
      expect(first.status, JSON.stringify(first.body)).to.equal(200);
      const again = await snap(params);
      expect(again.headers.get('x-cache')).to.equal('HIT');
      expect(again.body.id).to.equal(first.body.id);
      expect((await put({ id, port: other.port })).status).to.equal(200);
      const moved = await snap(params);
      expect(moved.status, JSON.stringify(moved.body)).to.equal(200);
      expect(moved.headers.get('x-cache'), 'the proxy now points elsewhere: captured anew').to.equal('MISS');
      expect(moved.body.id).to.not.equal(first.body.id);
      expect(moved.body.custom_proxy).to.equal(`127.0.0.1:${other.port}`);
      expect(second, 'through the proxy it now points to').to.be.greaterThan(0);
      // And reused again, now under what it points to.
      expect((await snap(params)).body.id).to.equal(moved.body.id);
    } finally {
      await other.close(true);
    }
  });

  it("fails a plain-HTTP page 422 page_load_failed, nothing charged, when the own proxy cannot relay it (down, or its password refused); never the proxy's error text as the picture", async () => {
    const store = async (body: Record<string, unknown>) =>
      (
        await request<{ proxy: { id: number } }>(sys.sys.base, 'PUT', '/proxies', {
          headers: { authorization: `Bearer ${key}` },
          json: { host: '127.0.0.1', test: false, ...body },
        })
      ).body.proxy.id;
    const used = async () =>
      (await request<{ results: Record<string, number> }>(sys.sys.base, 'GET', `/account_limits?access_token=${key}`)).body.results
        .screenshot_current_month_usage;
    // A port nothing listens on.
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const before = await used();
    for (const body of [{ port: closedPort }, { port: upstream.port, username: 'carol', password: 'wrong-secret' }]) {
      const r = await snap({ custom_proxy_id: await store(body), html_only: false });
      expectEnvelope(r, 422, 'page_load_failed', 'the proxy the capture goes out through');
    }
    expect(await used(), 'nothing charged').to.equal(before);
  });

  it('after DELETE, a snap and the next capture of a configuration fail with 412 custom_proxy_not_found, no fallback', async () => {
    const created = await request<{ screenshot_configuration_id: string; job_id: string }>(sys.sys.base, 'POST', '/screenshot_configs', {
      headers: { authorization: `Bearer ${key}` },
      json: { url: `http://127.0.0.1:${targetPort}/`, custom_proxy_id: proxyId, wait: 0 },
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const del = await request(sys.sys.base, 'DELETE', `/proxies/${proxyId}`, { headers: { authorization: `Bearer ${key}` } });
    expect(del.status).to.equal(200);
    const before = relayed.length;
    expectEnvelope(await snap({ custom_proxy_id: proxyId }), 412, 'custom_proxy_not_found');
    const now = await request(sys.sys.base, 'POST', `/screenshot_configs/${created.body.screenshot_configuration_id}/capture`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expectEnvelope(now, 412, 'custom_proxy_not_found');
    expect(relayed.length).to.equal(before);
  });
});
