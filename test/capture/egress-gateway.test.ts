/**
 * Captures through the egress gateway, on the real Grid, with names resolved by a DNS
 * server the test runs: `app.localhost` (a secure origin, for its service worker) is a site the operator lets through
 * (EGRESS_ALLOW_ADDRESSES=127.0.0.2), `private.test` an internal address (127.0.0.1).
 * Each attack is run twice: with the gateway (refused; the internal server sees nothing)
 * and without it (EGRESS_GATEWAY=off, the browser mapping the same names with
 * --host-resolver-rules), where it gets through, which is what the gateway is for.
 * Only loopback is ever connected to: the rebinding name's first answer, the "public" one,
 * is 127.0.0.2 (let through like app.localhost), where a decoy listens on the internal
 * server's port.
 */
import { expect } from 'chai';
import dgram from 'node:dgram';
import http from 'node:http';
import sharp from 'sharp';
import sinon from 'sinon';
import { CdpConnection } from '../../services/capture/page/cdp';
import type { AddressInfo } from 'node:net';
import { startCaptureSystem } from '../support/capture-helpers';
import { type DnsServer, startDnsServer } from '../support/dns-server';
import { expectEnvelope } from '../support/errors';
import { qs, request } from '../support/http';

interface Site {
  port: number;
  seen: string[];
  stop(): Promise<void>;
}

async function serve(host: string, handle: (req: http.IncomingMessage, res: http.ServerResponse) => void, port = 0): Promise<Site> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    handle(req, res);
  });
  // WebSocket handshakes: recorded, then dropped (reaching the server is what counts).
  server.on('upgrade', (req, socket) => {
    seen.push(`upgrade ${req.url}`);
    socket.destroy();
  });
  server.keepAliveTimeout = 500;
  await new Promise<void>((r) => server.listen(port, host, r));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    stop: () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

interface UdpListener {
  socket: dgram.Socket;
  port: number;
  datagrams: number;
}

async function listenUdp(host: string): Promise<UdpListener> {
  const socket = dgram.createSocket('udp4');
  const listener = { socket, port: 0, datagrams: 0 };
  socket.on('message', () => {
    listener.datagrams += 1;
  });
  await new Promise<void>((r) => socket.bind(0, host, r));
  listener.port = socket.address().port;
  return listener;
}

/**
 * The public page (it reports what happened to /mark; #done once the server has all four
 * reports): a WebSocket to the internal address (by name and as [::ffff:127.0.0.1]) and a
 * service worker fetching it.
 */
function attackPage(privatePort: number): string {
  return `<!doctype html><title>attack</title><body><p id="out"></p><script>
let reported = 0;
const mark = (m) => {
  fetch('/mark?' + encodeURIComponent(m)).finally(() => {
    if (++reported === 4) { const d = document.createElement('div'); d.id = 'done'; document.body.appendChild(d); }
  });
};
for (const url of ['ws://private.test:${privatePort}/ws-by-name', 'ws://[::ffff:127.0.0.1]:${privatePort}/ws-mapped']) {
  try { const ws = new WebSocket(url); ws.onopen = () => mark('open'); ws.onerror = () => mark('ws-error'); } catch (e) { mark('ws-throw'); }
}
mark('secure-' + isSecureContext);
navigator.serviceWorker.register('/sw.js').then(() => navigator.serviceWorker.ready).then(() => mark('sw-ready'), (e) => mark('sw-failed:' + e));
</script></body>`;
}

