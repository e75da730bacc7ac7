/** store_key's templates: known placeholders only, keys that stay in the bucket, expansion. */
import { expect } from 'chai';
import { expandKeyTemplate, keyDateTime, keyTemplateProblem } from '../../services/shared/object-keys';

describe('object key templates (store_key)', () => {
  it('accepts the known placeholders and text around them', () => {
    expect(keyTemplateProblem('{id}.{ext}')).to.equal(null);
    expect(keyTemplateProblem('shots/{account}/{config_id}/{date}/{time}-{job_id}.{ext}')).to.equal(null);
    expect(keyTemplateProblem('fixed-name.png')).to.equal(null);
  });

  it('names what is wrong: an unknown placeholder, a stray brace, an absolute or climbing key', () => {
    expect(keyTemplateProblem('{id}-{colour}.{ext}')).to.include('unknown placeholder {colour}').and.include('{config_id}');
    expect(keyTemplateProblem('{id.{ext}')).to.include('brace');
    expect(keyTemplateProblem('{id}}')).to.include('brace');
    expect(keyTemplateProblem('/{id}')).to.include('starts with /');
    expect(keyTemplateProblem('a/../{id}')).to.include('..');
    expect(keyTemplateProblem('a\\{id}')).to.include('backslash');
  });

  it('expands every placeholder; {date} and {time} in UTC', () => {
    const at = Date.UTC(2026, 10, 28, 9, 5, 7);
    expect(keyDateTime(at)).to.deep.equal({ date: '2026-11-28', time: '09-05-07' });
    const key = expandKeyTemplate('{account}/{config_id}/{date}/{time}/{job_id}/{id}.{ext}', {
      id: 'Abc',
      ext: 'png',
      job_id: 'j1',
      config_id: 'c1',
      account: 'acct_1',
      ...keyDateTime(at),
    });
    expect(key).to.equal('acct_1/c1/2026-11-28/09-05-07/j1/Abc.png');
  });
});
