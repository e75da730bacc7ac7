import { expect } from 'chai';
import { validateShape } from '../../services/api/request-schemas';
import { checkStructuredFields } from '../../services/ai/structured-fields';
import { noteFor } from '../../services/shared/param-notes';
import type { ScreenshotOptions } from '../../services/shared/screenshot-options';
import { errorOf } from '../support/errors';

describe('param notes', () => {
  describe('a value that does not match its pattern is refused with the rule in words and an example, never the regular expression', () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ pdf_margin: '1.5' }, 'pdf_margin: "1.5" must be a length: a number (up to 4 decimals) followed by px, in, cm or mm, without spaces, e.g. 1.5cm.'],
      [{ pdf_margin: '-1cm' }, 'pdf_margin: "-1cm" must be a length: a number (up to 4 decimals) followed by px, in, cm or mm, without spaces, e.g. 1.5cm.'],
      [{ pdf_paper_width: '8.5 in' }, 'pdf_paper_width: "8.5 in" must be a length'],
      [{ pdf_page_ranges: 'abc' }, 'pdf_page_ranges: "abc" must be page numbers (from 1) and ranges of them, separated by commas, e.g. 1-3,5.'],
    ];
    for (const [params, note] of cases) {
      it(`${JSON.stringify(params)}`, () => {
        const err = errorOf(() => validateShape('snap', { url: 'https://example.com', image_format: 'pdf', ...params }));
        expect([err.type, err.code]).to.deep.equal(['invalid_parameter', 400]);
        expect(err.message).to.contain(note);
        expect(err.message).not.to.match(/\^|\$|letters, digits and underscores/);
      });
    }

    it("keeps the structured field name's own rule for those names", () => {
      const err = errorOf(() =>
        checkStructuredFields({ analyze_image_with_ai: true, ai_structured_fields: [{ name: '1st', type: 'string' }] } as unknown as ScreenshotOptions),
      );
      expect(err.message).to.equal(
        'ai_structured_fields[0].name: "1st" must be a name of letters, digits and underscores, starting with a letter, e.g. product_name.',
      );
    });
  });

  it('names the types a value may have in words, the last after "or"', () => {
    expect(noteFor({ keyword: 'type', instancePath: '/x', schemaPath: '', params: { type: 'string,number,boolean' } }, { x: [] }, [])).to.deep.equal({
      param: 'x',
      note: 'x: must be of type string, number or boolean, got [].',
    });
    expect(noteFor({ keyword: 'type', instancePath: '/x', schemaPath: '', params: { type: 'string' } }, { x: 1 }, []).note).to.equal(
      'x: must be of type string, got 1.',
    );
  });

  describe('fail_on_status: the value (or the entry at fault) once, the problem, one example', () => {
    const cases: Array<[string, string]> = [
      ['40x', 'fail_on_status: "40x" is not a status code, a range of them or a class; e.g. 404,500-599 or 4xx,5xx.'],
      ['404,40x', 'fail_on_status: "40x" is not a status code, a range of them or a class; e.g. 404,500-599 or 4xx,5xx.'],
      [',', 'fail_on_status: "," has an empty entry; separate the entries with single commas; e.g. 404,500-599 or 4xx,5xx.'],
      ['500-600', 'fail_on_status: "500-600": 600 is not an HTTP status (100 to 599); e.g. 404,500-599 or 4xx,5xx.'],
      ['600', 'fail_on_status: "600" is not an HTTP status (100 to 599); e.g. 404,500-599 or 4xx,5xx.'],
      ['599-500', 'fail_on_status: "599-500" is an empty range; write the lower code first; e.g. 404,500-599 or 4xx,5xx.'],
    ];
    for (const [value, note] of cases) {
      it(JSON.stringify(value), () => {
        const err = errorOf(() => validateShape('snap', { url: 'https://example.com', fail_on_status: value }));
        expect([err.type, err.code]).to.deep.equal(['invalid_parameter', 400]);
        expect(err.message).to.equal(note);
      });
    }
  });
});
