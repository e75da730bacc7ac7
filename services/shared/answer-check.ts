/**
 * Where the answers a service sends meet their schemas: the api hands every JSON answer of a
 * route to `answerSent` with the route's response schema, the notifier every webhook body with
 * its kind's schema. Nothing is checked in production (no check is installed, and the value is
 * not even read); the tests install one (test/support/answer-check.ts) that fails the test
 * whose answer carries a field its schema does not name. What is sent never changes.
 */

type JsonSchema = Record<string, unknown>;

/** Told of one answer: what sent it (such as "GET /snap"), its schema, and the value. */
export type AnswerCheck = (where: string, schema: JsonSchema, value: unknown) => void;

let installed: AnswerCheck | null = null;

/** Installs the check (tests), or removes it with null. */
export function checkAnswersWith(check: AnswerCheck | null): void {
  installed = check;
}

/** Hands an answer to the installed check; `value` is read only when one is installed. */
export function answerSent(where: string, schema: JsonSchema, value: () => unknown): void {
  if (installed) installed(where, schema, value());
}
