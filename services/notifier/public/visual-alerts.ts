/**
 * Visual change detection of `change` steps with `"mode": "visual"`, as the capture job runs
 * it once the capture is recorded (never in /snap's answer): per configuration and step, the
 * first capture is the baseline and sends nothing; each later capture is compared with the
 * baseline (visual-diff.ts). A capture that does not differ by `threshold` percent of its
 * pixels becomes the baseline (so the baseline is the previous capture while the page holds
 * still); one that differs counts, and `repeat` consecutive differing captures raise exactly
 * one alert (its diff image stored, a record and a delivery to the step's `url`, JSON or
 * Slack, through the outbox) and the last of them becomes the baseline. A capture that does
 * not differ in between starts the count again, so one flaky load never alerts.
 * docs/decisions/2026-11-28-visual-change-detection.md says why.
 *
 * The baseline is a change_readings row (the text steps' table) whose value is JSON: the
 * image's name and the areas the page reported with it. The comparisons of one configuration
 * run one after another in this process; a baseline moved meanwhile by another process is
 * left as it is (the update names the reading it replaces).
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { ChangeNotificationRecord } from '../../shared/contracts';
import { randomId } from '../../shared/secrets';
import type { FileStore } from '../../shared/storage';
import { type ChangeReading, type Rect, slackMessage } from './change-alerts';
import { appendDelivery, webhookBody } from './outbox';
import { compareCaptures } from './visual-diff';

/** What a baseline row holds (change_readings.value, JSON). */
interface Baseline {
  image: string;
  region: Rect | null;
  masks: Rect[];
  frameWidth: number;
  /** Consecutive captures since it that differed from it. */
  streak: number;
}

/** The capture a comparison is about. */
export interface VisualCapture {
  accountId: string;
  configId: string;
  jobId: string;
  title?: string;
  /** When it was taken (the screenshot row's time). */
  now: number;
  /** The stored image's name, and its bytes. */
  imageName: string;
  image: Buffer;
}

export interface VisualAlertsDeps {
  db: Knex;
  store: Pick<FileStore, 'get' | 'put' | 'delete'>;
  /** The public link of a stored file (shared/links.ts, cdnLink). */
  link(name: string): string;
  log?: { warn(obj: unknown, msg?: string): void };
}

/** The baseline row's key: a step that changes its selector or mode starts a new baseline. */
const keyOf = (configId: string, r: ChangeReading) => ({
  config_id: configId,
  step_index: r.index,
  selector_hash: crypto.createHash('sha256').update(`visual\n${r.selector}`).digest('hex'),
});

const rounded = (r: Rect): Rect => ({ x: Math.round(r.x), y: Math.round(r.y), width: Math.round(r.width), height: Math.round(r.height) });

/**
 * The diff images of a configuration's visual alerts, for the capture to remove from the file
 * store with the configuration's other files (before the notifier deletes the alerts).
 */
export async function diffImagesOfConfig(db: Knex, accountId: string, configId: string): Promise<string[]> {
  const rows = (await db('change_notifications').where({ account_id: accountId, config_id: configId }).whereNotNull('diff_name').select('diff_name')) as Array<{
    diff_name: string;
  }>;
  return rows.map((r) => r.diff_name);
}

