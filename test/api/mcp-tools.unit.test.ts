/**
 * The MCP tool table against the api's real route table (its OpenAPI document): every tool
 * finds its route, the request a call makes (path, fixed parameters, the marker, text on a
 * GET), the real-location values offered, and the image an agent is handed.
 */
import fs from 'node:fs';
import { expect } from 'chai';
import sharp from 'sharp';
import { apiRoutes } from '../../services/api/api.service';
import { type OpenApiDocument, openApiDocument } from '../../services/api/http';
import { AGENT_IMAGE_MAX_BYTES, AGENT_IMAGE_MAX_EDGE, AGENT_IMAGE_MAX_PIXELS, imageForAgent } from '../../services/api/mcp-images';
import { MCP_TOOLS, type ResolvedTool, type ToolSpec, listedTool, resolveTools, toolRequest } from '../../services/api/mcp-tools';
import { createFileStore } from '../../services/shared/storage';
import { configFrom, tempDir } from '../support/backends';
import { errorOf } from '../support/errors';

describe('MCP tools: the table against the route table', () => {
  const dir = tempDir('mcp-tools-');
  const config = configFrom({ DATA_DIR: dir });
  const document: OpenApiDocument = openApiDocument(apiRoutes(createFileStore(config), config), config);
  const tools = resolveTools(MCP_TOOLS, document);
  const tool = (name: string) => tools.get(name) as ResolvedTool;
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('finds the route of every tool, and refuses a tool whose route or path arguments the API does not have', () => {
    expect([...tools.keys()]).to.have.length(20);
    const snap = MCP_TOOLS[0] as ToolSpec;
    expect(() => resolveTools([{ ...snap, path: '/snapshot' }], document)).to.throw('the API has no route POST /snapshot');
    expect(() => resolveTools([{ ...snap, method: 'PATCH' }], document)).to.throw('the API has no route PATCH /snap');
    const get = tool('get_screenshot_config').spec;
    expect(() => resolveTools([{ ...get, pathArgs: {} }], document)).to.throw("its path arguments () are not the path's (id)");
  });

  it('fills the path from its argument (encoded), sends the other arguments as the JSON body with the mcp marker', () => {
    const r = toolRequest(tool('update_screenshot_config'), { screenshot_configuration_id: ' a/b ', custom_title: 'T', wait: 100 });
    expect(r).to.deep.equal({ method: 'PATCH', path: '/screenshot_configs/a%2Fb', body: { custom_title: 'T', wait: 100, mcp: true } });
    const err = errorOf(() => toolRequest(tool('delete_screenshot_config'), {}));
    expect([err.type, err.code]).to.deep.equal(['invalid_parameter', 400]);
    expect(err.message).to.contain('screenshot_configuration_id is required');
    // Given, but not one id: said so, not "required".
    const list = errorOf(() => toolRequest(tool('get_job_status'), { job_id: ['a', 'b'] }));
    expect(list.type).to.equal('invalid_parameter');
    expect(list.message).to.contain('job_id: must be text (one id), got a list');
    // Not valid Unicode (a lone surrogate): said so, not an internal error from encoding the path.
    const surrogate = errorOf(() => toolRequest(tool('get_job_status'), { job_id: 'a\ud800' }));
    expect([surrogate.type, surrogate.code]).to.deep.equal(['invalid_parameter', 400]);
    expect(surrogate.message).to.contain('job_id: holds a lone surrogate');
    // Longer than any id: answered for the argument, not for the REST path it would make.
    const long = errorOf(() => toolRequest(tool('get_job_status'), { job_id: 'j'.repeat(150) }));
    expect([long.type, long.code]).to.deep.equal(['not_found', 404]);
    expect(long.message).to.contain('job_id: no id is 150 characters long');
  });

  it("sends a GET tool's arguments as query text", () => {
    const r = toolRequest(tool('list_all_screenshots'), { page: 2, limit: 10, after: '1700000000', order: 'ASC' });
    expect(r).to.deep.equal({ method: 'GET', path: '/screenshots', query: { page: '2', limit: '10', after: '1700000000', order: 'ASC', mcp: 'true' } });
  });

  it('always asks a snap for the record: json=true may be repeated, json=false is refused with a note', () => {
    expect(toolRequest(tool('snap'), { url: 'https://example.com' }).body).to.deep.equal({ url: 'https://example.com', json: true, mcp: true });
    expect(toolRequest(tool('snap_html'), { html_content: '<p>x</p>', json: true }).body).to.include({ json: true });
    const err = errorOf(() => toolRequest(tool('snap'), { url: 'https://example.com', json: false }));
    expect(err.type).to.equal('invalid_parameter');
    expect(err.message).to.contain('json: always true here');
  });

  it("offers the server's real locations as real_location's values, and says so when there are none or they could not be read", () => {
    const real = (locations: string[] | null) =>
      (listedTool(tool('snap'), locations).inputSchema.properties as Record<string, Record<string, unknown>>).real_location;
    expect(real(['London', 'USA'])?.enum).to.deep.equal(['London', 'USA']);
    expect(real([])?.enum).to.equal(undefined);
    expect(String(real([])?.description)).to.contain('no real locations configured');
    expect(String(real(null)?.description)).to.contain('call list_real_locations');
  });
});

