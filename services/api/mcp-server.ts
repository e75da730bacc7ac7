/**
 * The MCP server of the tool table (mcp-tools.ts), on the SDK's low-level Server: tools/list
 * serves each tool's JSON Schema as its route declares it, tools/call sends the tool's API
 * request through an ApiCaller and turns the answer into a tool result. The caller is the only
 * thing the two transports do differently: inside the api, app.inject (mcp-http.ts); in the
 * stdio server, HTTP to the running service (bin/mcp.ts). Either way the request is a REST
 * request like any client's: the same validation, admission, credits, markers, metrics and
 * logs.
 *
 * A result carries the REST answer as structured content and as JSON text (a text answer, such
 * as a CSV report, as text). A capture's answer
 * (snap, snap_html, a completed job) also carries the image, scaled for the agent
 * (mcp-images.ts), with its full-size direct_link, and with markdown=true the page's Markdown as
 * text. A REST error is a tool error carrying the
 * answer's error_code and note, so the agent can correct its call. A capture reports progress
 * while it runs.
 */
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  type CallToolResult,
  CallToolRequestSchema,
  ErrorCode as RpcError,
  ListToolsRequestSchema,
  McpError,
  type ServerNotification,
} from '@modelcontextprotocol/sdk/types.js';
import { type ErrorCode, type ErrorEnvelope, isErrorCode, toEnvelope } from '../shared/errors';
import { imageForAgent } from './mcp-images';
import type { OpenApiDocument } from './http';
import { type ApiRequest, type ResolvedTool, listedTool, resolveTools, toolRequest, MCP_TOOLS } from './mcp-tools';

/** An API answer: status, content type and body. */
export interface ApiAnswer {
  status: number;
  contentType: string;
  body: Buffer;
}

/** Sends API requests with the caller's key. */
export interface ApiCaller {
  send(request: ApiRequest): Promise<ApiAnswer>;
}

/** One tool call, for the metrics and the log: its outcome is `ok` or the error_code it answered. */
export interface ToolCallReport {
  tool: string;
  outcome: 'ok' | ErrorCode;
  ms: number;
}

/** The User-Agent of the API requests the MCP tools make (with the transport in parentheses). */
export const MCP_USER_AGENT = 'snapservice-mcp';

/** How often a capture reports progress while it runs. */
export const PROGRESS_INTERVAL_MS = 5_000;

const INSTRUCTIONS =
  'A screenshot capture service. snap captures a web page and shows it to you (snap_html renders HTML you give); ' +
  'create_screenshot_config saves a page to capture again (on a schedule, watching elements for changes), and the list tools read the archive and the ' +
  'change alerts. ' +
  'Every capture costs a screenshot credit (get_account_limits). An error carries an error_code and a note that says what to change.';

type Notify = (notification: ServerNotification) => Promise<void>;

/** Progress notifications every PROGRESS_INTERVAL_MS while `what` runs: progress is the seconds elapsed. */
function reportProgress(notify: Notify, token: string | number, what: string): () => void {
  const started = Date.now();
  const send = () => {
    const seconds = Math.round((Date.now() - started) / 1000);
    notify({ method: 'notifications/progress', params: { progressToken: token, progress: seconds, message: `${what}: ${seconds} s so far` } }).catch(
      () => undefined,
    );
  };
  send();
  const timer = setInterval(send, PROGRESS_INTERVAL_MS);
  return () => clearInterval(timer);
}

function parseJson(answer: ApiAnswer): Record<string, unknown> | null {
  if (!answer.contentType.includes('json')) return null;
  try {
    const body = JSON.parse(answer.body.toString('utf8')) as unknown;
    return typeof body === 'object' && body !== null && !Array.isArray(body) ? (body as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** A tool error: the error envelope (with whatever else the answer said, such as a failed job's status) as text and structured content. */
function toolError(answer: ErrorEnvelope & Record<string, unknown>): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: JSON.stringify(answer) }], structuredContent: answer };
}

/** The stored file a direct_link names, through the API's public file route. */
function fileName(link: string): string | null {
  try {
    const name = new URL(link).pathname.split('/').pop() ?? '';
    return /^[A-Za-z0-9_-]+\.[a-z]+$/.test(name) ? name : null;
  } catch {
    return null;
  }
}

/** The screenshot at `link` as content for the agent: the image and a line naming its full size; a line saying why not when it cannot be shown. */
async function screenshotContent(api: ApiCaller, link: string): Promise<CallToolResult['content']> {
  const name = fileName(link);
  const file = name ? await api.send({ method: 'GET', path: `/cdn/${name}` }) : null;
  if (file?.status !== 200) return [{ type: 'text', text: `The screenshot could not be read just now; it is at ${link}` }];
  const image = await imageForAgent(file.body, file.contentType);
  if (!image) return [{ type: 'text', text: `The capture is a ${file.contentType} file, not an image: ${link}` }];
  const { original: o } = image;
  const size = image.converted
    ? `scaled down to ${image.width}×${image.height} JPEG from the ${o.width}×${o.height} ${o.format} capture`
    : `${image.width}×${image.height} ${o.format}, as captured`;
  return [
    { type: 'image', data: image.data, mimeType: image.mimeType },
    { type: 'text', text: `The screenshot above is ${size}. Full size: ${link}` },
  ];
}

