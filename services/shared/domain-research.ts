/**
 * Domain research, as the services share it: its limits, the field definitions a request
 * carries (`structures`, the official MCP server's names), and the shapes of its status,
 * report and webhook, each a JSON Schema the OpenAPI document shows and a type taken from it.
 * The api validates and answers (services/api/research-routes.ts), capture runs each domain
 * as a job (services/capture/research/research.ts), the ai service extracts the fields
 * (services/ai/research-extraction.ts); docs/ai.md describes it for users.
 */
import { type Static, Type } from '@sinclair/typebox';
import { textEnum } from './screenshot-options';

export const RESEARCH_LIMITS = {
  /** Domains one request may name (each one credit, one job). */
  domains: 1000,
  fields: 100,
  fieldName: 100,
  fieldDescription: 2000,
  name: 200,
  notes: 5000,
  /** Pages read per domain: its home page and at most two pages it links to. */
  pages: 3,
} as const;

export const RESEARCH_DATA_TYPES = ['string', 'array', 'boolean', 'number'] as const;
export type ResearchDataType = (typeof RESEARCH_DATA_TYPES)[number];

/** One field to extract, as the request names it. */
export const RESEARCH_FIELD_SCHEMA = Type.Object(
  {
    data_type: textEnum(RESEARCH_DATA_TYPES, { description: 'string, number, boolean, or array (a list of texts).' }),
    data_field_name: Type.String({
      minLength: 1,
      maxLength: RESEARCH_LIMITS.fieldName,
      description: `The field's name: a report key and CSV column (1 to ${RESEARCH_LIMITS.fieldName} characters, unique).`,
    }),
    data_field_prompt_description: Type.String({
      maxLength: RESEARCH_LIMITS.fieldDescription,
      description: 'What to extract, in words (up to 2000 characters).',
    }),
  },
  { additionalProperties: false },
);
export type ResearchField = Static<typeof RESEARCH_FIELD_SCHEMA>;

export const RESEARCH_STATES = ['queued', 'running', 'completed', 'failed'] as const;
export type ResearchState = (typeof RESEARCH_STATES)[number];

/** GET .../status, each list entry, and the head of the report. */
export const RESEARCH_STATUS_SCHEMA = Type.Object({
  job_id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  status: textEnum(RESEARCH_STATES, {
    description: 'queued (no domain started), running, completed (every domain finished, at least one answered), failed (every domain failed).',
  }),
  percent_complete: Type.Integer({ description: 'Finished domains (completed or failed) out of all, 0 to 100, rounded down.' }),
  completed_domains: Type.Integer(),
  failed_domains: Type.Integer(),
  total_domains: Type.Integer(),
  created_at: Type.String({ description: 'ISO 8601 UTC.' }),
  finished_at: Type.Union([Type.String(), Type.Null()], { description: 'ISO 8601 UTC, once every domain finished.' }),
});
export type ResearchStatus = Static<typeof RESEARCH_STATUS_SCHEMA>;

/** A page read for a domain. */
export const RESEARCH_PAGE_SCHEMA = Type.Object({
  url: Type.String({ description: 'The page as loaded (after its redirects).' }),
  title: Type.String(),
  direct_link: Type.String({ description: 'Its screenshot, as the model saw it.' }),
});
export type ResearchPage = Static<typeof RESEARCH_PAGE_SCHEMA>;

export const RESEARCH_ERROR_SCHEMA = Type.Object({ error_code: Type.String(), note: Type.String() });

/** One domain of the report. */
export const RESEARCH_RESULT_SCHEMA = Type.Object({
  domain: Type.String({ description: 'As given.' }),
  url: Type.String({ description: 'The home page asked for.' }),
  status: textEnum(['queued', 'running', 'completed', 'failed']),
  data: Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.Null()], {
    description: 'Each field by its data_field_name: its value, or null when the pages do not say. null until the domain completes.',
  }),
  sources: Type.Union([Type.Record(Type.String(), Type.Union([Type.String(), Type.Null()])), Type.Null()], {
    description: 'Each field by its data_field_name: the URL of the page its value came from (null when the value is null).',
  }),
  pages: Type.Array(RESEARCH_PAGE_SCHEMA, { description: 'The pages read, home page first.' }),
  error: Type.Union([RESEARCH_ERROR_SCHEMA, Type.Null()], { description: 'Why a failed domain failed.' }),
  finished_at: Type.Union([Type.String(), Type.Null()]),
});
export type ResearchResult = Static<typeof RESEARCH_RESULT_SCHEMA>;

/** GET .../report (JSON). */
export const RESEARCH_REPORT_SCHEMA = Type.Object({
  ...RESEARCH_STATUS_SCHEMA.properties,
  additional_notes: Type.Union([Type.String(), Type.Null()]),
  structures: Type.Array(RESEARCH_FIELD_SCHEMA),
  results: Type.Array(RESEARCH_RESULT_SCHEMA, { description: 'One per domain, in the order given.' }),
});
export type ResearchReport = Static<typeof RESEARCH_REPORT_SCHEMA>;

/** A page as ai.research reads it: its address, title, text, and its stored screenshot. */
export interface ResearchPageInput {
  url: string;
  title: string;
  text: string;
  image: { name: string; contentType: string };
}

/**
 * What ai.research found for one domain: each field's value and the URL of the page it came
 * from (both null when the pages do not say), or why it could not (the provider's failure,
 * the key gone): never thrown, so the domain's failure is recorded and its credit refunded.
 */
export type ResearchExtraction =
  | { ok: true; data: Record<string, unknown>; sources: Record<string, string | null> }
  | { ok: false; error: { error_code: string; note: string } };
