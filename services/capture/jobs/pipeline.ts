/**
 * One capture from options to a recorded screenshot: the engine drives a browser (the
 * thumbnail is made while it still holds it), the files are written, the ai service
 * analyses the stored image when asked, and the screenshot is inserted with its AI object
 * as its job completes, under the job's lease. Snaps and queued jobs both come through
 * here; they differ only in who holds the lease and who pays.
 */
import type { LoggerInstance } from 'moleculer';
import { failedRecord } from '../../ai/public/ai-record';
import { failureOf, toEnvelope } from '../../shared/errors';
import type { AiRecord, CaptureRoute, JobKind, ScreenshotRef, StoredImage, StoredTo } from '../../shared/contracts';
import { serviceError } from '../../shared/errors';
import { DEFAULT_KEY_TEMPLATE, expandKeyTemplate, keyDateTime } from '../../shared/object-keys';
import type { Held } from '../../shared/lease';
import { recordChangeReadings } from '../../notifier/public/change-alerts';
import type { VisualAlerts } from '../../notifier/public/visual-alerts';
import { withLogContext } from '../../shared/logging';
import { appendDelivery, captureDeliveryBody, webhookBody } from '../../notifier/public/outbox';
import type { ConfigOptions, SnapOptions } from '../../shared/screenshot-options';
import { type CaptureEngine, type CaptureTurn, turnOf } from '../browsers/engine';
import type { CaptureFiles } from './files';
import type { JobQueue, LeasedJob } from './jobs';
import type { CaptureObserver, EgressRoute } from './metrics';
import { ScreenshotRepository, type StoredFiles } from './screenshots';

/** Routes and bandwidth as a capture sees them (the proxy and billing services). */
export interface Router {
  /** The capture's route (upstream with credentials), or null to go out directly; throws the spec's errors. */
  route(accountId: string, options: SnapOptions): Promise<CaptureRoute | null>;
  /** Before a capture through a real location: 402 real_location_bandwidth_exhausted when the month's bandwidth is used up. */
  checkBandwidth(accountId: string): Promise<void>;
  /** After it: the exact bytes, added to the month's bandwidth. */
  chargeBandwidth(accountId: string, bytes: number): Promise<void>;
}

/** The proxy service as a capture with store_to sees it: the stored file uploaded to the account's own bucket (proxy.storeFile). */
export interface Uploader {
  /** Throws 502 storage_upload_failed, its note saying why. */
  store(accountId: string, destination: string, key: string, file: StoredImage): Promise<StoredTo>;
}

/** The file store_to uploads (the image or PDF, else the HTML) and its key's {id} and {ext}. */
export function uploadedFile(files: StoredFiles): { file: StoredImage; id: string; ext: string } | null {
  const name = files.image_name ?? files.html_name;
  if (!name) return null;
  const dot = name.lastIndexOf('.');
  const contentType = files.image_name ? (files.content_type ?? 'application/octet-stream') : 'text/html; charset=utf-8';
  return { file: { name, contentType }, id: dot > 0 ? name.slice(0, dot) : name, ext: dot > 0 ? name.slice(dot + 1) : 'bin' };
}

/** The object key of a capture's upload: store_key (default {id}.{ext}) expanded. */
export function uploadKey(
  template: string | undefined,
  job: { id: string; accountId: string; configId: string },
  file: { id: string; ext: string },
  now: number,
): string {
  return expandKeyTemplate(template ?? DEFAULT_KEY_TEMPLATE, {
    id: file.id,
    ext: file.ext,
    job_id: job.id,
    config_id: job.configId,
    account: job.accountId,
    ...keyDateTime(now),
  });
}

/** The ai service as a capture sees it (ai.check and ai.analyze). */
export interface Analyst {
  /** The spec's checks before a capture; throws the spec's error (412, 400, 503). */
  check(accountId: string, options: SnapOptions): Promise<unknown>;
  /** Never fails for the provider's sake: a failed analysis is ai_analyzed false with ai_error. */
  analyze(accountId: string, options: SnapOptions, image: StoredImage): Promise<AiRecord>;
}

