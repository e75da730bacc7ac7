/**
 * Answers typed once (docs/decisions/2026-11-28-answers-typed-once.md): every route's JSON
 * answer is described in /openapi.json by its owner's published records, with no bare object or
 * array anywhere, and the MCP tools' output schemas are their routes' answers.
 */
import fs from 'node:fs';
import { expect } from 'chai';
import { apiRoutes } from '../../services/api/api.service';
import { OPENAPI_DOCUMENT_SCHEMA, type OpenApiDocument, openApiDocument } from '../../services/api/http';
import { MCP_TOOLS, type ResolvedTool, listedTool, resolveTools } from '../../services/api/mcp-tools';
import { createFileStore } from '../../services/shared/storage';
import { configFrom, tempDir } from '../support/backends';

type JsonSchema = Record<string, unknown>;

/** The schema nodes of `schema` that say only object or array. */
function bareNodes(schema: unknown, at: string): string[] {
  if (typeof schema !== 'object' || schema === null) return [];
  const s = schema as JsonSchema;
  const here: string[] = [];
  const described = s.properties !== undefined || s.patternProperties !== undefined || typeof s.additionalProperties === 'object' || s.anyOf || s.allOf;
  if (s.type === 'object' && !described) here.push(`${at}: a bare object`);
  if (s.type === 'array' && s.items === undefined) here.push(`${at}: a bare array`);
  const children = Object.entries(s).flatMap(([k, v]): Array<[string, unknown]> => {
    if (k === 'properties' || k === 'patternProperties') return Object.entries(v as JsonSchema).map(([n, c]) => [`${at}.${n}`, c]);
    if (Array.isArray(v)) return v.map((c, i) => [`${at}.${k}[${i}]`, c]);
    return typeof v === 'object' && v !== null ? [[`${at}.${k}`, v]] : [];
  });
  return [...here, ...children.flatMap(([p, c]) => bareNodes(c, p))];
}

/** Capture errors a snap's request answers that a job's answer never carries (a job is refused that only when it is started). */
const SNAP_REQUEST_ONLY = new Set(['concurrency_limit_reached']);

describe('answers typed once: the route table and the MCP tools', () => {
  const dir = tempDir('answer-schemas-');
  const config = configFrom({ DATA_DIR: dir });
  const document: OpenApiDocument = openApiDocument(apiRoutes(createFileStore(config), config), config);
  const answerOf = (path: string, method: string): JsonSchema | undefined =>
    (document.paths[path]?.[method]?.responses as { 200: { content: Record<string, { schema: JsonSchema }> } } | undefined)?.[200].content['application/json']
      ?.schema;
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('lists every capture error docs/api.md names ("Capture errors") among the errors of /snap and of GET /jobs/{job_id}', () => {
    const docs = fs.readFileSync(require.resolve('../../../docs/api.md'), 'utf8');
    const section = docs.slice(docs.indexOf('### Capture errors'), docs.indexOf('### Fail-on rules'));
    const named = [...section.matchAll(/`([a-z_]+)`/g)].map((m) => m[1] as string).filter((code) => code !== 'js_inject');
    expect(named).to.include.members(['page_load_failed', 'action_failed', 'capture_rule_failed', 'capture_timeout']);
    for (const [path, method] of [
      ['/snap', 'get'],
      ['/snap', 'post'],
      ['/jobs/{job_id}', 'get'],
    ] as const) {
      const responses = document.paths[path]?.[method]?.responses as Record<string, { description: string }>;
      const listed = Object.values(responses).flatMap((r) => (r.description.startsWith('error_code: ') ? r.description.slice(12).split(', ') : []));
      // A job's answer is its capture's failure (503 capacity_exhausted too: a snap's job its service stopped under); 429 is the request's own.
      const expected = path === '/snap' ? named : named.filter((code) => !SNAP_REQUEST_ONLY.has(code));
      expect(listed, `${method.toUpperCase()} ${path}`).to.include.members(expected);
    }
  });

  it('describes every JSON answer of every route by its records, with no bare object or array anywhere in it', () => {
    const answers: Array<[string, unknown]> = [['GET /openapi.json', OPENAPI_DOCUMENT_SCHEMA]];
    for (const [path, ops] of Object.entries(document.paths)) {
      for (const method of Object.keys(ops ?? {})) {
        const schema = answerOf(path, method);
        if (schema) answers.push([`${method.toUpperCase()} ${path}`, schema]);
      }
    }
    expect(answers.length).to.be.greaterThan(40);
    const undeclared = answers.filter(([, s]) => (s as JsonSchema).not !== undefined).map(([where]) => where);
    expect(undeclared, 'routes that answer JSON without declaring it').to.deep.equal([]);
    expect(answers.flatMap(([where, s]) => bareNodes(s, where))).to.deep.equal([]);
    expect(bareNodes({ type: 'object', properties: { a: { type: 'array' }, b: { type: 'object' } } }, 'x')).to.deep.equal([
      'x.a: a bare array',
      'x.b: a bare object',
    ]);
  });

  it("gives each MCP tool its route's answer as output schema (or a tool error's envelope), and none to a tool that may answer CSV", () => {
    const tools = resolveTools(MCP_TOOLS, document);
    const output = (name: string) => listedTool(tools.get(name) as ResolvedTool, null).outputSchema as { anyOf?: JsonSchema[] } | undefined;
    expect(output('get_job_status')?.anyOf?.[0]).to.equal(answerOf('/jobs/{job_id}', 'get'));
    expect(output('snap')?.anyOf?.[0]).to.equal(answerOf('/snap', 'post'));
    expect(output('list_all_change_notifications')?.anyOf?.[1]).to.have.nested.property('properties.error_code');
    expect(MCP_TOOLS.filter((t) => output(t.name) === undefined).map((t) => t.name)).to.deep.equal(['get_domain_research_report']);
  });
});
