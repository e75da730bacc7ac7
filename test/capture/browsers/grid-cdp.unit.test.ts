/**
 * CdpRouter with its network stubbed (sinon): the Grid's GraphQL, the browser's
 * /json/version and the CDP sockets answer as Selenium 4.20 and Chromium do, so which socket
 * a session gets under GRID_CDP, and why, is checked without a Grid.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { type CdpSocket, CdpRouter, type GridCdp, debuggerAddressOf, isLoopbackHost } from '../../../services/capture/browsers/grid-cdp';
import { ConfigError, loadConfig } from '../../../services/shared/config';

const SE_CDP = 'ws://127.0.0.1:4444/session/abc/se/cdp';
const BROWSER_WS = 'ws://localhost:41517/devtools/browser/1f2e';

function caps(values: Record<string, unknown>) {
  return { get: (key: string) => values[key] };
}

const GRID_CAPS = caps({ 'se:cdp': SE_CDP, 'goog:chromeOptions': { debuggerAddress: 'localhost:41517' } });

describe('CdpRouter (unit: Grid and browser stubbed)', () => {
  let nodeUri: string;
  let targets: string[];
  let fetchFn: sinon.SinonStub;
  let open: sinon.SinonStub<[string], Promise<CdpSocket>>;
  let sockets: Array<{ url: string; close: sinon.SinonStub }>;
  let log: { info: sinon.SinonStub };

  beforeEach(() => {
    nodeUri = 'http://127.0.0.1:5555';
    targets = ['AB12CD', 'EF34'];
    sockets = [];
    log = { info: sinon.stub() };
    fetchFn = sinon.stub().callsFake(async (url: URL | string) => {
      const u = new URL(String(url));
      if (u.pathname.endsWith('/graphql')) return Response.json({ data: { session: { nodeUri } } });
      if (u.pathname === '/json/version') return Response.json({ Browser: 'HeadlessChrome/156', webSocketDebuggerUrl: BROWSER_WS });
      throw new Error(`unexpected fetch ${u}`);
    });
    open = sinon.stub<[string], Promise<CdpSocket>>().callsFake(async (url) => {
      const socket = {
        url,
        close: sinon.stub(),
        send: async <T>(method: string) => {
          if (method !== 'Target.getTargets') throw new Error(`unexpected ${method}`);
          return { targetInfos: targets.map((targetId) => ({ targetId, type: 'page' })) } as T;
        },
      };
      sockets.push(socket);
      return socket;
    });
  });
  afterEach(() => sinon.restore());

  const router = (gridCdp: GridCdp, seleniumUrl: string | null = 'http://127.0.0.1:4444') =>
    new CdpRouter({ seleniumUrl, gridCdp }, { open, fetchFn: fetchFn as unknown as typeof fetch, log });
  const session = (capabilities = GRID_CAPS, handle = 'ab12cd') => ({ id: 'abc', capabilities, windowHandle: async () => handle });

  it("direct, node on this host: the browser's own socket, its host the port ChromeDriver named", async () => {
    const r = await router('direct').connect(session());
    expect(r.route).to.equal('direct');
    expect(r.url).to.equal('ws://127.0.0.1:41517/devtools/browser/1f2e');
    expect(open.args.map(([u]) => u)).to.deep.equal(['ws://127.0.0.1:41517/devtools/browser/1f2e']);
    const [graphql, init] = fetchFn.firstCall.args as [URL, RequestInit];
    expect(String(graphql)).to.equal('http://127.0.0.1:4444/graphql');
    expect(JSON.parse(String(init.body)).variables).to.deep.equal({ id: 'abc' });
    expect(String(fetchFn.secondCall.args[0])).to.equal('http://127.0.0.1:41517/json/version');
    sinon.assert.notCalled(log.info);
  });

  it("asks the Grid's GraphQL with SELENIUM_URL's credentials as a header, and never logs them", async () => {
    nodeUri = 'http://10.1.2.3:5555';
    await router('direct', 'http://user:s3cret@127.0.0.1:4444/wd/hub').connect(session());
    const [graphql, init] = fetchFn.firstCall.args as [URL, RequestInit];
    expect(String(graphql)).to.equal('http://127.0.0.1:4444/wd/hub/graphql');
    expect((init.headers as Record<string, string>).authorization).to.equal(`Basic ${Buffer.from('user:s3cret').toString('base64')}`);
    expect(JSON.stringify(log.info.args)).not.to.include('s3cret');
  });

  it('direct, node on another host: the relay, said once for every session on that node', async () => {
    nodeUri = 'http://10.1.2.3:5555';
    const r = router('direct');
    for (let i = 0; i < 3; i++) {
      const c = await r.connect(session());
      expect(c).to.include({ route: 'relay', url: SE_CDP });
    }
    expect(fetchFn.args.map(([u]) => new URL(String(u)).pathname)).to.deep.equal(['/graphql', '/graphql', '/graphql']);
    sinon.assert.calledOnce(log.info);
    expect(log.info.firstCall.args[0]).to.match(/GRID_CDP=direct: the session's node 10\.1\.2\.3 is not on this host .*se:cdp/);
  });

  it("direct, but the browser at that port is not the session's: that socket closed, the relay", async () => {
    targets = ['OTHER'];
    const c = await router('direct').connect(session());
    expect(c).to.include({ route: 'relay', url: SE_CDP });
    expect(sockets.map((s) => s.url)).to.deep.equal(['ws://127.0.0.1:41517/devtools/browser/1f2e', SE_CDP]);
    sinon.assert.calledOnce(sockets[0]!.close);
    expect(log.info.firstCall.args[0]).to.match(/is not the session's/);
  });

  it("direct, each session's browser at another port not the session's: said once, not once per port", async () => {
    targets = ['OTHER'];
    const r = router('direct');
    for (const port of [41517, 41518, 41519]) {
      const own = caps({ 'se:cdp': SE_CDP, 'goog:chromeOptions': { debuggerAddress: `localhost:${port}` } });
      expect(await r.connect(session(own))).to.include({ route: 'relay', url: SE_CDP });
    }
    sinon.assert.calledOnce(log.info);
    expect(log.info.firstCall.args[0]).to.match(/the browser at port 41517 of this host is not the session's/);
  });

  it("direct, the Grid's GraphQL or the browser not answering: the relay", async () => {
    fetchFn.rejects(new Error('connect ECONNREFUSED'));
    expect(await router('direct').connect(session())).to.include({ route: 'relay', url: SE_CDP });
    expect(log.info.firstCall.args[0]).to.match(/GraphQL did not answer/);
  });

  it('direct without a relay to fall back on: a clear error', async () => {
    nodeUri = 'http://10.1.2.3:5555';
    const noRelay = caps({ 'goog:chromeOptions': { debuggerAddress: 'localhost:41517' } });
    let err: Error | null = null;
    await router('direct')
      .connect(session(noRelay))
      .catch((e: Error) => {
        err = e;
      });
    expect(String(err)).to.match(/not on this host.*no se:cdp/);
  });

  it('relay: the se:cdp socket, nothing asked of the Grid or the browser', async () => {
    expect(await router('relay').connect(session())).to.include({ route: 'relay', url: SE_CDP });
    sinon.assert.notCalled(fetchFn);
  });

  it("embedded (no Grid): the browser's own socket, whatever GRID_CDP says", async () => {
    const c = await router('relay', null).connect(session(caps({ 'goog:chromeOptions': { debuggerAddress: 'localhost:41517' } })));
    expect(c).to.include({ route: 'direct', url: 'ws://127.0.0.1:41517/devtools/browser/1f2e' });
  });

  it('reads loopback hosts and debugger addresses', () => {
    for (const h of ['127.0.0.1', '127.8.9.10', 'localhost', 'LOCALHOST', '::1', '[::1]']) expect(isLoopbackHost(h), h).to.equal(true);
    for (const h of ['10.0.0.1', 'selenium-hub', '128.0.0.1', '127.0.0.1.example.com', '::2']) expect(isLoopbackHost(h), h).to.equal(false);
    expect(debuggerAddressOf(caps({ 'goog:chromeOptions': { debuggerAddress: 'localhost:9222' } }))).to.deep.equal({ host: 'localhost', port: 9222 });
    expect(debuggerAddressOf(caps({ 'goog:chromeOptions': { debuggerAddress: '[::1]:9222' } }))).to.deep.equal({ host: '[::1]', port: 9222 });
    expect(debuggerAddressOf(caps({ 'goog:chromeOptions': {} }))).to.equal(null);
    expect(debuggerAddressOf(caps({}))).to.equal(null);
  });

  it('GRID_CDP is direct by default, relay when set so, and anything else stops the start', () => {
    expect(loadConfig({}).capture.gridCdp).to.equal('direct');
    expect(loadConfig({ GRID_CDP: 'relay' }).capture.gridCdp).to.equal('relay');
    expect(() => loadConfig({ GRID_CDP: 'hub' })).to.throw(ConfigError, /GRID_CDP must be direct .* or relay .*; got "hub"/);
  });
});
