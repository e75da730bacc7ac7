/**
 * POST /mcp: the MCP server (mcp-server.ts) on the Streamable HTTP transport of the official
 * SDK, in the api itself. The account's API key is the bearer token, under the REST API's key
 * rules (http.ts, tokenOf and billing.authenticate: rate limit included); a missing or refused
 * key is a 401 with the WWW-Authenticate challenge MCP clients read (RFC 6750, with the
 * protected resource metadata of RFC 9728, served at PROTECTED_RESOURCE_PATH).
 *
 * Stateless (docs/mcp.md): each POST gets its own server and transport and answers on its
 * own, so any api instance answers any message and nothing is kept between them; a tool
 * call's progress goes out on its own POST's event stream. A tool call runs its REST route
 * through app.inject, in this process, with the caller's key and request id: validation,
 * admission, credits, markers and access lines are exactly a REST client's, and the key, once
 * authenticated for the POST, is not counted again (withAuthenticatedKey).
 */
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { LoggerInstance, ServiceBroker } from 'moleculer';
import type { Config } from '../shared/config';
import type { AccountContext } from '../shared/contracts';
import { serviceError, toEnvelope } from '../shared/errors';
import { ERROR_ENVELOPE_SCHEMA, type OpenApiDocument, type RouteDef, authenticate, publicRoute, sendError, tokenOf, withAuthenticatedKey } from './http';
import type { ApiMetrics } from './metrics';
import { type ApiCaller, MCP_USER_AGENT, createMcpServer, mcpTools } from './mcp-server';
import type { RawParams } from './request-schemas';
import { inRequestContext } from './request-log';

const MCP_PATH = '/mcp';
/** RFC 9728's address of the metadata of the resource at MCP_PATH. */
const PROTECTED_RESOURCE_PATH = '/.well-known/oauth-protected-resource/mcp';

/** The protected resource metadata (RFC 9728) of the MCP endpoint: the API key, as a bearer token in the header. */
export function mcpRoutes(config: Pick<Config, 'baseUrl'>): RouteDef[] {
  return [
    publicRoute({
      method: 'GET',
      url: PROTECTED_RESOURCE_PATH,
      summary: 'How the MCP endpoint (POST /mcp) is authenticated (RFC 9728): the account\'s API key as "Authorization: Bearer <key>".',
      tag: 'mcp',
      auth: false,
      response: {
        type: 'object',
        properties: {
          resource: { type: 'string' },
          bearer_methods_supported: { type: 'array', items: { type: 'string' } },
          resource_name: { type: 'string' },
        },
      },
      errors: [],
      handler: async () => ({
        resource: `${config.baseUrl}${MCP_PATH}`,
        bearer_methods_supported: ['header'],
        resource_name: 'Screenshot capture service (MCP)',
      }),
    }),
  ];
}

/** The challenge of a 401: where the metadata is, and (RFC 6750) invalid_token when a key was given and refused. */
function challenge(reply: FastifyReply, err: unknown, config: Pick<Config, 'baseUrl'>): void {
  const { body, status } = toEnvelope(err);
  if (status !== 401) return;
  const refused = body.error_code === 'access_token_invalid' ? ', error="invalid_token"' : '';
  reply.header('WWW-Authenticate', `Bearer realm="snapservice"${refused}, resource_metadata="${config.baseUrl}${PROTECTED_RESOURCE_PATH}"`);
}

/** The key, as the REST API takes it (http.ts, tokenOf); a missing one with a note about MCP clients. */
function keyOf(query: RawParams, request: FastifyRequest): string {
  try {
    return tokenOf(query, request);
  } catch (err) {
    if (toEnvelope(err).body.error_code !== 'access_token_required') throw err;
    throw serviceError(
      'access_token_required',
      `${MCP_PATH} needs the account's API key: configure the MCP client to send the header "Authorization: Bearer <key>" (a client that only takes a URL ` +
        `can use ${MCP_PATH}?access_token=<key>).`,
    );
  }
}

/** API requests through app.inject with the caller's key, tagged with the /mcp request's id. */
function injectedApi(app: FastifyInstance, token: string, requestId: string): ApiCaller {
  return {
    async send(req) {
      const query = new URLSearchParams(req.query ?? {}).toString();
      const answer = await app.inject({
        method: req.method,
        url: query ? `${req.path}?${query}` : req.path,
        headers: {
          authorization: `Bearer ${token}`,
          'x-request-id': requestId,
          'user-agent': `${MCP_USER_AGENT} (streamable-http)`,
          ...(req.body ? { 'content-type': 'application/json' } : {}),
        },
        ...(req.body ? { payload: JSON.stringify(req.body) } : {}),
      });
      return { status: answer.statusCode, contentType: String(answer.headers['content-type'] ?? ''), body: answer.rawPayload };
    },
  };
}

