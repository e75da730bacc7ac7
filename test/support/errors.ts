/** The errors tests assert: the HTTP failure envelope, and what a synchronous call throws. */
import { expect } from 'chai';
import type { HttpAnswer } from './http';

/**
 * The spec's failure body, `{success: false, error_code, note}` and nothing else, with its
 * status and code; the note is a sentence and contains each fragment.
 */
export function expectEnvelope(r: HttpAnswer, status: number, code: string, ...fragments: string[]): void {
  expect(r.status, r.raw.toString().slice(0, 400)).to.equal(status);
  expect(r.body).to.have.all.keys('success', 'error_code', 'note');
  expect(r.body.success).to.equal(false);
  expect(r.body.error_code).to.equal(code);
  expect(r.body.note).to.be.a('string').and.not.be.empty;
  for (const f of fragments) expect(r.body.note).to.contain(f);
}

/** The error a synchronous call throws (validation tests); fails the test when nothing is thrown. */
export function errorOf(fn: () => unknown): { type: string; message: string; code: number } {
  try {
    fn();
  } catch (err) {
    return err as { type: string; message: string; code: number };
  }
  throw new Error('expected a validation error');
}
