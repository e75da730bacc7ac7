/**
 * capture: owns jobs and screenshots. Drives the browsers (Selenium Grid, or a local
 * ChromeDriver in embedded mode), writes images, thumbnails and HTML to storage, and
 * records each capture. Only small records cross the transporter; files stay in storage.
 */
import type { Knex } from 'knex';
import type { Context, ServiceSchema } from 'moleculer';
import sharp from 'sharp';
import type { Config } from '../shared/config';
import { type Handler, type ScreenshotRef, call } from '../shared/contracts';
import { acquireDatabase, releaseDatabase } from '../shared/database';
import { isErrorCode, serviceError } from '../shared/errors';
import { pageOf, pageQuery } from '../shared/paging';
import { OPTION_DEFAULTS, type SnapOptions, captureKey } from '../shared/screenshot-options';
import { randomId } from '../shared/secrets';
import { type FileStore, createFileStore } from '../shared/storage';
import { PageBlocker } from './blocking';
import { BrowserPool } from './browser-pool';
import { EgressPolicy } from './egress';
import { CaptureEngine } from './engine';
import { type ClaimedJob, JobQueue } from './jobs';
import type { CaptureOutput } from './page-capture';

export interface CaptureDeps {
  config: Readonly<Config>;
  /** Injected for tests; defaults to createFileStore(config). */
  store?: FileStore;
}

/** Queued jobs are looked for this often, besides the capture.jobQueued event. */
const JOB_POLL_MS = 2_000;
/** A job that keeps killing its workers is failed after this many claims. */
const MAX_JOB_ATTEMPTS = 3;

// Thumbnails are small; one libvips thread leaves the cores to Chromium.
sharp.concurrency(1);

const EXTENSION: Record<string, string> = { 'image/jpeg': 'jpeg', 'image/png': 'png', 'image/webp': 'webp', 'application/pdf': 'pdf' };

interface ScreenshotRow {
  id: number;
  job_id: string;
  config_id: string;
  image_name: string | null;
  thumb_name: string | null;
  html_name: string | null;
  content_type: string | null;
  created_at_ms: number | string;
}

interface Thumbnail {
  data: Buffer;
  contentType: string;
}

/** A capture's output with its thumbnail (none for html_only): everything storeFiles writes. */
interface Rendered {
  out: CaptureOutput;
  thumb: Thumbnail | null;
}

/** The thumbnail: thumb_width wide (default 400), in the image's own raster format. */
async function thumbnail(out: CaptureOutput, o: SnapOptions): Promise<Thumbnail | null> {
  const source = out.thumbnailSource ?? out.image;
  if (!source) return null;
  // Chromium tags its screenshots with an sRGB profile; converting sRGB to sRGB changes no
  // pixel but triples the thumbnail's cost (measured: 12 ms against 4.5 ms for 1280x800).
  const resized = sharp(source, { ignoreIcc: true }).resize({ width: o.thumb_width ?? OPTION_DEFAULTS.thumb_width, ...(o.thumb_height ? { height: o.thumb_height, fit: 'cover', position: 'top' } : {}) });
  if (out.contentType === 'image/png') return { data: await resized.png().toBuffer(), contentType: 'image/png' };
  if (out.contentType === 'image/webp') return { data: await resized.webp().toBuffer(), contentType: 'image/webp' };
  return { data: await resized.jpeg({ quality: 80 }).toBuffer(), contentType: 'image/jpeg' };
}

