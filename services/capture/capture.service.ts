/**
 * capture: owns jobs and screenshots. Drives the browsers (Selenium Grid, or a local
 * ChromeDriver in embedded mode), writes images, thumbnails and HTML to storage, and
 * records each capture. Only small records cross the transporter; files stay in storage.
 *
 * Also owns domain research (research_jobs, research_domains): each domain is a job, run
 * after interactive work.
 *
 * Wiring only: a capture's steps live in pipeline.ts (engine, files, record), queued jobs
 * in worker.ts and jobs.ts, the screenshots table in screenshots.ts, a research domain's
 * work in research.ts and its tables in research-jobs.ts.
 */
import type { Knex } from 'knex';
import type { Config } from '../shared/config';
import { type EventHandler, type Handler, call, emit } from '../shared/contracts';
import { defineService, ServiceDatabase } from '../shared/define-service';
import { failureOf, serviceError } from '../shared/errors';
import { type SnapOptions, captureKey } from '../shared/screenshot-options';
import { randomId } from '../shared/secrets';
import type { ServiceUnit } from '../shared/service-unit';
import { type FileStore, createFileStore } from '../shared/storage';
import { BlockerLoader } from './page/blocking';
import { MemoryAccountSlots, RedisAccountSlots } from './fairness/account-slots';
import { Admission } from './fairness/concurrency-admission';
import { BrowserPool } from './browsers/browser-pool';
import { launchSession } from './browsers/browser-slot';
import { egressPolicyFor } from '../shared/egress';
import { EgressGateway } from './page/gateway';
import { CaptureEngine, turnOf } from './browsers/engine';
import { CaptureFiles } from './jobs/files';
import { GridDrainWatch } from './browsers/grid-drain';
import { JobQueue, finishedAnswer, jobStatusOf } from './jobs/jobs';
import { CaptureMetrics } from './jobs/metrics';
import { readingCapture } from './page/page-capture';
import { type Analyst, CapturePipeline, type Router } from './jobs/pipeline';
import { ResearchRunner } from './research/research';
import { ResearchRepository, researchDeliveryBody } from './research/research-jobs';
import { ScreenshotRepository } from './jobs/screenshots';
import { JobWorker } from './jobs/worker';

/** The running capture service, for the root and tests. */
export interface CaptureHandle {
  /** Where captures get the ad and tracker blocker (its lists can be switched at run time). */
  blockers: BlockerLoader;
  /**
   * Shutdown has begun: claim no more jobs, start or replace no browser; running captures
   * go on until the service's stopped() ends them. Called before broker.stop(), which may
   * wait for requests in flight before it stops any service.
   */
  drain(): void;
}

export interface CaptureDeps {
  config: Readonly<Config>;
  /** Injected for tests; defaults to createFileStore(config). */
  store?: FileStore;
}

interface CaptureState {
  db: Knex;
  store: FileStore;
  files: CaptureFiles;
  screenshots: ScreenshotRepository;
  queue: JobQueue;
  pool: BrowserPool;
  admission: Admission;
  metrics: CaptureMetrics;
  pipeline: CapturePipeline;
  worker: JobWorker;
  research: ResearchRepository;
  drainWatch: GridDrainWatch | null;
}

/** The most bytes of JSON one part of a research report carries across the transporter (NATS takes 1 MB a message). */
const REPORT_PART_BYTES = 256 * 1024;

