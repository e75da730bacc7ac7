/** The operator pages' readings: failures by error code from the capture counters, and the Grid's nodes from its /status. */
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { failuresByCode, gridNodes } from '../../../../services/api/console/pages/operator';
import type { MetricsSnapshot } from '../../../../services/shared/contracts';

const counter = (values: Array<{ outcome: string; error_code?: string; value: number }>) =>
  [
    {
      name: 'snapservice_captures_total',
      help: '',
      type: 'counter',
      aggregator: 'sum',
      values: values.map(({ value, ...labels }) => ({ value, labels })),
    },
  ] as unknown as MetricsSnapshot;

describe('operator pages (pages/operator.ts)', () => {
  it('sums failed captures by error code over the instances, most first, and leaves out successes and zeros', () => {
    const a = counter([
      { outcome: 'failure', error_code: 'timeout', value: 2 },
      { outcome: 'failure', error_code: 'page_status', value: 1 },
      { outcome: 'success', value: 40 },
      { outcome: 'failure', error_code: 'dns', value: 0 },
    ]);
    const b = counter([{ outcome: 'failure', error_code: 'page_status', value: 3 }]);
    expect(failuresByCode([a, b])).to.deep.equal([
      { code: 'page_status', count: 4 },
      { code: 'timeout', count: 2 },
    ]);
  });

  it("reads the Grid's nodes and their sessions, says when it does not answer, and is null without a Grid", async () => {
    expect(await gridNodes(null)).to.equal(null);
    const status = {
      value: {
        nodes: [
          { uri: 'http://node-a:5555', availability: 'UP', slots: [{ session: { sessionId: 's1' } }, { session: null }] },
          { uri: 'http://node-b:5555', availability: 'DRAINING', slots: [] },
        ],
      },
    };
    const seen: string[] = [];
    const ok = (async (url: URL) => {
      seen.push(String(url));
      return new Response(JSON.stringify(status));
    }) as unknown as typeof fetch;
    expect(await gridNodes('http://grid:4444/wd/hub', ok)).to.deep.equal({
      nodes: [
        { uri: 'http://node-a:5555', availability: 'UP', slots: 2, sessions: 1 },
        { uri: 'http://node-b:5555', availability: 'DRAINING', slots: 0, sessions: 0 },
      ],
    });
    expect(seen).to.deep.equal(['http://grid:4444/wd/hub/status']);
    const down = (async () => new Response('', { status: 503 })) as unknown as typeof fetch;
    expect(await gridNodes('http://grid:4444', down)).to.deep.equal({ error: "The Grid's /status answered 503." });
    const refused = (async () => {
      throw new Error('connect ECONNREFUSED');
    }) as unknown as typeof fetch;
    expect(await gridNodes('http://grid:4444', refused)).to.deep.equal({ error: 'The Grid did not answer (connect ECONNREFUSED).' });
  });

  it('reads a Grid whose SELENIUM_URL holds credentials (they go as a header) and never shows them', async () => {
    const basic = `Basic ${Buffer.from('admin:s3cret').toString('base64')}`;
    const server = http.createServer((req, res) => {
      if (req.headers.authorization !== basic) return void res.writeHead(401).end();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ value: { nodes: [{ uri: 'http://node-a:5555', availability: 'UP', slots: [{ session: { sessionId: 's1' } }] }] } }));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    try {
      expect(await gridNodes(`http://admin:s3cret@127.0.0.1:${port}/wd/hub`)).to.deep.equal({
        nodes: [{ uri: 'http://node-a:5555', availability: 'UP', slots: 1, sessions: 1 }],
      });
      expect(await gridNodes(`http://admin:wrong@127.0.0.1:${port}/wd/hub`)).to.deep.equal({ error: "The Grid's /status answered 401." });
    } finally {
      server.close();
      await once(server, 'close');
    }
    const gone = await gridNodes(`http://admin:s3cret@127.0.0.1:${port}/wd/hub`);
    expect(gone)
      .to.have.property('error')
      .that.matches(/^The Grid did not answer/);
    expect(JSON.stringify(gone)).not.to.include('s3cret');
  });
});
