/** The CSV form of a domain research report (pure), read back as a spreadsheet would. */
import { expect } from 'chai';
import { csvColumns, reportCsv } from '../../services/api/research-csv';
import type { ResearchField, ResearchResult } from '../../services/shared/domain-research';
import { parseCsv } from '../support/csv';

const fields: ResearchField[] = [
  { data_type: 'number', data_field_name: 'founded', data_field_prompt_description: '' },
  { data_type: 'array', data_field_name: 'plans', data_field_prompt_description: '' },
  { data_type: 'string', data_field_name: 'Motto, in full', data_field_prompt_description: '' },
  { data_type: 'boolean', data_field_name: 'trial', data_field_prompt_description: '' },
];
const result = (over: Partial<ResearchResult>): ResearchResult => ({
  domain: 'a.example',
  url: 'https://a.example/',
  status: 'completed',
  data: null,
  sources: null,
  pages: [],
  error: null,
  finished_at: null,
  ...over,
});

describe('domain research report as CSV', () => {
  it('has one row per domain in order, one column per field, the state and error, then each field’s source', () => {
    const csv = reportCsv(fields, [
      result({
        data: { founded: 2011, plans: ['Basic', 'Pro'], 'Motto, in full': 'We say "hi",\nthen go', trial: false },
        sources: {
          founded: 'https://a.example/about',
          plans: 'https://a.example/pricing',
          'Motto, in full': 'https://a.example/',
          trial: 'https://a.example/pricing',
        },
      }),
      result({
        domain: 'b.example',
        data: { founded: null, plans: [], 'Motto, in full': null, trial: true },
        sources: { founded: null, plans: null, 'Motto, in full': null, trial: 'https://b.example/' },
      }),
      result({ domain: 'down.example', status: 'failed', error: { error_code: 'page_load_failed', note: 'The page could not be loaded.' } }),
    ]);
    expect(csv.startsWith('\ufeff')).to.equal(true);
    expect(csv.endsWith('\r\n')).to.equal(true);
    const rows = parseCsv(csv.slice(1));
    expect(rows[0]).to.deep.equal([
      'domain',
      'status',
      'founded',
      'plans',
      'Motto, in full',
      'trial',
      'error_code',
      'error_note',
      'founded (source)',
      'plans (source)',
      'Motto, in full (source)',
      'trial (source)',
    ]);
    expect(rows[1]).to.deep.equal([
      'a.example',
      'completed',
      '2011',
      'Basic; Pro',
      'We say "hi",\nthen go',
      'false',
      '',
      '',
      'https://a.example/about',
      'https://a.example/pricing',
      'https://a.example/',
      'https://a.example/pricing',
    ]);
    expect(rows[2]).to.deep.equal(['b.example', 'completed', '', '', '', 'true', '', '', '', '', '', 'https://b.example/']);
    expect(rows[3]).to.deep.equal(['down.example', 'failed', '', '', '', '', 'page_load_failed', 'The page could not be loaded.', '', '', '', '']);
    expect(rows).to.have.length(4);
    expect(csvColumns(fields)).to.deep.equal(rows[0]);
  });

  it('keeps a spreadsheet from taking a value from a website for a formula, but leaves numbers alone', () => {
    const csv = reportCsv(fields, [result({ data: { founded: -5, plans: ['=HYPERLINK("http://x")'], 'Motto, in full': '@SUM(A1)', trial: null } })]);
    const row = parseCsv(csv.slice(1))[1];
    expect(row?.slice(2, 5)).to.deep.equal(['-5', `'=HYPERLINK("http://x")`, "'@SUM(A1)"]);
  });
});
