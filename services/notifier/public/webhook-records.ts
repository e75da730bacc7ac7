/**
 * What the notifier sends and shows, as the schemas it publishes with their types: the webhook
 * bodies (a capture delivery, a change alert, the end of a domain research job, and a Slack
 * message for a change step that sends to Slack), the change notification record (the change
 * alert's body is the record) and the delivery record of the delivery log.
 */
import { type Static, Type } from '@sinclair/typebox';
import { LISTED_AI_SCHEMA } from '../../ai/public/ai-record';
import { STORED_TO_SCHEMA } from '../../proxy/public/storage-destination-record';
import { DELIVERY_STATUSES } from '../../shared/contracts';
import { RESEARCH_STATUS_SCHEMA } from '../../shared/domain-research';
import { textEnum } from '../../shared/screenshot-options';

/** What a delivery is about, and where it goes. */
export const DELIVERY_KINDS = ['capture', 'change', 'research'] as const;
export const DELIVERY_TARGETS = ['webhook', 'slack'] as const;

const BOX_SCHEMA = Type.Object({ x: Type.Integer(), y: Type.Integer(), width: Type.Integer(), height: Type.Integer() });
const SIZE_SCHEMA = Type.Object({ width: Type.Integer(), height: Type.Integer() });

/** What a visual change step found (visual-alerts.ts): the share changed, where, and the three images. */
export const VISUAL_CHANGE_SCHEMA = Type.Object(
  {
    changed_percent: Type.Number({ description: 'Changed pixels, as a percentage of the pixels compared (the common area less the masked areas).' }),
    changed_pixels: Type.Integer(),
    compared_pixels: Type.Integer(),
    boxes: Type.Array(BOX_SCHEMA, {
      description: 'Boxes around the changed areas, in pixels of the diff image (the compared area of the new capture), largest first.',
    }),
    before_url: Type.String({ description: 'The capture compared with (the baseline).' }),
    after_url: Type.String({ description: 'The new capture.' }),
    diff_url: Type.String({ description: 'A PNG of the compared area: changed pixels red over the new capture, faded; masked areas grey.' }),
    size_changed: Type.Boolean({
      description: 'The compared areas differ in size (a page that grew): only their common area, from the top left, was compared.',
    }),
    before_size: SIZE_SCHEMA,
    after_size: SIZE_SCHEMA,
    captures: Type.Integer({ description: "Consecutive captures that differed from the baseline (the step's repeat)." }),
  },
  { description: 'A visual change step only.' },
);

/** One piece of a text change's word diff: words kept, removed from the previous value, or added in the new one. */
export const WORD_DIFF_SCHEMA = Type.Array(
  Type.Object({ op: Type.Union([Type.Literal('equal'), Type.Literal('delete'), Type.Literal('insert')]), text: Type.String() }),
  {
    description: 'A text change step only: the previous value turned into the new one, word by word.',
  },
);

/** The spec's change notification record, also the change alert's webhook body. */
export const CHANGE_NOTIFICATION_SCHEMA = Type.Object({
  id: Type.String(),
  screenshot_configuration_id: Type.String(),
  previous_value: Type.String({ description: "A visual change: the before image's link." }),
  retrieved_value: Type.String({ description: "A visual change: the after image's link." }),
  config: Type.Object(
    {
      type: Type.Literal('change'),
      selector: Type.String(),
      send_to: Type.String(),
      url: Type.String(),
      custom_id: Type.Optional(Type.String({ description: "The change step's own id, when it has one." })),
      mode: Type.Optional(Type.Literal('visual', { description: 'A visual change step (a text one has no mode).' })),
      threshold: Type.Optional(Type.Number()),
      tolerance: Type.Optional(Type.Number()),
      repeat: Type.Optional(Type.Integer()),
      ignore_selectors: Type.Optional(Type.Array(Type.String())),
    },
    { description: 'The change step.' },
  ),
  sent_at: Type.String({ description: 'Epoch milliseconds, as text.' }),
  word_diff: Type.Optional(WORD_DIFF_SCHEMA),
  visual: Type.Optional(VISUAL_CHANGE_SCHEMA),
});

/**
 * The capture delivery's body (spec, Events, "Capture delivery"): exactly its fields and types.
 * `id` is numeric here, unlike in the screenshot record.
 */
