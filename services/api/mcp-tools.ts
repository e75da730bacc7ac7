/**
 * The MCP tools (docs/mcp.md): the hosted PagePixels MCP server's tools, with its names and
 * argument names, each one REST route of this service. A tool is declared once here: its
 * name, what it tells the agent, the route it calls, the arguments that fill the route's path,
 * and its hints. Its input schema is not written here: it is the route's own parameters, read
 * from the OpenAPI document that the route table generates (http.ts, openApiDocument), so a
 * tool takes exactly what its route validates (the option table's shapes, the paging
 * parameters). Its output schema is read from there too: the route's JSON answer (its owner's
 * published records), or the error envelope of a tool error; a tool whose route may answer
 * something else than JSON (a report as CSV) declares none. Both transports serve this table:
 * /mcp inside the api (mcp-http.ts) and the
 * stdio server (bin/mcp.ts), which reads the document from the service it talks to.
 */
import type { Tool, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import { serviceError } from '../shared/errors';
import { ERROR_ENVELOPE_SCHEMA, type OpenApiDocument, type OpenApiOperation, openApiPath } from './http';
import { MAX_PARAM_LENGTH } from './protocol-errors';

type JsonSchema = Record<string, unknown>;

export type ToolMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** An argument that fills a `:name` of the route's path. */
export interface PathArgument {
  /** The argument's name (the hosted server's). */
  arg: string;
  description: string;
}

/** One tool, as declared. */
export interface ToolSpec {
  name: string;
  title: string;
  /** What the agent reads to decide when and how to call it. */
  description: string;
  method: ToolMethod;
  /** The route as the route table writes it, e.g. /screenshot_configs/:id. */
  path: string;
  /** Each `:name` of the path, and the argument that gives it. */
  pathArgs?: Record<string, PathArgument>;
  /** Parameters the tool always sends: an argument may repeat the value, never contradict it. */
  fixed?: Record<string, { value: unknown; why: string }>;
  /** Hints for the agent's host: readOnlyHint, destructiveHint, idempotentHint, openWorldHint. */
  hints: Omit<ToolAnnotations, 'title'>;
  /** Where the answer names a screenshot to show the agent (its direct_link). */
  image?: (answer: Record<string, unknown>) => string | undefined;
  /** Where the answer names the page's Markdown (markdown=true's markdown_url), handed to the agent as text beside the image. */
  markdown?: (answer: Record<string, unknown>) => string | undefined;
  /** It captures before it answers: progress is reported while it runs. */
  progress?: true;
}

const CONFIG_ID: PathArgument = {
  arg: 'screenshot_configuration_id',
  description:
    "The configuration's id: screenshot_configuration_id as create_screenshot_config answered it (list_screenshot_configs lists them under " +
    'ids.screenshot_config_id).',
};
const RESEARCH_JOB_ID: PathArgument = {
  arg: 'job_id',
  description: "The domain research job's id: job_id as create_domain_research answered it (list_domain_research_reports lists them).",
};
const JOB_ID: PathArgument = {
  arg: 'job_id',
  description: "The capture job's id: job_id as snap, create_screenshot_config or capture_screenshot answered it.",
};

/** The snap record's screenshot (none for html_only, which answers the HTML). */
const snapImage = (answer: Record<string, unknown>) => (typeof answer.direct_link === 'string' && answer.direct_link !== '' ? answer.direct_link : undefined);
/** The snap record's Markdown of the page (markdown=true). */
const snapMarkdown = (answer: Record<string, unknown>) =>
  typeof answer.markdown_url === 'string' && answer.markdown_url !== '' ? answer.markdown_url : undefined;
/** A finished job's screenshot. */
const jobImage = (answer: Record<string, unknown>) => {
  const shot = answer.screenshot as { direct_link?: unknown } | undefined;
  return answer.status === 'completed' && typeof shot?.direct_link === 'string' ? shot.direct_link : undefined;
};

const SNAP_JSON = { json: { value: true, why: 'the tool answers the screenshot record and the image together' } };
const READ: ToolSpec['hints'] = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false };
/** A capture: not read-only (it spends a credit and is archived), it visits the web. */
const CAPTURES: ToolSpec['hints'] = { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true };
/** Overwrites or deletes what the account stored. */
const OVERWRITES: ToolSpec['hints'] = { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false };
const PAGING =
  'Paged: page (from 1), limit (1 to 1000, default 1000), after and before (unix timestamps, seconds or milliseconds), order (DESC newest first, the ' +
  'default, or ASC); has_more says whether another page follows.';