export class VisualAlerts {
  /** The comparison running per configuration: the next waits for it. */
  private readonly running = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: VisualAlertsDeps) {}

  /**
   * Compares the capture with each visual step's baseline and records what changed; resolves
   * with the alerts once done. Never rejects: a failure is logged, and the next capture compares.
   */
  record(capture: VisualCapture, readings: ChangeReading[]): Promise<ChangeNotificationRecord[]> {
    const visual = readings.filter((r) => r.visual);
    if (!visual.length) return Promise.resolve([]);
    const before = this.running.get(capture.configId) ?? Promise.resolve();
    const done = before.then(async () => {
      const alerts: ChangeNotificationRecord[] = [];
      for (const r of visual) {
        try {
          const alert = await this.compare(capture, r);
          if (alert) alerts.push(alert);
        } catch (err) {
          this.deps.log?.warn({ err, config_id: capture.configId, step: r.index }, 'visual change comparison failed');
        }
      }
      return alerts;
    });
    this.running.set(capture.configId, done);
    void done.finally(() => {
      if (this.running.get(capture.configId) === done) this.running.delete(capture.configId);
    });
    return done;
  }

  /** Every comparison started so far, finished (for a clean stop). */
  async idle(): Promise<void> {
    await Promise.allSettled([...this.running.values()]);
  }

  private async compare(capture: VisualCapture, r: ChangeReading): Promise<ChangeNotificationRecord | null> {
    const v = r.visual;
    if (!v) return null;
    const { db, store } = this.deps;
    const key = keyOf(capture.configId, r);
    const current: Baseline = { image: capture.imageName, region: v.region, masks: v.masks, frameWidth: v.frameWidth, streak: 0 };
    const row = (await db('change_readings').where(key).first('value', 'read_at_ms')) as { value: string; read_at_ms: number | string } | undefined;
    if (!row) {
      // The first capture is the baseline and sends nothing; of two first captures at once, one stands.
      await db('change_readings')
        .insert({ ...key, account_id: capture.accountId, value: JSON.stringify(current), read_at_ms: capture.now })
        .onConflict(['config_id', 'step_index', 'selector_hash'])
        .ignore();
      return null;
    }
    // Replaces the baseline it was compared with only (another process may have moved it).
    const replace = (trx: Knex | Knex.Transaction, value: Baseline) =>
      trx('change_readings')
        .where({ ...key, read_at_ms: row.read_at_ms })
        .update({ value: JSON.stringify(value), read_at_ms: value.streak ? row.read_at_ms : capture.now });
    let baseline: Baseline;
    try {
      baseline = JSON.parse(row.value) as Baseline;
    } catch {
      await replace(db, current);
      return null;
    }
    const old = baseline.image === capture.imageName ? null : await store.get(baseline.image);
    if (!old) {
      // Its image is gone: this capture is the baseline from now on.
      await replace(db, current);
      return null;
    }
    const result = await compareCaptures(
      { image: old.data, region: baseline.region, masks: baseline.masks, frameWidth: baseline.frameWidth },
      { image: capture.image, region: v.region, masks: v.masks, frameWidth: v.frameWidth },
      v.tolerance,
    );
    const differs = result.changedPixels > 0 && (result.changedPixels / result.comparedPixels) * 100 >= v.threshold;
    if (!differs) {
      await replace(db, current);
      return null;
    }
    const streak = (baseline.streak ?? 0) + 1;
    if (streak < v.repeat) {
      await replace(db, { ...baseline, streak });
      return null;
    }
    const diffName = `${randomId(18)}.png`;
    await store.put(diffName, await result.diffPng(), 'image/png');
    const alert: ChangeNotificationRecord = {
      id: randomId(12),
      screenshot_configuration_id: capture.configId,
      previous_value: this.deps.link(baseline.image),
      retrieved_value: this.deps.link(capture.imageName),
      config: {
        type: 'change',
        selector: r.selector,
        send_to: r.send_to || 'webhook',
        url: r.url,
        ...(r.custom_id ? { custom_id: r.custom_id } : {}),
        mode: 'visual',
        threshold: v.threshold,
        tolerance: v.tolerance,
        repeat: v.repeat,
        ...(v.ignore_selectors.length ? { ignore_selectors: v.ignore_selectors } : {}),
      },
      sent_at: String(capture.now),
      visual: {
        changed_percent: result.changedPercent,
        changed_pixels: result.changedPixels,
        compared_pixels: result.comparedPixels,
        boxes: result.boxes.map(rounded),
        before_url: this.deps.link(baseline.image),
        after_url: this.deps.link(capture.imageName),
        diff_url: this.deps.link(diffName),
        size_changed: result.sizeChanged,
        before_size: result.before,
        after_size: result.after,
        captures: streak,
      },
    };
    const sendTo = alert.config.send_to === 'slack' ? 'slack' : 'webhook';
    const recorded = await db.transaction(async (trx) => {
      const moved = await replace(trx, current);
      if (!moved) return false;
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
        mode: 'visual',
        visual: JSON.stringify({ config: alert.config, visual: alert.visual }),
        diff_name: diffName,
      });
      return true;
    });
    if (!recorded) {
      // Another process moved the baseline meanwhile: its comparison stands.
      await store.delete(diffName);
      return null;
    }
    return alert;
  }
}
