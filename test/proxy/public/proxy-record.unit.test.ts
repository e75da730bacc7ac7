/** The own proxy record and the forms PUT and test answer: a made-up field (a password above all) is caught. */
import { expect } from 'chai';
import { PROXY_RECORD_SCHEMA, STORED_PROXY_RECORD_SCHEMA, TESTED_PROXY_SCHEMA } from '../../../services/proxy/public/proxy-record';
import type { ProxyRecord } from '../../../services/shared/contracts';
import { answerProblems } from '../../support/answer-check';
import { unnamed } from '../../support/records';

describe('the own proxy record (the proxy service publishes it)', () => {
  const record: ProxyRecord = {
    id: 1,
    label: 'proxy.test:8080',
    protocol: 'http',
    host: 'proxy.test',
    port: 8080,
    username: 'u',
    has_password: true,
    verified: false,
    exit_ip: null,
    last_test_ms: null,
    last_error: 'proxy_timeout',
  };

  it('passes the record and its forms, and catches a field it does not name', () => {
    expect(answerProblems(PROXY_RECORD_SCHEMA, record)).to.deep.equal([]);
    expect(answerProblems(STORED_PROXY_RECORD_SCHEMA, { ...record, verified_at: null, display_url: 'http://u:***@proxy.test:8080' })).to.deep.equal([]);
    expect(
      answerProblems(STORED_PROXY_RECORD_SCHEMA, {
        ...record,
        verified: true,
        verified_at: '2026-11-30T11:02:41.000Z',
        display_url: 'http://u:***@proxy.test:8080',
      }),
    ).to.deep.equal([]);
    const { id, label, verified, exit_ip, last_test_ms } = record;
    expect(answerProblems(TESTED_PROXY_SCHEMA, { id, label, verified, exit_ip, last_test_ms })).to.deep.equal([]);
    expect(answerProblems(PROXY_RECORD_SCHEMA, { ...record, password: 'secret' })).to.deep.equal([unnamed('/password')]);
    expect(answerProblems(TESTED_PROXY_SCHEMA, { id, label, verified, exit_ip, last_test_ms, host: 'proxy.test' })).to.deep.equal([unnamed('/host')]);
  });
});
