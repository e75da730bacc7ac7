/** The screenshot record in its three forms: built as their schemas say, and a made-up field is caught. */
import { expect } from 'chai';
import {
  FULL_RECORD_SCHEMA,
  JOB_ANSWER_SCHEMA,
  LISTED_RECORD_SCHEMA,
  SNAP_ANSWER_SCHEMA,
  fullRecord,
  listedRecord,
  snapRecord,
} from '../../../services/capture/public/screenshot-records';
import { answerProblems } from '../../support/answer-check';
import { SCREENSHOT_REF as REF, unnamed } from '../../support/records';

describe('the screenshot records (capture publishes them)', () => {
  it('builds each form as its schema says: directly, through a real location, an own proxy, with and without an analysis', () => {
    for (const ref of [
      REF,
      { ...REF, proxy_server: null, ai: null, load_finished: null, status_code: null, final_url: null },
      { ...REF, proxy_server: null, custom_proxy: 'proxy.test:8080' },
      {
        ...REF,
        markdown_name: 'a.md',
        markdown_link: 'http://cdn.test/a.md',
        metadata_name: 'a.metadata.json',
        metadata_link: 'http://cdn.test/a.metadata.json',
      },
    ]) {
      expect(answerProblems(SNAP_ANSWER_SCHEMA, snapRecord(ref, true))).to.deep.equal([]);
      expect(answerProblems(SNAP_ANSWER_SCHEMA, snapRecord(ref, false))).to.deep.equal([]);
      expect(answerProblems(FULL_RECORD_SCHEMA, fullRecord(ref))).to.deep.equal([]);
      expect(answerProblems(LISTED_RECORD_SCHEMA, listedRecord(ref))).to.deep.equal([]);
      expect(answerProblems(JOB_ANSWER_SCHEMA, { success: true, status: 'completed', job_id: 'j', screenshot: listedRecord(ref) })).to.deep.equal([]);
    }
  });

  it('links markdown=true and metadata=true files as markdown_url and metadata_url, only when saved', () => {
    const ref = {
      ...REF,
      markdown_name: 'a.md',
      markdown_link: 'http://cdn.test/a.md',
      metadata_name: 'a.metadata.json',
      metadata_link: 'http://cdn.test/a.metadata.json',
    };
    expect(snapRecord(ref, false)).to.include({ markdown_url: 'http://cdn.test/a.md', metadata_url: 'http://cdn.test/a.metadata.json' });
    expect(fullRecord(ref)).to.include({ markdown_url: 'http://cdn.test/a.md', metadata_url: 'http://cdn.test/a.metadata.json' });
    expect(snapRecord(REF, false)).not.to.have.any.keys('markdown_url', 'metadata_url');
  });

  it('catches a made-up field in the record and in its AI object', () => {
    expect(answerProblems(SNAP_ANSWER_SCHEMA, { ...snapRecord(REF, true), made_up: 1 })).to.include(unnamed('/made_up'));
    const record = fullRecord(REF);
    expect(answerProblems(FULL_RECORD_SCHEMA, { ...record, ai: { ...record.ai, made_up: true } })).to.include(unnamed('/ai/made_up'));
    expect(answerProblems(LISTED_RECORD_SCHEMA, { ...listedRecord(REF), id: '42' })).to.deep.equal([unnamed('/id')]);
  });
});
