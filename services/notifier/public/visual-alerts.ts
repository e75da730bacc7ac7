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
 *
 * The baseline's decoded area is kept in memory (VisualRasterCache, bounded), so a comparison
 * usually decodes only the new capture; a baseline not in memory is read from the file store
 * and, by the row prints its record keeps, only its rows that differ from the new capture's
 * are decoded, with the same result.
 *
 * Durable: the comparison a capture owes is a visual_pending row written in the capture's own
 * transaction (owe), held under a lease by the process that recorded the capture and removed
 * once its comparisons ran. A row whose lease ran out (that process died in between) is
 * claimed by a capture process (resume: a claim loop, at start and on a poll) and compared then,
 * its image read from the store. Comparing a capture again is harmless: a capture already
 * compared finds itself the baseline, one already counted toward `repeat` is not counted twice
 * (the baseline keeps the time of the last one counted), and one older than the baseline is
 * not compared (a later capture was).
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { ChangeNotificationRecord } from '../../shared/contracts';
import { ClaimLoop } from '../../shared/claim-loop';
import { type Held, Leases, newLeaseToken } from '../../shared/lease';
import { derivedId, randomId } from '../../shared/secrets';
import type { FileStore } from '../../shared/storage';
import { type ChangeReading, type Rect, writeAlert } from './change-alerts';
import { type DecodedArea, VisualRasterCache, compareCaptures, decodeArea, printsFromText, printsToText, rowPrints } from './visual-diff';

/** What a baseline row holds (change_readings.value, JSON). */
interface Baseline {
  image: string;
  region: Rect | null;
  masks: Rect[];
  frameWidth: number;
  /** Consecutive captures since it that differed from it. */
  streak: number;
  /** When the last of them was taken (a capture compared again is not counted twice). */
  countedAt?: number;
  /** Its compared area's row prints (visual-diff.ts, rowPrints): a comparison that finds it not decoded in memory decodes only its rows that differ. */
  prints?: { width: number; rows: string };
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
  log?: { info(obj: unknown, msg?: string): void; warn(obj: unknown, msg?: string): void; error(...args: unknown[]): void };
  /** Bytes of baselines' decoded pixels kept in memory (VISUAL_CACHE_MB); 0: none, each comparison decodes both captures. */
  cacheBytes?: number;
  /** Alerts (and their deliveries) were written for the account: the notifier is told (notifier.deliveriesAdded), so it need not wait for its poll. */
  announce?: (accountId: string) => void;
  /** The lease of an owed comparison (default 60 s): left that long by a process that died, it is compared by another; also the resume poll. */
  leaseMs?: number;
  now?: () => number;
}

/** Where the comparisons recorded captures owe are kept until they ran. */
const PENDING = 'visual_pending';
/** Claims of one owed comparison before it is given up (one that kills its comparer every time). */
export const MAX_PENDING_ATTEMPTS = 3;

interface PendingRow {
  id: string;
  account_id: string;
  config_id: string;
  job_id: string;
  image_name: string;
  title: string | null;
  readings: string;
  captured_at_ms: number | string;
  attempts: number;
}

/** The default bound of the baselines kept decoded: three 1920x10000 full pages, or thirty 1920x1000 captures. */
export const DEFAULT_VISUAL_CACHE_BYTES = 256 * 1024 * 1024;

/** One capture's comparisons (every visual step of its configuration). */
interface Run {
  /** The capture's areas decoded so far, by raster key. */
  decoded: Map<string, DecodedArea>;
  /** Raster keys of baselines a step moved away from, and of those that are (still or now) a step's baseline. */
  left: Set<string>;
  kept: Set<string>;
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
  /** The baselines' decoded areas. */
  readonly rasters: VisualRasterCache;
  private readonly leases: Leases;
  private readonly leaseMs: number;
  /** The loop that claims owed comparisons left behind (resume). */
  private readonly leftBehind: ClaimLoop<{ row: PendingRow; held: Held }>;

  constructor(private readonly deps: VisualAlertsDeps) {
    this.rasters = new VisualRasterCache(deps.cacheBytes ?? DEFAULT_VISUAL_CACHE_BYTES);
    this.leaseMs = deps.leaseMs ?? 60_000;
    this.leases = new Leases(deps.db, { table: PENDING }, this.leaseMs, deps.now ?? Date.now);
    const log = deps.log ?? { info: () => undefined, warn: () => undefined, error: () => undefined };
    this.leftBehind = new ClaimLoop(
      { claim: () => this.claimLeftBehind(), run: ({ row, held }) => this.runLeftBehind(row, held) },
      {
        concurrency: 1,
        pollMs: this.leaseMs,
        log: { info: (msg: string) => log.info({}, msg), warn: (msg: string) => log.warn({}, msg), error: (...args: unknown[]) => log.error(...args) },
        what: 'a visual change comparison left behind',
      },
    );
  }

