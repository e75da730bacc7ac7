/**
 * What a capture instance counts, for GET /metrics (summed over the instances by the api,
 * shared/metrics.ts): captures by outcome and error code and how long they took, the
 * browsers and the wait queue of this instance, the egress gateway's bytes, and the jobs
 * table's live jobs (read at scrape time; every instance reads the same rows, so those
 * gauges are taken from one instance, not summed).
 */
import type { Knex } from 'knex';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { JobKind, NodePressure } from '../../shared/contracts';
import { METRIC_PREFIX as P, type MetricsSnapshot } from '../../shared/metrics';
import type { BrowserFailureKind, BrowserFailureObserver } from '../browsers/engine';

/** What a capture's outcome is counted as: recorded, failed (with its error code), or superseded (its lease was lost and another instance's result counts). */
export type CaptureOutcome = 'success' | 'failure' | 'superseded';
/** How a capture's traffic left: straight out, through a real location, or through the account's own proxy. */
export type EgressRoute = 'direct' | 'real_location' | 'custom_proxy';

/** What the pipeline tells about each capture (CapturePipeline's observer). */
export interface CaptureObserver {
  captured(kind: JobKind | 'snap', outcome: CaptureOutcome, errorCode: string | null, seconds: number): void;
  /** A capture that asked for a browser: how long it waited for one, and how long it held it (null: it got none). */
  timed(kind: JobKind | 'snap', waitedSeconds: number, heldSeconds: number | null): void;
  egressBytes(route: EgressRoute, bytes: number): void;
}

const JOB_STATES = ['queued', 'running'] as const;
/** /pressure's recently_rejected counts the refusals of this last stretch. */
const REJECTED_WINDOW_MS = 60_000;
const JOB_KINDS = ['snap', 'config', 'scheduled', 'research'] as const;

export class CaptureMetrics implements CaptureObserver, BrowserFailureObserver {
  readonly registry = new Registry();
  private readonly captures: Counter<'kind' | 'outcome' | 'error_code'>;
  private readonly duration: Histogram<'outcome'>;
  private readonly queueWait: Histogram<'kind'>;
  private readonly browserTime: Histogram<'kind'>;
  private readonly egress: Counter<'route'>;
  private readonly browserFailures: Counter<'kind' | 'retried'>;
  /** When captures were refused for capacity, oldest first (within REJECTED_WINDOW_MS). */
  private readonly rejections: number[] = [];

