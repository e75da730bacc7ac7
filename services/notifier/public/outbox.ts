/**
 * The notifier's outbox, as the services that cause a delivery write to it. A delivery is
 * a row of webhook_deliveries written in the same transaction that records what it tells
 * about (a capture's screenshot row, a change alert, the end of a domain research job), so a process that dies after the
 * commit loses nothing and one that dies before it sends nothing. This is the only code
 * outside the notifier that touches the table, and it only appends: claiming, sending,
 * retrying and listing are the notifier's (services/notifier/deliveries.ts).
 */
import type { Knex } from 'knex';
import { NOT_ANALYSED } from '../../ai/public/ai-record';
import type { AiRecord, ScreenshotRef } from '../../shared/contracts';
import { answerSent } from '../../shared/answer-check';
import { randomId } from '../../shared/secrets';
import { type CaptureDeliveryBody, type DELIVERY_KINDS, type DELIVERY_TARGETS, WEBHOOK_BODY_SCHEMA, type WebhookBody } from './webhook-records';

export type DeliveryKind = (typeof DELIVERY_KINDS)[number];
export type DeliveryTarget = (typeof DELIVERY_TARGETS)[number];

export interface NewDelivery {
  accountId: string;
  /** The configuration it is about; null for a domain research job's (jobId names the job). */
  configId: string | null;
  kind: DeliveryKind;
  sendTo: DeliveryTarget;
  url: string;
  /** The JSON body, exactly as it will be sent and signed on every attempt. */
  body: string;
  jobId: string | null;
  now: number;
}

/** A webhook body as it is stored, sent and signed: its JSON text (the body meets its schema, webhook-records.ts). */
export function webhookBody(kind: DeliveryKind, body: WebhookBody): string {
  answerSent(`a ${kind} delivery`, WEBHOOK_BODY_SCHEMA, () => body);
  return JSON.stringify(body);
}

/** A delivery's id, also its webhook-id header (the same on every retry). */
export function newDeliveryId(): string {
  return `msg_${randomId(15)}`;
}

/** Appends a delivery, due at once, inside the caller's transaction; returns its id. */
export async function appendDelivery(trx: Knex | Knex.Transaction, d: NewDelivery): Promise<string> {
  const id = newDeliveryId();
  await trx('webhook_deliveries').insert({
    id,
    account_id: d.accountId,
    config_id: d.configId,
    kind: d.kind,
    send_to: d.sendTo,
    target_url: d.url,
    body: d.body,
    status: 'pending',
    attempts: 0,
    next_attempt_at_ms: d.now,
    job_id: d.jobId,
    created_at_ms: d.now,
  });
  return id;
}

/**
 * The `ai` object a capture delivery carries: the one stored with the capture, else the
 * spec's three fields of a capture that asked for no analysis.
 */
export function deliveryAi(ref: Pick<ScreenshotRef, 'ai'>): AiRecord | typeof NOT_ANALYSED {
  return ref.ai ?? NOT_ANALYSED;
}

/** What a configuration says about the capture that the screenshot row does not. */
export interface DeliveryContext {
  custom_title?: string;
  custom_description?: string;
}

/**
 * The capture delivery's body (spec, Events, "Capture delivery"; its schema is
 * webhook-records.ts). `proxy_server` is the real location the capture went through (null
 * otherwise, an own proxy included), and `bandwidth_in_bytes` the bytes it used of it.
 */
export function captureDeliveryBody(ref: ScreenshotRef, url: string, context: DeliveryContext): CaptureDeliveryBody {
  return {
    screenshot_config_id: ref.config_id,
    url,
    id: Number(ref.id),
    direct_link: ref.direct_link,
    direct_thumbnail_link: ref.direct_thumbnail_link,
    embed_url: ref.embed_url,
    taken_at: new Date(ref.taken_at_ms).toISOString().replace('Z', '+00:00'),
    taken_at_timestamp: String(ref.taken_at_ms),
    custom_title: context.custom_title ?? '',
    custom_description: context.custom_description ?? '',
    ai: deliveryAi(ref),
    is_proxy_screenshot: ref.proxy_server !== null,
    proxy_server: ref.proxy_server,
    bandwidth_in_bytes: ref.bandwidth_bytes,
    job_id: ref.job_id,
    ...(ref.markdown_link ? { markdown_url: ref.markdown_link } : {}),
    ...(ref.metadata_link ? { metadata_url: ref.metadata_link } : {}),
    ...(ref.stored_to ? { stored_to: ref.stored_to } : {}),
  };
}
