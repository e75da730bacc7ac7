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
import { isErrorCode } from '../shared/errors';
import { type SnapOptions, captureKey } from '../shared/screenshot-options';
import { randomId } from '../shared/secrets';
import { type FileStore, createFileStore } from '../shared/storage';
import { BrowserPool } from './browser-pool';
import { EgressPolicy } from './egress';
import { CaptureEngine } from './engine';
import type { CaptureOutput } from './page-capture';

export interface CaptureDeps {
  config: Readonly<Config>;
  /** Injected for tests; defaults to createFileStore(config). */
  store?: FileStore;
}

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

/** The thumbnail: thumb_width wide (default 400), in the image's own raster format. */
async function thumbnail(out: CaptureOutput, o: SnapOptions): Promise<{ data: Buffer; contentType: string }> {
  const source = out.thumbnailSource ?? out.image;
  if (!source) throw new Error('no raster to make a thumbnail from');
  const resized = sharp(source).resize({ width: o.thumb_width ?? 400, ...(o.thumb_height ? { height: o.thumb_height, fit: 'cover', position: 'top' } : {}) });
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

  const toRef = (row: ScreenshotRow, embedUrl: string): ScreenshotRef => {
    const main = row.image_name ?? row.html_name;
    return {
      id: String(row.id),
      job_id: row.job_id,
      config_id: row.config_id,
      embed_url: embedUrl,
      direct_link: main ? `${config.cdnUrl}/${main}` : '',
      direct_thumbnail_link: row.thumb_name ? `${config.cdnUrl}/${row.thumb_name}` : '',
      taken_at_ms: Number(row.created_at_ms),
      image_name: row.image_name,
      html_name: row.html_name,
      content_type: row.content_type,
    };
  };

  /** Writes the capture's files; on failure, removes whatever was written. */
  async function storeFiles(out: CaptureOutput, o: SnapOptions): Promise<Pick<ScreenshotRow, 'image_name' | 'thumb_name' | 'html_name' | 'content_type'>> {
    const names = { image_name: null as string | null, thumb_name: null as string | null, html_name: null as string | null };
    const writes: Array<Promise<void>> = [];
    if (out.html !== undefined) {
      names.html_name = `${randomId(18)}.html`;
      writes.push(store.put(names.html_name, Buffer.from(out.html, 'utf8'), 'text/html; charset=utf-8'));
    }
    if (out.image && out.contentType) {
      names.image_name = `${randomId(18)}.${EXTENSION[out.contentType] ?? 'bin'}`;
      writes.push(store.put(names.image_name, out.image, out.contentType));
      const thumb = await thumbnail(out, o);
      names.thumb_name = `${randomId(18)}.${EXTENSION[thumb.contentType] ?? 'bin'}`;
      writes.push(store.put(names.thumb_name, thumb.data, thumb.contentType));
    }
    const results = await Promise.allSettled(writes);
    const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult | undefined;
    if (failed) {
      await Promise.allSettled(Object.values(names).filter((n): n is string => n !== null).map((n) => store.delete(n)));
      throw failed.reason;
    }
    return { ...names, content_type: out.html !== undefined ? 'text/html; charset=utf-8' : (out.contentType ?? null) };
  }

  /** Runs one capture for a job already recorded, and records its outcome exactly once. */
  async function runJob(ctx: Context, job: { id: string; accountId: string; configId: string; embedUrl: string }, options: SnapOptions): Promise<ScreenshotRef> {
    try {
      const out = await engine.capture(options);
      const files = await storeFiles(out, options);
      const takenAt = Date.now();
      const row = {
        account_id: job.accountId,
        config_id: job.configId,
        job_id: job.id,
        url: options.url,
        ...files,
        cache_key: captureKey(options),
        created_at_ms: takenAt,
      };
      const id = await db.transaction(async (trx) => {
        const [inserted] = await trx('screenshots').insert(row);
        const screenshotId = Number(inserted);
        await trx('jobs').where({ id: job.id }).update({ status: 'completed', screenshot_id: screenshotId, finished_at_ms: takenAt });
        return screenshotId;
      });
      void ctx;
      return toRef({ ...row, id } as ScreenshotRow, job.embedUrl);
    } catch (err) {
      const e = err as { type?: unknown; message?: string };
      await db('jobs')
        .where({ id: job.id })
        .update({ status: 'failed', error_code: isErrorCode(e.type) ? e.type : 'internal_error', note: isErrorCode(e.type) ? String(e.message) : 'Internal error', finished_at_ms: Date.now() });
      throw err;
    }
  }

  const take: Handler<'capture.take'> = async (ctx) => {
    const { account, options } = ctx.params;
    const snapConfig = await call(ctx, 'scheduler.snapConfig', { accountId: account.accountId, options, snapKey: captureKey(options) });
    const job = { id: randomId(12), accountId: account.accountId, configId: snapConfig.id, embedUrl: snapConfig.embed_url };
    await db('jobs').insert({ id: job.id, account_id: job.accountId, config_id: job.configId, status: 'running', created_at_ms: Date.now() });
    return runJob(ctx, job, options);
  };

  const findRecent: Handler<'capture.findRecent'> = async (ctx) => {
    const { accountId, cacheKey, since } = ctx.params;
    const row = (await db('screenshots')
      .where({ account_id: accountId, cache_key: cacheKey })
      .where('created_at_ms', '>=', since)
      .orderBy('created_at_ms', 'desc')
      .first()) as ScreenshotRow | undefined;
    if (!row) return null;
    return toRef(row, `${config.appUrl}/embed/${row.config_id}`);
  };

  return {
    name: 'capture',
    actions: {
      // The broker's timeout is a backstop; the engine enforces the capture's own budget.
      take: { handler: take, timeout: config.capture.timeoutMs + config.capture.queueTimeoutMs + 30_000 },
      findRecent: { handler: findRecent },
    },
    created() {
      db = acquireDatabase(config.database);
      store = deps.store ?? createFileStore(config);
      pool = new BrowserPool(
        { seleniumUrl: config.seleniumUrl, chromeBin: config.capture.chromeBin, chromedriverBin: config.capture.chromedriverBin, extraArgs: config.capture.extraArgs },
        { sessions: config.capture.sessions, queueMax: config.capture.queueMax, queueTimeoutMs: config.capture.queueTimeoutMs, keepAliveMs: 20_000 },
        this.logger,
      );
      engine = new CaptureEngine(pool, new EgressPolicy(config.allowPrivateNetworks), config.capture.timeoutMs);
    },
    async started() {
      await pool.start();
    },
    async stopped() {
      await pool.stop();
      await store.close();
      await releaseDatabase(config.database);
    },
  };
}
