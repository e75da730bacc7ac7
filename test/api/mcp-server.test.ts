/**
 * The MCP server built in (docs/mcp.md), as an agent's host uses it: the official SDK client
 * over Streamable HTTP (POST /mcp) and over stdio (`npm run --silent mcp`, a process calling
 * the service), against a running system with real browsers and local pages (the client
 * replay world, test/clients/harness.ts). The same suite runs on both transports, each with
 * an account of its own: the tool list and every schema read against the option table; every
 * tool called (a capture whose image decodes to the page's pixels, a configuration created,
 * captured now, updated, listed and deleted, a change alert listed, a failed job); bad
 * arguments answered as tool errors with their code; a wrong key refused; two sessions at
 * once. Then what an operator sees: the tool calls in /metrics and in the log, with no key
 * and no image bytes on any line.
 */
import path from 'node:path';
import { expect } from 'chai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { discoverOAuthProtectedResourceMetadata, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult, Progress, Tool } from '@modelcontextprotocol/sdk/types.js';
import { AGENT_IMAGE_MAX_EDGE, AGENT_IMAGE_MAX_PIXELS } from '../../services/api/mcp-images';
import { PROGRESS_INTERVAL_MS } from '../../services/api/mcp-server';
import { ANALYZE_PARAMS } from '../../services/api/image-analysis-routes';
import { PAGING_PARAMS } from '../../services/api/paging-params';
import { type ParamShape, type ShapeName, shapeOptions, shapeSchema } from '../../services/api/request-schemas';
import { CREATE_PARAMS, REPORT_PARAMS } from '../../services/api/research-routes';
import { optionSchema } from '../../services/shared/screenshot-options';
import { pixelsOf } from '../support/capture-helpers';
import { request } from '../support/http';
import { scrape } from '../support/prometheus';
import { type ClientWorld, LOCATIONS, QUADRANTS, clientWorld } from '../clients/harness';

type Json = Record<string, unknown>;
type Transport = 'streamable-http' | 'stdio';

const ROOT = path.resolve(__dirname, '..', '..', '..');

/** The hosted server's tools (PagePixels/mcp-server). */
const HOSTED_TOOLS = [
  'snap',
  'snap_html',
  'create_screenshot_config',
  'capture_screenshot',
  'get_screenshot_config',
  'update_screenshot_config',
  'get_job_status',
  'list_config_screenshots',
  'list_screenshot_configs',
  'delete_screenshot_config',
  'list_all_screenshots',
  'list_config_change_notifications',
  'list_all_change_notifications',
  'list_real_locations',
  'get_account_limits',
  'create_domain_research',
  'get_domain_research_status',
  'get_domain_research_report',
  'list_domain_research_reports',
  'analyze_any_image_with_ai',
];

/** The argument names of the hosted server's zod schemas (its shared screenshot options and paging). */
const HOSTED_SHARED = [
  'time_zone',
  'selectors',
  'hover_on_selected',
  'wait',
  'wait_for',
  'incremental_scroll',
  'fullpage',
  'fullpage_advanced',
  'page_width',
  'page_height',
  'image_format',
  'quality',
  'scale_factor',
  'placeholder_url',
  'thumb_width',
  'thumb_height',
  'css_inject',
  'js_inject',
  'multi_step_actions',
  'real_location',
  'analyze_image_with_ai',
  'ai_prompt',
  'headers',
  'cookies',
  'accept_language',
  'user_agent',
  'latitude',
  'longitude',
  'accuracy',
  'no_ads',
  'no_tracking',
  'no_cookie_banners',
  'disable_js',
  'disable_third_party_js',
  'custom_title',
  'custom_description',
  'html_only',
];
const HOSTED_PAGING = ['page', 'limit', 'after', 'before', 'order'];
/** A configuration captures images: html_only, in the hosted server's shared options, is a snap's only (the REST API refuses it on configurations). */
const HOSTED_CONFIG = HOSTED_SHARED.filter((n) => n !== 'html_only');
const SCHEDULE = ['scheduled_screenshot', 'scheduled_every', 'scheduled_interval'];
const CONFIG_ID = 'screenshot_configuration_id';

/** A route's parameters: a shape of the option table, paging, none, or the route's own params shape. */
type Params = ShapeName | 'paging' | 'none' | ParamShape<unknown>;

