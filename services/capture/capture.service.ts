/**
 * capture: owns jobs and screenshots. Drives the browsers (Selenium Grid, or a local
 * ChromeDriver in embedded mode), writes images, thumbnails and HTML to storage, and
 * records each capture. Only small records cross the transporter; files stay in storage.
 * Also owns domain research (research_jobs, research_domains): each domain is a job, run
 * after interactive work (docs/decisions/2026-11-28-research-stays-in-capture.md).
 *
 * Wiring only. The work is in rooms, each with a README saying what it owns and may import:
 * page/ (one page in one browser tab), browsers/ (the pool, its slots and the engine),
 * fairness/ (accounts' counts and the fair order), jobs/ (the queue, the worker, the
 * pipeline, the screenshots) and research/. Calls to other services are in
 * collaborators.ts, the parts built in capture-parts.ts.
 */
import type { Config } from '../shared/config';
import { defineService, ServiceDatabase } from '../shared/define-service';
import type { ServiceUnit } from '../shared/service-unit';
import { type FileStore, createFileStore } from '../shared/storage';
import { type CaptureParts, captureParts } from './capture-parts';
import { collaboratorsOf } from './collaborators';
import { takeTimeoutMs } from './public/snap-timing';
import { BlockerLoader } from './page/blocking';

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
  /** Resolves when every visual change comparison started so far has finished (visual-alerts.ts). */
  visualIdle(): Promise<void>;
}

export interface CaptureDeps {
  config: Readonly<Config>;
  /** Injected for tests; defaults to createFileStore(config). */
  store?: FileStore;
}

export function captureService(deps: CaptureDeps): ServiceUnit<CaptureHandle> {
  const { config } = deps;
  const database = new ServiceDatabase(config.database);
  const blockers = new BlockerLoader();
  let s: CaptureParts;
  // Moleculer's own event, on this broker's local bus: a node left or stopped answering. Its Grid sessions, if any, are ended.
  const nodeGone = ({ node }: { node: { id: string; instanceID: string | null } }) => s.goneOwners?.nodeLeft(node.id, node.instanceID);

  const schema = defineService('capture', {
    database,
    actions: {
      // The broker's timeout is a backstop; the engine enforces the capture's own budget.
      take: { handler: (ctx) => s.snaps.take(ctx.params), timeout: takeTimeoutMs(config) },
      abandon: async (ctx) => {
        await s.snaps.abandon(ctx.params.accountId, ctx.params.jobId, ctx.params.errorCode, ctx.params.note);
        return { ok: true as const };
      },
      findRecent: (ctx) => s.screenshots.findRecent(ctx.params.accountId, ctx.params.cacheKey, ctx.params.since),
      enqueue: (ctx) => {
        const { accountId, configId, jobId, kind, options } = ctx.params;
        return s.snaps.enqueue({ id: jobId, accountId, configId, kind, options });
      },
      jobStatus: (ctx) => s.snaps.jobStatus(ctx.params.accountId, ctx.params.jobId),
      listForConfig: (ctx) => s.screenshots.listForConfig(ctx.params.accountId, ctx.params.configId, ctx.params.paging),
      listForAccount: (ctx) => s.screenshots.listForAccount(ctx.params.accountId, ctx.params.paging),
      dailyCounts: (ctx) => s.screenshots.dailyCounts(ctx.params.accountId, ctx.params.fromMs, ctx.params.toMs),
      latestImage: (ctx) => s.screenshots.latestImage(ctx.params.configId),
      thumbnail: (ctx) => s.snaps.thumbnail(ctx.params.name),
      // Removes every file of a configuration: may take a while on a large archive.
      deleteForConfig: { handler: (ctx) => s.snaps.deleteForConfig(ctx.params.accountId, ctx.params.configId), timeout: 120_000 },
      metrics: () => s.metrics.snapshot(),
      pressure: async () => s.metrics.pressure(),
      accountSlots: (ctx) => s.admission.accountsNow(ctx.params.accountIds),
      researchCreate: (ctx) => s.researchDesk.create(ctx.params.input),
      researchStatus: (ctx) => s.researchDesk.status(ctx.params.accountId, ctx.params.id),
      researchList: (ctx) => s.research.list(ctx.params.accountId, ctx.params.paging),
      researchReport: (ctx) => s.researchDesk.report(ctx.params.accountId, ctx.params.id, ctx.params.from),
    },
    events: {
      'capture.jobQueued': () => void s.worker.pump(),
      // Another instance deletes a configuration's archive (or this one, heard again): its snaps are not recorded under it any more.
      'capture.configDeleted': (ctx) => s.snapConfigs.forget(ctx.params.configId),
    },
    created() {
      const collaborators = collaboratorsOf(this.broker, config);
      const store = deps.store ?? createFileStore(config);
      s = captureParts({ config, db: database.knex, store, blockers, collaborators, broker: this.broker, log: this.logger });
    },
    async started() {
      // Filter lists are compiled once per process; doing it now keeps the first no_ads
      // capture from paying for it. A missing list is reported by the capture that needs it.
      void blockers.get().catch(() => undefined);
      await s.pool.start();
      s.drainWatch?.start();
      if (s.goneOwners) this.broker.localBus.on('$node.disconnected', nodeGone);
      s.admission.startRenewing();
      s.worker.start();
      // Visual change comparisons owed by captures whose process died before it compared them.
      s.visual.resume();
    },
    async stopped() {
      s.drainWatch?.stop();
      // No more sweeps of gone instances' sessions; one under way finishes beside the rest.
      this.broker.localBus.off('$node.disconnected', nodeGone);
      const sweepsDone = s.goneOwners?.stop();
      // Running jobs get the time budget of one capture to finish; what is still running
      // then fails with the browsers and goes back to the queue.
      await s.worker.stop(config.capture.timeoutMs);
      await s.pool.stop();
      await s.worker.idle();
      await sweepsDone;
      // Visual change comparisons of recorded captures finish before the store closes.
      await s.visual.stopResuming();
      await s.visual.idle();
      await s.admission.stop();
      await s.store.close();
    },
  });
  const drain = () => {
    s?.worker.stopClaiming();
    s?.pool.drain();
  };
  // visualIdle: every visual change comparison started so far, finished (tests wait for it).
  return { schema, handle: { blockers, drain, visualIdle: () => s.visual.idle() } };
}