/** The page's Markdown at `link` (markdown=true) as text content for the agent; a line saying where it is when it cannot be read. */
async function markdownContent(api: ApiCaller, link: string): Promise<CallToolResult['content']> {
  const name = fileName(link);
  const file = name ? await api.send({ method: 'GET', path: `/cdn/${name}` }) : null;
  if (file?.status !== 200) return [{ type: 'text', text: `The page's Markdown could not be read just now; it is at ${link}` }];
  return [{ type: 'text', text: `The page's main content as Markdown (${link}):\n\n${file.body.toString('utf8')}` }];
}

/** One call's result, its outcome for the report, and the error when it failed on this side. */
interface ToolRun {
  result: CallToolResult;
  outcome: ToolCallReport['outcome'];
  error?: unknown;
}

/** Runs one call of `tool`. */
async function runTool(tool: ResolvedTool, args: Record<string, unknown>, api: ApiCaller): Promise<ToolRun> {
  try {
    const answer = await api.send(toolRequest(tool, args));
    const body = parseJson(answer);
    // A text answer (a report asked for as CSV) is handed over as text.
    if (!body && answer.status < 400 && answer.contentType.startsWith('text/'))
      return { result: { content: [{ type: 'text', text: answer.body.toString('utf8') }] }, outcome: 'ok' };
    if (!body) throw new Error(`${tool.spec.method} ${tool.spec.path} answered ${answer.status} ${answer.contentType}, not a JSON object`);
    if (answer.status >= 400 || body.success === false) {
      const code = isErrorCode(body.error_code) ? body.error_code : 'internal_error';
      const note = typeof body.note === 'string' ? body.note : toEnvelope(null).body.note;
      return { result: toolError({ ...body, success: false, error_code: code, note }), outcome: code };
    }
    const link = tool.spec.image?.(body);
    const markdown = tool.spec.markdown?.(body);
    const content: CallToolResult['content'] = [
      { type: 'text', text: JSON.stringify(body) },
      ...(link ? await screenshotContent(api, link) : []),
      ...(markdown ? await markdownContent(api, markdown) : []),
    ];
    return { result: { content, structuredContent: body }, outcome: 'ok' };
  } catch (err) {
    // A refused argument (serviceError) keeps its code and note; anything else is ours.
    const { body } = toEnvelope(err);
    return { result: toolError({ ...body }), outcome: body.error_code, ...(body.error_code === 'internal_error' ? { error: err } : {}) };
  }
}

export interface McpServerDeps {
  /** The API's OpenAPI document, the tools' schemas are read from (mcp-tools.ts). */
  document: OpenApiDocument;
  api: ApiCaller;
  /** Told of every tool call (metrics, log line). */
  report(call: ToolCallReport): void;
  /** Told of a call that failed on this side (the detail, for the log; the agent sees internal_error). */
  failed(tool: string, err: unknown): void;
}

/** The resolved tool table of a document (throws when a tool's route is missing). */
export function mcpTools(document: OpenApiDocument): Map<string, ResolvedTool> {
  return resolveTools(MCP_TOOLS, document);
}

/** An MCP server serving the tool table through `api`. */
export function createMcpServer(deps: McpServerDeps, tools: Map<string, ResolvedTool> = mcpTools(deps.document)): Server {
  const server = new Server(
    { name: 'snapservice', title: 'Screenshot capture service', version: deps.document.info?.version ?? '1.0.0' },
    { capabilities: { tools: { listChanged: false } }, instructions: INSTRUCTIONS },
  );

  server.setRequestHandler(ListToolsRequestSchema, async () => {
    // This server's real locations, offered as real_location's values.
    const answer = await deps.api.send({ method: 'GET', path: '/real_locations', query: { mcp: 'true' } }).catch(() => null);
    const results = answer?.status === 200 ? parseJson(answer)?.results : undefined;
    const locations = Array.isArray(results) ? results.filter((r): r is string => typeof r === 'string') : null;
    return { tools: [...tools.values()].map((t) => listedTool(t, locations)) };
  });

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const tool = tools.get(request.params.name);
    if (!tool) throw new McpError(RpcError.InvalidParams, `Unknown tool "${request.params.name}"; tools/list names the tools.`);
    const started = Date.now();
    const args = request.params.arguments ?? {};
    const token = extra._meta?.progressToken;
    const what = typeof args.url === 'string' ? `Capturing ${args.url}` : 'Rendering the HTML document';
    const stop = tool.spec.progress && token !== undefined ? reportProgress(extra.sendNotification, token, what) : () => undefined;
    try {
      const { result, outcome, error } = await runTool(tool, args, deps.api);
      if (error !== undefined) deps.failed(tool.spec.name, error);
      deps.report({ tool: tool.spec.name, outcome, ms: Date.now() - started });
      return result;
    } finally {
      stop();
    }
  });
  return server;
}
