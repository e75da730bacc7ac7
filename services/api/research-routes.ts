/**
 * Domain research (the official MCP server's create_domain_research, list, status and
 * report tools): a list of domains and the fields to extract from each site. Creating one
 * checks everything before anything is written or reserved: the parameters (each domain a
 * host name or URL, the field rules, the counts), then the one admission every spending
 * request runs, in its order (spend-admission.ts): domains and webhook_url that name a refused
 * address literally, the plan gates for an own AI provider, the provider and model (ai.check),
 * and that the month's research credits cover every domain (room asked, nothing held: each
 * domain reserves its own when it starts). The capture service writes the request and a job
 * per domain, and runs them (services/capture/research/research.ts).
 */
import net from 'node:net';
import { type Static, Type } from '@sinclair/typebox';
import type { TargetPolicy } from '../shared/address-policy';
import { call } from '../shared/contracts';
import {
  RESEARCH_FIELD_SCHEMA,
  RESEARCH_LIMITS,
  RESEARCH_REPORT_SCHEMA,
  RESEARCH_STATUS_SCHEMA,
  type ResearchField,
  type ResearchReport,
} from '../shared/domain-research';
import { serviceError } from '../shared/errors';
import type { Paging } from '../shared/paging';
import { AI_PROVIDERS, type AnalysisOptions, textEnum } from '../shared/screenshot-options';
import { ok, type RouteContext, type RouteDef, route } from './http';
import { PAGING_PARAMS } from './paging-params';
import { KEY_ONLY_PARAMS, objectParams, type ParamShape, withLists } from './request-schemas';
import { ERROR_COLUMNS, LEADING_COLUMNS, reportCsv, sourceColumn } from './research-csv';
import { admission } from './spend-admission';

const CREATE_SCHEMA = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: RESEARCH_LIMITS.name, description: 'A name for the job, shown with its status.' })),
    additional_notes: Type.Optional(
      Type.String({ maxLength: RESEARCH_LIMITS.notes, description: 'Context for the model on every domain (who the sites are, what to prefer).' }),
    ),
    domains: Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), {
      minItems: 1,
      maxItems: RESEARCH_LIMITS.domains,
      description:
        `1 to ${RESEARCH_LIMITS.domains} sites: a host name (example.com, read as https://example.com/) or an http(s) URL of the page to start ` +
        `from. One credit each.`,
    }),
    structures: Type.Array(RESEARCH_FIELD_SCHEMA, {
      minItems: 1,
      maxItems: RESEARCH_LIMITS.fields,
      description: `1 to ${RESEARCH_LIMITS.fields} fields to extract from each site.`,
    }),
    webhook_url: Type.Optional(
      Type.String({ format: 'http-url', maxLength: 2048, description: 'Sent a signed POST (Standard Webhooks) when every domain has finished.' }),
    ),
    ai_provider: Type.Optional(textEnum(AI_PROVIDERS, { description: 'service (the default), or anthropic, openai, openrouter with your own key.' })),
    ai_model: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'Model id for an own provider; ignored for service.' })),
  },
  { additionalProperties: false },
);

/** A validated request: each domain with the home page it reads, the fields with their names trimmed. */
type CreateParams = Omit<Static<typeof CREATE_SCHEMA>, 'domains'> & { domains: Array<{ domain: string; url: string }> };

const HOST_NAME = /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;

/** The home page a domain names: a host name is read over https; a URL as given (its fragment dropped). */
export function homeUrlOf(raw: string): { url: string } | { why: string } {
  const text = raw.trim();
  const named = 'give a host name (example.com) or an http:// or https:// URL';
  if (/\s/.test(text)) return { why: `has spaces in it; ${named}` };
  let url: URL;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text : `https://${text}`);
  } catch {
    return { why: `is not a host name or a URL; ${named}` };
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { why: `uses ${url.protocol}; ${named}` };
  if (url.username || url.password) return { why: 'carries a user name or password; give the site without them' };
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (!net.isIP(host) && host !== 'localhost' && !HOST_NAME.test(host)) return { why: `is not a host name or a URL; ${named}` };
  url.hash = '';
  return { url: url.href };
}