  /**
   * Writes the comparison a capture owes its visual steps, in the transaction that records the
   * capture, leased to this process (which runs it next with record). Null: no visual step.
   */
  async owe(trx: Knex.Transaction, capture: Omit<VisualCapture, 'image'>, readings: ChangeReading[]): Promise<Held | null> {
    const visual = readings.filter((r) => r.visual);
    if (!visual.length) return null;
    const held: Held = { id: randomId(16), leaseToken: newLeaseToken() };
    await trx(PENDING).insert({
      id: held.id,
      account_id: capture.accountId,
      config_id: capture.configId,
      job_id: capture.jobId,
      image_name: capture.imageName,
      title: capture.title ?? null,
      readings: JSON.stringify(visual),
      captured_at_ms: capture.now,
      attempts: 0,
      lease_token: held.leaseToken,
      lease_until_ms: (this.deps.now ?? Date.now)() + this.leaseMs,
    });
    return held;
  }

  /** Claims owed comparisons left behind by a process that died (their lease ran out): now, and on a poll when `poll`. */
  resume(poll = true): void {
    this.leftBehind.start(poll);
  }

  /** Claims no more comparisons left behind; those running finish. */
  async stopResuming(): Promise<void> {
    await this.leftBehind.stop();
  }

  /** Claims the oldest owed comparison nobody holds. */
  private claimLeftBehind(): Promise<{ row: PendingRow; held: Held } | null> {
    const at = (this.deps.now ?? Date.now)();
    return this.leases.claim<PendingRow, { row: PendingRow; held: Held } | null>(
      (trx) => this.leases.unheld(trx(PENDING).select('*'), at).orderBy('captured_at_ms').limit(1),
      async (rows, grant) => {
        const row = rows[0];
        if (!row) return null;
        const leaseToken = await grant(row.id, { attempts: Number(row.attempts) + 1 });
        return { row, held: { id: row.id, leaseToken } };
      },
      at,
    );
  }

  /** Runs an owed comparison claimed from the table: its image from the store. */
  private async runLeftBehind(row: PendingRow, held: Held): Promise<void> {
    const log = this.deps.log;
    if (Number(row.attempts) >= MAX_PENDING_ATTEMPTS) {
      log?.warn({ config_id: row.config_id, job_id: row.job_id, attempts: row.attempts }, 'visual change comparison given up after repeated attempts');
      await this.settle(held);
      return;
    }
    const stored = await this.deps.store.get(row.image_name);
    if (!stored) {
      // Its capture was deleted (with its configuration): nothing to compare.
      await this.settle(held);
      return;
    }
    const capture: VisualCapture = {
      accountId: row.account_id,
      configId: row.config_id,
      jobId: row.job_id,
      ...(row.title ? { title: row.title } : {}),
      now: Number(row.captured_at_ms),
      imageName: row.image_name,
      image: stored.data,
    };
    await this.record(capture, JSON.parse(row.readings) as ChangeReading[], held);
  }

  /** Removes an owed comparison that ran (only while `held` holds it). */
  private async settle(held: Held): Promise<void> {
    await this.deps.db(PENDING).where({ id: held.id, lease_token: held.leaseToken }).delete();
  }

  /**
   * Compares the capture with each visual step's baseline and records what changed; resolves
   * with the alerts once done. Never rejects: a failure is logged, and the next capture compares.
   * `owed`: the capture's visual_pending row (owe), removed once every step compared; left
   * for a later claim when one failed (a store or database that did not answer).
   */
  record(capture: VisualCapture, readings: ChangeReading[], owed?: Held | null): Promise<ChangeNotificationRecord[]> {
    const visual = readings.filter((r) => r.visual);
    if (!visual.length) return Promise.resolve([]);
    const before = this.running.get(capture.configId) ?? Promise.resolve();
    const done = before.then(async () => {
      const alerts: ChangeNotificationRecord[] = [];
      const run: Run = { decoded: new Map(), left: new Set(), kept: new Set() };
      let failed = false;
      for (const r of visual) {
        try {
          const alert = await this.compare(capture, r, run, owed ?? null);
          if (alert) alerts.push(alert);
        } catch (err) {
          failed = true;
          this.deps.log?.warn({ err, config_id: capture.configId, step: r.index }, 'visual change comparison failed');
        }
      }
      if (alerts.length) this.deps.announce?.(capture.accountId);
      // The decoded baselines no step compares with any more.
      for (const key of run.left) if (!run.kept.has(key)) this.rasters.delete(key);
      try {
        if (owed && !failed) await this.settle(owed);
      } catch (err) {
        this.deps.log?.warn({ err, config_id: capture.configId }, 'visual change comparison: its pending row was not removed (it runs again, harmlessly)');
      }
      return alerts;
    });
    this.running.set(capture.configId, done);
    void done.finally(() => {
      if (this.running.get(capture.configId) === done) this.running.delete(capture.configId);
    });
    return done;
  }

  /** Every comparison started so far (and the claim of those left behind under way), finished (for a clean stop). */
  async idle(): Promise<void> {
    await this.leftBehind.idle();
    await Promise.allSettled([...this.running.values()]);
  }