export function captureService(deps: CaptureDeps): ServiceSchema {
  const { config } = deps;
  let db: Knex;
  let store: FileStore;
  let pool: BrowserPool;
  let engine: CaptureEngine;
  let queue: JobQueue;
  let poller: NodeJS.Timeout | null = null;
  let stopping = false;
  const inFlight = new Set<Promise<void>>();

  const embedUrlOf = (configId: string) => `${config.appUrl}/embed/${configId}`;

  const toRef = (row: ScreenshotRow): ScreenshotRef => {
    const main = row.image_name ?? row.html_name;
    return {
      id: String(row.id),
      job_id: row.job_id,
      config_id: row.config_id,
      embed_url: embedUrlOf(row.config_id),
      direct_link: main ? `${config.cdnUrl}/${main}` : '',
      direct_thumbnail_link: row.thumb_name ? `${config.cdnUrl}/${row.thumb_name}` : '',
      taken_at_ms: Number(row.created_at_ms),
      image_name: row.image_name,
      html_name: row.html_name,
      content_type: row.content_type,
    };
  };

  /**
   * Makes the thumbnail while the engine still holds the browser: the used context is
   * disposed only afterwards, as disposing it alongside slows the thumbnail down 2-3x on 2
   * cores. Writing the files (an upload, with GCS) happens after the browser is let go.
   */
  const render =
    (o: SnapOptions) =>
    async (out: CaptureOutput): Promise<Rendered> => ({ out, thumb: await thumbnail(out, o) });

  /** Writes the capture's files; on failure, removes whatever was written. */
  async function storeFiles({ out, thumb }: Rendered): Promise<Pick<ScreenshotRow, 'image_name' | 'thumb_name' | 'html_name' | 'content_type'>> {
    const names = { image_name: null as string | null, thumb_name: null as string | null, html_name: null as string | null };
    const writes: Array<Promise<void>> = [];
    if (out.html !== undefined) {
      names.html_name = `${randomId(18)}.html`;
      writes.push(store.put(names.html_name, Buffer.from(out.html, 'utf8'), 'text/html; charset=utf-8'));
    }
    if (out.image && out.contentType) {
      names.image_name = `${randomId(18)}.${EXTENSION[out.contentType] ?? 'bin'}`;
      writes.push(store.put(names.image_name, out.image, out.contentType));
    }
    if (thumb) {
      names.thumb_name = `${randomId(18)}.${EXTENSION[thumb.contentType] ?? 'bin'}`;
      writes.push(store.put(names.thumb_name, thumb.data, thumb.contentType));
    }
    const results = await Promise.allSettled(writes);
    const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
    if (failed) {
      await deleteFiles(names);
      throw failed.reason;
    }
    return { ...names, content_type: out.html !== undefined ? 'text/html; charset=utf-8' : (out.contentType ?? null) };
  }

  async function deleteFiles(row: { image_name: string | null; thumb_name: string | null; html_name: string | null }): Promise<void> {
    const names = [row.image_name, row.thumb_name, row.html_name].filter((n): n is string => Boolean(n));
    await Promise.allSettled(names.map((n) => store.delete(n)));
  }

  const screenshotRow = (job: { id: string; accountId: string; configId: string }, options: SnapOptions, files: Awaited<ReturnType<typeof storeFiles>>) => ({
    account_id: job.accountId,
    config_id: job.configId,
    job_id: job.id,
    url: options.url,
    ...files,
    cache_key: captureKey(options),
    created_at_ms: Date.now(),
  });

  /** A snap: captured while the HTTP request waits; its job is recorded for GET /jobs. */
  const take: Handler<'capture.take'> = async (ctx) => {
    const { account, options } = ctx.params;
    const snapConfig = await call(ctx, 'scheduler.snapConfig', { accountId: account.accountId, options, snapKey: captureKey(options) });
    const job = { id: randomId(12), accountId: account.accountId, configId: snapConfig.id };
    await db('jobs').insert({ id: job.id, account_id: job.accountId, config_id: job.configId, kind: 'snap', status: 'running', created_at_ms: Date.now() });
    void call(ctx, 'scheduler.noteJob', { configId: job.configId, jobId: job.id }).catch(() => undefined);
    try {
      const files = await storeFiles(await engine.capture(options, render(options)));
      const row = screenshotRow(job, options, files);
      const id = await db.transaction(async (trx) => {
        const [inserted] = await trx('screenshots').insert(row);
        const screenshotId = Number(inserted);
        await trx('jobs').where({ id: job.id }).update({ status: 'completed', screenshot_id: screenshotId, finished_at_ms: row.created_at_ms });
        return screenshotId;
      });
      return toRef({ ...row, id } as ScreenshotRow);
    } catch (err) {
      const e = err as { type?: unknown; message?: string };
      const known = isErrorCode(e.type);
      await db('jobs')
        .where({ id: job.id })
        .update({ status: 'failed', error_code: known ? e.type : 'internal_error', note: known ? String(e.message) : 'Internal error', finished_at_ms: Date.now() });
      throw err;
    }
  };

  /**
   * Runs one claimed job: reserve its credit (idempotent per job, so a job taken over after
   * a crash is charged once), capture, store, complete under the lease, then commit; a
   * failure is recorded with its error code and the credit refunded.
   */
  async function runJob(broker: Context['broker'], job: ClaimedJob): Promise<void> {
    const renew = setInterval(() => void queue.renew(job).catch(() => undefined), Math.max(500, Math.floor(config.capture.jobLeaseMs / 3)));
    let reservation: Awaited<ReturnType<typeof reserve>> | null = null;
    const reserve = () => call(broker, 'billing.reserveFor', { accountId: job.accountId, amounts: { screenshots: 1 }, reservationId: `job:${job.id}` });
    try {
      if (job.attempts > MAX_JOB_ATTEMPTS) {
        await queue.fail(job, 'internal_error', `The capture was interrupted ${MAX_JOB_ATTEMPTS} times and was given up.`);
        await call(broker, 'billing.refund', { reservation: await reserve() }).catch(() => undefined);
        return;
      }
      reservation = await reserve();
      const files = await storeFiles(await engine.capture(job.options, render(job.options)));
      const screenshotId = await queue.complete(job, screenshotRow(job, job.options, files));
      if (screenshotId === null) {
        // Another instance took the job over while this one was slow: its result counts.
        await deleteFiles(files);
        return;
      }
      await call(broker, 'billing.commit', { reservation });
      broker.emit('capture.completed', { accountId: job.accountId, configId: job.configId, jobId: job.id, screenshotId: String(screenshotId) });
    } catch (err) {
      const e = err as { type?: unknown; message?: string };
      if (stopping) {
        // Shutting down: the job goes back to the queue for another instance (or the next start).
        await queue.release(job).catch(() => undefined);
        return;
      }
      const known = isErrorCode(e.type);
      if (!known) broker.getLogger('capture').error(`job ${job.id} failed`, err);
      const failed = await queue.fail(job, known ? String(e.type) : 'internal_error', known ? String(e.message) : 'The capture failed on our side; it was logged.');
      if (failed && reservation) await call(broker, 'billing.refund', { reservation }).catch(() => undefined);
    } finally {
      clearInterval(renew);
    }
  }

  /** Claims queued jobs while this instance has free browsers; one claimer at a time. */
  let claiming = false;
  async function pump(broker: Context['broker']): Promise<void> {
    if (claiming || stopping) return;
    claiming = true;
    try {
      while (!stopping && inFlight.size < config.capture.sessions) {
        const job = await queue.claim();
        if (!job) break;
        const run: Promise<void> = runJob(broker, job).finally(() => {
          inFlight.delete(run);
          void pump(broker);
        });
        inFlight.add(run);
      }
    } catch (err) {
      broker.getLogger('capture').warn(`claiming a job failed: ${(err as Error).message}`);
    } finally {
      claiming = false;
    }
  }

  const enqueue: Handler<'capture.enqueue'> = async (ctx) => {
    const { accountId, configId, jobId, kind, options } = ctx.params;
    await queue.enqueue({ id: jobId, accountId, configId, kind, options });
    ctx.broker.emit('capture.jobQueued', { jobId });
    return { job_id: jobId };
  };

  const jobStatus: Handler<'capture.jobStatus'> = async (ctx) => {
    const row = await queue.find(ctx.params.accountId, ctx.params.jobId);
    if (!row) throw serviceError('not_found', `No job "${ctx.params.jobId}" in this account.`);
    if (row.status === 'completed' && row.screenshot_id !== null) {
      const shot = (await db('screenshots').where({ id: row.screenshot_id }).first()) as ScreenshotRow | undefined;
      if (shot) return { status: 'completed', job_id: row.id, screenshot: toRef(shot) };
    }
    if (row.status === 'failed' || row.status === 'completed') {
      return { status: 'failed', job_id: row.id, error_code: row.error_code ?? 'internal_error', note: row.note ?? 'The capture failed.' };
    }
    return { status: row.status, job_id: row.id };
  };

  const listForConfig: Handler<'capture.listForConfig'> = async (ctx) => {
    const { accountId, configId, paging } = ctx.params;
    const rows = (await pageQuery(db('screenshots').where({ account_id: accountId, config_id: configId }), paging, 'created_at_ms', 'id')) as ScreenshotRow[];
    const page = pageOf(rows, paging);
    return { screenshots: page.rows.map(toRef), has_more: page.has_more };
  };

  const listForAccount: Handler<'capture.listForAccount'> = async (ctx) => {
    const { accountId, paging } = ctx.params;
    const rows = (await pageQuery(db('screenshots').where({ account_id: accountId }), paging, 'created_at_ms', 'id')) as ScreenshotRow[];
    const page = pageOf(rows, paging);
    return { screenshots: page.rows.map(toRef), has_more: page.has_more };
  };

  const latestImage: Handler<'capture.latestImage'> = async (ctx) => {
    const row = await db('screenshots').where({ config_id: ctx.params.configId }).whereNotNull('image_name').orderBy('created_at_ms', 'desc').orderBy('id', 'desc').first('image_name', 'content_type');
    return row ? { image_name: String(row.image_name), content_type: String(row.content_type) } : null;
  };

  /** Deletes a configuration's screenshots (rows and files) and jobs. */
  const deleteForConfig: Handler<'capture.deleteForConfig'> = async (ctx) => {
    const { accountId, configId } = ctx.params;
    const rows = (await db('screenshots').where({ account_id: accountId, config_id: configId }).select('id', 'image_name', 'thumb_name', 'html_name')) as ScreenshotRow[];
    await db.transaction(async (trx) => {
      await trx('screenshots').where({ account_id: accountId, config_id: configId }).delete();
      await trx('jobs').where({ account_id: accountId, config_id: configId }).delete();
    });
    // Files go after the rows, so no listed screenshot ever points at a missing file.
    await Promise.all(rows.map((r) => deleteFiles(r)));
    return { screenshots: rows.length };
  };

  const findRecent: Handler<'capture.findRecent'> = async (ctx) => {
    const { accountId, cacheKey, since } = ctx.params;
    const row = (await db('screenshots')
      .where({ account_id: accountId, cache_key: cacheKey })
      .where('created_at_ms', '>=', since)
      .orderBy('created_at_ms', 'desc')
      .first()) as ScreenshotRow | undefined;
    return row ? toRef(row) : null;
  };

  return {
    name: 'capture',
    actions: {
      // The broker's timeout is a backstop; the engine enforces the capture's own budget.
      take: { handler: take, timeout: config.capture.timeoutMs + config.capture.queueTimeoutMs + 30_000 },
      findRecent: { handler: findRecent },
      enqueue: { handler: enqueue },
      jobStatus: { handler: jobStatus },
      listForConfig: { handler: listForConfig },
      listForAccount: { handler: listForAccount },
      latestImage: { handler: latestImage },
      deleteForConfig: { handler: deleteForConfig },
    },
    events: {
      'capture.jobQueued'(this: { broker: Context['broker'] }) {
        void pump(this.broker);
      },
    },
    created() {
      db = acquireDatabase(config.database);
      store = deps.store ?? createFileStore(config);
      queue = new JobQueue(db, config.capture.jobLeaseMs);
      pool = new BrowserPool(
        { seleniumUrl: config.seleniumUrl, chromeBin: config.capture.chromeBin, chromedriverBin: config.capture.chromedriverBin, extraArgs: config.capture.extraArgs },
        { sessions: config.capture.sessions, queueMax: config.capture.queueMax, queueTimeoutMs: config.capture.queueTimeoutMs, keepAliveMs: 20_000 },
        this.logger,
      );
      engine = new CaptureEngine(pool, new EgressPolicy(config.allowPrivateNetworks), config.capture.timeoutMs);
    },
    async started() {
      // Filter lists are compiled once per process; doing it now keeps the first no_ads
      // capture from paying for it. A missing list is reported by the capture that needs it.
      void PageBlocker.shared().catch(() => undefined);
      await pool.start();
      // Jobs left queued (or orphaned by a dead instance) are picked up from the start.
      poller = setInterval(() => void pump(this.broker), JOB_POLL_MS);
      void pump(this.broker);
    },
    async stopped() {
      stopping = true;
      if (poller) clearInterval(poller);
      // Running jobs get the time budget of one capture to finish; what is still running
      // then fails with the browsers and goes back to the queue.
      await Promise.race([Promise.allSettled([...inFlight]), new Promise((r) => setTimeout(r, config.capture.timeoutMs).unref())]);
      await pool.stop();
      await Promise.allSettled([...inFlight]);
      await store.close();
      await releaseDatabase(config.database);
    },
  };
}
