/** Records as the services build them, for the tests of the published schemas (services/<owner>/public/). */
import { failedRecord } from '../../services/ai/public/ai-record';
import type { ChangeNotificationRecord, ScreenshotRef } from '../../services/shared/contracts';

/** A stored capture that went through a real location, with an analysis that failed. */
export const SCREENSHOT_REF: ScreenshotRef = {
  id: '42',
  job_id: 'job1',
  config_id: 'cfg1',
  embed_url: 'http://localhost/embed/cfg1',
  direct_link: 'http://localhost/cdn/a.jpeg',
  direct_thumbnail_link: 'http://localhost/cdn/a-t400.jpeg',
  taken_at_ms: 1_700_000_000_000,
  image_name: 'a.jpeg',
  html_name: null,
  content_type: 'image/jpeg',
  ai: failedRecord({ analyze_image_with_ai: true, ai_prompt: 'What is it?' }, null, { error_code: 'ai_provider_error', note: 'It failed.' }),
  proxy_server: 'London',
  custom_proxy: null,
  bandwidth_bytes: 1234,
  load_finished: true,
  status_code: 200,
  final_url: 'https://example.com/',
};

/** A change alert of a step that sends to Slack. */
export const CHANGE_ALERT: ChangeNotificationRecord = {
  id: 'alert1',
  screenshot_configuration_id: 'cfg1',
  previous_value: 'a',
  retrieved_value: 'b',
  config: { type: 'change', selector: '#price', send_to: 'slack', url: 'https://hooks.slack.test/x' },
  sent_at: '1700000000000',
};

/** What the answer check says of a made-up field at `path` (test/support/answer-check.ts). */
export const unnamed = (path: string) => `${path}: a field the schema does not name`;
