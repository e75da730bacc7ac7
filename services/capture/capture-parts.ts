/**
 * The capture service's parts, built from its configuration and its collaborators: the
 * account counts (Redis in the full stack, this process embedded), the browser pool with a
 * gateway per browser, the engines, the pipeline, research, the job worker, the Grid
 * drain watch and the ending of gone instances' Grid sessions. The service file starts and
 * stops what this builds.
 */
import type { Knex } from 'knex';
import type { LoggerInstance, ServiceBroker } from 'moleculer';
import type { Config } from '../shared/config';
import { egressPolicyFor } from '../shared/egress';
import { answeringUnavailable } from '../shared/redis';
import type { SnapOptions } from '../shared/screenshot-options';
import type { FileStore } from '../shared/storage';
import { cdnLink } from '../shared/links';
import { VisualAlerts } from '../notifier/public/visual-alerts';
import { BrowserPool } from './browsers/browser-pool';
import { launchSession, sessionOwner } from './browsers/browser-slot';
import { CdpRouter } from './browsers/grid-cdp';
import { CaptureEngine, turnOf } from './browsers/engine';
import { type ClusterView, GoneOwners } from './browsers/gone-owners';
import { GridDrainWatch } from './browsers/grid-drain';
import type { Collaborators } from './collaborators';
import { MemoryAccountSlots, RedisAccountSlots } from './fairness/account-slots';
import { ConcurrencyAdmission } from './fairness/concurrency-admission';
import { CaptureFiles } from './jobs/files';
import { JobQueue } from './jobs/jobs';
import { CaptureMetrics } from './jobs/metrics';
import { CapturePipeline } from './jobs/pipeline';
import { ScreenshotRepository } from './jobs/screenshots';
import { KeptSnapConfigs } from './jobs/snap-configs';
import { SnapDesk } from './jobs/snaps';
import { JobWorker } from './jobs/worker';
import type { BlockerLoader } from './page/blocking';
import { CdpConnection } from './page/cdp';
import { EgressGateway } from './page/gateway';
import { readingCapture } from './page/page-capture';
import { ResearchRunner } from './research/research';
import { ResearchDesk } from './research/research-desk';
import { ResearchRepository, researchDeliveryBody } from './research/research-jobs';

export interface CaptureParts {
  store: FileStore;
  screenshots: ScreenshotRepository;
  pool: BrowserPool;
  admission: ConcurrencyAdmission;
  metrics: CaptureMetrics;
  worker: JobWorker;
  research: ResearchRepository;
  snaps: SnapDesk;
  /** The snap configurations kept (forgotten on 'capture.configDeleted'). */
  snapConfigs: KeptSnapConfigs;
  researchDesk: ResearchDesk;
  drainWatch: GridDrainWatch | null;
  /** On a Grid, ends the sessions of capture instances that are gone (told by the service on '$node.disconnected'). */
  goneOwners: GoneOwners | null;
  /** Visual change steps' comparisons, which run after their capture is recorded. */
  visual: VisualAlerts;
}

export interface PartsInput {
  config: Readonly<Config>;
  db: Knex;
  store: FileStore;
  blockers: BlockerLoader;
  collaborators: Collaborators;
  /** The job worker emits its jobs' events through it. */
  broker: ServiceBroker;
  log: LoggerInstance;
}