export function captureService(deps: CaptureDeps): ServiceUnit<CaptureHandle> {
  const { config } = deps;
  const database = new ServiceDatabase(config.database);
  let s: CaptureState;
  const blockers = new BlockerLoader();

  /**
   * A snap: captured while the HTTP request waits; its job is recorded for GET /jobs. An
   * attempt after the first (its instance disappeared under it: the api takes it again here)
   * keeps its job, its place in its account's counts and in the fair order.
   */
  const take: Handler<'capture.take'> = async (ctx) => {
    const { account, options, jobId, attempt, since } = ctx.params;
    // Its account's limits first (429 past them), before anything is written; a ticket still
    // counted from an earlier attempt is taken over as it is.
    const ticket = s.admission.ticket(jobId, account);
    try {
      await s.admission.admit(ticket);
    } catch (err) {
      s.metrics.refused('snap', failureOf(err).code);
      throw err;
    }
    try {
      const snapConfig = await call(ctx, 'scheduler.snapConfig', { accountId: account.accountId, options, snapKey: captureKey(options) });
      const owner = { id: jobId, accountId: account.accountId, configId: snapConfig.id };
      const begun = attempt > 1 ? await s.queue.retake(owner) : { leased: await s.queue.start(owner) };
      if ('finished' in begun) return finishedAnswer(begun.finished, s.screenshots);
      const job = begun.leased;
      if (attempt === 1) void call(ctx, 'scheduler.noteJob', { configId: job.configId, jobId: job.id }).catch(() => undefined);
      return await s.pipeline.snap(job, options, turnOf({ cls: 'snap', ticket, since, again: attempt > 1 }));
    } finally {
      await s.admission.finish(ticket);
    }
  };

  const abandon: Handler<'capture.abandon'> = async (ctx) => {
    const { accountId, jobId, errorCode, note } = ctx.params;
    await s.queue.abandon(accountId, jobId, errorCode, note);
    await s.admission.release({ id: jobId, accountId });
    return { ok: true as const };
  };

  const enqueue: Handler<'capture.enqueue'> = async (ctx) => {
    const { accountId, configId, jobId, kind, options } = ctx.params;
    await s.queue.enqueue({ id: jobId, accountId, configId, kind, options });
    void emit(ctx, 'capture.jobQueued', { jobId });
    return { job_id: jobId };
  };

  const jobStatus: Handler<'capture.jobStatus'> = async (ctx) => {
    const row = await s.queue.find(ctx.params.accountId, ctx.params.jobId);
    if (!row) throw serviceError('not_found', `No job "${ctx.params.jobId}" in this account.`);
    return jobStatusOf(row, row.status === 'completed' && row.screenshot_id !== null ? await s.screenshots.byId(row.screenshot_id) : null);
  };

  /** A thumbnail is made when first asked for, and only one a screenshot recorded. */
  const thumbnail: Handler<'capture.thumbnail'> = async (ctx) => {
    const image = await s.screenshots.imageOfThumbnail(ctx.params.name);
    return { made: image !== null && (await s.files.thumbnailOf(ctx.params.name, image)) };
  };

  /** Deletes a configuration's screenshots (rows and files) and jobs. */
  const deleteForConfig: Handler<'capture.deleteForConfig'> = async (ctx) => {
    const { accountId, configId } = ctx.params;
    const files = await s.screenshots.filesOfConfig(accountId, configId);
    await s.db.transaction(async (trx) => {
      await s.screenshots.deleteForConfig(accountId, configId, trx);
      await s.queue.deleteForConfig(accountId, configId, trx);
    });
    // Files go after the rows, so no listed screenshot ever points at a missing file.
    await Promise.all(files.map((f) => s.files.remove(f)));
    return { screenshots: files.length };
  };

  const queued: EventHandler<'capture.jobQueued'> = () => void s.worker.pump();

  const researchCreate: Handler<'capture.researchCreate'> = async (ctx) => {
    const { input } = ctx.params;
    const status = await s.research.create({ ...input, id: randomId(12), domains: input.domains.map((d) => ({ ...d, jobId: randomId(12) })) });
    void emit(ctx, 'capture.jobQueued', { jobId: status.job_id });
    return status;
  };

  const notFound = (id: string) => serviceError('not_found', `No domain research job "${id}" in this account.`);

  const researchStatus: Handler<'capture.researchStatus'> = async (ctx) => {
    const status = await s.research.status(ctx.params.accountId, ctx.params.id);
    if (!status) throw notFound(ctx.params.id);
    return status;
  };

  const researchReport: Handler<'capture.researchReport'> = async (ctx) => {
    const part = await s.research.report(ctx.params.accountId, ctx.params.id, ctx.params.from, REPORT_PART_BYTES);
    if (!part) throw notFound(ctx.params.id);
    return part;
  };

  const schema = defineService('capture', {
    database,
    actions: {
      // The broker's timeout is a backstop; the engine enforces the capture's own budget.
      take: { handler: take, timeout: config.capture.timeoutMs + config.capture.queueTimeoutMs + config.ai.timeoutMs + 30_000 },
      abandon: abandon,
      findRecent: (ctx) => s.screenshots.findRecent(ctx.params.accountId, ctx.params.cacheKey, ctx.params.since),
      enqueue: enqueue,
      jobStatus: jobStatus,
      listForConfig: (ctx) => s.screenshots.listForConfig(ctx.params.accountId, ctx.params.configId, ctx.params.paging),
      listForAccount: (ctx) => s.screenshots.listForAccount(ctx.params.accountId, ctx.params.paging),
      latestImage: (ctx) => s.screenshots.latestImage(ctx.params.configId),
      thumbnail: thumbnail,
      // Removes every file of a configuration: may take a while on a large archive.
      deleteForConfig: { handler: deleteForConfig, timeout: 120_000 },
      metrics: () => s.metrics.snapshot(),
      pressure: async () => s.metrics.pressure(),
      researchCreate: researchCreate,
      researchStatus: researchStatus,
      researchList: (ctx) => s.research.list(ctx.params.accountId, ctx.params.paging),
      researchReport: researchReport,
    },
    events: { 'capture.jobQueued': queued },
    created() {
      const db = database.knex;
      const store = deps.store ?? createFileStore(config);
      const files = new CaptureFiles(store);
      const screenshots = new ScreenshotRepository(db, config);
      const queue = new JobQueue(db, config.capture.jobLeaseMs);
      const gw = config.capture.gateway;
      const policy = egressPolicyFor(config);
      // Every account's running and waiting captures over every instance: Redis in the full
      // stack, this process in embedded mode; tickets under the jobs' lease (account-slots.ts).
      const leaseMs = config.capture.jobLeaseMs;
      const slots = config.redisUrl ? new RedisAccountSlots(config.redisUrl, config.redisPrefix, leaseMs) : new MemoryAccountSlots(leaseMs);
      const admission = new Admission({
        slots,
        leaseMs,
        accountOf: (accountId) => call(this.broker, 'billing.account', { accountId }),
        captureSeconds: () => pool.captureSeconds,
        log: this.logger,
      });
      const pool: BrowserPool = new BrowserPool(
        {
          seleniumUrl: config.seleniumUrl,
          chromeBin: config.capture.chromeBin,
          chromedriverBin: config.capture.chromedriverBin,
          extraArgs: config.capture.extraArgs,
          // One gateway per browser slot, beside this capture instance (DESIGN section 5).
          gateway: gw
            ? () =>
                EgressGateway.start({
                  policy,
                  bindHost: gw.bindHost,
                  advertisedHost: gw.advertisedHost,
                  idleTimeoutMs: gw.idleTimeoutMs,
                  connectTimeoutMs: gw.connectTimeoutMs,
                })
            : null,
        },
        { sessions: config.capture.sessions, queueMax: config.capture.queueMax, queueTimeoutMs: config.capture.queueTimeoutMs, keepAliveMs: 20_000 },
        { log: this.logger, launcher: launchSession, gate: admission },
      );
      const metrics = new CaptureMetrics(pool, config.capture, db, this.logger);
      const engineDeps = { pool, policy, blocker: () => blockers.get(), timeoutMs: config.capture.timeoutMs, observer: metrics };
      const engine = new CaptureEngine(engineDeps);
      // Research's captures also read each page (its text and links).
      const readingEngine = new CaptureEngine({ ...engineDeps, runPage: readingCapture });
      const analyst: Analyst = {
        check: (accountId, options) => call(this.broker, 'ai.check', { accountId, options }),
        // The provider call is bounded by AI_TIMEOUT_MS; the broker's timeout is a backstop.
        analyze: (accountId, options, image) => call(this.broker, 'ai.analyze', { accountId, options, image }, { timeout: config.ai.timeoutMs + 15_000 }),
      };
      const broker = this.broker;
      const router: Router = {
        route: (accountId, options) =>
          options.real_location !== undefined || options.custom_proxy_id !== undefined
            ? call(broker, 'proxy.route', {
                accountId,
                ...(options.real_location !== undefined ? { realLocation: options.real_location } : {}),
                ...(options.custom_proxy_id !== undefined ? { customProxyId: options.custom_proxy_id } : {}),
              })
            : Promise.resolve(null),
        checkBandwidth: async (accountId) => {
          // One byte reserved and given back: 402 real_location_bandwidth_exhausted when none is left.
          const held = await call(broker, 'billing.reserveFor', { accountId, amounts: { bandwidth_bytes: 1 }, reservationId: randomId(12) });
          await call(broker, 'billing.refund', { reservation: held });
        },
        chargeBandwidth: async (accountId, bytes) => {
          await call(broker, 'billing.charge', { accountId, amounts: { bandwidth_bytes: bytes } });
        },
      };
      const pipeline = new CapturePipeline({ engine, files, screenshots, queue, analyst, router, observer: metrics, log: this.logger });
      const research = new ResearchRepository(db, config);
      const researchRunner = new ResearchRunner({
        repo: research,
        // A research page is captured as a job: below /snap in the pool's order (its domain's
        // run holds the account's place in its counts).
        engine: { capture: (options: SnapOptions) => readingEngine.capture(options, { turn: turnOf({ cls: 'jobs', ticket: null }) }) },
        store,
        analyst: {
          check: (work) => call(broker, 'ai.check', { accountId: work.accountId, options: { ...work.aiOptions, analyze_image_with_ai: true } }),
          extract: (work, pages) =>
            call(
              broker,
              'ai.research',
              {
                accountId: work.accountId,
                options: { ...work.aiOptions, analyze_image_with_ai: true },
                domain: work.domain,
                notes: work.notes,
                fields: work.structures,
                pages,
              },
              { timeout: config.ai.timeoutMs + 15_000 },
            ),
        },
        delivery: (status) => researchDeliveryBody(status, config.baseUrl),
        ended: (status, accountId) => void emit(broker, 'capture.researchEnded', { accountId, researchId: status.job_id }),
        observer: metrics,
        log: this.logger,
      });
      const worker = new JobWorker(
        { broker: this.broker, queue, pipeline, logger: this.logger, browsers: pool, tickets: admission, research: researchRunner },
        { sessions: config.capture.sessions, leaseMs, researchSessions: config.capture.researchSessions },
      );
      // A capture that ends here may let its account start another: waiting snaps and jobs.
      admission.onFinished(() => {
        pool.wake();
        worker.wake();
      });
      // On a Grid, browsers leave a draining node between captures, so it can stop without cutting one.
      const drainWatch = config.seleniumUrl ? new GridDrainWatch({ seleniumUrl: config.seleniumUrl, pool, log: this.logger }) : null;
      s = { db, store, files, screenshots, queue, pool, admission, metrics, pipeline, worker, research, drainWatch };
    },
    async started() {
      // Filter lists are compiled once per process; doing it now keeps the first no_ads
      // capture from paying for it. A missing list is reported by the capture that needs it.
      void blockers.get().catch(() => undefined);
      await s.pool.start();
      s.drainWatch?.start();
      s.admission.startRenewing();
      s.worker.start();
    },
    async stopped() {
      // Running jobs get the time budget of one capture to finish; what is still running
      // then fails with the browsers and goes back to the queue.
      s.drainWatch?.stop();
      await s.worker.stop(config.capture.timeoutMs);
      await s.pool.stop();
      await s.worker.idle();
      await s.admission.stop();
      await s.store.close();
    },
  });
  const drain = () => {
    s?.worker.stopClaiming();
    s?.pool.drain();
  };
  return { schema, handle: { blockers, drain } };
}
