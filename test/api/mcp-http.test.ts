/**
 * /mcp takes the account's key under the REST API's rules (docs/mcp.md): the forms the REST
 * API takes it in, the same refusals, and the same rate limit, shared with REST, where each
 * MCP message counts once (a tool call's REST request, run inside it, is not counted again).
 * A system without browsers: the tools used here read the account.
 */
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { backendConfig } from '../support/backends';
import { request } from '../support/http';
import { type RunningSystem, runSystem } from '../support/system';

describe('MCP: the key rules and the rate limit of the REST API', function () {
  this.timeout(60_000);
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  const clients: Client[] = [];

  before(async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing,ai,proxy', RATE_LIMIT_MAX: '4', RATE_LIMIT_WINDOW_SECONDS: '600' });
    cleanup = b.cleanup;
    sys = await runSystem(b.config);
  });
  after(async () => {
    for (const c of clients) await c.close();
    await sys?.stop();
    await cleanup?.();
  });

  const connect = async (url: string, headers: Record<string, string> = {}) => {
    const client = new Client({ name: 'mcp-keys-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
    clients.push(client);
    return client;
  };
  const limits = async (client: Client) => (await client.callTool({ name: 'get_account_limits', arguments: {} })) as CallToolResult;

  it('takes the key as a bearer token, as the bare Authorization value, or as access_token in the URL; refuses another scheme', async () => {
    const bearer = (await sys.account()).access_token;
    expect((await limits(await connect(`${sys.base}/mcp`, { authorization: `Bearer ${bearer}` }))).isError ?? false).to.equal(false);
    const bare = (await sys.account()).access_token;
    expect((await limits(await connect(`${sys.base}/mcp`, { authorization: bare }))).isError ?? false).to.equal(false);
    const inUrl = (await sys.account()).access_token;
    expect((await limits(await connect(`${sys.base}/mcp?access_token=${inUrl}`))).isError ?? false).to.equal(false);
    const basic = await request(sys.base, 'POST', '/mcp', { headers: { authorization: `Basic ${Buffer.from(`u:${bearer}`).toString('base64')}` }, json: {} });
    expect([basic.status, basic.body.error_code]).to.deep.equal([401, 'access_token_invalid']);
    expect(basic.headers.get('www-authenticate')).to.contain('error="invalid_token"');
    const stray = await request(sys.base, 'POST', `/mcp?access_token=${bearer}&session=1`, { json: {} });
    expect([stray.status, stray.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
    expect(String(stray.body.note)).to.contain('session: /mcp takes no query parameter but access_token');
  });

  it('counts each MCP message once against the rate limit REST requests share, and answers 429 past it', async () => {
    const key = (await sys.account()).access_token;
    // initialize and notifications/initialized: 2 of the 4 requests allowed.
    const client = await connect(`${sys.base}/mcp`, { authorization: `Bearer ${key}` });
    // Two tool calls: 4 of 4 (the REST request each runs is not counted again).
    for (let i = 0; i < 2; i++) expect((await limits(client)).isError ?? false, `call ${i + 1}`).to.equal(false);
    const refused = await limits(client).then(
      () => null,
      (e: unknown) => e as Error & { code?: number },
    );
    expect(refused?.code).to.equal(429);
    expect(refused?.message).to.contain('rate_limited');
    const rest = await request(sys.base, 'GET', '/account_limits', { headers: { authorization: `Bearer ${key}` } });
    expect([rest.status, rest.body.error_code]).to.deep.equal([429, 'rate_limited']);
    expect(Number(rest.headers.get('retry-after'))).to.be.greaterThan(0);
  });
});
