/** Validation of the paging parameters (spec, "Paging parameters"; DESIGN: `_date` aliases). */
import { type Static, Type } from '@sinclair/typebox';
import type { ErrorObject } from 'ajv';
import { serviceError } from '../shared/errors';
import { MAX_PAGE_SIZE, type Paging, timestampToMs } from '../shared/paging';
import { textEnum } from '../shared/screenshot-options';
import { type ParamShape, type RawParams, ajv, looseValue, noteFor } from './request-schemas';

const PAGING_DEFAULTS = { page: 1, limit: MAX_PAGE_SIZE, order: 'DESC' } as const;
/** The highest page asked for: a million pages of 1000 is more than any account holds, and keeps the offset an exact integer. */
const MAX_PAGE = 1_000_000;

/** The last millisecond of the year 9999: no record is later, and a larger number is no date (a timestamp past it in seconds is too). */
const LAST_TIMESTAMP_MS = 253_402_300_799_999;

const timestamp = (description: string) => Type.Optional(Type.Number({ minimum: 0, maximum: LAST_TIMESTAMP_MS, description }));

const PAGING_SCHEMA = Type.Object(
  {
    page: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: PAGING_DEFAULTS.page, description: 'Page to retrieve, 1 to 1000000.' })),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE_SIZE, default: PAGING_DEFAULTS.limit, description: 'Records per page, 1 to 1000.' })),
    after: timestamp('Unix timestamp in seconds or milliseconds: only records created after it.'),
    before: timestamp('Unix timestamp in seconds or milliseconds: only records created before it.'),
    after_date: timestamp('Alias of after.'),
    before_date: timestamp('Alias of before.'),
    order: Type.Optional(textEnum(['ASC', 'DESC'], { default: PAGING_DEFAULTS.order, description: 'ASC: oldest first; DESC: newest first.' })),
  },
  { additionalProperties: false },
);

const validate = ajv.compile<Static<typeof PAGING_SCHEMA>>(PAGING_SCHEMA);

/** The paging parameters among `raw`; `others`: the route's other parameters, named with these when one is unknown. */
export function parsePaging(raw: RawParams, others: readonly string[] = []): Paging {
  const values: RawParams = {};
  for (const [k, v] of Object.entries(raw))
    if (v !== '' && v !== undefined && v !== null) values[k] = k === 'order' && typeof v === 'string' ? v.toUpperCase() : v;
  const loose = looseValue(values, PAGING_SCHEMA.properties, true);
  if (loose && 'note' in loose) throw serviceError('invalid_parameter', loose.note);
  if (loose || !validate(values)) {
    const { note } = noteFor(loose ?? ((validate.errors ?? [])[0] as ErrorObject), values, [...Object.keys(PAGING_SCHEMA.properties), ...others]);
    throw serviceError('invalid_parameter', note);
  }
  const { page, limit, order } = { ...PAGING_DEFAULTS, ...values };
  const after = values.after ?? values.after_date;
  const before = values.before ?? values.before_date;
  return {
    page,
    limit,
    afterMs: after === undefined ? null : timestampToMs(after),
    beforeMs: before === undefined ? null : timestampToMs(before),
    order,
  };
}

/** The paging parameters of the list endpoints; handlers receive them as Paging. */
export const PAGING_PARAMS: ParamShape<Paging> = { schema: PAGING_SCHEMA, parse: (raw) => parsePaging(raw) };