  constructor(
    private readonly pool: {
      readonly stats: { sessions: number; busy: number; queued: number };
      readonly directSessions?: number;
      readonly waitingForBrowser?: number;
    },
    private readonly limits: { sessions: number; queueMax: number },
    db: Knex,
    log: { warn(...a: unknown[]): void },
  ) {
    const registers = [this.registry];
    this.captures = new Counter({
      name: `${P}captures_total`,
      help:
        'Captures finished, by kind (snap, config, scheduled, research: a page read for domain research), outcome (success, failure, superseded) and ' +
        'error_code (failures only).',
      labelNames: ['kind', 'outcome', 'error_code'],
      registers,
    });
    this.duration = new Histogram({
      name: `${P}capture_duration_seconds`,
      help: 'Time of one capture from the pipeline taking it to its screenshot recorded (or its failure), waiting for a browser included.',
      labelNames: ['outcome'],
      buckets: [0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 45, 60, 90],
      registers,
    });
    // Per priority class (the kind: snap, then config, then scheduled; fair-queue.ts).
    this.queueWait = new Histogram({
      name: `${P}capture_queue_wait_seconds`,
      help: 'Time a capture waited for a browser, by kind (the priority class): a snap from its request, a job from being queued (first attempts).',
      labelNames: ['kind'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 900, 3600],
      registers,
    });
    this.browserTime = new Histogram({
      name: `${P}capture_browser_seconds`,
      help: 'Time a capture held its browser (from the browser starting it to the browser given back; what CAPTURE_TIMEOUT_MS bounds), by kind.',
      labelNames: ['kind'],
      buckets: [0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 13, 20, 30, 45, 60, 90],
      registers,
    });
    this.egress = new Counter({
      name: `${P}egress_gateway_bytes_total`,
      help: 'Bytes captures sent to and received from their targets through the egress gateways, by route (direct, real_location, custom_proxy).',
      labelNames: ['route'],
      registers,
    });
    this.browserFailures = new Counter({
      name: `${P}browser_failures_total`,
      help:
        "Failures of the browser under a capture, not the page's doing, by kind (browser_lost: the browser died; screenshot_failed: its screenshot " +
        "call failed; target_closed: the page's tab went away) and retried (true: the capture was taken again on a fresh context; false: answered " +
        'browser_failed or page_crashed).',
      labelNames: ['kind', 'retried'],
      registers,
    });
    const stats = () => this.pool.stats;
    const waitingForBrowser = () => this.pool.waitingForBrowser ?? this.pool.stats.queued;
    const directSessions = () => this.pool.directSessions ?? 0;
    new Gauge({
      name: `${P}capture_queue_depth`,
      help: "Captures waiting for a free browser (not those their own account's plan held back when a browser was free for them in the last 2 s: another browser would not start them).",
      registers,
      collect() {
        this.set(waitingForBrowser());
      },
    });
    new Gauge({ name: `${P}capture_queue_max`, help: 'Captures that may wait for a browser (CAPTURE_QUEUE_MAX, summed).', registers }).set(limits.queueMax);
    new Gauge({
      name: `${P}browser_slots`,
      help: 'Browser sessions alive (busy or idle).',
      registers,
      collect() {
        this.set(stats().sessions);
      },
    });
    new Gauge({
      name: `${P}browser_slots_busy`,
      help: 'Browser sessions running a capture.',
      registers,
      collect() {
        this.set(stats().busy);
      },
    });
    new Gauge({
      name: `${P}browser_slots_cdp`,
      help:
        "Browser sessions by the route of their CDP socket: direct (the browser's own DevTools socket; GRID_CDP=direct, embedded mode) or relay " +
        "(the Grid's se:cdp, through the hub and node JVMs).",
      labelNames: ['route'],
      registers,
      collect() {
        const { sessions } = stats();
        const direct = directSessions();
        this.set({ route: 'direct' }, direct);
        this.set({ route: 'relay' }, sessions - direct);
      },
    });
    new Gauge({
      name: `${P}browser_slots_configured`,
      help: 'Browser sessions the capture instances are configured to keep (CAPTURE_SESSIONS, summed).',
      registers,
    }).set(limits.sessions);
    // Read from the shared jobs table: the same on every instance, so taken once.
    new Gauge({
      name: `${P}jobs`,
      help:
        'Jobs not finished, by state (queued, running) and kind (snap, config, scheduled, research: a domain of a domain research job), read from the ' +
        'jobs table.',
      labelNames: ['state', 'kind'],
      aggregator: 'first',
      registers,
      async collect() {
        try {
          const rows = (await db('jobs').whereIn('status', JOB_STATES).select('status', 'kind').count({ n: '*' }).groupBy('status', 'kind')) as Array<{
            status: string;
            kind: string;
            n: number | string;
          }>;
          for (const state of JOB_STATES) for (const kind of JOB_KINDS) this.set({ state, kind }, 0);
          for (const r of rows) this.set({ state: r.status, kind: r.kind }, Number(r.n));
        } catch (err) {
          this.reset();
          log.warn(`metrics: the jobs table could not be read: ${(err as Error).message}`);
        }
      },
    });
    new Gauge({
      name: `${P}jobs_oldest_queued_age_seconds`,
      help: 'Age of the oldest queued job (0 when none is queued): how far the workers are behind.',
      aggregator: 'first',
      registers,
      async collect() {
        try {
          const row = (await db('jobs').where('status', 'queued').min({ at: 'created_at_ms' }).first()) as { at: number | string | null } | undefined;
          this.set(row?.at == null ? 0 : Math.max(0, (Date.now() - Number(row.at)) / 1000));
        } catch (err) {
          this.reset();
          log.warn(`metrics: the jobs table could not be read: ${(err as Error).message}`);
        }
      },
    });
  }

  captured(kind: JobKind | 'snap', outcome: CaptureOutcome, errorCode: string | null, seconds: number): void {
    this.captures.inc(errorCode ? { kind, outcome, error_code: errorCode } : { kind, outcome });
    this.duration.observe({ outcome }, seconds);
    if (errorCode === 'capacity_exhausted') {
      this.rejections.push(Date.now());
      this.forgetOldRejections();
    }
  }

  /** A capture refused before it could wait for a browser (its account's limits): counted as a failure, with no duration. */
  refused(kind: JobKind | 'snap', errorCode: string): void {
    this.captures.inc({ kind, outcome: 'failure', error_code: errorCode });
  }

  timed(kind: JobKind | 'snap', waitedSeconds: number, heldSeconds: number | null): void {
    this.queueWait.observe({ kind }, waitedSeconds);
    if (heldSeconds !== null) this.browserTime.observe({ kind }, heldSeconds);
  }

  private forgetOldRejections(): void {
    const since = Date.now() - REJECTED_WINDOW_MS;
    while (this.rejections.length && (this.rejections[0] as number) < since) this.rejections.shift();
  }

  browserFailed(kind: BrowserFailureKind, retried: boolean): void {
    this.browserFailures.inc({ kind, retried: String(retried) });
  }

  egressBytes(route: EgressRoute, bytes: number): void {
    if (bytes > 0) this.egress.inc({ route }, bytes);
  }

  snapshot(): Promise<MetricsSnapshot> {
    return this.registry.getMetricsAsJSON();
  }

  pressure(): NodePressure {
    const { sessions, busy, queued } = this.pool.stats;
    this.forgetOldRejections();
    return {
      running: busy,
      queued,
      slots: sessions,
      slots_configured: this.limits.sessions,
      queue_max: this.limits.queueMax,
      recently_rejected: this.rejections.length,
    };
  }
}
