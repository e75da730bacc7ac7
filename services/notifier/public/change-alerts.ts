/**
 * Change detection of `change` steps (spec, "Change alert"; DESIGN section 3), as the
 * capture records it: per configuration and step, the first reading is the baseline and
 * sends nothing; afterwards a text that differs after whitespace normalisation gives
 * exactly one alert record and one delivery to the step's `url` (a JSON POST, or a Slack
 * incoming-webhook message). Written in the transaction that records the capture, like
 * capture deliveries (outbox.ts): the tables are the notifier's, which lists them.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { ChangeNotificationRecord } from '../../shared/contracts';
import { appendDelivery, webhookBody } from './outbox';
import type { SlackMessage } from './webhook-records';
import { isMysql } from '../../shared/database';
import { randomId } from '../../shared/secrets';

/** What one `change` step read during a capture (the capture's page hands these over). */
export interface ChangeReading {
  index: number;
  selector: string;
  text: string;
  send_to: string;
  url: string;
  /** The step's own id, when it has one (kept with its alerts). */
  custom_id?: string;
  /** A visual change step (mode "visual"): what the page measured for it at capture time (visual-alerts.ts). */
  visual?: VisualReading;
}

/** A rectangle in CSS pixels, from the captured image's top left corner. */
export interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** A visual change step's options, and the areas the page reported when the image was taken. */
export interface VisualReading {
  threshold: number;
  tolerance: number;
  repeat: number;
  ignore_selectors: string[];
  /** The region of the step's selector (null: the whole image). */
  region: Rect | null;
  /** The boxes of every element ignore_selectors matched, masked before comparing. */
  masks: Rect[];
  /** The width of the image in CSS pixels (its pixels divided by this give the device scale). */
  frameWidth: number;
}

/** Runs of whitespace (line breaks, tabs, non-breaking spaces) count as one space; ends trimmed. */
export function normaliseText(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Slack refuses section texts over 3000 characters; values are cut well below that. */
const SLACK_VALUE_MAX = 1200;

function slackEscape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function slackValue(text: string): string {
  const cut = text.length > SLACK_VALUE_MAX ? `${text.slice(0, SLACK_VALUE_MAX)}…` : text;
  return cut === '' ? '_(empty)_' : `\`\`\`${slackEscape(cut).replace(/```/g, "'''")}\`\`\``;
}

/**
 * A Slack incoming-webhook message naming the configuration, the selector, the previous
 * and the new value: `text` for notifications and clients without blocks, `blocks` for
 * the message itself.
 */
export function slackMessage(alert: ChangeNotificationRecord, title: string | undefined): SlackMessage {
  const name = title ? `${title} (${alert.screenshot_configuration_id})` : alert.screenshot_configuration_id;
  return {
    text: alert.visual
      ? `Visual change detected on ${name}: ${alert.visual.changed_percent}% of ${alert.config.selector || 'the page'} changed.`
      : `Change detected on ${name}: ${alert.config.selector} changed.`,
    blocks: [
      { type: 'header', text: { type: 'plain_text', text: 'Change detected' } },
      {
        type: 'section',
        fields: [
          { type: 'mrkdwn', text: `*Configuration*\n${slackEscape(name)}` },
          { type: 'mrkdwn', text: alert.config.selector ? `*Selector*\n\`${slackEscape(alert.config.selector)}\`` : '*Area*\nThe whole capture' },
        ],
      },
      ...(alert.visual
        ? [
            {
              type: 'section',
              text: {
                type: 'mrkdwn',
                text: `*${alert.visual.changed_percent}% of the pixels changed*${alert.visual.size_changed ? ' (the page changed size)' : ''}\n<${alert.visual.before_url}|Before> · <${alert.visual.after_url}|After> · <${alert.visual.diff_url}|Diff>`,
              },
            },
          ]
        : [
            { type: 'section', text: { type: 'mrkdwn', text: `*Previous value*\n${slackValue(alert.previous_value)}` } },
            { type: 'section', text: { type: 'mrkdwn', text: `*New value*\n${slackValue(alert.retrieved_value)}` } },
          ]),
      {
        type: 'context',
        elements: [
          {
            type: 'mrkdwn',
            text: `<!date^${Math.floor(Number(alert.sent_at) / 1000)}^{date_short_pretty} {time}|${new Date(Number(alert.sent_at)).toISOString()}>`,
          },
        ],
      },
    ],
  };
}

/** One piece of a word diff (webhook-records.ts, WORD_DIFF_SCHEMA). */
export interface WordDiffPart {
  op: 'equal' | 'delete' | 'insert';
  text: string;
}

/** Longest texts (in words) diffed word by word; longer ones are one removal and one addition. */
const MAX_DIFF_WORDS = 2000;

/**
 * The previous text turned into the new one word by word (a longest common subsequence of
 * their words; runs of one kind joined with single spaces). Texts are compared normalised.
 */