/** The raster an analysis reads: the image, or for a pdf its first viewport (the thumbnail). */
function analysedImage(files: StoredFiles): StoredImage | null {
  if (files.image_name && files.content_type?.startsWith('image/')) return { name: files.image_name, contentType: files.content_type };
  if (files.thumb_name) return { name: files.thumb_name, contentType: 'image/jpeg' };
  return null;
}

function egressRoute(route: CaptureRoute | null): EgressRoute {
  if (route?.location) return 'real_location';
  return route ? 'custom_proxy' : 'direct';
}

export interface CapturePipelineDeps {
  engine: Pick<CaptureEngine, 'capture'>;
  files: CaptureFiles;
  screenshots: ScreenshotRepository;
  queue: JobQueue;
  analyst: Analyst;
  router: Router;
  /** store_to's uploads (none: a capture with store_to fails with storage_upload_failed). */
  uploader?: Uploader | null;
  /** Told of every capture's outcome, duration and egress bytes (metrics.ts). */
  observer?: CaptureObserver | null;
  log?: Pick<LoggerInstance, 'debug' | 'info' | 'warn'>;
  /** Visual change steps' comparisons, owed with the capture's record and run once it is recorded (none: such steps compare nothing). */
  visual?: Pick<VisualAlerts, 'record' | 'owe'> | null;
  /** Webhook deliveries may have been written for the account (a webhook_url, change steps' alerts): the notifier is told, so it need not wait for its poll. */
  deliveriesAdded?: ((accountId: string) => void) | null;
}

export class CapturePipeline {
  private readonly engine: Pick<CaptureEngine, 'capture'>;
  private readonly files: CaptureFiles;
  private readonly screenshots: ScreenshotRepository;
  private readonly queue: JobQueue;
  private readonly analyst: Analyst;
  private readonly router: Router;
  private readonly uploader: Uploader | null;
  private readonly observer: CaptureObserver | null;
  private readonly log: Pick<LoggerInstance, 'debug' | 'info' | 'warn'>;
  private readonly visual: Pick<VisualAlerts, 'record' | 'owe'> | null;
  private readonly deliveriesAdded: (accountId: string) => void;

  constructor(deps: CapturePipelineDeps) {
    this.engine = deps.engine;
    this.files = deps.files;
    this.screenshots = deps.screenshots;
    this.queue = deps.queue;
    this.analyst = deps.analyst;
    this.router = deps.router;
    this.uploader = deps.uploader ?? null;
    this.observer = deps.observer ?? null;
    this.log = deps.log ?? { debug: () => undefined, info: () => undefined, warn: () => undefined };
    this.visual = deps.visual ?? null;
    this.deliveriesAdded = deps.deliveriesAdded ?? (() => undefined);
  }

  /**
   * Captures and records the job's screenshot. Null when the lease was lost while the
   * capture ran (another instance took the job over and its result counts): the files
   * written here are removed again. A job without a kind is a snap's. `turn`: how the capture
   * gets its browser (its class and ticket, or the browser the worker was given). `cacheKey`: a
   * snap's ttl key (captureKey with its targets), under which a later snap may reuse it; null
   * for a configuration's capture, which is never reused.
   */
  async run(
    job: LeasedJob & { kind?: JobKind },
    options: SnapOptions,
    turn: CaptureTurn = turnOf({ cls: 'snap', ticket: null }),
    cacheKey: string | null = null,
  ): Promise<ScreenshotRef | null> {
    const kind = job.kind ?? 'snap';
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    try {
      const ref = await this.capture(job, options, turn, cacheKey);
      this.observer?.captured(kind, ref ? 'success' : 'superseded', null, seconds());
      return ref;
    } catch (err) {
      this.observer?.captured(kind, 'failure', failureOf(err).code, seconds());
      throw err;
    } finally {
      // What a capture that asked for a browser waited, and (if it got one) how long it held it.
      if (turn.asked) this.observer?.timed(kind, turn.waitedMs / 1000, turn.heldMs > 0 ? turn.heldMs / 1000 : null);
    }
  }

