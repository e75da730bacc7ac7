/**
 * Structured field definitions pass the request's shape and are checked after the plan
 * gates, the provider and the model (the spec's order), with notes worded as every option's.
 */
import { expect } from 'chai';
import { validateShape } from '../../services/api/request-schemas';
import type { SnapOptions } from '../../services/shared/screenshot-options';
import { checkStructuredFields } from '../../services/ai/structured-fields';
import { errorOf } from '../support/errors';

describe('structured field definitions (checked after the gates)', () => {
  const parsed = (params: Record<string, unknown>) => validateShape<SnapOptions>('snap', { url: 'https://example.com', ...params });

  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['a field name starting with a digit', { ai_structured_fields: [{ name: '1st', type: 'string' }] }, 'ai_structured_fields[0].name'],
    ['an enum field without options', { ai_structured_fields: [{ name: 'colour', type: 'enum' }] }, 'ai_structured_fields[0]: "options" is required'],
    ['51 fields', { ai_structured_fields: Array.from({ length: 51 }, (_, i) => ({ name: `f${i}`, type: 'string' })) }, 'at most 50 items'],
    [
      'an enum of 101 options',
      { ai_structured_fields: [{ name: 'c', type: 'enum', options: Array.from({ length: 101 }, (_, i) => `o${i}`) }] },
      'ai_structured_fields[0].options: at most 100 items',
    ],
    [
      'an unknown field type',
      { ai_structured_fields: [{ name: 'c', type: 'date' }] },
      'ai_structured_fields[0].type: must be one of string, number, boolean, enum, multi',
    ],
    [
      'a name used twice',
      {
        ai_structured_fields: [
          { name: 'price', type: 'number' },
          { name: 'price', type: 'string' },
        ],
      },
      'ai_structured_fields[1].name: "price" is used by an earlier field',
    ],
    ['structured mode without fields', { analyze_image_with_ai: true, ai_prompt_mode: 'structured' }, 'ai_prompt_mode=structured needs ai_structured_fields'],
    [
      'structured mode with an empty list',
      { analyze_image_with_ai: true, ai_prompt_mode: 'structured', ai_structured_fields: [] },
      'ai_prompt_mode=structured needs ai_structured_fields',
    ],
  ];
  for (const [what, params, fragment] of cases) {
    it(`lets ${what} through the request shape, then refuses it with invalid_ai_structured_fields`, () => {
      const options = parsed(params);
      const err = errorOf(() => checkStructuredFields(options));
      expect(err.type).to.equal('invalid_ai_structured_fields');
      expect(err.code).to.equal(400);
      expect(err.message).to.contain(fragment);
    });
  }

  it('accepts the largest definitions the spec allows: 50 fields of 100 options', () => {
    const fields = Array.from({ length: 50 }, (_, i) => ({
      name: `f${i}`,
      type: i % 2 ? 'multi' : 'enum',
      options: Array.from({ length: 100 }, (_, j) => `o${j}`),
    }));
    expect(() =>
      checkStructuredFields(parsed({ analyze_image_with_ai: true, ai_prompt_mode: 'structured', ai_structured_fields: JSON.stringify(fields) })),
    ).not.to.throw();
  });

  it('accepts simple mode without fields, and fields without an analysis', () => {
    expect(() => checkStructuredFields(parsed({ analyze_image_with_ai: true }))).not.to.throw();
    expect(() => checkStructuredFields(parsed({ ai_structured_fields: [{ name: 'title', type: 'string' }] }))).not.to.throw();
  });
});
