/** The structured-mode schemas and the strict check of an answer, without any provider. */
import { expect } from 'chai';
import {
  checkStructuredAnswer,
  needsRelaxedSchema,
  outputSchema,
  parseJsonAnswer,
  schemaBudget,
  validationSchema,
} from '../../services/ai/providers/structured';
import { AiFailure, type StructuredField } from '../../services/ai/providers/types';
import { largestFields } from '../support/ai-providers';

const fields: StructuredField[] = [
  { name: 'title', type: 'string', description: 'The page title' },
  { name: 'price', type: 'number' },
  { name: 'in_stock', type: 'boolean' },
  { name: 'color', type: 'enum', options: ['red', 'green', 'blue'] },
  { name: 'tags', type: 'multi', options: ['sale', 'new', 'popular'], description: 'Badges shown' },
];

function failureOf(fn: () => unknown): AiFailure {
  try {
    fn();
  } catch (err) {
    if (err instanceof AiFailure) return err;
    throw err;
  }
  throw new Error('expected an AiFailure');
}

describe('structured schemas', () => {
  it('builds the strict schema: every type, enum as enum, multi as an array of its options, all required, nothing else allowed', () => {
    const { schema, relaxed } = outputSchema(fields);
    expect(relaxed).to.equal(false);
    expect(schema).to.deep.equal({
      type: 'object',
      properties: {
        title: { type: 'string', description: 'The page title' },
        price: { type: 'number' },
        in_stock: { type: 'boolean' },
        color: { type: 'string', enum: ['red', 'green', 'blue'] },
        tags: { type: 'array', items: { type: 'string', enum: ['sale', 'new', 'popular'] }, description: 'Badges shown Each option at most once.' },
      },
      required: ['title', 'price', 'in_stock', 'color', 'tags'],
      additionalProperties: false,
    });
  });

  it('stays strict at exactly 1000 enum values and relaxes past it', () => {
    const ten = (n: number): StructuredField[] =>
      Array.from({ length: n }, (_, i) => ({ name: `f${i}`, type: 'enum' as const, options: Array.from({ length: 100 }, (_, j) => `${j}`) }));
    expect(schemaBudget(ten(10)).enumValues).to.equal(1000);
    expect(needsRelaxedSchema(ten(10))).to.equal(false);
    expect(needsRelaxedSchema([...ten(10), { name: 'one_more', type: 'multi', options: ['x'] }])).to.equal(true);
  });

  it('relaxes when names and options exceed 120,000 characters, even under 1000 values', () => {
    const long = [{ name: 'big', type: 'enum' as const, options: Array.from({ length: 100 }, (_, j) => `${j}`.padEnd(1201, 'x')) }];
    expect(schemaBudget(long).enumValues).to.equal(100);
    expect(needsRelaxedSchema(long)).to.equal(true);
  });

  it('sends 50 fields of 100 options relaxed: plain strings and arrays of strings, the options listed in the description', () => {
    const big = largestFields();
    const { schema, relaxed } = outputSchema(big);
    expect(relaxed).to.equal(true);
    expect(JSON.stringify(schema)).not.to.contain('"enum"');
    const props = schema.properties as Record<string, Record<string, unknown>>;
    expect(props.field_0.type).to.equal('string');
    expect(props.field_0.description).to.contain('"f0_option_0"').and.to.contain('"f0_option_99"');
    expect(props.field_1).to.include({ type: 'array' });
    expect(props.field_1.items).to.deep.equal({ type: 'string' });
    expect(props.field_1.description).to.contain('"f1_option_42"');
    expect(schema.required).to.have.length(50);
    expect(schema.additionalProperties).to.equal(false);
  });

  it('checks answers against the exact definitions, whichever schema was sent', () => {
    expect(validationSchema(largestFields()).properties)
      .to.have.property('field_0')
      .that.deep.equals({
        type: 'string',
        enum: Array.from({ length: 100 }, (_, j) => `f0_option_${j}`),
      });
  });
});

describe('checking a structured answer', () => {
  const good = { title: 'Shop', price: 9.5, in_stock: true, color: 'green', tags: ['sale', 'new'] };

  it('accepts an answer with exactly the fields, each of its type', () => {
    expect(checkStructuredAnswer(good, fields)).to.deep.equal(good);
  });

  it('de-duplicates a multi answer', () => {
    expect(checkStructuredAnswer({ ...good, tags: ['sale', 'sale', 'new'] }, fields).tags).to.deep.equal(['sale', 'new']);
  });

  const broken: [string, Record<string, unknown>, string][] = [
    ['an enum value outside the options', { ...good, color: 'purple' }, "field 'color' is not one of its options"],
    ['a multi value outside the options', { ...good, tags: ['sale', 'free'] }, "field 'tags' holds a value that is not one of its options"],
    ['a number given as a string', { ...good, price: '9.5' }, "field 'price' must be a number"],
    ['a boolean given as a string', { ...good, in_stock: 'yes' }, "field 'in_stock' must be true or false"],
    ['a multi given as a string', { ...good, tags: 'sale' }, "field 'tags' must be a list of options"],
    ['a missing field', { title: 'Shop', price: 1, in_stock: true, tags: [] }, "field 'color' is missing"],
    ['an extra field', { ...good, extra: 1 }, "'extra' is not one of the fields"],
  ];
  for (const [what, answer, problem] of broken) {
    it(`rejects ${what} as ai_response_invalid, naming the problem`, () => {
      const f = failureOf(() => checkStructuredAnswer(answer, fields));
      expect(f.code).to.equal('ai_response_invalid');
      expect(f.note).to.contain(problem);
    });
  }

  it('rejects an answer that is not an object', () => {
    expect(failureOf(() => checkStructuredAnswer(['a'], fields)).note).to.contain('not a JSON object');
  });

  it('reads JSON, tolerating one ```json fence, and rejects text that is not JSON', () => {
    expect(parseJsonAnswer('```json\n{"a":1}\n```')).to.deep.equal({ a: 1 });
    expect(parseJsonAnswer(' {"a":2} ')).to.deep.equal({ a: 2 });
    const f = failureOf(() => parseJsonAnswer('Here is the answer: a=1'));
    expect(f.code).to.equal('ai_response_invalid');
    expect(f.note).to.contain('not valid JSON');
  });
});