  private async capture(job: LeasedJob, options: SnapOptions, turn: CaptureTurn, cacheKey: string | null): Promise<ScreenshotRef | null> {
    // The browser disposes the used context once this capture is recorded, not while its
    // files and record are written (the engine; BrowserSlot.recycle). One turn of the event
    // loop later, so that a snap's answer, written in the microtasks after, goes first.
    let recorded!: () => void;
    const answered = new Promise<void>((resolve) => {
      recorded = () => setImmediate(resolve);
    });
    try {
      return await this.captureAndRecord(job, options, answered, turn, cacheKey);
    } finally {
      recorded();
    }
  }

  private async captureAndRecord(
    job: LeasedJob,
    options: SnapOptions,
    answered: Promise<void>,
    turn: CaptureTurn,
    cacheKey: string | null,
  ): Promise<ScreenshotRef | null> {
    // Its callers (snap below, the worker) run it in the job's log context: its lines and
    // those of everything beneath (engine, pool, gateway, the services it calls) name the job.
    const t0 = performance.now();
    const analysing = options.analyze_image_with_ai === true;
    // Again before the capture: a key removed or a backend gone since the job was queued fails it here.
    if (analysing) await this.analyst.check(job.accountId, options);
    // The route now (a deleted own proxy fails the capture here, 412), and the bandwidth check
    // before any browser work. Bytes through a real location are charged once the capture is
    // recorded: a capture that fails, however late (its files, its store_to upload), is not
    // charged, as no credit of a failed capture is (docs/decisions/2026-11-22-real-location-traffic.md).
    const route = await this.router.route(job.accountId, options);
    // The upstream is a URL with the proxy's credentials: only its host and port are logged.
    this.log.debug({ url: options.url, via: route ? new URL(route.upstream).host : null }, 'capture started');
    if (route?.location) await this.router.checkBandwidth(job.accountId);
    let bytes = 0;
    const rendered = await this.engine.capture(options, {
      finish: async (out) => {
        bytes = out.egressBytes ?? 0;
        return this.files.render(options)(out);
      },
      upstream: route?.upstream ?? null,
      answered,
      turn,
    });
    this.observer?.egressBytes(egressRoute(route), bytes);
    const files = await this.files.write(rendered);
    const readings = rendered.out.changes ?? [];
    const ai = analysing ? await this.analyse(job.accountId, options, files) : null;
    const now = Date.now();
    // store_to: uploaded once the files are stored, before the record: a failed upload fails the capture (not recorded, not charged).
    const storedTo = options.store_to !== undefined ? await this.upload(job, options, files, now) : null;
    const routed = { location: route?.location ?? null, customProxy: route?.customProxy ?? null, bandwidthBytes: route?.location ? bytes : 0 };
    const { loadFinished = null, statusCode = null, finalUrl = null } = rendered.out;
    const row = ScreenshotRepository.newRow(job, {
      options,
      // A failed analysis is not handed back under ttl: its note says to try again.
      cacheKey: analysing && ai?.ai_analyzed !== true ? null : cacheKey,
      files,
      ai,
      now,
      route: routed,
      loadFinished,
      outcome: { statusCode, finalUrl },
      overlays: rendered.out.overlays ?? null,
      storedTo,
    });
    // A configuration's webhook_url: the delivery is written with the screenshot, in one transaction.
    const webhookUrl = (options as ConfigOptions).webhook_url;
    // Visual change steps: the comparison the capture owes is written with it (durable: a
    // process that dies before it ran leaves it to another; visual-alerts.ts), run once recorded.
    const visualCapture =
      this.visual && files.image_name && rendered.out.image && readings.some((r) => r.visual)
        ? {
            accountId: job.accountId,
            configId: job.configId,
            jobId: job.id,
            ...(options.custom_title ? { title: options.custom_title } : {}),
            now: row.created_at_ms,
            imageName: files.image_name,
            image: rendered.out.image,
          }
        : null;
    let owed: Held | null = null;
    const id = await this.queue.complete(job, async (trx) => {
      const inserted = await this.screenshots.insert(row, trx);
      if (webhookUrl) {
        const body = captureDeliveryBody(this.screenshots.toRef({ ...row, id: inserted }), options.url, options);
        await appendDelivery(trx, {
          accountId: job.accountId,
          configId: job.configId,
          kind: 'capture',
          sendTo: 'webhook',
          url: webhookUrl,
          body: webhookBody('capture', body),
          jobId: job.id,
          now: row.created_at_ms,
        });
      }
      // `change` steps: compared with the configuration's baselines; an alert and its delivery are recorded with the capture.
      if (readings.length) {
        await recordChangeReadings(
          trx,
          {
            accountId: job.accountId,
            configId: job.configId,
            jobId: job.id,
            ...(options.custom_title ? { title: options.custom_title } : {}),
            now: row.created_at_ms,
          },
          readings,
        );
      }
      if (this.visual && visualCapture) owed = await this.visual.owe(trx, visualCapture, readings);
      return inserted;
    });
    if (id === null) {
      this.log.info('capture finished after its lease was lost; another instance holds the job, its files are removed');
      await this.files.remove(files);
      return null;
    }
    this.log.info({ screenshot_id: id, ms: Math.round(performance.now() - t0) }, 'capture recorded');
    // Recorded: its bytes are charged (whatever the limit; the room was checked before). A charge
    // billing does not take is logged: the capture stands, answered as the success it is.
    if (route?.location && bytes > 0) {
      await this.router.chargeBandwidth(job.accountId, bytes).catch((err: Error) => {
        this.log.warn({ screenshot_id: id, bandwidth_bytes: bytes }, `the capture's real-location bandwidth could not be charged: ${err.message}`);
      });
    }
    if (webhookUrl || readings.length) this.deliveriesAdded(job.accountId);
    // Visual change steps: compared with the configuration's baseline once the capture is
    // recorded, in the background (a snap's answer never waits for it; visual-alerts.ts).
    // Its alerts are announced by VisualAlerts (announce), as those of a comparison left behind are.
    if (this.visual && visualCapture) void this.visual.record(visualCapture, readings, owed);
    return this.screenshots.toRef({ ...row, id });
  }

