/**
 * The MCP server's handling of answers no route of the built tools gives today, with its
 * API caller stubbed (sinon) and the official SDK client on the SDK's in-memory transport:
 * a text answer (what a CSV report will be) handed over as text, an answer that is neither
 * JSON nor text as internal_error with its detail logged, an unreachable service as the
 * caller's error, and an unknown tool as a JSON-RPC error.
 */
import fs from 'node:fs';
import { expect } from 'chai';
import sinon from 'sinon';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { apiRoutes } from '../../services/api/api.service';
import { openApiDocument } from '../../services/api/http';
import { type ApiAnswer, type ApiCaller, createMcpServer } from '../../services/api/mcp-server';
import { resolveTools } from '../../services/api/mcp-tools';
import { serviceError } from '../../services/shared/errors';
import { createFileStore } from '../../services/shared/storage';
import { configFrom, tempDir } from '../support/backends';

describe('MCP server: answers and failures (stubbed API caller, in-memory transport)', () => {
  const dir = tempDir('mcp-server-');
  const config = configFrom({ DATA_DIR: dir });
  const document = openApiDocument(apiRoutes(createFileStore(config), config), config);
  // A GET tool of the kind the research report will be: one path argument, an answer in any format.
  const tools = resolveTools(
    [
      {
        name: 'job_report',
        title: 'A report',
        description: 'A job, as the route answers it.',
        method: 'GET',
        path: '/jobs/:job_id',
        pathArgs: { job_id: { arg: 'job_id', description: 'The job.' } },
        hints: {},
      },
    ],
    document,
  );
  const send = sinon.stub<Parameters<ApiCaller['send']>, Promise<ApiAnswer>>();
  const report = sinon.spy();
  const failed = sinon.spy();
  let client: Client;

  before(async () => {
    const server = createMcpServer({ document, api: { send }, report, failed }, tools);
    const [a, b] = InMemoryTransport.createLinkedPair();
    await server.connect(a);
    client = new Client({ name: 'unit', version: '1.0.0' });
    await client.connect(b);
  });
  after(async () => {
    await client.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  afterEach(() => {
    send.reset();
    report.resetHistory();
    failed.resetHistory();
  });
  const call = async (args: Record<string, unknown>) => (await client.callTool({ name: 'job_report', arguments: args })) as CallToolResult;

  it('hands a text answer over as text, and asks the route with the path filled and the marker', async () => {
    send.resolves({ status: 200, contentType: 'text/csv; charset=utf-8', body: Buffer.from('domain,title\nexample.com,Example\n') });
    const r = await call({ job_id: 'j1' });
    expect(r).to.deep.equal({ content: [{ type: 'text', text: 'domain,title\nexample.com,Example\n' }] });
    expect(send.firstCall.args[0]).to.deep.equal({ method: 'GET', path: '/jobs/j1', query: { mcp: 'true' } });
    expect(report.firstCall.args[0]).to.include({ tool: 'job_report', outcome: 'ok' });
  });

  it('answers what is neither JSON nor text as internal_error, and hands the detail to the log', async () => {
    send.resolves({ status: 200, contentType: 'image/png', body: Buffer.from([137, 80, 78, 71]) });
    const r = await call({ job_id: 'j2' });
    expect(r.isError).to.equal(true);
    expect(r.structuredContent).to.include({ success: false, error_code: 'internal_error' });
    expect(String((failed.firstCall.args[1] as Error).message)).to.contain('/jobs/:job_id answered 200 image/png, not a JSON object');
    expect(report.firstCall.args[0]).to.include({ outcome: 'internal_error' });
  });

  it("answers the caller's own error (the service cannot be reached) with its code and note, nothing to log", async () => {
    send.rejects(serviceError('capacity_exhausted', 'The service at http://127.0.0.1:9 could not be reached (ECONNREFUSED); is it running?'));
    const r = await call({ job_id: 'j3' });
    expect(r.structuredContent).to.deep.equal({
      success: false,
      error_code: 'capacity_exhausted',
      note: 'The service at http://127.0.0.1:9 could not be reached (ECONNREFUSED); is it running?',
    });
    expect(failed.called).to.equal(false);
  });

  it('answers an unknown tool with a JSON-RPC error naming it', async () => {
    const err = await client.callTool({ name: 'snapshot', arguments: {} }).then(
      () => null,
      (e: unknown) => e as Error & { code?: number },
    );
    expect(err?.code).to.equal(-32602);
    expect(err?.message).to.contain('Unknown tool "snapshot"');
    expect(send.called).to.equal(false);
  });
});
