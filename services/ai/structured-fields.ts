/**
 * The structured field definitions (ai_structured_fields) and the mode that needs them. The
 * spec orders the checks of an analysis: plan and addon gates, provider configured, model,
 * then structured fields, then credits. So the request shape lets the definitions through
 * as any JSON (the option's `checkedAfterGates`), and this check runs in that place, in the
 * ai service's ai.check (without an analysis the api refuses the option altogether). The
 * rules are the option table's schema, worded as every other option's.
 */
import { serviceError } from '../shared/errors';
import { newAjv, noteFor } from '../shared/param-notes';
import { OPTIONS_BY_NAME, type ScreenshotOptions, optionSchema } from '../shared/screenshot-options';

const FIELDS_OPTION = OPTIONS_BY_NAME.get('ai_structured_fields');
if (!FIELDS_OPTION) throw new Error('the option table has no ai_structured_fields');
const validate = newAjv().compile({ type: 'object', properties: { ai_structured_fields: optionSchema(FIELDS_OPTION) } });

const refuse = (note: string) => serviceError('invalid_ai_structured_fields', note, { param: 'ai_structured_fields' });

export function checkStructuredFields(o: Pick<ScreenshotOptions, 'ai_structured_fields' | 'ai_prompt_mode' | 'analyze_image_with_ai'>): void {
  const fields: unknown = o.ai_structured_fields;
  if (fields !== undefined) {
    const data = { ai_structured_fields: fields };
    if (!validate(data)) {
      const error = validate.errors?.[0];
      throw refuse(error ? noteFor(error, data, []).note : 'ai_structured_fields: is invalid.');
    }
    const seen = new Set<string>();
    for (const [i, field] of (o.ai_structured_fields ?? []).entries()) {
      if (seen.has(field.name)) {
        throw refuse(
          `ai_structured_fields[${i}].name: "${field.name}" is used by an earlier field; each field needs its own name (it becomes the key in the result).`,
        );
      }
      seen.add(field.name);
    }
  }
  if (o.analyze_image_with_ai === true && o.ai_prompt_mode === 'structured' && !o.ai_structured_fields?.length) {
    throw refuse(
      'ai_prompt_mode=structured needs ai_structured_fields: a JSON array of 1 to 50 field definitions, each {"name", "type"} with "options" for enum and ' +
        'multi (and an optional "description").',
    );
  }
}