export const CAPTURE_DELIVERY_BODY_SCHEMA = Type.Object({
  screenshot_config_id: Type.String(),
  url: Type.String(),
  id: Type.Integer(),
  direct_link: Type.String(),
  direct_thumbnail_link: Type.String(),
  embed_url: Type.String(),
  taken_at: Type.String({ description: 'ISO 8601 with +00:00.' }),
  taken_at_timestamp: Type.String({ description: 'Epoch milliseconds, as text.' }),
  custom_title: Type.String(),
  custom_description: Type.String(),
  ai: LISTED_AI_SCHEMA,
  is_proxy_screenshot: Type.Boolean(),
  proxy_server: Type.Union([Type.String(), Type.Null()], { description: 'The real location it went through (null otherwise, an own proxy included).' }),
  bandwidth_in_bytes: Type.Integer({ description: 'Bytes it used of the real location.' }),
  job_id: Type.String(),
  markdown_url: Type.Optional(Type.String({ description: "markdown=true: the page's main content as Markdown, as the record links it." })),
  metadata_url: Type.Optional(Type.String({ description: "metadata=true: the page's metadata as JSON, as the record links it." })),
  stored_to: Type.Optional(STORED_TO_SCHEMA),
});
export type CaptureDeliveryBody = Static<typeof CAPTURE_DELIVERY_BODY_SCHEMA>;

/** The body sent when a domain research job's last domain finished: its status and where its report is. */
export const RESEARCH_DELIVERY_BODY_SCHEMA = Type.Object({
  type: Type.Literal('domain_research.finished'),
  ...RESEARCH_STATUS_SCHEMA.properties,
  report_url: Type.String(),
  csv_report_url: Type.String(),
});
export type ResearchDeliveryBody = Static<typeof RESEARCH_DELIVERY_BODY_SCHEMA>;

/** A Slack incoming-webhook message (a change step that sends to Slack): `text`, and the message's blocks in Slack's own form. */
export const SLACK_MESSAGE_SCHEMA = Type.Object({
  text: Type.String(),
  blocks: Type.Array(
    Type.Unsafe<{ type: string; [field: string]: unknown }>({
      type: 'object',
      properties: { type: { type: 'string' } },
      required: ['type'],
      additionalProperties: true,
      description: "A Slack block, in Slack's own Block Kit form.",
    }),
  ),
});
export type SlackMessage = Static<typeof SLACK_MESSAGE_SCHEMA>;

/** Every body a delivery sends. */
export const WEBHOOK_BODY_SCHEMA = Type.Union([CAPTURE_DELIVERY_BODY_SCHEMA, CHANGE_NOTIFICATION_SCHEMA, RESEARCH_DELIVERY_BODY_SCHEMA, SLACK_MESSAGE_SCHEMA]);
export type WebhookBody = Static<typeof WEBHOOK_BODY_SCHEMA>;

/** One delivery as the log shows it (GET /webhook_deliveries), with every attempt. */
export const DELIVERY_SCHEMA = Type.Object({
  id: Type.String({ description: 'Also the webhook-id header, the same on every attempt.' }),
  screenshot_configuration_id: Type.Union([Type.String(), Type.Null()], { description: "null for a domain research job's delivery (job_id names the job)." }),
  kind: textEnum(DELIVERY_KINDS),
  send_to: textEnum(DELIVERY_TARGETS),
  url: Type.String(),
  status: textEnum(DELIVERY_STATUSES),
  job_id: Type.Union([Type.String(), Type.Null()]),
  created_at: Type.String({ description: 'ISO 8601 UTC.' }),
  next_attempt_at: Type.Union([Type.String(), Type.Null()], { description: 'When the next attempt is due (pending only).' }),
  last_error: Type.Union([Type.String(), Type.Null()]),
  // Not checked again here: a body meets its schema where it is written (outbox.ts, webhookBody); the log shows what was stored.
  payload: Type.Unsafe<WebhookBody>({
    description: "The body sent (and signed), parsed: a capture delivery, a change alert, a domain research job's end, or a Slack message.",
  }),
  attempts: Type.Array(
    Type.Object({
      attempted_at: Type.String({ description: 'ISO 8601 UTC.' }),
      status_code: Type.Union([Type.Integer(), Type.Null()]),
      duration_ms: Type.Integer(),
      error: Type.Union([Type.String(), Type.Null()]),
    }),
  ),
});

/** This record in the kernel's table of records (shared/contracts.ts, PublishedRecords). */
declare global {
  interface PublishedRecords {
    changeNotification: Static<typeof CHANGE_NOTIFICATION_SCHEMA>;
    delivery: Static<typeof DELIVERY_SCHEMA>;
  }
}