export const MCP_TOOLS: readonly ToolSpec[] = [
  {
    name: 'snap',
    title: 'Capture a web page',
    description:
      'Capture a web page now and look at it. Answers the screenshot as an image (scaled to fit 1568 px and 1.15 megapixels), its full-size direct_link, and ' +
      'the screenshot record (id, direct_link, embed_url, job_id, taken_at) as structured content. ' +
      '1 screenshot credit; none when a capture of the same url and options younger than ttl seconds (default 86400) is reused: ttl=0 captures fresh. ' +
      'Useful options: page_width and page_height (viewport, CSS pixels), fullpage, wait (ms) or wait_for (CSS selector), selectors (capture one element), ' +
      'image_format, scale_factor, no_cookie_banners, no_ads, multi_step_actions (clicks, typing, scrolling before the capture), real_location (capture from ' +
      'another country, one of list_real_locations), analyze_image_with_ai with ai_prompt (an AI answer about the capture, 1 AI credit), ' +
      "markdown=true (also answers the page's main content as Markdown text, same credit), metadata=true (title, description, Open Graph, " +
      'status, headers, redirects, fonts in the record, same credit). ' +
      'html_only=true answers the rendered HTML instead of an image. A bad option is answered as an error whose note says what to change.',
    method: 'POST',
    path: '/snap',
    fixed: SNAP_JSON,
    hints: CAPTURES,
    image: snapImage,
    markdown: snapMarkdown,
    progress: true,
  },
  {
    name: 'snap_html',
    title: 'Render HTML and capture it',
    description:
      'Render an HTML document you give in html_content in the browser and look at the result: the same answer and options as snap, without url. ' +
      'The document has no address of its own, so relative links lead nowhere: use absolute URLs for images, styles and scripts. 1 screenshot credit (ttl ' +
      'reuse as in snap).',
    method: 'POST',
    path: '/snap_html',
    fixed: SNAP_JSON,
    hints: CAPTURES,
    image: snapImage,
    markdown: snapMarkdown,
    progress: true,
  },
  {
    name: 'create_screenshot_config',
    title: 'Save a screenshot configuration',
    description:
      'Save a capture configuration (a url with capture options), optionally recurring (scheduled_screenshot=true with scheduled_every and ' +
      'scheduled_interval), and start its first capture at once. ' +
      'Answers screenshot_configuration_id, embed_url (a public link to its latest image) and job_id: call get_job_status with job_id to see the capture. ' +
      'A change step in multi_step_actions ({"type": "change", "selector": "#price", "send_to": "webhook", "url": "https://…"}) watches an element: when its ' +
      'text differs from the previous capture, a change alert is recorded (list_config_change_notifications) and sent. ' +
      'webhook_url receives each capture. 1 screenshot credit per capture.',
    method: 'POST',
    path: '/screenshot_configs',
    hints: CAPTURES,
  },
  {
    name: 'capture_screenshot',
    title: 'Capture a configuration now',
    description:
      'Start a capture of a saved configuration now, with its stored options (its schedule is not disturbed). Answers job_id: call get_job_status with it ' +
      'until the capture is completed, which answers the screenshot. 1 screenshot credit.',
    method: 'POST',
    path: '/screenshot_configs/:id/capture',
    pathArgs: { id: CONFIG_ID },
    hints: CAPTURES,
  },
  {
    name: 'get_screenshot_config',
    title: 'Read a screenshot configuration',
    description: 'Read a saved configuration: its options as they were given, its ids (screenshot_config_id, embed_url) and when it was created.',
    method: 'GET',
    path: '/screenshot_configs/:id',
    pathArgs: { id: CONFIG_ID },
    hints: READ,
  },
  {
    name: 'update_screenshot_config',
    title: 'Change a screenshot configuration',
    description:
      'Change options of a saved configuration: give only what changes (url may be left out; the stored one is kept), the rest is kept. ' +
      'A recurring configuration stays recurring only when the change carries scheduled_screenshot=true (with scheduled_every and scheduled_interval); ' +
      'without it the configuration becomes one-time. ' +
      'Answers the configuration as it now is. Nothing is captured.',
    method: 'PATCH',
    path: '/screenshot_configs/:id',
    pathArgs: { id: CONFIG_ID },
    hints: OVERWRITES,
  },
  {
    name: 'get_job_status',
    title: 'Check a capture job',
    description:
      'The state of a capture job: queued, running, completed or failed. A completed job answers its screenshot as an image with the full-size direct_link; ' +
      "a failed one is an error carrying the failure's error_code and note. " +
      'While it is queued or running, call again in a few seconds.',
    method: 'GET',
    path: '/jobs/:job_id',
    pathArgs: { job_id: JOB_ID },
    hints: READ,
    image: jobImage,
  },
  {
    name: 'list_config_screenshots',
    title: "List a configuration's screenshots",
    description: `The screenshots of one configuration, each with direct_link, direct_thumbnail_link, taken_at_timestamp and job_id. ${PAGING}`,
    method: 'GET',
    path: '/screenshot_configs/:id/screenshots',
    pathArgs: { id: CONFIG_ID },
    hints: READ,
  },
  {
    name: 'list_screenshot_configs',
    title: 'List screenshot configurations',
    description: `The account's saved configurations, each with its options, ids and creation time. ${PAGING}`,
    method: 'GET',
    path: '/screenshot_configs',
    hints: READ,
  },
  {
    name: 'delete_screenshot_config',
    title: 'Delete a screenshot configuration',
    description: 'Delete a saved configuration with all its screenshots, their files and its change alerts. It cannot be undone; its embed_url stops working.',
    method: 'DELETE',
    path: '/screenshot_configs/:id',
    pathArgs: { id: CONFIG_ID },
    hints: OVERWRITES,
  },
  {
    name: 'list_all_screenshots',
    title: 'List all screenshots',
    description:
      `Every screenshot of the account (snaps and configuration captures), as full records: direct_link, embed_url, job_id, taken_at, the AI ` +
      `analysis and the proxy used. ${PAGING}`,
    method: 'GET',
    path: '/screenshots',
    hints: READ,
  },
  {
    name: 'list_config_change_notifications',
    title: "List a configuration's change alerts",
    description:
      `The change alerts of one configuration: each names the change step (config), the previous_value and retrieved_value of the watched ` +
      `element, and when the change was seen. ${PAGING}`,
    method: 'GET',
    path: '/screenshot_configs/:id/change_notifications',
    pathArgs: { id: CONFIG_ID },
    hints: READ,
  },
  {
    name: 'list_all_change_notifications',
    title: 'List all change alerts',
    description: `The change alerts of every configuration of the account. ${PAGING}`,
    method: 'GET',
    path: '/change_notifications',
    hints: READ,
  },
  {
    name: 'list_real_locations',
    title: 'List real locations',
    description:
      'The real locations this server captures from (the values real_location takes): countries, US states, cities and regions. Empty when the server has ' +
      'none configured.',
    method: 'GET',
    path: '/real_locations',
    hints: READ,
  },
  {
    name: 'get_account_limits',
    title: 'Read usage and limits',
    description:
      "This month's usage and limits of the account: screenshots, AI analysis credits and real-location bandwidth, and the own AI providers and proxies set " +
      'up. Check it before many captures.',
    method: 'GET',
    path: '/account_limits',
    hints: READ,
  },
  {
    name: 'analyze_any_image_with_ai',
    title: 'Ask AI about images',
    description:
      "Ask an AI about up to 5 images at once: urls (1 to 5 public image URLs: PNG, JPEG, WebP or GIF, at most 20 MB each; a screenshot's direct_link " +
      'works) and prompts (1 to 5, each up to 2500 characters; a prompt may refer to "image 1", "image 2" in the order given). ' +
      "Answers one result per prompt (results[].ai_response) and what was read of each image. 1 AI credit per prompt with the service's AI " +
      '(ai_provider=service, the default); none with your own provider key (ai_provider and ai_model, Bring Your Own AI). ' +
      'An image that is private, too large, not an image or unreachable is answered as an error naming the URL.',
    method: 'POST',
    path: '/ai/analyze',
    hints: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  },
  {
    name: 'create_domain_research',
    title: 'Research a list of domains',
    description:
      'Start an AI research job over a list of websites: domains (host names or URLs, 1 credit each) and structures, the fields to find on each site ' +
      '(data_type string, array, boolean or number; data_field_name; data_field_prompt_description saying what the field is). ' +
      "Each site's home page and up to two pages it links to are read; a field the pages do not answer is null. Optional: name, additional_notes (context " +
      'for the AI), webhook_url (a signed POST when it ends). ' +
      "Answers the job's status with its job_id: poll get_domain_research_status, then read get_domain_research_report.",
    method: 'POST',
    path: '/api/domain_research_requests',
    hints: CAPTURES,
  },
  {
    name: 'get_domain_research_status',
    title: 'Check a domain research job',
    description:
      'The state of a domain research job: status (queued, running, completed, failed), percent_complete, completed_domains, failed_domains and total_domains.',
    method: 'GET',
    path: '/api/domain_research_requests/:job_id/status',
    pathArgs: { job_id: RESEARCH_JOB_ID },
    hints: READ,
  },
  {
    name: 'get_domain_research_report',
    title: 'Read a domain research report',
    description:
      'The results of a domain research job, as far as it got: per domain its status, the value found for each field (null when the pages do not say), the ' +
      'page each value came from, and the pages read. format=csv answers a CSV (one row per domain, one column per field) as text instead of JSON.',
    method: 'GET',
    path: '/api/domain_research_requests/:job_id/report',
    pathArgs: { job_id: RESEARCH_JOB_ID },
    hints: READ,
  },
  {
    name: 'list_domain_research_reports',
    title: 'List domain research jobs',
    description: `The account's domain research jobs with their status, newest first. ${PAGING}`,
    method: 'GET',
    path: '/api/domain_research_requests',
    hints: READ,
  },
];