  private async compare(capture: VisualCapture, r: ChangeReading, run: Run, owed: Held | null): Promise<ChangeNotificationRecord | null> {
    const v = r.visual;
    if (!v) return null;
    const { db, store } = this.deps;
    const key = keyOf(capture.configId, r);
    const current: Baseline = { image: capture.imageName, region: v.region, masks: v.masks, frameWidth: v.frameWidth, streak: 0 };
    const currentKey = VisualRasterCache.key(capture.imageName, v.region, v.frameWidth);
    /** The new capture's area, decoded once for every step that compares the same area. */
    const decodedNow = async (): Promise<DecodedArea> => {
      let area = run.decoded.get(currentKey);
      if (!area) {
        area = await decodeArea({ image: capture.image, region: v.region, masks: v.masks, frameWidth: v.frameWidth });
        run.decoded.set(currentKey, area);
      }
      return area;
    };
    /** Keeps the new capture's decoded area: it is the baseline now. */
    const keep = (area: DecodedArea | null | undefined) => {
      run.kept.add(currentKey);
      if (area) this.rasters.set(currentKey, capture.image, area);
    };
    /** The new capture as the baseline, with the row prints of its decoded area (or those it shares with the baseline of the same bytes). */
    const printed = (area: DecodedArea | null, same?: Baseline['prints']): Baseline => {
      if (area) return { ...current, prints: printsToText(rowPrints(area)) };
      return same ? { ...current, prints: same } : current;
    };
    const row = (await db('change_readings').where(key).first('value', 'read_at_ms')) as { value: string; read_at_ms: number | string } | undefined;
    if (!row) {
      // The first capture is the baseline and sends nothing; of two first captures at once, one
      // stands. Decoded now, so the next capture's comparison decodes only itself (or, not
      // finding it in memory, only its rows that differ).
      const area = await decodedNow();
      await db('change_readings')
        .insert({ ...key, account_id: capture.accountId, value: JSON.stringify(printed(area)), read_at_ms: capture.now })
        .onConflict(['config_id', 'step_index', 'selector_hash'])
        .ignore();
      if (this.rasters.maxBytes > 0) keep(area);
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
    // Compared already (counted toward repeat), or older than the baseline (a later capture was
    // compared first: this one ran again after its process died).
    if (baseline.image !== capture.imageName && (capture.now <= (baseline.countedAt ?? Number.NEGATIVE_INFINITY) || capture.now < Number(row.read_at_ms))) {
      run.kept.add(VisualRasterCache.key(baseline.image, baseline.region, baseline.frameWidth));
      return null;
    }
    // The baseline's decoded area from memory when it is there; its image (and row prints) from the store otherwise.
    const baselineKey = VisualRasterCache.key(baseline.image, baseline.region, baseline.frameWidth);
    const cached = baseline.image === capture.imageName ? undefined : this.rasters.get(baselineKey);
    const old = baseline.image === capture.imageName ? null : cached ? { data: cached.image } : await store.get(baseline.image);
    if (!old) {
      // Its image is gone: this capture is the baseline from now on.
      await replace(db, current);
      return null;
    }
    const result = await compareCaptures(
      {
        image: old.data,
        region: baseline.region,
        masks: baseline.masks,
        frameWidth: baseline.frameWidth,
        ...(cached?.area ? { decoded: cached.area } : { prints: printsFromText(baseline.prints) }),
      },
      {
        image: capture.image,
        region: v.region,
        masks: v.masks,
        frameWidth: v.frameWidth,
        ...(run.decoded.has(currentKey) ? { decoded: run.decoded.get(currentKey) } : {}),
      },
      v.tolerance,
    );
    if (result.decodedAfter) run.decoded.set(currentKey, result.decodedAfter);
    const differs = result.changedPixels > 0 && (result.changedPixels / result.comparedPixels) * 100 >= v.threshold;
    if (!differs) {
      if (await replace(db, printed(result.decodedAfter, baseline.prints))) {
        run.left.add(baselineKey);
        keep(result.decodedAfter);
      }
      return null;
    }
    const streak = (baseline.streak ?? 0) + 1;
    if (streak < v.repeat) {
      await replace(db, { ...baseline, streak, countedAt: capture.now });
      run.kept.add(baselineKey);
      // The baseline stays: kept (decoded, if it was decoded whole) if it was read from the store.
      if (!cached) this.rasters.set(baselineKey, old.data, result.decodedBefore);
      return null;
    }
    // Named after the owed comparison (its random id) and the step: a comparison that runs again
    // after its process died between storing the diff image and recording the alert writes the
    // same file, and leaves none behind.
    const diffName = `${owed ? derivedId(`${owed.id}\n${r.index}`, 18) : randomId(18)}.png`;
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
    const recorded = await db.transaction(async (trx) => {
      const moved = await replace(trx, printed(result.decodedAfter, baseline.prints));
      if (!moved) return false;
      await writeAlert(trx, capture, r, alert, {
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
    run.left.add(baselineKey);
    keep(result.decodedAfter);
    return alert;
  }
}