export function wordDiff(previous: string, current: string): WordDiffPart[] {
  const a = normaliseText(previous).split(' ').filter(Boolean);
  const b = normaliseText(current).split(' ').filter(Boolean);
  const parts: WordDiffPart[] = [];
  const push = (op: WordDiffPart['op'], word: string) => {
    const last = parts[parts.length - 1];
    if (last && last.op === op) last.text += ` ${word}`;
    else parts.push({ op, text: word });
  };
  if (a.length > MAX_DIFF_WORDS || b.length > MAX_DIFF_WORDS) {
    if (a.length) parts.push({ op: 'delete', text: a.join(' ') });
    if (b.length) parts.push({ op: 'insert', text: b.join(' ') });
    return parts;
  }
  // lcs[i][j]: the longest common subsequence of a[i..] and b[j..], in one flat array.
  const w = b.length + 1;
  const lcs = new Uint16Array((a.length + 1) * w);
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i * w + j] = a[i] === b[j] ? (lcs[(i + 1) * w + j + 1] as number) + 1 : Math.max(lcs[(i + 1) * w + j] as number, lcs[i * w + j + 1] as number);
    }
  }
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) {
      push('equal', a[i] as string);
      i++;
      j++;
    } else if (i < a.length && (j === b.length || (lcs[(i + 1) * w + j] as number) >= (lcs[i * w + j + 1] as number))) {
      // Removals before additions, as diffs read.
      push('delete', a[i] as string);
      i++;
    } else {
      push('insert', b[j] as string);
      j++;
    }
  }
  return parts;
}

const selectorHash = (selector: string) => crypto.createHash('sha256').update(selector).digest('hex');

/**
 * Records one alert inside the caller's transaction: its delivery in the outbox (a webhook
 * body, or a Slack message) and its row in change_notifications, with `extra` columns (a
 * visual alert's mode, figures and diff image). The text and the visual steps both write here.
 */
export async function writeAlert(
  trx: Knex.Transaction,
  capture: { accountId: string; configId: string; jobId: string; title?: string; now: number },
  r: Pick<ChangeReading, 'index' | 'selector' | 'url' | 'custom_id'>,
  alert: ChangeNotificationRecord,
  extra: Record<string, unknown> = {},
): Promise<void> {
  const sendTo = alert.config.send_to === 'slack' ? 'slack' : 'webhook';
  const deliveryId = await appendDelivery(trx, {
    accountId: capture.accountId,
    configId: capture.configId,
    kind: 'change',
    sendTo,
    url: r.url,
    body: webhookBody('change', sendTo === 'slack' ? slackMessage(alert, capture.title) : alert),
    jobId: capture.jobId,
    now: capture.now,
  });
  await trx('change_notifications').insert({
    id: alert.id,
    account_id: capture.accountId,
    config_id: capture.configId,
    job_id: capture.jobId,
    step_index: r.index,
    selector: r.selector,
    send_to: sendTo,
    url: r.url,
    custom_id: r.custom_id ?? null,
    previous_value: alert.previous_value,
    retrieved_value: alert.retrieved_value,
    delivery_id: deliveryId,
    created_at_ms: capture.now,
    ...extra,
  });
}

/**
 * Compares a capture's readings with the configuration's baselines and records what
 * changed (an alert and its delivery), inside the caller's transaction. Returns the alerts.
 */
export async function recordChangeReadings(
  trx: Knex.Transaction,
  capture: { accountId: string; configId: string; jobId: string; title?: string; now: number },
  readings: ChangeReading[],
): Promise<ChangeNotificationRecord[]> {
  const alerts: ChangeNotificationRecord[] = [];
  const mysql = isMysql(trx);
  for (const r of readings) {
    // Visual steps are compared once the capture is recorded (visual-alerts.ts).
    if (r.visual) continue;
    const key = { config_id: capture.configId, step_index: r.index, selector_hash: selectorHash(r.selector) };
    const value = normaliseText(r.text);
    let previousQuery = trx('change_readings').where(key).first('value');
    if (mysql) previousQuery = previousQuery.forUpdate();
    const previous = await previousQuery;
    if (!previous) {
      // The step's first reading is its baseline and sends nothing; of two first readings at once, one stands.
      await trx('change_readings')
        .insert({ ...key, account_id: capture.accountId, value, read_at_ms: capture.now })
        .onConflict(['config_id', 'step_index', 'selector_hash'])
        .ignore();
      continue;
    }
    if (previous.value === value) continue;
    await trx('change_readings').where(key).update({ value, read_at_ms: capture.now });
    const alert: ChangeNotificationRecord = {
      id: randomId(12),
      screenshot_configuration_id: capture.configId,
      previous_value: String(previous.value),
      retrieved_value: value,
      config: { type: 'change', selector: r.selector, send_to: r.send_to || 'webhook', url: r.url, ...(r.custom_id ? { custom_id: r.custom_id } : {}) },
      sent_at: String(capture.now),
    };
    await writeAlert(trx, capture, r, alert);
    alerts.push(alert);
  }
  return alerts;
}