/** A request to the API, as a client sends it. */
export interface ApiRequest {
  method: ToolMethod;
  path: string;
  /** Parameters of a GET or DELETE. */
  query?: Record<string, string>;
  /** The JSON body of a POST or PATCH. */
  body?: Record<string, unknown>;
}

/** A tool with its route's parameters. */
export interface ResolvedTool {
  spec: ToolSpec;
  /** The route's parameters as its declared shape gives them (JSON Schema of each). */
  params: Record<string, JsonSchema>;
  /** The route's required parameters. */
  required: string[];
  /** The structured content of its results: the route's JSON answer or the error envelope; null when the route may answer other than JSON. */
  output: JsonSchema | null;
}

/**
 * The schema of the tool's structured content, from the document: the 200 answer's JSON
 * schema when the route answers only JSON (or the tool fixes json=true), or an error envelope.
 */
function outputOf(spec: ToolSpec, op: OpenApiOperation): JsonSchema | null {
  const responses = op.responses as Record<string, { content?: Record<string, { schema?: JsonSchema }> }> | undefined;
  const content = responses?.['200']?.content ?? {};
  const json = content['application/json']?.schema;
  if (!json || (Object.keys(content).length > 1 && spec.fixed?.json?.value !== true)) return null;
  return { type: 'object', anyOf: [json, ERROR_ENVELOPE_SCHEMA], description: "The route's answer, or a tool error's envelope." };
}