export function captureParts({ config, db, store, blockers, collaborators: c, broker, log }: PartsInput): CaptureParts {
  const files = new CaptureFiles(store);
  const screenshots = new ScreenshotRepository(db, config);
  const queue = new JobQueue(db, config.capture.jobLeaseMs);
  const gw = config.capture.gateway;
  const policy = egressPolicyFor(config);
  // Every account's running and waiting captures over every instance: Redis in the full
  // stack, this process in embedded mode; tickets under the jobs' lease (account-slots.ts).
  // While Redis cannot be reached, what needs it answers 503 service_unavailable (shared/redis.ts).
  const leaseMs = config.capture.jobLeaseMs;
  const slots = config.redisUrl
    ? answeringUnavailable(new RedisAccountSlots(config.redisUrl, config.redisPrefix, leaseMs, log))
    : new MemoryAccountSlots(leaseMs);
  const admission = new ConcurrencyAdmission({ slots, leaseMs, accountOf: c.accountOf, captureSeconds: () => pool.captureSeconds, log });
  const pool: BrowserPool = new BrowserPool(
    {
      seleniumUrl: config.seleniumUrl,
      // Each Grid session names this instance, so that the others end it if this one dies (gone-owners.ts).
      owner: sessionOwner(broker.nodeID, broker.instanceID),
      chromeBin: config.capture.chromeBin,
      chromedriverBin: config.capture.chromedriverBin,
      extraArgs: config.capture.extraArgs,
      // Each browser's CDP socket: its own DevTools socket or the Grid's relay (GRID_CDP).
      cdpRouter: new CdpRouter({ seleniumUrl: config.seleniumUrl, gridCdp: config.capture.gridCdp }, { open: (url) => CdpConnection.open(url), log }),
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
    { log, launcher: launchSession, gate: admission },
  );
  const metrics = new CaptureMetrics(pool, config.capture, db, log);
  const engineDeps = { pool, policy, blocker: () => blockers.get(), timeoutMs: config.capture.timeoutMs, observer: metrics };
  const engine = new CaptureEngine(engineDeps);
  // Research's captures also read each page (its text and links).
  const readingEngine = new CaptureEngine({ ...engineDeps, runPage: readingCapture });
  // Visual change steps: compared in this process once their capture is recorded (visual-alerts.ts).
  const visual = new VisualAlerts({
    db,
    store,
    link: (name) => cdnLink(config, name),
    log,
    cacheBytes: config.capture.visualCacheMb * 1024 * 1024,
    announce: c.deliveriesAdded,
  });
  const pipeline = new CapturePipeline({
    engine,
    files,
    screenshots,
    queue,
    analyst: c.analyst,
    router: c.router,
    uploader: c.uploader,
    observer: metrics,
    log,
    visual,
    deliveriesAdded: c.deliveriesAdded,
  });
  const research = new ResearchRepository(db, config);
  const researchRunner = new ResearchRunner({
    repo: research,
    // A research page is captured as a job: below /snap in the pool's order (its domain's
    // run holds the account's place in its counts).
    engine: { capture: (options: SnapOptions) => readingEngine.capture(options, { turn: turnOf({ cls: 'jobs', ticket: null }) }) },
    store,
    analyst: c.researchAnalyst,
    delivery: (status) => researchDeliveryBody(status, config.baseUrl),
    ended: c.researchEnded,
    observer: metrics,
    log,
  });
  const worker = new JobWorker(
    { broker, queue, pipeline, logger: log, browsers: pool, tickets: admission, research: researchRunner },
    { sessions: config.capture.sessions, leaseMs, researchSessions: config.capture.researchSessions },
  );
  // A capture that ends here may let its account start another: waiting snaps and jobs.
  admission.onFinished(() => {
    pool.wake();
    worker.wake();
  });
  // Snap configurations kept for SNAP_CONFIG_CACHE_MS (snap-configs.ts): the capture service forgets one on 'capture.configDeleted'.
  const snapConfigs = new KeptSnapConfigs(c.snapConfigs, config.snapConfigCacheMs);
  const snaps = new SnapDesk({
    db,
    admission,
    queue,
    leaseMs,
    pipeline,
    screenshots,
    files,
    metrics,
    configs: snapConfigs,
    jobQueued: c.jobQueued,
    configDeleted: c.configDeleted,
    releaseJobCredits: c.releaseJobCredits,
  });
  // On a Grid, browsers leave a draining node between captures, so it can stop without cutting one.
  const drainWatch = config.seleniumUrl ? new GridDrainWatch({ seleniumUrl: config.seleniumUrl, pool, log }) : null;
  // On a Grid, the sessions of a capture instance that is gone are ended by the others (gone-owners.ts).
  const goneOwners = config.seleniumUrl
    ? new GoneOwners({
        seleniumUrl: config.seleniumUrl,
        cluster: clusterView(broker),
        graceMs: (broker.options.heartbeatTimeout ?? 10) * 1_000,
        log,
        open: (url, timeoutMs) => CdpConnection.open(url, timeoutMs),
      })
    : null;
  return {
    store,
    screenshots,
    pool,
    admission,
    metrics,
    worker,
    research,
    snaps,
    snapConfigs,
    researchDesk: new ResearchDesk(research, c.jobQueued),
    drainWatch,
    goneOwners,
    visual,
  };
}

/** Moleculer's node catalog, as far as read here (0.14: `broker.registry.nodes`, untyped). */
interface NodeCatalog {
  get(nodeID: string): { available: boolean; instanceID: string | null } | undefined;
  toArray(): Array<{ local: boolean; available: boolean }>;
}

/** The cluster as this broker's registry sees it. */
function clusterView(broker: ServiceBroker): ClusterView {
  const nodes = () => broker.registry.nodes as NodeCatalog;
  return {
    isBack: (nodeID, instanceID) => {
      const node = nodes().get(nodeID);
      return Boolean(node?.available && node.instanceID === instanceID);
    },
    hearsOthers: () =>
      nodes()
        .toArray()
        .some((node) => !node.local && node.available),
  };
}
