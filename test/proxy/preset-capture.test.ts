/**
 * Captures through each provider preset, end to end on the Grid, as an operator sets one up:
 * REAL_LOCATIONS_PROVIDER with the account's user and password, and REAL_LOCATIONS_GATEWAY
 * pointing at the provider's local stand-in (test/support/provider-upstreams.ts: it relays
 * only that provider's documented syntax and answers 407 to anything else). A country, a US
 * state, a city and a region each go through with the targeting they mean; the bytes billed
 * are the bytes the upstream relayed.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { REAL_LOCATION_PROVIDERS } from '../../services/shared/config';
import { startCaptureSystem } from '../support/capture-helpers';
import { qs, request } from '../support/http';
import { ACCOUNTS, type Asked, type ProviderUpstream, startProviderUpstream } from '../support/provider-upstreams';

const EUROPE = new Set(
  'al ad at by be ba bg hr cz dk ee fi fr de gr hu is ie it lv li lt lu mk mt md mc me nl no pl pt ro ru rs sk si es se ch ua gb'.split(' '),
);

describe('captures through the provider presets (a local stand-in per provider)', function () {
  this.timeout(180_000);
  let target: http.Server;
  let targetPort = 0;

  before(async () => {
    target = http.createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<!doctype html><title>located</title><p>${'padding '.repeat(1000)}</p>`);
    });
    await new Promise<void>((r) => target.listen(0, '127.0.0.1', r));
    targetPort = (target.address() as AddressInfo).port;
  });
  after(async () => {
    target.closeAllConnections();
    await new Promise<void>((r) => target.close(() => r()));
  });

  for (const provider of REAL_LOCATION_PROVIDERS) {
    describe(provider, () => {
      let upstream: ProviderUpstream;
      let sys: Awaited<ReturnType<typeof startCaptureSystem>>;
      let key = '';

      before(async () => {
        upstream = await startProviderUpstream(provider, ACCOUNTS[provider]);
        sys = await startCaptureSystem({
          EGRESS_GATEWAY: 'on',
          ALLOW_PRIVATE_NETWORKS: 'true',
          CAPTURE_SESSIONS: '1',
          REAL_LOCATIONS_PROVIDER: provider,
          REAL_LOCATIONS_USERNAME: ACCOUNTS[provider].username,
          REAL_LOCATIONS_PASSWORD: ACCOUNTS[provider].password,
          REAL_LOCATIONS_GATEWAY: `127.0.0.1:${upstream.port}`,
        });
        key = sys.token;
      });
      after(async () => {
        await sys?.cleanup();
        await upstream?.close();
      });

      const bandwidth = async () =>
        (
          await request<{ results: { real_location_bandwidth_current_month_usage_in_bytes: number } }>(
            sys.sys.base,
            'GET',
            `/account_limits?access_token=${key}`,
          )
        ).body.results.real_location_bandwidth_current_month_usage_in_bytes;

      /** One capture through `location`: what the stand-in was asked for, and the bandwidth billed equal to the bytes it relayed. */
      async function captureThrough(location: string): Promise<Asked[]> {
        const [asked, refused, bytes, billed] = [upstream.asked.length, upstream.refused.length, upstream.bytes(), await bandwidth()];
        const r = await request<Record<string, unknown>>(
          sys.sys.base,
          'GET',
          `/snap?${qs({
            access_token: key,
            ttl: 0,
            wait: 0,
            html_only: true,
            url: `http://127.0.0.1:${targetPort}/${encodeURIComponent(location)}`,
            real_location: location,
          })}`,
        );
        expect(r.status, JSON.stringify(r.body)).to.equal(200);
        // The gateway closes the capture's connections when it ends; the upstream counts them on close.
        let now = billed;
        for (let i = 0; i < 50; i++) {
          now = await bandwidth();
          if (now > billed && upstream.bytes() - bytes >= now - billed) break;
          await new Promise((res) => setTimeout(res, 50));
        }
        expect(now - billed).to.be.greaterThan(8_000);
        expect(now - billed, 'bytes billed = bytes the upstream relayed').to.equal(upstream.bytes() - bytes);
        expect(upstream.refused.slice(refused), 'requests the stand-in refused').to.deep.equal([]);
        const seen = upstream.asked.slice(asked);
        expect(seen).to.have.length.greaterThan(0);
        // One capture, one sticky session.
        expect(new Set(seen.map((a) => a.session)).size).to.equal(1);
        return seen;
      }

      it('a city (London): the city, in its country', async () => {
        const [a] = await captureThrough('London');
        expect(a).to.include({ country: 'gb' });
        expect(a?.city?.replace(/_/g, '')).to.equal('london');
        const list = await request<{ screenshots: Array<Record<string, unknown>> }>(sys.sys.base, 'GET', `/screenshots?access_token=${key}`);
        expect(list.body.screenshots[0]).to.include({ is_proxy_screenshot: true, proxy_server: 'London' });
        expect(JSON.stringify(list.body)).to.not.include(ACCOUNTS[provider].password);
      });

      it('a US state (california, any case): the state', async () => {
        const [a] = await captureThrough('california');
        expect(a).to.include({ country: 'us', city: null });
        expect(['ca', 'us_california', 'california']).to.include(a?.state);
      });

      it('a country (Germany): one of its big cities', async () => {
        const [a] = await captureThrough('Germany');
        expect(a).to.include({ country: 'de' });
        expect(['berlin', 'hamburg', 'munich']).to.include(a?.city);
      });

      it('a region (Europe): a European country', async () => {
        const [a] = await captureThrough('Europe');
        expect(EUROPE.has(a?.country ?? ''), String(a?.country)).to.equal(true);
      });
    });
  }
});
