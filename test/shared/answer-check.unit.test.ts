/**
 * Where answers meet their schemas: every answer handed over reaches the check the tests
 * install (test/support/answer-check.ts, installed by the root hooks), which catches a field a
 * schema does not name at any depth; with no check installed nothing is even read.
 */
import { expect } from 'chai';
import { Type } from '@sinclair/typebox';
import { answerSent, checkAnswersWith } from '../../services/shared/answer-check';
import { answerProblems, closed, installAnswerCheck, takeViolations } from '../support/answer-check';
import { unnamed } from '../support/records';

const SCHEMA = Type.Object({
  id: Type.String(),
  items: Type.Array(Type.Object({ n: Type.Integer() })),
  open: Type.Record(Type.String(), Type.Unknown()),
  either: Type.Optional(Type.Union([Type.Object({ a: Type.String() }), Type.Object({ b: Type.String() })])),
});

describe('answers meet their schemas (the check the tests run over every answer)', () => {
  it('closes every object that names its properties, and leaves maps and what says otherwise open', () => {
    const c = closed(JSON.parse(JSON.stringify(SCHEMA))) as { additionalProperties: unknown; properties: Record<string, Record<string, unknown>> };
    expect(c.additionalProperties).to.equal(false);
    expect((c.properties.items?.items as Record<string, unknown> | undefined)?.additionalProperties).to.equal(false);
    expect(c.properties.open?.additionalProperties).to.equal(undefined);
    expect(closed({ type: 'object', properties: {}, additionalProperties: true })).to.deep.equal({
      type: 'object',
      properties: {},
      additionalProperties: true,
    });
  });

  it('passes an answer as its schema says, and names a made-up field at the top, in a list, and in a union', () => {
    const answer = { id: 'x', items: [{ n: 1 }], open: { anything: 1 }, either: { b: 'y' } };
    expect(answerProblems(SCHEMA, answer)).to.deep.equal([]);
    expect(answerProblems(SCHEMA, { ...answer, made_up: 1 })).to.deep.equal([unnamed('/made_up')]);
    expect(answerProblems(SCHEMA, { ...answer, items: [{ n: 1, made_up: 1 }] })).to.deep.equal([unnamed('/items/0/made_up')]);
    expect(answerProblems(SCHEMA, { ...answer, either: { b: 'y', made_up: 1 } })).to.include(unnamed('/either/made_up'));
    expect(answerProblems(SCHEMA, { ...answer, id: 1 })).to.deep.equal(['/id: must be string']);
  });

  it('hands every answer sent to the installed check, and reads nothing when none is installed', () => {
    answerSent('GET /made_up', SCHEMA, () => ({ id: 'x', items: [], open: {}, made_up: 1 }));
    expect(takeViolations()).to.deep.equal([`GET /made_up answered what its schema does not say: ${unnamed('/made_up')}`]);
    checkAnswersWith(null);
    try {
      answerSent('GET /made_up', SCHEMA, () => expect.fail('the answer is read without a check'));
    } finally {
      installAnswerCheck();
    }
    expect(takeViolations()).to.deep.equal([]);
  });
});