/** What each tool takes: its route's parameters and the path argument. */
const TAKES: Record<string, { params: Params; pathArg?: string; hosted: string[] }> = {
  snap: { params: 'snap', hosted: [...HOSTED_SHARED, 'url', 'json', 'ttl'] },
  snap_html: { params: 'snapHtml', hosted: [...HOSTED_CONFIG, 'html_content', 'json'] },
  create_screenshot_config: { params: 'configCreate', hosted: [...HOSTED_CONFIG, 'url', ...SCHEDULE] },
  capture_screenshot: { params: 'none', pathArg: CONFIG_ID, hosted: [CONFIG_ID] },
  get_screenshot_config: { params: 'none', pathArg: CONFIG_ID, hosted: [CONFIG_ID] },
  update_screenshot_config: { params: 'configUpdate', pathArg: CONFIG_ID, hosted: [...HOSTED_CONFIG, CONFIG_ID, 'url', ...SCHEDULE] },
  get_job_status: { params: 'none', pathArg: 'job_id', hosted: ['job_id'] },
  list_config_screenshots: { params: 'paging', pathArg: CONFIG_ID, hosted: [...HOSTED_PAGING, CONFIG_ID] },
  list_screenshot_configs: { params: 'paging', hosted: HOSTED_PAGING },
  delete_screenshot_config: { params: 'none', pathArg: CONFIG_ID, hosted: [CONFIG_ID] },
  list_all_screenshots: { params: 'paging', hosted: HOSTED_PAGING },
  list_config_change_notifications: { params: 'paging', pathArg: CONFIG_ID, hosted: [...HOSTED_PAGING, CONFIG_ID] },
  list_all_change_notifications: { params: 'paging', hosted: HOSTED_PAGING },
  list_real_locations: { params: 'none', hosted: [] },
  get_account_limits: { params: 'none', hosted: [] },
  analyze_any_image_with_ai: { params: ANALYZE_PARAMS, hosted: ['urls', 'prompts'] },
  create_domain_research: { params: CREATE_PARAMS, hosted: ['name', 'additional_notes', 'domains', 'structures'] },
  get_domain_research_status: { params: 'none', pathArg: 'job_id', hosted: ['job_id'] },
  get_domain_research_report: { params: REPORT_PARAMS, pathArg: 'job_id', hosted: ['job_id', 'format'] },
  list_domain_research_reports: { params: 'paging', hosted: HOSTED_PAGING },
};
const READ_ONLY = [
  'get_screenshot_config',
  'get_job_status',
  'list_config_screenshots',
  'list_screenshot_configs',
  'list_all_screenshots',
  'list_config_change_notifications',
  'list_all_change_notifications',
  'list_real_locations',
  'get_account_limits',
  'get_domain_research_status',
  'get_domain_research_report',
  'list_domain_research_reports',
];
const DESTRUCTIVE = ['update_screenshot_config', 'delete_screenshot_config'];

const plain = (v: unknown) => JSON.parse(JSON.stringify(v)) as Json;

/** The route parameters a tool must take, as the option table (or the paging shape) writes them. */
function expectedParams(params: Params): { properties: Json; required: string[] } {
  if (params === 'none') return { properties: {}, required: [] };
  if (params === 'paging') return { properties: plain(PAGING_PARAMS.schema.properties), required: [] };
  if (typeof params === 'object') return { properties: plain(params.schema.properties), required: (params.schema.required as string[] | undefined) ?? [] };
  return {
    properties: plain(Object.fromEntries(shapeOptions(params).map((o) => [o.name, optionSchema(o)]))),
    required: shapeSchema(params).required as string[],
  };
}

/** Every tool's schema is its route's shape from the option table, with the hosted server's argument names among them. */
function expectToolsFromOptionTable(tools: Tool[]): void {
  expect(tools.map((t) => t.name).sort()).to.deep.equal([...HOSTED_TOOLS].sort());
  for (const tool of tools) {
    const takes = TAKES[tool.name];
    if (!takes) throw new Error(`no expectation for ${tool.name}`);
    const schema = plain(tool.inputSchema);
    const properties = { ...(schema.properties as Json) };
    const expected = expectedParams(takes.params);
    if (takes.pathArg) {
      expect(properties[takes.pathArg], `${tool.name}.${takes.pathArg}`).to.include({ type: 'string', minLength: 1 });
      delete properties[takes.pathArg];
    }
    if ('json' in expected.properties) {
      expect(properties.json, `${tool.name}.json`).to.include({ type: 'boolean', default: true });
      expect(String((properties.json as Json).description)).to.match(/^Always true here/);
      delete properties.json;
      delete expected.properties.json;
    }
    if ('real_location' in expected.properties) {
      expected.properties.real_location = { ...(expected.properties.real_location as Json), enum: [...LOCATIONS] };
    }
    expect(properties, `${tool.name}: its properties are its route's, from the option table`).to.deep.equal(expected.properties);
    expect(schema.required ?? [], `${tool.name}: required`).to.have.members([...(takes.pathArg ? [takes.pathArg] : []), ...expected.required]);
    expect(schema.additionalProperties).to.equal(false);
    expect(Object.keys(schema.properties as Json), `${tool.name}: takes the hosted server's arguments`).to.include.members(takes.hosted);
    expect(tool.description?.length, `${tool.name}: a description`).to.be.greaterThan(60);
    expect(tool.annotations, tool.name).to.include({ readOnlyHint: READ_ONLY.includes(tool.name), destructiveHint: DESTRUCTIVE.includes(tool.name) });
  }
}

