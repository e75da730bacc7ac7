/** Validation of the paging parameters (spec, "Paging parameters"; DESIGN: `_date` aliases). */
import Ajv, { type ErrorObject } from 'ajv';
import { serviceError } from '../shared/errors';
import { MAX_PAGE_SIZE, type Paging, timestampToMs } from '../shared/paging';
import type { RawParams } from './request-schemas';
import { noteFor } from './request-schemas';

export const PAGING_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    page: { type: 'integer', minimum: 1, default: 1, description: 'Page to retrieve.' },
    limit: { type: 'integer', minimum: 1, maximum: MAX_PAGE_SIZE, default: MAX_PAGE_SIZE, description: 'Records per page, 1 to 1000.' },
    after: { type: 'number', minimum: 0, description: 'Unix timestamp in seconds or milliseconds: only records created after it.' },
    before: { type: 'number', minimum: 0, description: 'Unix timestamp in seconds or milliseconds: only records created before it.' },
    after_date: { type: 'number', minimum: 0, description: 'Alias of after.' },
    before_date: { type: 'number', minimum: 0, description: 'Alias of before.' },
    order: { type: 'string', enum: ['ASC', 'DESC'], default: 'DESC', description: 'ASC: oldest first; DESC: newest first.' },
  },
} as const;

const validate = new Ajv({ coerceTypes: true, allErrors: false, strict: false }).compile(PAGING_SCHEMA);

export function parsePaging(raw: RawParams): Paging {
  const values: RawParams = {};
  for (const [k, v] of Object.entries(raw)) if (v !== '' && v !== undefined && v !== null) values[k] = k === 'order' && typeof v === 'string' ? v.toUpperCase() : v;
  if (!validate(values)) {
    const { note } = noteFor((validate.errors ?? [])[0] as ErrorObject, values, Object.keys(PAGING_SCHEMA.properties));
    throw serviceError('invalid_parameter', note);
  }
  const after = (values.after ?? values.after_date) as number | undefined;
  const before = (values.before ?? values.before_date) as number | undefined;
  return {
    page: (values.page as number | undefined) ?? 1,
    limit: (values.limit as number | undefined) ?? MAX_PAGE_SIZE,
    afterMs: after === undefined ? null : timestampToMs(after),
    beforeMs: before === undefined ? null : timestampToMs(before),
    order: (values.order as 'ASC' | 'DESC' | undefined) ?? 'DESC',
  };
}