  /** Uploads the capture's file to its store_to destination; on failure its files are removed and the capture fails. */
  private async upload(job: LeasedJob, options: SnapOptions, files: StoredFiles, now: number): Promise<StoredTo> {
    const destination = options.store_to as string;
    try {
      const upload = uploadedFile(files);
      if (!upload) throw serviceError('storage_upload_failed', 'store_to: the capture made no file to upload.');
      if (!this.uploader) throw serviceError('storage_upload_failed', 'store_to: this capture node cannot upload (no uploader).');
      const key = uploadKey(options.store_key, job, upload, now);
      const stored = await this.uploader.store(job.accountId, destination, key, upload.file);
      this.log.info({ destination, object_key: key, etag: stored.etag }, 'capture uploaded to store_to');
      return stored;
    } catch (err) {
      await this.files.remove(files);
      throw err;
    }
  }

  /** The capture's analysis; an ai service that cannot be reached is a failed analysis too, never a failed capture. */
  private async analyse(accountId: string, options: SnapOptions, files: StoredFiles): Promise<AiRecord> {
    const image = analysedImage(files);
    if (!image) return failedRecord(options, options.ai_model ?? null, { error_code: 'internal_error', note: 'The capture made no image to analyse.' });
    try {
      return await this.analyst.analyze(accountId, options, image);
    } catch (err) {
      const { body } = toEnvelope(err);
      return failedRecord(options, options.ai_model ?? null, { error_code: body.error_code, note: body.note });
    }
  }

  /**
   * A snap: its job cannot be taken over, so it completes, or fails with the error rethrown. It
   * is recorded under `cacheKey` (captureKey with its targets), for a later snap's ttl.
   */
  async snap(job: LeasedJob, options: SnapOptions, turn: CaptureTurn | undefined, cacheKey: string): Promise<ScreenshotRef> {
    // Added to the ids of the request that waits for it.
    return withLogContext({ job_id: job.id }, async () => {
      try {
        const ref = await this.run(job, options, turn, cacheKey);
        if (ref) return ref;
        throw new Error(`the lease of snap job ${job.id} was lost`);
      } catch (err) {
        const failure = failureOf(err);
        // Unknown failures are logged with their detail where they are answered (the api's 500).
        this.log.info({ error_code: failure.code }, `capture failed: ${failure.note}`);
        await this.queue.fail(job, failure.code, failure.note);
        throw err;
      }
    });
  }
}