const structured = (r: CallToolResult) => (r.structuredContent ?? {}) as Json;
const imageOf = (r: CallToolResult) => r.content.find((c): c is Extract<CallToolResult['content'][number], { type: 'image' }> => c.type === 'image');
const texts = (r: CallToolResult) => r.content.flatMap((c) => (c.type === 'text' ? [c.text] : []));

/** A tool error: isError, with the error_code and a note, as structured content and as the JSON text. */
function expectToolError(r: CallToolResult, code: string, ...fragments: string[]): Json {
  expect(r.isError, JSON.stringify(r).slice(0, 400)).to.equal(true);
  const body = structured(r);
  expect(body).to.include({ success: false, error_code: code });
  for (const f of fragments) expect(String(body.note)).to.contain(f);
  expect(JSON.parse(texts(r)[0] ?? '{}')).to.deep.equal(body);
  return body;
}

/** Images and keys seen, to look for in the log afterwards. */
const seen = { images: [] as string[], keys: [] as string[], stderr: [] as string[] };

interface Session {
  client: Client;
  /** What the stdio process wrote on stderr ('' over HTTP). */
  stderr(): string;
  close(): Promise<void>;
}

/** A client connected to the world's service over `transport`, acting with `key`. */
async function connect(w: ClientWorld, transport: Transport, key: string): Promise<Session> {
  const client = new Client({ name: 'mcp-test', version: '1.0.0' });
  if (transport === 'streamable-http') {
    await client.connect(new StreamableHTTPClientTransport(new URL(`${w.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    return { client, stderr: () => '', close: () => client.close() };
  }
  const stdio = new StdioClientTransport({
    command: 'npm',
    args: ['run', '--silent', 'mcp'],
    cwd: ROOT,
    env: { SNAPSERVICE_URL: w.base, SNAPSERVICE_API_KEY: key },
    stderr: 'pipe',
  });
  let err = '';
  stdio.stderr?.on('data', (d) => (err += d));
  const session = {
    client,
    stderr: () => err,
    close: async () => {
      await client.close();
      seen.stderr.push(err);
    },
  };
  try {
    await client.connect(stdio);
  } catch (e) {
    seen.stderr.push(err);
    throw Object.assign(e as Error, { stderr: err });
  }
  return session;
}

describe('MCP: the tools over Streamable HTTP and stdio, against a running system', function () {
  this.timeout(240_000);
  const lines: string[] = [];
  const w = clientWorld({ env: { LOG_LEVEL: 'info' }, logStream: { write: (line: string) => lines.push(line) } });

  for (const transport of ['streamable-http', 'stdio'] as const) {
    describe(`over ${transport}`, () => {
      let key = '';
      let s: Session;
      const sessions: Session[] = [];
      const call = async (name: string, args: Json = {}, onprogress?: (p: Progress) => void): Promise<CallToolResult> => {
        const r = (await s.client.callTool({ name, arguments: args }, undefined, {
          timeout: 120_000,
          ...(onprogress ? { onprogress } : {}),
        })) as CallToolResult;
        const image = imageOf(r);
        if (image) seen.images.push(image.data);
        return r;
      };
      /** get_job_status until the job is completed or failed. */
      const finished = async (jobId: string): Promise<CallToolResult> => {
        for (let i = 0; i < 300; i++) {
          const r = await call('get_job_status', { job_id: jobId });
          if (r.isError || ['completed', 'failed'].includes(String(structured(r).status))) return r;
          await new Promise((res) => setTimeout(res, 100));
        }
        throw new Error(`job ${jobId} did not finish`);
      };

      before(async () => {
        key = (await w.sys.account('big')).access_token;
        seen.keys.push(key);
        s = await connect(w, transport, key);
        sessions.push(s);
      });
      after(async () => {
        for (const x of sessions) await x.close();
      });

      it(
        "lists the hosted server's tools, each schema its route's shape (from the option table for captures), real_location offering this " +
          "server's catalogue",
        async () => {
          const { tools } = await s.client.listTools();
          expectToolsFromOptionTable(tools);
        },
      );

      it('snap: the image content decodes to the page as captured (the file at direct_link), the record as structured content', async () => {
        const url = `${w.site.origin}/quadrants?via=${transport}`;
        const r = await call('snap', { url, page_width: 800, page_height: 600, image_format: 'png', wait: 0, ttl: 0 });
        expect(r.isError ?? false, JSON.stringify(r).slice(0, 400)).to.equal(false);
        const record = structured(r);
        expect(record).to.include.keys(
          'success',
          'id',
          'embed_url',
          'screenshot_configuration_id',
          'direct_link',
          'direct_thumbnail_link',
          'taken_at',
          'job_id',
        );
        expect(JSON.parse(texts(r)[0] ?? '{}')).to.deep.equal(record);
        const image = imageOf(r);
        expect(image?.mimeType).to.equal('image/png');
        const bytes = Buffer.from(image?.data ?? '', 'base64');
        expect(bytes.equals(await w.file(String(record.direct_link))), 'the image is the capture itself').to.equal(true);
        const px = await pixelsOf(bytes);
        expect([px.width, px.height]).to.deep.equal([800, 600]);
        const centres = [px.at(200, 150), px.at(600, 150), px.at(200, 450), px.at(600, 450)];
        expect(centres).to.deep.equal(QUADRANTS.map((c) => [...c]));
        expect(texts(r).at(-1)).to.contain(`800×600 png, as captured. Full size: ${record.direct_link}`);
      });

      it(
        `snap: a capture larger than agents take is scaled to ${AGENT_IMAGE_MAX_EDGE} px and ${AGENT_IMAGE_MAX_PIXELS} pixels, the full size at ` +
          `direct_link; a long capture reports progress`,
        async () => {
          const progress: Array<{ at: number; p: Progress }> = [];
          const url = `${w.site.origin}/quadrants?large=${transport}`;
          // Long enough for a notification after the first.
          const r = await call('snap', { url, page_width: 1920, page_height: 1000, scale_factor: 2, wait: PROGRESS_INTERVAL_MS + 1500, ttl: 0 }, (p) =>
            progress.push({ at: Date.now(), p }),
          );
          const answeredAt = Date.now();
          expect(r.isError ?? false, JSON.stringify(r).slice(0, 400)).to.equal(false);
          const image = imageOf(r);
          expect(image?.mimeType).to.equal('image/jpeg');
          const px = await pixelsOf(Buffer.from(image?.data ?? '', 'base64'));
          expect(Math.max(px.width, px.height)).to.be.at.most(AGENT_IMAGE_MAX_EDGE);
          expect(px.width * px.height).to.be.at.most(AGENT_IMAGE_MAX_PIXELS);
          expect(px.width / px.height).to.be.closeTo(3840 / 2000, 0.01);
          const [qw, qh] = [Math.floor(px.width / 4), Math.floor(px.height / 4)];
          const centres = [px.at(qw, qh), px.at(3 * qw, qh), px.at(qw, 3 * qh), px.at(3 * qw, 3 * qh)].map((c) => c.map(Math.round));
          for (const [i, c] of centres.entries()) for (const [k, v] of c.entries()) expect(v, `quadrant ${i}`).to.be.closeTo(QUADRANTS[i]?.[k] ?? -1, 12);
          const full = await pixelsOf(await w.file(String(structured(r).direct_link)));
          expect([full.width, full.height]).to.deep.equal([3840, 2000]);
          expect(texts(r).at(-1)).to.match(new RegExp(`scaled down to ${px.width}×${px.height} JPEG from the 3840×2000 jpeg capture`));
          expect(progress.length, 'progress notifications').to.be.at.least(2);
          expect(progress.map((x) => x.p.progress)).to.deep.equal([...progress.map((x) => x.p.progress)].sort((a, b) => a - b));
          expect(new Set(progress.map((x) => x.p.progress)).size).to.equal(progress.length);
          expect(progress[1]?.p.progress).to.be.at.least(PROGRESS_INTERVAL_MS / 1000 - 1);
          expect(progress.every((x) => x.at <= answeredAt)).to.equal(true);
          expect(progress[0]?.p.message).to.contain(`Capturing ${url}`);
        },
      );

      it('snap_html: renders the document given and shows it', async () => {
        const html = `<body style="margin:0;background:rgb(${QUADRANTS[2].join(',')})"><p>from ${transport}</p></body>`;
        const r = await call('snap_html', { html_content: html, page_width: 640, page_height: 480, image_format: 'png', wait: 0, ttl: 0 });
        expect(r.isError ?? false, JSON.stringify(r).slice(0, 400)).to.equal(false);
        const px = await pixelsOf(Buffer.from(imageOf(r)?.data ?? '', 'base64'));
        expect([px.width, px.height]).to.deep.equal([640, 480]);
        expect(px.at(600, 400)).to.deep.equal([...QUADRANTS[2]]);
      });

      it('answers a bad argument as a tool error with its error_code and a note that says what to change; nothing is spent', async () => {
        const used = async () => (structured(await call('get_account_limits')).results as Json).screenshot_current_month_usage;
        const before = await used();
        expectToolError(await call('snap', { url: `${w.site.origin}/page`, page_width: 99_999 }), 'invalid_parameter', 'page_width', '7680');
        expectToolError(await call('snap', { url: `${w.site.origin}/page`, colour: 'red' }), 'invalid_parameter', 'Unknown parameter "colour"');
        expectToolError(await call('snap', { url: `${w.site.origin}/page`, json: false }), 'invalid_parameter', 'json: always true here');
        expectToolError(await call('snap', { url: `${w.site.origin}/page`, real_location: 'Atlantis' }), 'invalid_parameter', 'real_location');
        expectToolError(await call('snap', { page_width: 800 }), 'invalid_parameter', 'url is required');
        expectToolError(await call('get_screenshot_config', {}), 'invalid_parameter', `${CONFIG_ID} is required`);
        expectToolError(await call('get_screenshot_config', { [CONFIG_ID]: 'nope' }), 'not_found');
        expect(await used()).to.equal(before);
      });

      it(
        'a configuration: created with a change step, its first job shown, captured now, the change alert listed, read, updated, listed ' + 'and deleted',
        async () => {
          const created = await call('create_screenshot_config', {
            url: `${w.site.origin}/price?via=${transport}`,
            page_width: 1000,
            page_height: 700,
            wait: 0,
            custom_title: 'Price watch',
            scheduled_screenshot: true,
            scheduled_every: 1,
            scheduled_interval: 'days',
            multi_step_actions: [
              { type: 'change', selector: '#price', send_to: 'webhook', url: `${w.receiver.origin}/alerts`, custom_id: `watch-${transport}` },
            ],
          });
          expect(created.isError ?? false, JSON.stringify(created).slice(0, 400)).to.equal(false);
          expect(structured(created)).to.have.all.keys('success', CONFIG_ID, 'embed_url', 'job_id');
          const id = String(structured(created)[CONFIG_ID]);

          const first = await finished(String(structured(created).job_id));
          expect(structured(first)).to.include({ success: true, status: 'completed' });
          const shot = structured(first).screenshot as Json;
          expect(imageOf(first)?.mimeType, 'a finished job shows its screenshot').to.equal('image/jpeg');
          expect(Buffer.from(imageOf(first)?.data ?? '', 'base64').equals(await w.file(String(shot.direct_link)))).to.equal(true);
          expect(texts(first).at(-1)).to.contain(`Full size: ${shot.direct_link}`);

          const now = await call('capture_screenshot', { [CONFIG_ID]: id });
          expect(structured(now)).to.have.all.keys('success', 'job_id', 'embed_url');
          expect(structured(await finished(String(structured(now).job_id)))).to.include({ status: 'completed' });

          const alerts = structured(await call('list_config_change_notifications', { [CONFIG_ID]: id, limit: 10 })).change_notifications as Json[];
          expect(alerts, 'the price changed between the two captures').to.have.length(1);
          expect(alerts[0]?.config).to.include({ type: 'change', selector: '#price', custom_id: `watch-${transport}` });
          expect(alerts[0]?.previous_value).to.match(/^\d+ EUR$/);
          expect(alerts[0]?.retrieved_value)
            .to.match(/^\d+ EUR$/)
            .and.not.equal(alerts[0]?.previous_value);
          const all = structured(await call('list_all_change_notifications', { order: 'ASC', after: '1700000000' })).change_notifications as Json[];
          expect(all.map((a) => a.id)).to.deep.equal(alerts.map((a) => a.id));

          expect(structured(await call('get_screenshot_config', { [CONFIG_ID]: id })).config).to.include({ custom_title: 'Price watch', scheduled_every: 1 });
          const updated = await call('update_screenshot_config', {
            [CONFIG_ID]: id,
            custom_title: 'Renamed',
            scheduled_screenshot: true,
            scheduled_every: 2,
            scheduled_interval: 'days',
          });
          expect(structured(updated).config).to.include({ url: `${w.site.origin}/price?via=${transport}`, custom_title: 'Renamed', scheduled_every: 2 });

          const configs = structured(await call('list_screenshot_configs', { limit: 100 })).screenshot_configurations as Array<{ ids: Json }>;
          expect(configs.map((c) => c.ids.screenshot_config_id)).to.include(id);
          expect(structured(await call('list_config_screenshots', { [CONFIG_ID]: id, limit: 10 })).screenshots).to.have.length(2);
          const everything = structured(await call('list_all_screenshots', { limit: 2 }));
          expect(everything.screenshots).to.have.length(2);
          expect(everything.has_more).to.equal(true);

          const deleted = await call('delete_screenshot_config', { [CONFIG_ID]: id });
          expect(structured(deleted)).to.include({ success: true, deleted: true });
          expectToolError(await call('get_screenshot_config', { [CONFIG_ID]: id }), 'not_found');
        },
      );

      it("a failed job: get_job_status answers a tool error carrying the failure's error_code and note", async () => {
        const created = await call('create_screenshot_config', { url: 'http://127.0.0.1:9/', wait: 0 });
        const failed = await finished(String(structured(created).job_id));
        const body = expectToolError(failed, 'page_load_failed');
        expect(body).to.include({ status: 'failed', job_id: structured(created).job_id });
        expect(imageOf(failed)).to.equal(undefined);
      });

      it('analyze_any_image_with_ai: one answer per prompt about a capture, 1 AI credit each', async () => {
        const shot = structured(await call('snap', { url: `${w.site.origin}/quadrants?ai=${transport}`, page_width: 400, page_height: 300, wait: 0, ttl: 0 }));
        const credits = async () => (structured(await call('get_account_limits')).results as Json).ai_analysis_requests_current_month_usage as number;
        const before = await credits();
        const r = await call('analyze_any_image_with_ai', { urls: [shot.direct_link], prompts: ['Which colours are in the corners?', 'Is there text?'] });
        expect(r.isError ?? false, JSON.stringify(r).slice(0, 400)).to.equal(false);
        const results = structured(r).results as Array<{ prompt: string; ai_response: string }>;
        expect(results.map((x) => x.prompt)).to.deep.equal(['Which colours are in the corners?', 'Is there text?']);
        expect(await credits()).to.equal(before + 2);
        expectToolError(await call('analyze_any_image_with_ai', { urls: [], prompts: ['x'] }), 'invalid_parameter', 'urls');
      });

      it('domain research: created, its status polled to the end, the report read as JSON and as CSV text, the job listed', async () => {
        const created = await call('create_domain_research', {
          name: `research over ${transport}`,
          domains: [`${w.site.origin}/page?research=${transport}`],
          structures: [{ data_type: 'string', data_field_name: 'heading', data_field_prompt_description: 'The main heading of the site' }],
        });
        expect(created.isError ?? false, JSON.stringify(created).slice(0, 400)).to.equal(false);
        const jobId = String(structured(created).job_id);
        let status: Json = {};
        for (let i = 0; i < 300; i++) {
          status = structured(await call('get_domain_research_status', { job_id: jobId }));
          if (status.status === 'completed' || status.status === 'failed') break;
          await new Promise((r) => setTimeout(r, 200));
        }
        expect(status).to.include({ job_id: jobId, status: 'completed', total_domains: 1, percent_complete: 100 });
        const report = structured(await call('get_domain_research_report', { job_id: jobId }));
        expect((report.results as Json[]).map((d) => d.status)).to.deep.equal(['completed']);
        const csv = await call('get_domain_research_report', { job_id: jobId, format: 'csv' });
        expect(csv.isError ?? false).to.equal(false);
        expect(texts(csv)[0]).to.match(/^\uFEFF?domain,status,heading/);
        const listed = structured(await call('list_domain_research_reports', { limit: 10 }));
        expect((listed.domain_research_requests as Json[]).map((j) => j.job_id)).to.include(jobId);
        expectToolError(await call('get_domain_research_status', { job_id: 'nope' }), 'not_found');
      });

      it('list_real_locations and get_account_limits', async () => {
        expect(structured(await call('list_real_locations'))).to.deep.equal({ success: true, results: [...LOCATIONS] });
        const limits = structured(await call('get_account_limits')).results as Json;
        expect(limits.screenshot_current_month_usage).to.be.at.least(5);
      });

      it("two sessions of two accounts at once: each sees its own capture, and neither sees the other's", async () => {
        const other = (await w.sys.account('big')).access_token;
        seen.keys.push(other);
        const t = await connect(w, transport, other);
        sessions.push(t);
        const [mine, theirs] = await Promise.all([
          call('snap', { url: `${w.site.origin}/quadrants?session=1-${transport}`, page_width: 800, page_height: 600, image_format: 'png', wait: 300, ttl: 0 }),
          t.client.callTool({
            name: 'snap',
            arguments: { url: `${w.site.origin}/page?session=2-${transport}`, page_width: 640, page_height: 480, image_format: 'png', wait: 300, ttl: 0 },
          }) as Promise<CallToolResult>,
        ]);
        const a = await pixelsOf(Buffer.from(imageOf(mine)?.data ?? '', 'base64'));
        const b = await pixelsOf(Buffer.from(imageOf(theirs)?.data ?? '', 'base64'));
        seen.images.push(imageOf(theirs)?.data ?? '');
        expect([a.width, a.height, ...a.at(200, 150)]).to.deep.equal([800, 600, ...QUADRANTS[0]]);
        expect([b.width, b.height]).to.deep.equal([640, 480]);
        expect(b.at(600, 400), 'the other page (white)').to.deep.equal([255, 255, 255]);
        const ids = async (list: CallToolResult) => (structured(list).screenshots as Json[]).map((x) => x.id);
        const mineListed = await ids(await call('list_all_screenshots'));
        const theirsListed = await ids((await t.client.callTool({ name: 'list_all_screenshots', arguments: {} })) as CallToolResult);
        expect(mineListed).to.include(structured(mine).id).and.not.include(structured(theirs).id);
        expect(theirsListed).to.deep.equal([structured(theirs).id]);
      });

      it('refuses a wrong key', async () => {
        const wrong = `sk_wrong${transport.replace(/\W/g, '')}Key0123456789`;
        seen.keys.push(wrong);
        const failure = (await connect(w, transport, wrong).then(
          () => null,
          (e: unknown) => e,
        )) as (Error & { code?: number; stderr?: string }) | null;
        expect(failure, 'the connection is refused').to.be.an('error');
        if (transport === 'streamable-http') {
          expect(failure?.code).to.equal(401);
          expect(failure?.message).to.contain('access_token_invalid');
        } else {
          expect(failure?.stderr).to.contain('(access_token_invalid) to the key in SNAPSERVICE_API_KEY');
          expect(failure?.stderr).not.to.contain(wrong);
        }
      });
    });
  }

  describe('over Streamable HTTP: the 401 an MCP client reads, and what an operator sees', () => {
    it('answers a missing or wrong key 401 with the envelope and a WWW-Authenticate challenge naming the protected resource metadata (RFC 9728)', async () => {
      const post = (headers: Record<string, string>) =>
        fetch(`${w.base}/mcp`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        });
      const none = await post({});
      expect(none.status).to.equal(401);
      expect(await none.json()).to.include({ success: false, error_code: 'access_token_required' });
      const challenge = extractWWWAuthenticateParams(none);
      // At the service's public address (BASE_URL).
      const base = w.sys.config.baseUrl;
      expect(challenge.resourceMetadataUrl?.href).to.equal(`${base}/.well-known/oauth-protected-resource/mcp`);
      expect(challenge.error).to.equal(undefined);
      const wrong = await post({ authorization: 'Bearer sk_notAKeyOfThisService000000' });
      expect(wrong.status).to.equal(401);
      expect(extractWWWAuthenticateParams(wrong).error).to.equal('invalid_token');
      expect(await wrong.json()).to.include({ error_code: 'access_token_invalid' });
      // The document the challenge names, read and checked by the SDK's own client.
      const metadata = await discoverOAuthProtectedResourceMetadata(`${base}/mcp`, { resourceMetadataUrl: challenge.resourceMetadataUrl });
      expect(metadata).to.include({ resource: `${base}/mcp` });
      expect(metadata.bearer_methods_supported).to.deep.equal(['header']);
      // No session, no stream of its own: GET and DELETE are not taken.
      const get = await request(w.base, 'GET', '/mcp', { headers: { authorization: `Bearer ${w.key}` } });
      expect([get.status, get.headers.get('allow')]).to.deep.equal([405, 'POST']);
      // A batch would count once against the rate limit and run every call in it: refused, nothing run.
      const toolCalls = async () => (await scrape(w.base)).value('snap_api_mcp_tool_calls_total', { tool: 'get_account_limits', outcome: 'ok' }) ?? 0;
      const before = await toolCalls();
      const batch = await fetch(`${w.base}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${w.key}` },
        body: JSON.stringify([1, 2].map((id) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'get_account_limits', arguments: {} } }))),
      });
      expect(batch.status).to.equal(400);
      expect(((await batch.json()) as { error: { code: number; message: string } }).error).to.include({ code: -32600 });
      expect(await toolCalls()).to.equal(before);
    });

    it('counts the tool calls in /metrics by tool and outcome, with their durations; the requests they made carry the mcp marker', async () => {
      const m = await scrape(w.base);
      const calls = (tool: string, outcome: string) => m.value('snap_api_mcp_tool_calls_total', { tool, outcome }) ?? 0;
      expect(m.types.get('snap_api_mcp_tool_calls_total')).to.equal('counter');
      expect(calls('snap', 'ok')).to.be.at.least(4);
      expect(calls('snap', 'invalid_parameter')).to.be.at.least(5);
      expect(calls('get_job_status', 'page_load_failed')).to.be.at.least(1);
      expect(calls('delete_screenshot_config', 'ok')).to.equal(1);
      expect(m.value('snap_api_mcp_tool_call_seconds_count', { tool: 'snap' })).to.be.at.least(9);
      expect(m.value('snap_api_client_markers_total', { client: 'mcp', marker: 'mcp' })).to.be.greaterThan(20);
    });

    it(
      'writes one line per tool call (tool, outcome, request id; the REST request it made carries the same id), and no line holds a key or ' + 'image bytes',
      () => {
        const records = lines.map((l) => JSON.parse(l) as Json);
        const calls = records.filter((l) => l.module === 'mcp' && typeof l.mcp_tool === 'string');
        expect(new Set(calls.map((l) => l.mcp_tool))).to.deep.equal(new Set(Object.keys(TAKES)));
        const snap = calls.find((l) => l.mcp_tool === 'snap' && l.outcome === 'ok') as Json;
        expect(snap).to.include.keys('request_id', 'ms');
        const same = records.filter((l) => l.request_id === snap.request_id && l.module === 'http').map((l) => l.msg);
        expect(same).to.include('POST /snap 200').and.include('POST /mcp 200');
        expect(calls.find((l) => l.outcome === 'invalid_parameter')).to.include({ msg: 'tools/call snap: invalid_parameter' });

        // Every line the service wrote, and every line the stdio processes wrote.
        const everything = [...lines, ...seen.stderr.flatMap((e) => e.split('\n'))].filter(Boolean);
        const stdioCalls = seen.stderr.flatMap((e) => e.split('\n')).filter((l) => l.includes('"msg":"tools/call '));
        expect(stdioCalls.length, 'the stdio processes logged their tool calls').to.be.greaterThan(20);
        for (const l of stdioCalls) expect(JSON.parse(l)).to.include.keys('mcp_tool', 'outcome', 'ms');
        expect(seen.keys.length).to.equal(6);
        expect(seen.images.length).to.be.at.least(10);
        for (const k of seen.keys)
          expect(
            everything.filter((l) => l.includes(k) || l.includes(Buffer.from(k).toString('base64'))),
            'lines holding a key',
          ).to.deep.equal([]);
        for (const data of seen.images) {
          for (const at of [0, Math.floor(data.length / 2), data.length - 60]) {
            const piece = data.slice(Math.max(0, at), Math.max(0, at) + 48);
            expect(
              everything.filter((l) => l.includes(piece)),
              'lines holding image bytes',
            ).to.deep.equal([]);
          }
        }
        expect(
          everything.filter((l) => l.includes('iVBORw0KGgo')),
          'lines holding a PNG',
        ).to.deep.equal([]);
      },
    );
  });
});