const invalid = (param: string, note: string) => serviceError('invalid_parameter', `${param}: ${note}`, { param });

/** The rules a schema does not say: the domains read, no domain twice, field names usable as keys and CSV columns. */
function checkRequest(values: Static<typeof CREATE_SCHEMA>): CreateParams {
  const seen = new Map<string, number>();
  const domains = values.domains.map((domain, i) => {
    const home = homeUrlOf(domain);
    if ('why' in home) throw invalid(`domains[${i}]`, `"${domain.slice(0, 100)}" ${home.why}.`);
    const first = seen.get(home.url);
    if (first !== undefined)
      throw invalid(`domains[${i}]`, `"${domain}" is the same site as domains[${first}]; each domain is researched (and charged) once per request.`);
    seen.set(home.url, i);
    return { domain: domain.trim(), url: home.url };
  });
  const structures: ResearchField[] = values.structures.map((f, i) => {
    const name = f.data_field_name.trim();
    if (name === '') throw invalid(`structures[${i}].data_field_name`, 'must not be blank.');
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it refuses
    if (/[\u0000-\u001f\u007f]/.test(name)) throw invalid(`structures[${i}].data_field_name`, 'must not contain line breaks or other control characters.');
    return { ...f, data_field_name: name, data_field_prompt_description: f.data_field_prompt_description.trim() };
  });
  // Each field's name and source column must be free (letter case aside): the report's own columns first, then earlier fields'.
  const columns = new Map<string, string>([...LEADING_COLUMNS, ...ERROR_COLUMNS].map((c) => [c, "one of the report's own columns"]));
  structures.forEach((f, i) => {
    for (const column of [f.data_field_name, sourceColumn(f.data_field_name)]) {
      const taken = columns.get(column.toLowerCase());
      if (taken !== undefined) {
        throw invalid(
          `structures[${i}].data_field_name`,
          `"${f.data_field_name}" would make the column "${column}", which is ${taken}. Each field needs a name of its own (letter case aside); domain, ` +
            `status, error_code, error_note and "<field> (source)" are the report's own columns.`,
        );
      }
      columns.set(column.toLowerCase(), `taken by structures[${i}] ("${f.data_field_name}")`);
    }
  });
  return { ...values, domains, structures };
}

const createObject = objectParams(CREATE_SCHEMA, { codes: { ai_provider: 'ai_provider_unsupported' } });
export const CREATE_PARAMS: ParamShape<CreateParams> = {
  schema: CREATE_SCHEMA,
  parse: (raw) => checkRequest(createObject.parse(withLists(raw, ['domains', 'structures']))),
};

const REPORT_SCHEMA = Type.Object(
  {
    format: Type.Optional(
      textEnum(['json', 'csv'], { description: 'json (default) or csv: one row per domain, one column per field, its state, error and sources.' }),
    ),
  },
  { additionalProperties: false },
);
export const REPORT_PARAMS = objectParams(REPORT_SCHEMA);

/** What a research job can name and spend: an own provider, a research credit per domain. */
const RESEARCH_ADMISSION = admission({ features: ['ownAi'], structuredFields: false, route: false, schedule: false, credits: ['research_domains'] });

async function create(ctx: RouteContext<CreateParams>, policy: TargetPolicy) {
  const { broker, account } = ctx;
  const p = ctx.params;
  const aiOptions: AnalysisOptions = { ...(p.ai_provider ? { ai_provider: p.ai_provider } : {}), ...(p.ai_model ? { ai_model: p.ai_model } : {}) };
  await RESEARCH_ADMISSION.admit({
    broker,
    account,
    policy,
    given: { ...aiOptions, analyze_image_with_ai: true, ...(p.webhook_url ? { webhook_url: p.webhook_url } : {}) },
    targets: p.domains.map((d, i) => [`domains[${i}]`, d.url] as const),
    // Every domain's credit must be there now (each domain reserves its own when it starts).
    room: { research_domains: p.domains.length },
  });
  const status = await call(broker, 'capture.researchCreate', {
    input: {
      accountId: account.accountId,
      name: p.name ?? null,
      notes: p.additional_notes ?? null,
      structures: p.structures,
      aiOptions,
      webhookUrl: p.webhook_url ?? null,
      domains: p.domains,
    },
  });
  return { success: true, ...status };
}

