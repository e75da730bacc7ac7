import { expect } from 'chai';
import type { FastifyInstance } from 'fastify';
import { ServiceBroker } from 'moleculer';
import { type PublicRouteContext, buildHttpServer, publicRoute } from '../../services/api/http';
import { PAGING_PARAMS } from '../../services/api/paging-params';
import { KEY_ONLY_PARAMS, SNAP_PARAMS } from '../../services/api/request-schemas';
import { loadConfig } from '../../services/shared/config';

/**
 * http.ts runs a route's declared params shape before its handler: the handler sees only
 * valid, typed values (and the raw ones beside them), and never runs for a bad request.
 */
describe("http: a route's declared params are validated before its handler", () => {
  const seen: Array<Pick<PublicRouteContext, 'params' | 'raw'>> = [];
  const record = async ({ params, raw }: PublicRouteContext) => {
    seen.push({ params, raw });
    return { success: true };
  };
  let app: FastifyInstance;

  before(() => {
    const broker = new ServiceBroker({ logger: false });
    const common = { summary: 'test', tag: 'test', auth: false as const, response: { type: 'object' }, errors: [] };
    app = buildHttpServer(broker, loadConfig({}), [
      publicRoute({ ...common, method: 'GET', url: '/options', params: SNAP_PARAMS, handler: record }),
      publicRoute({ ...common, method: 'GET', url: '/key-only', params: KEY_ONLY_PARAMS, handler: record }),
      publicRoute({ ...common, method: 'GET', url: '/paged', params: PAGING_PARAMS, handler: record }),
    ]);
  });
  after(() => app.close());
  beforeEach(() => {
    seen.length = 0;
  });

  const get = (url: string) => app.inject({ method: 'GET', url });

  it('hands the handler the typed values of its shape, and the parameters as sent', async () => {
    expect((await get('/options?url=https://example.com&wait=250&fullpage=yes&api_key=secret')).statusCode).to.equal(200);
    expect(seen).to.deep.equal([
      {
        params: { url: 'https://example.com', wait: 250, fullpage: true },
        raw: { url: 'https://example.com', wait: '250', fullpage: 'yes', api_key: 'secret' },
      },
    ]);
    seen.length = 0;
    expect((await get('/paged?limit=5&order=asc&after=1700000000')).statusCode).to.equal(200);
    expect(seen[0]?.params).to.deep.equal({ page: 1, limit: 5, afterMs: 1_700_000_000_000, beforeMs: null, order: 'ASC' });
  });

  for (const [url, note] of [
    ['/options?url=ftp://example.com', 'url: must be a full http:// or https:// URL'],
    ['/options?url=https://example.com&hover_on_selected=true', 'hover_on_selected: requires selectors'],
    ['/key-only?month=5', 'This endpoint takes only access_token.'],
    ['/paged?limit=0', 'limit: must be at least 1'],
    // A page past any account's rows would make an offset SQLite refuses (1e20 * 1000), or lose its digits.
    ['/paged?page=99999999999999999999', 'page: must be at most 1000000'],
    ['/paged?page=1000001&limit=1', 'page: must be at most 1000000'],
    // Numbers that are not (Infinity, NaN) or past any date a record can carry.
    ['/paged?after=Infinity', 'after: must be a finite number, got "Infinity"'],
    ['/paged?before=NaN', 'before: must be of type number'],
    ['/paged?after=1e309', 'after: must be a finite number, got "1e309"'],
    ['/paged?after_date=99999999999999999999999999', 'after_date: must be at most 253402300799999'],
  ] as const) {
    it(`answers ${url} with 400 and the shape's note, without running the handler`, async () => {
      const r = await get(url);
      expect(r.statusCode).to.equal(400);
      expect(r.json()).to.include({ success: false, error_code: 'invalid_parameter' });
      expect(r.json().note).to.contain(note);
      expect(seen).to.deep.equal([]);
    });
  }
});

describe('http: whose forwarding headers are believed (TRUST_PROXY)', () => {
  /** The client's address as the api sees it, for a request from `remoteAddress` carrying X-Forwarded-For: 198.51.100.9. */
  async function clientSeen(env: Record<string, string>, remoteAddress: string): Promise<string> {
    const common = { summary: 'test', tag: 'test', auth: false as const, response: { type: 'object' }, errors: [] };
    const app = buildHttpServer(new ServiceBroker({ logger: false }), loadConfig(env), [
      publicRoute({ ...common, method: 'GET', url: '/ip', handler: async ({ request }) => ({ success: true, ip: request.ip }) }),
    ]);
    try {
      const r = await app.inject({ method: 'GET', url: '/ip', remoteAddress, headers: { 'x-forwarded-for': '198.51.100.9' } });
      return (r.json() as { ip: string }).ip;
    } finally {
      await app.close();
    }
  }

  it('by default, a proxy on loopback or a private network (an ingress, a sidecar), never a client on the internet', async () => {
    expect(await clientSeen({}, '127.0.0.1')).to.equal('198.51.100.9');
    expect(await clientSeen({}, '10.1.2.3')).to.equal('198.51.100.9');
    // A client reaching the api directly cannot name another address for each sign-in attempt.
    expect(await clientSeen({}, '203.0.113.5')).to.equal('203.0.113.5');
  });

  it('TRUST_PROXY=false believes no one, true anyone, a list those named', async () => {
    expect(await clientSeen({ TRUST_PROXY: 'false' }, '127.0.0.1')).to.equal('127.0.0.1');
    expect(await clientSeen({ TRUST_PROXY: 'true' }, '203.0.113.5')).to.equal('198.51.100.9');
    expect(await clientSeen({ TRUST_PROXY: '203.0.113.0/24' }, '203.0.113.5')).to.equal('198.51.100.9');
    expect(await clientSeen({ TRUST_PROXY: '203.0.113.0/24' }, '127.0.0.1')).to.equal('127.0.0.1');
    expect(() => loadConfig({ TRUST_PROXY: 'everyone' })).to.throw(/TRUST_PROXY: "everyone"/);
  });
});