/** The route's parameters, from the document: the query of a GET or DELETE, the JSON body of a POST or PATCH. */
function routeParams(spec: ToolSpec, document: OpenApiDocument): { params: Record<string, JsonSchema>; required: string[]; output: JsonSchema | null } {
  const op = document.paths[openApiPath(spec.path)]?.[spec.method.toLowerCase()];
  if (!op) throw new Error(`MCP tool ${spec.name}: the API has no route ${spec.method} ${spec.path}`);
  const inPath = [...spec.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1] as string);
  const declared = Object.keys(spec.pathArgs ?? {});
  if (inPath.join() !== declared.join())
    throw new Error(`MCP tool ${spec.name}: its path arguments (${declared.join(', ')}) are not the path's (${inPath.join(', ')})`);
  if (spec.method === 'GET' || spec.method === 'DELETE') {
    const query = (op.parameters ?? []).filter((p) => p.in === 'query');
    return {
      params: Object.fromEntries(query.map((p) => [p.name, p.schema ?? {}])),
      required: query.filter((p) => p.required).map((p) => p.name),
      output: outputOf(spec, op),
    };
  }
  const body = op.requestBody?.content?.['application/json']?.schema;
  return { params: { ...(body?.properties ?? {}) }, required: [...(body?.required ?? [])], output: outputOf(spec, op) };
}

/** The tools with their routes' parameters; throws when a tool names a route the document lacks. */
export function resolveTools(specs: readonly ToolSpec[], document: OpenApiDocument): Map<string, ResolvedTool> {
  return new Map(specs.map((spec) => [spec.name, { spec, ...routeParams(spec, document) }]));
}

