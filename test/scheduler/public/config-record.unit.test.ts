/** The configuration record: the options as given name only options, and a made-up field is caught. */
import { expect } from 'chai';
import { CONFIG_RECORD_SCHEMA } from '../../../services/scheduler/public/config-record';
import { answerProblems } from '../../support/answer-check';
import { unnamed } from '../../support/records';

describe('the configuration record (the scheduler publishes it)', () => {
  const record = {
    config: { url: 'https://example.com', wait: '100' },
    ids: { last_job_id: null, screenshot_config_id: 'c', embed_url: 'e' },
    created_at: '1',
  };

  it('takes the options as given (values as sent), and nothing that is no option', () => {
    expect(answerProblems(CONFIG_RECORD_SCHEMA, record)).to.deep.equal([]);
    expect(answerProblems(CONFIG_RECORD_SCHEMA, { ...record, config: { ...record.config, not_an_option: 1 } })).to.deep.equal([
      unnamed('/config/not_an_option'),
    ]);
    expect(answerProblems(CONFIG_RECORD_SCHEMA, { ...record, ids: { ...record.ids, made_up: 1 } })).to.deep.equal([unnamed('/ids/made_up')]);
  });
});