export interface McpEndpointDeps {
  broker: ServiceBroker;
  config: Pick<Config, 'baseUrl'>;
  /** The API's OpenAPI document: the tools' schemas. */
  document: OpenApiDocument;
  metrics: ApiMetrics;
}

/** A JSON-RPC 2.0 message, as MCP sends them (its methods and their params: docs/mcp.md, the MCP specification). */
const JSON_RPC_MESSAGE = {
  type: 'object',
  required: ['jsonrpc'],
  properties: {
    jsonrpc: { const: '2.0' },
    id: { anyOf: [{ type: 'string' }, { type: 'integer' }, { type: 'null' }] },
    method: { type: 'string', description: 'initialize, tools/list, tools/call, ping…' },
    params: { type: 'object', additionalProperties: {} },
    result: { type: 'object', additionalProperties: {} },
    error: { type: 'object', properties: { code: { type: 'integer' }, message: { type: 'string' } } },
  },
};

/**
 * The document with POST /mcp in it: installed beside the route table (it takes the MCP SDK's
 * transport, not a route's handler), and listed as every route is.
 */
export function withMcpEndpoint(document: OpenApiDocument): OpenApiDocument {
  const envelope = { content: { 'application/json': { schema: ERROR_ENVELOPE_SCHEMA } } };
  const post = {
    summary: 'The MCP server (streamable HTTP, MCP 2025-06-18, no session): one JSON-RPC message per POST; docs/mcp.md.',
    tags: ['mcp'],
    requestBody: { required: true, content: { 'application/json': { schema: JSON_RPC_MESSAGE } } },
    responses: {
      200: {
        description: "The JSON-RPC answer (as JSON, or as one event of text/event-stream when the client's Accept names only that).",
        content: { 'application/json': { schema: JSON_RPC_MESSAGE }, 'text/event-stream': { schema: { type: 'string' } } },
      },
      202: { description: 'A notification or an answer taken (no body).' },
      400: { description: 'A batch, or a message that is not JSON-RPC (a JSON-RPC error).', content: { 'application/json': { schema: JSON_RPC_MESSAGE } } },
      401: { description: 'error_code: access_token_required, access_token_invalid (with WWW-Authenticate naming the resource metadata).', ...envelope },
      406: { description: 'Accept names neither application/json nor text/event-stream.' },
      429: { description: 'error_code: rate_limited', ...envelope },
    },
  };
  return { ...document, paths: { ...document.paths, [MCP_PATH]: { post } } };
}

/** Adds POST /mcp to the api's server (GET and DELETE answer 405: no session, no stream of its own). */
export function installMcpEndpoint(app: FastifyInstance, deps: McpEndpointDeps): void {
  const { broker, config, document, metrics } = deps;
  const log: LoggerInstance = broker.getLogger('mcp');
  // Resolved once: a tool naming a route the API lacks stops the api from starting.
  const tools = mcpTools(document);
  app.route({
    method: 'POST',
    url: MCP_PATH,
    handler: inRequestContext(async (request, reply) => {
      let token: string;
      let account: AccountContext;
      try {
        const query = { ...(request.query as RawParams) };
        token = keyOf(query, request);
        account = await authenticate(broker, token);
        const extra = Object.keys(query);
        if (extra.length > 0)
          throw serviceError('invalid_parameter', `${extra[0]}: ${MCP_PATH} takes no query parameter but access_token; the MCP messages go in the JSON body.`);
      } catch (err) {
        challenge(reply, err, config);
        return sendError(reply, err, log);
      }
      // One JSON-RPC message per POST, as MCP 2025-06-18 has it (it dropped batches): a batch
      // counts once against the account's rate limit but would run every call in it.
      if (Array.isArray(request.body)) {
        reply.code(400).header('content-type', 'application/json; charset=utf-8');
        return JSON.stringify({
          jsonrpc: '2.0',
          id: null,
          error: { code: -32600, message: 'Invalid Request: send one JSON-RPC message per POST; batches are not taken (MCP 2025-06-18 has none).' },
        });
      }
      const server = createMcpServer(
        {
          document,
          api: injectedApi(app, token, request.id),
          report: (call) => {
            metrics.mcpToolCall(call);
            log.info({ mcp_tool: call.tool, outcome: call.outcome, ms: call.ms }, `tools/call ${call.tool}: ${call.outcome}`);
          },
          failed: (tool, err) => log.error({ mcp_tool: tool }, 'tool call failed', err),
        },
        tools,
      );
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      reply.hijack();
      reply.raw.setHeader('X-Request-Id', request.id);
      reply.raw.on('close', () => {
        void transport.close();
        void server.close();
      });
      try {
        await server.connect(transport);
        await withAuthenticatedKey(token, account, () => transport.handleRequest(request.raw, reply.raw, request.body));
      } catch (err) {
        log.error('MCP request failed', err);
        if (!reply.raw.headersSent) {
          reply.raw.writeHead(500, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify(toEnvelope(err).body));
        }
      }
    }),
  });
}
