/**
 * Own proxies over HTTP (PUT/GET/POST test/DELETE /proxies), each test against real local
 * proxy servers: proxy-chain with and without authentication, one that accepts connections
 * and never answers, a closed port, a name that does not resolve (the test's DNS server),
 * and the IP-echo page the test fetches through them (PROXY_TEST_URL, local).
 */
import { expect } from 'chai';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import { Server as ProxyServer } from 'proxy-chain';
import { backendConfig, freePort } from '../support/backends';
import { type DnsServer, startDnsServer } from '../support/dns-server';
import { type Socks5Server, startSocks5 } from '../support/socks5-server';
import { expectEnvelope } from '../support/errors';
import { request } from '../support/http';
import { type RunningSystem, runSystem } from '../support/system';

/** What these endpoints answer (the fields the tests read). */
interface ProxyAnswer {
  [k: string]: unknown;
  success?: boolean;
  proxy: { id: number; port: number; verified: boolean; label: string; [k: string]: unknown };
  result: { exit_ip: string; ms: number } | null;
}

describe('own proxies: PUT, GET, test and DELETE /proxies', function () {
  this.timeout(60_000);
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  let key: string;
  let free: string;
  let echo: http.Server;
  let echoPort = 0;
  const echoSeen: string[] = [];
  let authProxy: ProxyServer;
  let openProxy: ProxyServer;
  let silent: net.Server;
  const silentSockets = new Set<net.Socket>();
  let closedPort = 0;
  let dns: DnsServer;
  let socks: Socks5Server;

  before(async () => {
    socks = await startSocks5({ username: 'sock-user', password: 'sock-pw' });
    echo = http.createServer((req, res) => {
      echoSeen.push(req.url ?? '');
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ ip: '203.0.113.9' }));
    });
    await new Promise<void>((r) => echo.listen(0, '127.0.0.1', r));
    echoPort = (echo.address() as AddressInfo).port;
    authProxy = new ProxyServer({
      port: 0,
      host: '127.0.0.1',
      prepareRequestFunction: ({ username, password }) => ({ requestAuthentication: username !== 'alice' || password !== 'right-pw' }),
    });
    openProxy = new ProxyServer({ port: 0, host: '127.0.0.1' });
    await Promise.all([authProxy.listen(), openProxy.listen()]);
    silent = net.createServer((s) => {
      silentSockets.add(s);
      s.on('close', () => silentSockets.delete(s));
    });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    closedPort = await freePort();
    dns = await startDnsServer((name) => (name === 'proxy.test' ? ['127.0.0.1'] : null));
    const b = await backendConfig('sqlite', {
      SERVICES: 'api,billing,ai,proxy,scheduler',
      ALLOW_PRIVATE_NETWORKS: 'true',
      EGRESS_DNS_SERVERS: dns.address,
      PROXY_TEST_URL: `http://127.0.0.1:${echoPort}/ip`,
      PROXY_TEST_TIMEOUT_MS: '1500',
    });
    cleanup = b.cleanup;
    sys = await runSystem(b.config);
    key = (await sys.account('paid', { byo_proxy: 1 })).access_token;
    free = (await sys.account()).access_token;
  });
  after(async () => {
    await sys.stop();
    await cleanup();
    for (const s of silentSockets) s.destroy();
    await new Promise<void>((r) => silent.close(() => r()));
    await authProxy.close(true);
    await openProxy.close(true);
    await new Promise<void>((r) => {
      echo.closeAllConnections();
      echo.close(() => r());
    });
    await dns.stop();
    await socks.stop();
  });

  const put = (json: Record<string, unknown>, token = key) =>
    request<ProxyAnswer>(sys.base, 'PUT', '/proxies', { headers: { authorization: `Bearer ${token}` }, json });
  const list = () => request<{ proxies: Array<Record<string, unknown>> }>(sys.base, 'GET', '/proxies', { headers: { authorization: `Bearer ${key}` } });

  it('stores and tests a proxy with authentication: verified, exit IP from the test page, never the password', async () => {
    const r = await put({ host: '127.0.0.1', port: authProxy.port, username: 'alice', password: 'right-pw' });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.result?.exit_ip).to.equal('203.0.113.9');
    expect(r.body.proxy).to.include({ protocol: 'http', host: '127.0.0.1', username: 'alice', has_password: true, verified: true, exit_ip: '203.0.113.9' });
    // The spec's proxy record: label is host and port; the store endpoint adds display_url, the URL with the password masked.
    expect(r.body.proxy.label).to.equal(`127.0.0.1:${authProxy.port}`);
    expect(r.body.proxy.display_url).to.equal(`http://alice:****@127.0.0.1:${authProxy.port}`);
    // verified_at: when the test passed, ISO 8601 UTC.
    expect(r.body.proxy.verified_at).to.match(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(Math.abs(Date.parse(String(r.body.proxy.verified_at)) - Date.now())).to.be.below(60_000);
    expect(echoSeen).to.include('/ip');
    const l = await list();
    expect(JSON.stringify(l.body)).to.not.include('right-pw');
    expect(l.body.proxies.at(-1))
      .to.include({ label: `127.0.0.1:${authProxy.port}` })
      .and.not.have.property('display_url');
    expect(l.body).to.include({ bring_your_own_proxy_enabled: true, has_paid_plan: true });
  });

  it('a wrong password is 400 proxy_auth_failed, the proxy stored unverified; the right one (kept on a later update) verifies it', async () => {
    const wrong = await put({ host: '127.0.0.1', port: authProxy.port, username: 'alice', password: 'wrong-pw' });
    expectEnvelope(wrong, 400, 'proxy_auth_failed');
    expect(JSON.stringify(wrong.body)).to.not.include('wrong-pw');
    const stored = (await list()).body.proxies.at(-1) as Record<string, unknown>;
    expect(stored).to.include({ verified: false, last_error: 'proxy_auth_failed', has_password: true });
    const fixed = await put({ id: stored.id, password: 'right-pw' });
    expect(fixed.status, JSON.stringify(fixed.body)).to.equal(200);
    expect(fixed.body.proxy).to.include({ id: stored.id, verified: true });
    // Left out on update: the stored password is kept.
    const again = await put({ id: stored.id, port: authProxy.port });
    expect(again.body.proxy).to.include({ verified: true, has_password: true });
    const retest = await request<ProxyAnswer>(sys.base, 'POST', `/proxies/${stored.id}/test`, { headers: { authorization: `Bearer ${key}` } });
    expect(retest.status).to.equal(200);
    expect(retest.body.result?.exit_ip).to.equal('203.0.113.9');
    expect(retest.body.proxy).to.have.keys('id', 'label', 'verified', 'exit_ip', 'last_test_ms');
  });

  it(
    'maps every failure to its code: no answer (proxy_timeout), a closed port (proxy_connection_failed), an unresolvable name ' + '(proxy_host_not_found)',
    async () => {
      expectEnvelope(await put({ host: '127.0.0.1', port: (silent.address() as AddressInfo).port }), 400, 'proxy_timeout');
      expectEnvelope(await put({ host: '127.0.0.1', port: closedPort }), 400, 'proxy_connection_failed');
      expectEnvelope(await put({ host: 'nowhere.test', port: 8080 }), 400, 'proxy_host_not_found');
      const names = (await list()).body.proxies.map((p) => `${p.host} ${p.verified} ${p.last_error}`);
      expect(names).to.include.members([`nowhere.test false proxy_host_not_found`, `127.0.0.1 false proxy_connection_failed`]);
    },
  );

  it('a SOCKS5 proxy: a refused password is proxy_auth_failed, the right one verifies it through the SOCKS server', async () => {
    expectEnvelope(await put({ protocol: 'socks5', host: '127.0.0.1', port: socks.port, username: 'sock-user', password: 'nope' }), 400, 'proxy_auth_failed');
    const ok = await put({ protocol: 'socks5', host: '127.0.0.1', port: socks.port, username: 'sock-user', password: 'sock-pw' });
    expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
    expect(ok.body.proxy).to.include({ protocol: 'socks5', verified: true, exit_ip: '203.0.113.9' });
    expect(socks.seen).to.include(`sock-user 127.0.0.1:${echoPort}`);
  });

  it('test=false stores without testing; a name the test DNS maps works; default ports by protocol', async () => {
    const r = await put({ host: 'proxy.test', port: openProxy.port, test: false });
    expect(r.status).to.equal(200);
    expect(r.body.result).to.equal(null);
    expect(r.body.proxy).to.include({ verified: false, verified_at: null });
    expect((await request<ProxyAnswer>(sys.base, 'POST', `/proxies/${r.body.proxy.id}/test`, { headers: { authorization: `Bearer ${key}` } })).status).to.equal(
      200,
    );
    // Changed without a test: what the last test saw (of the proxy it was) is forgotten with it.
    const edited = await put({ id: r.body.proxy.id, host: '127.0.0.1', port: closedPort, test: false });
    expect(edited.body.proxy).to.include({ verified: false, verified_at: null, exit_ip: null, last_test_ms: null });
    expect((await put({ protocol: 'socks5', host: '127.0.0.1', test: false })).body.proxy.port).to.equal(1080);
    expect((await put({ protocol: 'https', host: '127.0.0.1', test: false })).body.proxy.port).to.equal(443);
    expect((await put({ host: '127.0.0.1', test: false })).body.proxy.port).to.equal(8080);
  });

  it('refuses invalid proxies with invalid_proxy, and gates the plan and addon', async () => {
    expectEnvelope(await put({ host: '127.0.0.1', username: 'bob' }), 400, 'invalid_proxy', 'password');
    expectEnvelope(await put({ host: '127.0.0.1', protocol: 'ftp' }), 400, 'invalid_proxy', 'protocol');
    expectEnvelope(await put({ host: 'bad host!' }), 400, 'invalid_proxy', 'host');
    expectEnvelope(await put({ host: '127.0.0.1', port: 70000 }), 400, 'invalid_proxy', 'port');
    expectEnvelope(await put({}), 400, 'invalid_proxy', 'host');
    // Storing a proxy names no custom_proxy_id: the note says only what to change.
    const gated = await put({ host: '127.0.0.1' }, free);
    expectEnvelope(gated, 402, 'byo_proxy_plan_required', 'Storing or testing your own proxies needs a paid screenshot plan');
    expect(gated.body.note).not.to.contain('custom_proxy_id');
  });

  it('DELETE removes it (404 after), another account never sees it', async () => {
    const r = await put({ host: '127.0.0.1', port: openProxy.port });
    const id = r.body.proxy.id as number;
    expectEnvelope(await request(sys.base, 'DELETE', `/proxies/${id}`, { headers: { authorization: `Bearer ${free}` } }), 404, 'not_found');
    const del = await request<Record<string, unknown>>(sys.base, 'DELETE', `/proxies/${id}`, { headers: { authorization: `Bearer ${key}` } });
    expect(del.body.success).to.equal(true);
    expectEnvelope(await request(sys.base, 'DELETE', `/proxies/${id}`, { headers: { authorization: `Bearer ${key}` } }), 404, 'not_found');
    expectEnvelope(await request(sys.base, 'POST', `/proxies/${id}/test`, { headers: { authorization: `Bearer ${key}` } }), 404, 'not_found');
  });
});

describe('own proxies at private addresses (ALLOW_PRIVATE_NETWORKS unset)', () => {
  it('are refused with invalid_proxy, an address written in any form a URL takes too, and nothing is stored', async () => {
    // A DNS server that knows no name: a numeric host asked of it as a name would be "not
    // found", and so stored to fail later; each is read as the address it writes.
    const dns = await startDnsServer(() => null);
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing,ai,proxy,scheduler', EGRESS_DNS_SERVERS: dns.address });
    const sys = await runSystem(b.config);
    try {
      const key = (await sys.account('paid', { byo_proxy: 1 })).access_token;
      for (const host of ['127.0.0.1', '127.1', '2130706433', '0x7f000001', '0177.0.0.1']) {
        const r = await request(sys.base, 'PUT', '/proxies', { headers: { authorization: `Bearer ${key}` }, json: { host, test: false } });
        expectEnvelope(r, 400, 'invalid_proxy', '127.0.0.1');
      }
      const list = await request<{ proxies: unknown[] }>(sys.base, 'GET', '/proxies', { headers: { authorization: `Bearer ${key}` } });
      expect(list.body.proxies).to.deep.equal([]);
    } finally {
      await sys.stop();
      await b.cleanup();
      await dns.stop();
    }
  });
});