/**
 * The tool as tools/list shows it. `locations`: this server's real locations, offered as
 * real_location's values (null when they could not be read).
 */
export function listedTool(tool: ResolvedTool, locations: readonly string[] | null): Tool {
  const { spec } = tool;
  const properties: Record<string, JsonSchema> = {};
  for (const p of Object.values(spec.pathArgs ?? {})) properties[p.arg] = { type: 'string', minLength: 1, description: p.description };
  for (const [name, schema] of Object.entries(tool.params)) {
    const fixed = spec.fixed?.[name];
    if (fixed) properties[name] = { ...schema, default: fixed.value, description: `Always ${JSON.stringify(fixed.value)} here: ${fixed.why}.` };
    else if (name === 'real_location') properties[name] = realLocation(schema, locations);
    else properties[name] = schema;
  }
  const required = [...Object.values(spec.pathArgs ?? {}).map((p) => p.arg), ...tool.required];
  return {
    name: spec.name,
    title: spec.title,
    description: spec.description,
    inputSchema: { type: 'object', properties, ...(required.length ? { required } : {}), additionalProperties: false },
    ...(tool.output ? { outputSchema: tool.output as Tool['outputSchema'] } : {}),
    annotations: { title: spec.title, ...spec.hints },
  };
}

/** real_location with this server's catalogue as its values. */
function realLocation(schema: JsonSchema, locations: readonly string[] | null): JsonSchema {
  if (locations === null)
    return { ...schema, description: `${String(schema.description ?? '')} (The list could not be read just now: call list_real_locations.)` };
  if (locations.length === 0)
    return { ...schema, description: `${String(schema.description ?? '')} This server has no real locations configured, so any value is refused.` };
  return { ...schema, enum: [...locations] };
}

/** A GET or DELETE parameter as text (numbers and booleans as written, lists and objects as JSON). */
const asText = (value: unknown) => (typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value));

/**
 * The API request a call of the tool makes: the path filled from its arguments, the fixed
 * parameters, the `mcp` marker the hosted server's tools send too (docs/clients.md), and the
 * other arguments as the route's parameters (the route validates them). Throws
 * invalid_parameter for a missing path argument or a contradicted fixed parameter.
 */
export function toolRequest(tool: ResolvedTool, args: Record<string, unknown>): ApiRequest {
  const { spec } = tool;
  const params: Record<string, unknown> = { ...args };
  let path = spec.path;
  for (const [name, p] of Object.entries(spec.pathArgs ?? {})) {
    const value = params[p.arg];
    delete params[p.arg];
    if (value === undefined || value === null || (typeof value === 'string' && value.trim() === '')) {
      throw serviceError('invalid_parameter', `${p.arg} is required: ${p.description}`, { param: p.arg });
    }
    if (typeof value !== 'string') {
      throw serviceError('invalid_parameter', `${p.arg}: must be text (one id), got ${Array.isArray(value) ? 'a list' : typeof value}: ${p.description}`, {
        param: p.arg,
      });
    }
    // Longer than any id this API hands out: the route would answer for its path (a segment too long), not for the argument.
    if (value.trim().length > MAX_PARAM_LENGTH) {
      throw serviceError('not_found', `${p.arg}: no id is ${value.trim().length} characters long (at most ${MAX_PARAM_LENGTH}): ${p.description}`, {
        param: p.arg,
      });
    }
    let encoded: string;
    try {
      encoded = encodeURIComponent(value.trim());
    } catch {
      throw serviceError('invalid_parameter', `${p.arg}: holds a lone surrogate (text that is not valid Unicode): ${p.description}`, { param: p.arg });
    }
    path = path.replace(`:${name}`, encoded);
  }
  for (const [name, f] of Object.entries(spec.fixed ?? {})) {
    if (params[name] !== undefined && String(params[name]) !== String(f.value)) {
      throw serviceError('invalid_parameter', `${name}: always ${JSON.stringify(f.value)} here (${f.why}); leave it out.`, { param: name });
    }
    params[name] = f.value;
  }
  params.mcp = true;
  if (spec.method === 'GET' || spec.method === 'DELETE') {
    const query = Object.fromEntries(
      Object.entries(params)
        .filter(([, v]) => v !== undefined && v !== null)
        .map(([k, v]) => [k, asText(v)]),
    );
    return { method: spec.method, path, query };
  }
  return { method: spec.method, path, body: params };
}
