/**
 * The screenshot configuration record, as get, list, update and delete show it: the options as
 * the caller gave them, its ids and its creation time. The scheduler owns configurations and
 * publishes the record's schema here; its type (ConfigView) comes from it.
 */
import { type Static, Type } from '@sinclair/typebox';
import { OPTION_TABLE } from '../../shared/screenshot-options';

/** The options as given: known options only, under their own names, values as sent (text, on GET and forms). */
export const GIVEN_OPTIONS_SCHEMA = Type.Object(
  Object.fromEntries(OPTION_TABLE.map((o) => [o.name, Type.Optional(Type.Unknown({ description: 'As given.' }))])) as Record<
    string,
    ReturnType<typeof Type.Unknown>
  >,
  { description: 'The options as they were given (an alias under the option it stands for).' },
);

export const CONFIG_RECORD_SCHEMA = Type.Object({
  config: GIVEN_OPTIONS_SCHEMA,
  ids: Type.Object({
    last_job_id: Type.Union([Type.String(), Type.Null()]),
    screenshot_config_id: Type.String(),
    embed_url: Type.String({ description: 'The public link to its latest image.' }),
  }),
  created_at: Type.String({ description: 'Epoch milliseconds, as text.' }),
});

/** This record in the kernel's table of records (shared/contracts.ts, PublishedRecords). */
declare global {
  interface PublishedRecords {
    configRecord: Static<typeof CONFIG_RECORD_SCHEMA>;
  }
}
