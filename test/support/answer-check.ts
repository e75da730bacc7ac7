/**
 * The check the tests install where answers meet their schemas (services/shared/answer-check.ts):
 * every JSON answer of a route and every webhook body the running system sends in a test is
 * validated against its schema made closed (every object that names its properties takes no
 * other), so an answer that carries a field its schema does not name fails the test that
 * caused it (the root hooks' afterEach, root-hooks.ts). What is sent is never changed.
 */
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import { checkAnswersWith } from '../../services/shared/answer-check';

type JsonSchema = Record<string, unknown>;

/** Subschema keywords: one schema, a list of them, or a map of them. */
const ONE = ['items', 'not', 'additionalProperties', 'if', 'then', 'else', 'contains'];
const LIST = ['anyOf', 'oneOf', 'allOf', 'prefixItems'];
const MAP = ['properties', 'patternProperties', '$defs', 'definitions'];

/** `schema` with every object that names its properties closed (additionalProperties: false, unless it says otherwise). */
export function closed(schema: unknown): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema;
  const out: JsonSchema = { ...(schema as JsonSchema) };
  for (const k of ONE) if (out[k] !== undefined) out[k] = closed(out[k]);
  for (const k of LIST) if (Array.isArray(out[k])) out[k] = (out[k] as unknown[]).map(closed);
  for (const k of MAP) {
    if (typeof out[k] === 'object' && out[k] !== null) out[k] = Object.fromEntries(Object.entries(out[k] as JsonSchema).map(([n, s]) => [n, closed(s)]));
  }
  if (out.properties !== undefined && out.additionalProperties === undefined && out.patternProperties === undefined) out.additionalProperties = false;
  return out;
}

const ajv = new Ajv({ allErrors: true, strict: false, validateFormats: false });
const compiled = new WeakMap<object, ValidateFunction>();

function problemOf(e: ErrorObject): string {
  if (e.keyword === 'additionalProperties') return `${e.instancePath}/${String(e.params.additionalProperty)}: a field the schema does not name`;
  return `${e.instancePath || '(the answer)'}: ${e.message ?? e.keyword}`;
}

/** What is wrong with `value` against `schema` made closed: nothing (an empty list) when it meets it. */
export function answerProblems(schema: JsonSchema, value: unknown): string[] {
  let validate = compiled.get(schema);
  if (!validate) {
    // JSON first: TypeBox's schemas carry symbol keys ajv need not see.
    validate = ajv.compile(closed(JSON.parse(JSON.stringify(schema))) as JsonSchema);
    compiled.set(schema, validate);
  }
  if (validate(JSON.parse(JSON.stringify(value)))) return [];
  return [...new Set((validate.errors ?? []).map(problemOf))];
}

const violations: string[] = [];

/** Installs the check: every answer sent from now on is checked, and what fails is kept for takeViolations. */
export function installAnswerCheck(): void {
  checkAnswersWith((where, schema, value) => {
    const problems = answerProblems(schema, value);
    if (problems.length) violations.push(`${where} answered what its schema does not say: ${problems.join('; ')}`);
  });
}

/** The answers that failed the check since the last call. */
export function takeViolations(): string[] {
  return violations.splice(0, violations.length);
}