describe('egress gateway on the Grid: rebinding, WebSockets and service workers', function () {
  this.timeout(120_000);
  let dns: DnsServer;
  let pub: Site;
  let internal: Site;
  /** On 127.0.0.2 at the internal server's port: where the rebinding name's first (allowed) answer leads. */
  let decoy: Site;
  /** A UDP port at the internal address: every datagram it gets is counted (a STUN or TURN server's). */
  let turn: UdpListener;
  /** rebind.test: an allowed answer first (127.0.0.2, where the decoy stands for a public site), then the internal one. */
  let rebindAnswers: string[] = [];

  before(async () => {
    turn = await listenUdp('127.0.0.1');
    internal = await serve('127.0.0.1', (_req, res) => res.end('internal secret'));
    decoy = await serve('127.0.0.2', (_req, res) => res.end('public answer'), internal.port);
    pub = await serve('127.0.0.2', (req, res) => {
      if (req.url?.startsWith('/mark')) {
        res.end();
        return;
      }
      // A redirect of the page to the internal address, over plain HTTP and over https (a CONNECT).
      if (req.url === '/to-private' || req.url === '/to-private-https') {
        const scheme = req.url === '/to-private' ? 'http' : 'https';
        res.writeHead(302, { location: `${scheme}://private.test:${internal.port}/secret` });
        res.end();
        return;
      }
      // A page that navigates itself, once loaded, to the internal address.
      if (req.url === '/moves-https' || req.url === '/moves-http') {
        const scheme = req.url === '/moves-http' ? 'http' : 'https';
        res.setHeader('content-type', 'text/html');
        res.end(
          `<!doctype html><title>moves</title><h1>moving page</h1><script>addEventListener('load', () => setTimeout(() => { location.href = '${scheme}://private.test:${internal.port}/later'; }, 50));</script>`,
        );
        return;
      }
      if (req.url === '/framing-private') {
        res.setHeader('content-type', 'text/html');
        res.end(
          '<!doctype html><title>framing</title><h1>framing page</h1>' +
            `<iframe src="http://private.test:${internal.port}/framed"></iframe><iframe src="https://private.test:${internal.port}/framed-https"></iframe>`,
        );
        return;
      }
      if (req.url === '/to-nowhere') {
        res.writeHead(302, { location: 'http://nxdomain.test/moved' });
        res.end();
        return;
      }
      // A page whose frame and image the gateway cannot reach (a closed port, a name that does not resolve).
      if (req.url?.startsWith('/broken-parts?port=')) {
        const port = req.url.slice('/broken-parts?port='.length);
        res.setHeader('content-type', 'text/html');
        res.end(
          '<!doctype html><title>parts</title><style>body{margin:0}</style><div style="position:absolute;left:0;top:0;width:400px;height:200px;background:#0a0"></div>' +
            `<iframe src="http://app.localhost:${port}/frame" style="position:absolute;left:0;top:250px"></iframe><img src="http://nxdomain.test/x.png" alt="">`,
        );
        return;
      }
      if (req.url === '/plain') {
        res.setHeader('content-type', 'text/html');
        res.end('<!doctype html><title>plain</title><h1>plain page</h1><img src="/mark?img" alt="">');
        return;
      }
      // WebRTC: a TURN server (UDP) at the internal address; the page shows its gathering's end.
      if (req.url === '/webrtc') {
        res.setHeader('content-type', 'text/html');
        res.end(`<!doctype html><title>webrtc</title><h1>webrtc page</h1><script>
const pc = new RTCPeerConnection({ iceServers: [{ urls: ['turn:127.0.0.1:${turn.port}?transport=udp', 'stun:127.0.0.1:${turn.port}'], username: 'u', credential: 'p' }], iceTransportPolicy: 'relay' });
const done = () => { if (!document.getElementById('done')) { const d = document.createElement('div'); d.id = 'done'; document.body.appendChild(d); } };
pc.onicegatheringstatechange = () => { if (pc.iceGatheringState === 'complete') done(); };
setTimeout(done, 3000);
pc.createDataChannel('d');
pc.createOffer().then((o) => pc.setLocalDescription(o)).catch(done);
</script>`);
        return;
      }
      if (req.url === '/sw.js') {
        res.setHeader('content-type', 'text/javascript');
        res.end(`self.addEventListener('install', (e) => e.waitUntil(fetch('http://private.test:${internal.port}/sw-hit').catch(() => undefined)));
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));`);
        return;
      }
      res.setHeader('content-type', 'text/html');
      res.end(attackPage(internal.port));
    });
    dns = await startDnsServer((name, type) => {
      if (type === 'AAAA') return name.endsWith('.test') ? [] : null;
      if (name === 'app.localhost') return ['127.0.0.2'];
      if (name === 'private.test') return ['127.0.0.1'];
      if (/^once-\d+\.test$/.test(name)) return ['127.0.0.2'];
      if (name === 'rebind.test') return [rebindAnswers.length > 1 ? (rebindAnswers.shift() as string) : (rebindAnswers[0] ?? '127.0.0.1')];
      return null;
    });
  });
  after(async () => {
    await pub.stop();
    await internal.stop();
    await decoy.stop();
    await dns.stop();
    turn.socket.close();
  });

  for (const gateway of [true, false]) {
    describe(gateway ? 'with the gateway' : 'without the gateway (EGRESS_GATEWAY=off)', () => {
      let sys: Awaited<ReturnType<typeof startCaptureSystem>>;
      before(async () => {
        sys = await startCaptureSystem({
          EGRESS_GATEWAY: gateway ? 'on' : 'off',
          EGRESS_DNS_SERVERS: dns.address,
          EGRESS_ALLOW_ADDRESSES: '127.0.0.2',
          CAPTURE_SESSIONS: '1',
          // Without the gateway the browser resolves names itself: the same answers as the DNS
          // server's. (Service workers need a secure origin: *.localhost is one.)
          CHROME_EXTRA_ARGS: JSON.stringify(['--host-resolver-rules=MAP app.localhost 127.0.0.2, MAP private.test 127.0.0.1, MAP rebind.test 127.0.0.1']),
        });
      });
      after(async () => {
        await sys.cleanup();
      });
      beforeEach(() => {
        internal.seen.length = 0;
      });

      const snap = (params: Record<string, string | number | boolean>) =>
        request(sys.sys.base, 'GET', `/snap?${qs({ access_token: sys.token, ttl: 0, ...params })}`);

      it(
        gateway
          ? 'a WebSocket and a service worker of a public page never reach the internal address'
          : 'a WebSocket and a service worker of a public page reach the internal address',
        async () => {
          const r = await snap({ url: `http://app.localhost:${pub.port}/`, html_only: true, wait: 0, wait_for: '#done' });
          expect(r.status, JSON.stringify(r.body)).to.equal(200);
          // The page ran to the end: its WebSockets failed or opened, its service worker was installed.
          expect(pub.seen).to.include.members(['/sw.js', '/mark?sw-ready']);
          if (gateway) {
            expect(internal.seen).to.deep.equal([]);
          } else {
            expect(internal.seen).to.include.members(['upgrade /ws-by-name', 'upgrade /ws-mapped', '/sw-hit']);
          }
        },
      );

      it(
        gateway
          ? 'a redirect of the page to the internal address (http, https) is refused naming it, by the gateway; a frame of it stays out'
          : "a redirect of the page to the internal address (http, https) is refused naming it, by the page's guard; a frame of it stays out",
        async () => {
          const redirected = await snap({ url: `http://app.localhost:${pub.port}/to-private`, html_only: true, wait: 0 });
          expectEnvelope(redirected, 400, 'url_not_allowed', `http://private.test:${internal.port}/secret resolves to 127.0.0.1`);
          // A refused tunnel commits nothing in the page: the gateway names what it refused.
          const overHttps = await snap({ url: `http://app.localhost:${pub.port}/to-private-https`, wait: 0 });
          expectEnvelope(overHttps, 400, 'url_not_allowed', `https://private.test:${internal.port}`);
          expect(overHttps.body.note).to.match(/resolves to 127\.0\.0\.1/);
          const framed = await snap({ url: `http://app.localhost:${pub.port}/framing-private`, wait: 0 });
          expect(framed.status, JSON.stringify(framed.body)).to.equal(200);
          expect(internal.seen).to.deep.equal([]);
          // Both frames (http, https) are left empty in the picture: no error page, no reason drawn.
          // The default viewport is 1920 wide; each frame is 300x150 below the heading.
          for (const left of [20, 326]) {
            const inside = await sharp(framed.raw).extract({ left, top: 95, width: 270, height: 120 }).raw().toBuffer();
            expect(Math.min(...inside), `the darkest pixel inside the frame at x=${left}`).to.be.at.least(240);
          }
        },
      );

      it("WebRTC sends no UDP: a page's STUN and TURN servers at the internal address get nothing (it goes around every proxy)", async () => {
        const r = await snap({ url: `http://app.localhost:${pub.port}/webrtc`, html_only: true, wait: 0, wait_for: '#done' });
        expect(r.status, JSON.stringify(r.body)).to.equal(200);
        expect(r.body.html).to.include('id="done"');
        await new Promise((resolve) => setTimeout(resolve, 300));
        expect(turn.datagrams, 'datagrams at the internal TURN server').to.equal(0);
      });

      if (gateway)
        it("asks DNS for the page's name once per capture: the URL's check and the page's requests share the gateway's answer", async () => {
          // A name no earlier capture asked for: nothing of it is cached anywhere.
          const name = `once-${Date.now()}.test`;
          const r = await snap({ url: `http://${name}:${pub.port}/plain`, wait: 0 });
          expect(r.status, JSON.stringify(r.body)).to.equal(200);
          expect(pub.seen, 'the page and its image came through the gateway').to.include.members(['/plain', '/mark?img']);
          expect(dns.questions.filter((q) => q === `A ${name}`)).to.have.length(1);
        });

      it('a page that navigates itself to the internal address once loaded (http, https) is refused naming it', async () => {
        for (const [path, scheme] of [
          ['/moves-http', 'http'],
          ['/moves-https', 'https'],
        ]) {
          const r = await snap({ url: `http://app.localhost:${pub.port}${path}`, html_only: true, wait: 1000 });
          expectEnvelope(r, 400, 'url_not_allowed', `${scheme}://private.test:${internal.port}/later resolves to 127.0.0.1`);
        }
        expect(internal.seen).to.deep.equal([]);
      });

      it(
        gateway
          ? "pauses none of the page's requests: the gateway refuses them (no Fetch domain on the page)"
          : "pauses the page's requests to check them (Fetch)",
        async () => {
          const sent = sinon.spy(CdpConnection.prototype, 'send');
          try {
            const r = await snap({ url: `http://app.localhost:${pub.port}/framing-private`, wait: 0 });
            expect(r.status, JSON.stringify(r.body)).to.equal(200);
          } finally {
            sent.restore();
          }
          const fetchEnabled = sent.getCalls().some((c) => c.args[0] === 'Fetch.enable');
          expect(fetchEnabled).to.equal(!gateway);
        },
      );

      if (gateway)
        it('a page the gateway cannot reach (a name that does not resolve, a closed port) fails 422 page_load_failed naming why, charging nothing; a frame or image it cannot reach leaves the page captured', async () => {
          // A port nothing listens on, at the address app.localhost resolves to.
          const gone = await serve('127.0.0.2', (_req, res) => res.end());
          await gone.stop();
          const used = async () =>
            (await request<{ results: { screenshot_current_month_usage: number } }>(sys.sys.base, 'GET', `/account_limits?access_token=${sys.token}`)).body
              .results.screenshot_current_month_usage;
          const before = await used();
          // Plain HTTP: the gateway's error response (502, 594) is not taken as the page.
          const unresolvable = await snap({ url: 'http://nxdomain.test/', json: true, wait: 0 });
          expectEnvelope(unresolvable, 422, 'page_load_failed', 'nxdomain.test could not be resolved (ENOTFOUND)', 'http://nxdomain.test/');
          const closed = await snap({ url: `http://app.localhost:${gone.port}/`, html_only: true, wait: 0 });
          expectEnvelope(closed, 422, 'page_load_failed', `app.localhost:${gone.port} refused the connection (ECONNREFUSED)`);
          const redirected = await snap({ url: `http://app.localhost:${pub.port}/to-nowhere`, wait: 0 });
          expectEnvelope(redirected, 422, 'page_load_failed', 'nxdomain.test could not be resolved (ENOTFOUND)', 'http://nxdomain.test/moved');
          // https: the browser's own error, with the gateway's reason.
          const overHttps = await snap({ url: 'https://nxdomain.test/', wait: 0 });
          expectEnvelope(overHttps, 422, 'page_load_failed', 'nxdomain.test could not be resolved (ENOTFOUND)', 'net::ERR_');
          expect(await used(), 'screenshots charged').to.equal(before);
          const parts = await snap({ url: `http://app.localhost:${pub.port}/broken-parts?port=${gone.port}`, wait: 0, image_format: 'png' });
          expect(parts.status, parts.raw.toString().slice(0, 400)).to.equal(200);
          const { data, info } = await sharp(parts.raw).raw().toBuffer({ resolveWithObject: true });
          const at = (x: number, y: number) => [...data.subarray((y * info.width + x) * info.channels, (y * info.width + x) * info.channels + 3)];
          expect(at(200, 100), "the page's green block").to.deep.equal([0, 170, 0]);
          expect(await used(), 'screenshots charged').to.equal(before + 1);
        });

      if (gateway) {
        it('http://127.0.0.1 and [::ffff:127.0.0.1] are refused with 400 url_not_allowed naming the address, reaching nothing', async () => {
          expectEnvelope(await snap({ url: `http://127.0.0.1:${internal.port}/`, html_only: true, wait: 0 }), 400, 'url_not_allowed', '127.0.0.1');
          expectEnvelope(await snap({ url: `http://[::ffff:127.0.0.1]:${internal.port}/`, html_only: true, wait: 0 }), 400, 'url_not_allowed', '::ffff:7f00:1');
          expect(internal.seen).to.deep.equal([]);
        });
      }

      it(
        gateway
          ? 'a name that answers an allowed address, then the internal one (rebinding), is captured from the address checked, never the internal one'
          : 'a name that rebinds to the internal address gets captured',
        async () => {
          rebindAnswers = ['127.0.0.2', '127.0.0.1'];
          const asked = dns.questions.filter((q) => q === 'A rebind.test').length;
          const r = await snap({ url: `http://rebind.test:${internal.port}/secret`, html_only: true, wait: 0 });
          if (gateway) {
            // One admission per name and capture: the URL's check and the connection use the same answer.
            expect(r.status, JSON.stringify(r.body)).to.equal(200);
            expect(r.body.html).to.include('public answer');
            expect(dns.questions.filter((q) => q === 'A rebind.test').length - asked).to.equal(1);
            expect(internal.seen).to.deep.equal([]);
          } else {
            expect(r.status, JSON.stringify(r.body)).to.equal(200);
            expect(internal.seen).to.include('/secret');
          }
        },
      );
    });
  }
});