async function list(ctx: RouteContext<Paging>) {
  const page = await call(ctx.broker, 'capture.researchList', { accountId: ctx.account.accountId, paging: ctx.params });
  return { success: true, domain_research_requests: page.requests, has_more: page.has_more };
}

const jobIdOf = (ctx: RouteContext<unknown>) => ctx.path.job_id ?? '';

async function status(ctx: RouteContext<unknown>) {
  return { success: true, ...(await call(ctx.broker, 'capture.researchStatus', { accountId: ctx.account.accountId, id: jobIdOf(ctx) })) };
}

/** The whole report, read part by part (no part crosses the transporter larger than capture allows). */
async function wholeReport(ctx: RouteContext<unknown>): Promise<ResearchReport> {
  let from: number | null = 0;
  let head: Omit<ResearchReport, 'results'> | null = null;
  const results: ResearchReport['results'] = [];
  while (from !== null) {
    const part: { head: Omit<ResearchReport, 'results'> | null; results: ResearchReport['results']; next: number | null } = await call(
      ctx.broker,
      'capture.researchReport',
      { accountId: ctx.account.accountId, id: jobIdOf(ctx), from },
    );
    head ??= part.head;
    results.push(...part.results);
    from = part.next;
  }
  if (!head) throw serviceError('internal_error', 'The report could not be read.');
  return { ...head, results };
}

async function report(ctx: RouteContext<Static<typeof REPORT_SCHEMA>>) {
  const whole = await wholeReport(ctx);
  if (ctx.params.format !== 'csv') return { success: true, ...whole };
  return ctx.reply
    .header('content-type', 'text/csv; charset=utf-8')
    .header('content-disposition', `attachment; filename="domain-research-${whole.job_id}.csv"`)
    .send(reportCsv(whole.structures, whole.results));
}

export function researchRoutes(policy: TargetPolicy): RouteDef[] {
  return [
    route({
      method: 'POST',
      url: '/api/domain_research_requests',
      summary:
        'Researches a list of domains: the fields given in structures, extracted from each site (one credit per domain). Answers the new job; docs/ai.md.',
      tag: 'domain research',
      params: CREATE_PARAMS,
      response: ok(RESEARCH_STATUS_SCHEMA.properties),
      errors: ['invalid_parameter', 'ai_provider_unsupported', ...RESEARCH_ADMISSION.errors],
      handler: (ctx) => create(ctx, policy),
    }),
    route({
      method: 'GET',
      url: '/api/domain_research_requests',
      summary: "The account's domain research jobs, newest first, paged as the other lists.",
      tag: 'domain research',
      params: PAGING_PARAMS,
      response: ok({ domain_research_requests: Type.Array(RESEARCH_STATUS_SCHEMA), has_more: Type.Boolean() }),
      errors: ['invalid_parameter'],
      handler: list,
    }),
    route({
      method: 'GET',
      url: '/api/domain_research_requests/:job_id/status',
      summary: "A domain research job's progress.",
      tag: 'domain research',
      params: KEY_ONLY_PARAMS,
      response: ok(RESEARCH_STATUS_SCHEMA.properties),
      errors: ['invalid_parameter', 'not_found'],
      handler: status,
    }),
    route({
      method: 'GET',
      url: '/api/domain_research_requests/:job_id/report',
      summary: "A domain research job's results so far: JSON (default), or CSV with format=csv (one row per domain).",
      tag: 'domain research',
      params: REPORT_PARAMS,
      response: { contentTypes: ['application/json', 'text/csv'], json: ok(RESEARCH_REPORT_SCHEMA.properties) },
      errors: ['invalid_parameter', 'not_found'],
      handler: report,
    }),
  ];
}
