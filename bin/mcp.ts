#!/usr/bin/env node
/**
 * `npm run --silent mcp` (or `node dist/bin/mcp.js`): the MCP tools on stdio, for an agent
 * on the user's machine (docs/mcp.md). A client of a running service: each tool call is a
 * REST request to SNAPSERVICE_URL with SNAPSERVICE_API_KEY, the same tool table as the
 * service's own /mcp, its schemas read from the service's /openapi.json. Its stdout is the
 * protocol; its log lines (one per tool call, JSON by default) go to stderr. It stops when
 * its standard input closes (the agent's host went away) or on SIGINT/SIGTERM.
 */
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { LogLevels } from 'moleculer';
import { type ApiCaller, MCP_USER_AGENT, createMcpServer } from '../services/api/mcp-server';
import type { OpenApiDocument } from '../services/api/http';
import { type McpStdioConfig, ConfigError, loadMcpStdioConfig } from '../services/shared/config';
import { serviceError, toEnvelope } from '../services/shared/errors';
import { formatLine, logRecord } from '../services/shared/logging';

let format: McpStdioConfig['logFormat'] = 'json';

/** One log line on stderr (redacted, as every line of the service). */
function line(level: LogLevels, fields: Record<string, unknown>, msg: string, err?: unknown): void {
  const args = err === undefined ? [fields, msg] : [fields, msg, err];
  process.stderr.write(`${formatLine(logRecord(level, args, { nodeID: 'mcp-stdio', mod: 'mcp' }, {}), format)}\n`);
}

/** API requests over HTTP with the key. A service that cannot be reached is 503 capacity_exhausted, saying so. */
function httpApi(base: string, key: string): ApiCaller {
  return {
    async send(req) {
      const url = new URL(`${base}${req.path}`);
      if (req.query) url.search = new URLSearchParams(req.query).toString();
      let answer: Response;
      try {
        answer = await fetch(url, {
          method: req.method,
          headers: { authorization: `Bearer ${key}`, 'user-agent': `${MCP_USER_AGENT} (stdio)`, ...(req.body ? { 'content-type': 'application/json' } : {}) },
          ...(req.body ? { body: JSON.stringify(req.body) } : {}),
        });
      } catch (err) {
        const why = (err as { cause?: { code?: string; message?: string } }).cause;
        throw serviceError('capacity_exhausted', `The service at ${base} could not be reached (${why?.code ?? why?.message ?? 'no answer'}); is it running?`);
      }
      return { status: answer.status, contentType: answer.headers.get('content-type') ?? '', body: Buffer.from(await answer.arrayBuffer()) };
    },
  };
}

/** The service's OpenAPI document, and the key checked: a wrong key or an unreachable service stops this process at once, saying why. */
async function connect(api: ApiCaller, base: string): Promise<OpenApiDocument> {
  const limits = await api.send({ method: 'GET', path: '/account_limits', query: { mcp: 'true' } });
  if (limits.status !== 200) {
    let answer: { error_code?: unknown; note?: unknown } = {};
    try {
      answer = JSON.parse(limits.body.toString('utf8')) as typeof answer;
    } catch {
      // Not this API's answer: its status says enough.
    }
    throw new Error(
      (
        `the service at ${base} answered ${limits.status} (${String(answer.error_code ?? 'not this API')}) ` +
        `to the key in SNAPSERVICE_API_KEY. ${String(answer.note ?? '')}`
      ).trim(),
    );
  }
  const document = await api.send({ method: 'GET', path: '/openapi.json' });
  if (document.status !== 200) throw new Error(`${base}/openapi.json answered ${document.status}: is SNAPSERVICE_URL this screenshot service?`);
  return JSON.parse(document.body.toString('utf8')) as OpenApiDocument;
}

async function main(): Promise<void> {
  let config: Readonly<McpStdioConfig>;
  try {
    config = loadMcpStdioConfig();
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    line('fatal', {}, `Configuration error: ${err.message}`);
    process.exit(2);
  }
  format = config.logFormat;
  const api = httpApi(config.url, config.key);
  let document: OpenApiDocument;
  try {
    document = await connect(api, config.url);
  } catch (err) {
    const message = err instanceof Error && !('type' in err) ? err.message : toEnvelope(err).body.note;
    line('fatal', { url: config.url }, `Cannot serve the MCP tools: ${message}`);
    process.exit(2);
  }
  const server = createMcpServer({
    document,
    api,
    report: (call) => line('info', { mcp_tool: call.tool, outcome: call.outcome, ms: call.ms }, `tools/call ${call.tool}: ${call.outcome}`),
    failed: (tool, err) => line('error', { mcp_tool: tool }, 'tool call failed', err),
  });
  const stop = () => void server.close().finally(() => process.exit(0));
  process.stdin.on('end', stop);
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  await server.connect(new StdioServerTransport());
  line('info', { url: config.url }, `MCP tools on stdio, calling the service at ${config.url}`);
}

main().catch((err) => {
  line('fatal', {}, 'The MCP stdio server failed', err);
  process.exit(1);
});