describe('MCP tools: the image an agent is handed', () => {
  const solid = (width: number, height: number, format: 'png' | 'jpeg' | 'webp') =>
    sharp({ create: { width, height, channels: 3, background: { r: 200, g: 30, b: 60 } } })
      [format]()
      .toBuffer();

  it('sends a capture that fits as it is', async () => {
    const png = await solid(800, 600, 'png');
    const image = await imageForAgent(png, 'image/png');
    expect(image).to.include({ mimeType: 'image/png', width: 800, height: 600, converted: false });
    expect(Buffer.from(image?.data ?? '', 'base64').equals(png)).to.equal(true);
  });

  it(`scales a larger one to ${AGENT_IMAGE_MAX_EDGE} px and ${AGENT_IMAGE_MAX_PIXELS} pixels at most, as JPEG, keeping its proportions`, async () => {
    for (const [w, h] of [
      [3840, 2000],
      [1920, 12000],
      [1500, 1000],
    ] as const) {
      const image = await imageForAgent(await solid(w, h, 'webp'), 'image/webp');
      expect(image?.mimeType).to.equal('image/jpeg');
      expect(image?.converted).to.equal(true);
      const { width = 0, height = 0 } = image ?? {};
      expect(Math.max(width, height), `${w}×${h}`).to.be.at.most(AGENT_IMAGE_MAX_EDGE);
      expect(width * height, `${w}×${h}`).to.be.at.most(AGENT_IMAGE_MAX_PIXELS);
      expect(width / height).to.be.closeTo(w / h, 0.02);
      expect(image?.original).to.deep.equal({ width: w, height: h, format: 'webp' });
      const decoded = await sharp(Buffer.from(image?.data ?? '', 'base64')).metadata();
      expect([decoded.format, decoded.width, decoded.height]).to.deep.equal(['jpeg', width, height]);
    }
  });

  it(`re-encodes a capture that fits in size but not in bytes (${AGENT_IMAGE_MAX_BYTES})`, async () => {
    const noise = Buffer.alloc(1200 * 800 * 3);
    for (let i = 0; i < noise.length; i++) noise[i] = (i * 7919) % 251;
    const png = await sharp(noise, { raw: { width: 1200, height: 800, channels: 3 } })
      .png({ compressionLevel: 0 })
      .toBuffer();
    expect(png.length).to.be.greaterThan(AGENT_IMAGE_MAX_BYTES);
    const image = await imageForAgent(png, 'image/png');
    expect(image).to.include({ mimeType: 'image/jpeg', width: 1200, height: 800, converted: true });
  });

  it('hands no image for a PDF capture', async () => {
    expect(await imageForAgent(Buffer.from('%PDF-1.7'), 'application/pdf')).to.equal(null);
  });
});
