/** The Grid as capture reads it (and the operator view shows it): SELENIUM_URL's credentials as a header, /status's nodes and sessions. */
import { expect } from 'chai';
import { GridStatusRefused, gridEndpoint, readGridNodes } from '../../../services/capture/public/grid-status';

describe('grid status (capture/public/grid-status.ts)', () => {
  it("moves the URL's user and password into a Basic header, and leaves a URL without them as it is", () => {
    const { url, headers } = gridEndpoint('http://us%40er:pa%3Ass@hub:4444/wd/hub', 'session/abc');
    expect(String(url)).to.equal('http://hub:4444/wd/hub/session/abc');
    expect(headers).to.deep.equal({ authorization: `Basic ${Buffer.from('us@er:pa:ss').toString('base64')}` });
    expect(gridEndpoint('http://hub:4444/', 'status')).to.deep.equal({ url: new URL('http://hub:4444/status'), headers: {} });
  });

  it("reads each node's availability, slots and sessions (a draining node's sessions marked so), and refuses an HTTP error by its status", async () => {
    const status = {
      value: {
        nodes: [
          { uri: 'http://a:5555', availability: 'UP', slots: [{ session: { sessionId: 's1', capabilities: { 'pagepixels:owner': 'x' } } }, { session: null }] },
          { uri: 'http://b:5555', availability: 'DRAINING', slots: [{ session: { sessionId: 's2' } }] },
        ],
      },
    };
    const asked: Array<{ url: string; authorization?: string }> = [];
    const ok = (async (url: URL, init: RequestInit) => {
      asked.push({ url: String(url), authorization: (init.headers as Record<string, string>).authorization });
      return new Response(JSON.stringify(status));
    }) as unknown as typeof fetch;
    expect(await readGridNodes('http://u:p@grid:4444', { fetchFn: ok })).to.deep.equal([
      { uri: 'http://a:5555', availability: 'UP', slots: 2, sessions: [{ sessionId: 's1', draining: false, capabilities: { 'pagepixels:owner': 'x' } }] },
      { uri: 'http://b:5555', availability: 'DRAINING', slots: 1, sessions: [{ sessionId: 's2', draining: true, capabilities: {} }] },
    ]);
    expect(asked).to.deep.equal([{ url: 'http://grid:4444/status', authorization: `Basic ${Buffer.from('u:p').toString('base64')}` }]);
    const down = (async () => new Response('', { status: 503 })) as unknown as typeof fetch;
    const err = await readGridNodes('http://grid:4444', { fetchFn: down }).catch((e: unknown) => e);
    expect(err).to.be.instanceOf(GridStatusRefused).and.have.property('status', 503);
    expect(await readGridNodes('http://grid:4444', { fetchFn: (async () => new Response('{}')) as unknown as typeof fetch })).to.deep.equal([]);
  });
});
