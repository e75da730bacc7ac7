/**
 * Structured mode without a network: the JSON Schema sent to a provider, built from the field
 * definitions, and the strict check of the answer against those same definitions.
 *
 * Providers' strict modes cap a schema's size. OpenAI documents (Structured Outputs,
 * "Supported schemas"): at most 1000 enum values across a schema, and at most 120,000
 * characters of property names, enum values and const values together; OpenRouter passes
 * the schema to such upstreams; Anthropic documents no number but answers 400 "Schema is too
 * complex" past its own. The spec allows 50 fields of 100 options (5000 values), so a schema
 * over the smaller budget is sent RELAXED: every enum becomes a plain string and every multi
 * an array of strings, the allowed options listed in the field's description. Whichever was
 * sent, the answer is validated here against the exact definitions (types, enum membership,
 * multi a subset of its options, no missing or extra field), so a relaxed schema loosens
 * only what the model is steered by, never what is returned.
 *
 * `uniqueItems` is not in OpenAI's supported subset (nor Anthropic's), so no schema sent
 * carries it: a multi answer is de-duplicated here instead.
 */
import Ajv, { type ErrorObject } from 'ajv';
import { AiFailure, type StructuredField } from './types';

export type JsonSchema = Record<string, unknown>;

/** The smaller of the providers' documented strict-mode budgets (see the header). */
export const STRICT_SCHEMA_LIMITS = { enumValues: 1000, characters: 120_000 } as const;

/** What a schema built from `fields` spends of STRICT_SCHEMA_LIMITS. */
export function schemaBudget(fields: readonly StructuredField[]): { enumValues: number; characters: number } {
  let enumValues = 0;
  let characters = 0;
  for (const f of fields) {
    characters += f.name.length;
    if (f.type === 'enum' || f.type === 'multi') {
      const options = f.options ?? [];
      enumValues += options.length;
      for (const o of options) characters += o.length;
    }
  }
  return { enumValues, characters };
}

export function needsRelaxedSchema(fields: readonly StructuredField[]): boolean {
  const b = schemaBudget(fields);
  return b.enumValues > STRICT_SCHEMA_LIMITS.enumValues || b.characters > STRICT_SCHEMA_LIMITS.characters;
}

function describe(f: StructuredField, extra?: string): { description?: string } {
  const text = [f.description?.trim(), extra].filter(Boolean).join(' ');
  return text ? { description: text } : {};
}

function property(f: StructuredField, relaxed: boolean): JsonSchema {
  const options = f.options ?? [];
  switch (f.type) {
    case 'string':
    case 'number':
    case 'boolean':
      return { type: f.type, ...describe(f) };
    case 'enum':
      return relaxed
        ? { type: 'string', ...describe(f, `Exactly one of these options, written as given: ${JSON.stringify(options)}.`) }
        : { type: 'string', enum: options, ...describe(f) };
    case 'multi':
      return relaxed
        ? { type: 'array', items: { type: 'string' }, ...describe(f, `Any of these options, each at most once, written as given: ${JSON.stringify(options)}.`) }
        : { type: 'array', items: { type: 'string', enum: options }, ...describe(f, 'Each option at most once.') };
  }
}

function objectOf(fields: readonly StructuredField[], prop: (f: StructuredField) => JsonSchema): JsonSchema {
  return {
    type: 'object',
    properties: Object.fromEntries(fields.map((f) => [f.name, prop(f)])),
    required: fields.map((f) => f.name),
    additionalProperties: false,
  };
}

/** The schema to send: strict (enums as enums) when it fits STRICT_SCHEMA_LIMITS, else relaxed. */
export function outputSchema(fields: readonly StructuredField[]): { schema: JsonSchema; relaxed: boolean } {
  const relaxed = needsRelaxedSchema(fields);
  return { schema: objectOf(fields, (f) => property(f, relaxed)), relaxed };
}

/** The schema an answer must pass: the field definitions, exactly. */
export function validationSchema(fields: readonly StructuredField[]): JsonSchema {
  return objectOf(fields, (f) => {
    if (f.type === 'enum') return { type: 'string', enum: f.options ?? [] };
    if (f.type === 'multi') return { type: 'array', items: { type: 'string', enum: f.options ?? [] }, uniqueItems: true };
    return { type: f.type };
  });
}

const ajv = new Ajv({ allErrors: true });

const TYPE_WORDS: Record<string, string> = { string: 'a string', number: 'a number', boolean: 'true or false', array: 'a list of options' };

function problem(e: ErrorObject): string {
  const [field, index] = e.instancePath.split('/').slice(1);
  const params = e.params as Record<string, unknown>;
  if (e.keyword === 'required') return `field '${String(params.missingProperty)}' is missing`;
  if (e.keyword === 'additionalProperties') return `'${String(params.additionalProperty)}' is not one of the fields`;
  if (!field) return 'the answer is not a JSON object';
  if (e.keyword === 'enum' && index !== undefined) return `field '${field}' holds a value that is not one of its options`;
  if (e.keyword === 'enum') return `field '${field}' is not one of its options`;
  if (e.keyword === 'type')
    return `field '${field}' must be ${index !== undefined ? 'a list of strings' : (TYPE_WORDS[String(params.type)] ?? String(params.type))}`;
  return `field '${field}' ${e.message ?? 'is invalid'}`;
}

function invalid(what: string): AiFailure {
  return new AiFailure(
    'ai_response_invalid',
    `The model's answer does not match the structured fields: ${what}. Try again; if it keeps failing, describe the fields more ` +
      `clearly or use another model.`,
  );
}

/** Reads JSON from a model's text answer; a single ```json fence around it is tolerated. */
export function parseJsonAnswer(text: string): unknown {
  const unfenced = text.trim().replace(/^```(?:json)?\s*\n?([\s\S]*?)\n?```$/, '$1');
  try {
    return JSON.parse(unfenced);
  } catch {
    throw invalid('it is not valid JSON');
  }
}

/**
 * The answer as the structured result, or AiFailure('ai_response_invalid') naming the first
 * problems. Multi answers are de-duplicated first (schemas sent cannot ask for unique items).
 */
export function checkStructuredAnswer(answer: unknown, fields: readonly StructuredField[]): Record<string, unknown> {
  const value =
    answer && typeof answer === 'object' && !Array.isArray(answer)
      ? Object.fromEntries(
          Object.entries(answer as Record<string, unknown>).map(([k, v]) => {
            const isMulti = fields.some((f) => f.name === k && f.type === 'multi');
            return [k, isMulti && Array.isArray(v) ? [...new Set(v)] : v];
          }),
        )
      : answer;
  const schema = validationSchema(fields);
  const validate = ajv.compile(schema);
  try {
    if (validate(value)) return value as Record<string, unknown>;
    const problems = [...new Set((validate.errors ?? []).map(problem))];
    throw invalid(problems.slice(0, 3).join('; ') + (problems.length > 3 ? ` (and ${problems.length - 3} more)` : ''));
  } finally {
    ajv.removeSchema(schema);
  }
}
