/** The webhook bodies and the notifier's records: built as their schemas say, and a made-up field is caught. */
import { expect } from 'chai';
import { slackMessage } from '../../../services/notifier/public/change-alerts';
import { captureDeliveryBody } from '../../../services/notifier/public/outbox';
import { CHANGE_NOTIFICATION_SCHEMA, DELIVERY_SCHEMA, WEBHOOK_BODY_SCHEMA } from '../../../services/notifier/public/webhook-records';
import { answerProblems } from '../../support/answer-check';
import { CHANGE_ALERT as ALERT, SCREENSHOT_REF as REF, unnamed } from '../../support/records';

describe('the webhook bodies and the delivery records (the notifier publishes them)', () => {
  it('builds every body as the schema says: a capture delivery, a change alert, a Slack message', () => {
    const body = captureDeliveryBody(REF, 'https://example.com', { custom_title: 'T' });
    expect(answerProblems(WEBHOOK_BODY_SCHEMA, body)).to.deep.equal([]);
    expect(answerProblems(WEBHOOK_BODY_SCHEMA, captureDeliveryBody({ ...REF, ai: null }, 'https://example.com', {}))).to.deep.equal([]);
    expect(answerProblems(WEBHOOK_BODY_SCHEMA, ALERT)).to.deep.equal([]);
    expect(answerProblems(WEBHOOK_BODY_SCHEMA, slackMessage(ALERT, 'Prices'))).to.deep.equal([]);
    const delivery = {
      id: 'msg_1',
      screenshot_configuration_id: 'cfg1',
      kind: 'capture',
      send_to: 'webhook',
      url: 'https://example.com/hook',
      status: 'delivered',
      job_id: 'job1',
      created_at: '2026-11-28T00:00:00.000Z',
      next_attempt_at: null,
      last_error: null,
      payload: body,
      attempts: [{ attempted_at: '2026-11-28T00:00:00.000Z', status_code: 200, duration_ms: 5, error: null }],
    };
    expect(answerProblems(DELIVERY_SCHEMA, delivery)).to.deep.equal([]);
    expect(answerProblems(DELIVERY_SCHEMA, { ...delivery, attempts: [{ ...delivery.attempts[0], made_up: 1 }] })).to.deep.equal([
      unnamed('/attempts/0/made_up'),
    ]);
  });

  it("a capture delivery links the capture's Markdown and metadata as its record does (markdown=true, metadata=true)", () => {
    const body = captureDeliveryBody(
      { ...REF, markdown_link: 'https://cdn.example/a.md', metadata_link: 'https://cdn.example/a.metadata.json' },
      'https://example.com',
      {},
    );
    expect(body).to.include({ markdown_url: 'https://cdn.example/a.md', metadata_url: 'https://cdn.example/a.metadata.json' });
    expect(answerProblems(WEBHOOK_BODY_SCHEMA, body)).to.deep.equal([]);
    expect(captureDeliveryBody(REF, 'https://example.com', {})).to.not.have.any.keys('markdown_url', 'metadata_url');
  });

  it('catches a made-up field in a body and in a change step', () => {
    expect(answerProblems(WEBHOOK_BODY_SCHEMA, { ...captureDeliveryBody(REF, 'https://example.com', {}), made_up: 'x' })).to.include(unnamed('/made_up'));
    expect(answerProblems(CHANGE_NOTIFICATION_SCHEMA, { ...ALERT, config: { ...ALERT.config, made_up: 1 } })).to.deep.equal([unnamed('/config/made_up')]);
  });
});
