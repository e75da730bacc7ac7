/**
 * The job worker: runs queued jobs on this instance's browsers, each under its lease: a
 * configuration's or a scheduled capture through the pipeline, paying with the credit reserved
 * when the job was started; a domain of a domain research job through the research runner
 * (its pages captured on the browsers it asks for, as jobs), paying one research credit.
 *
 * It asks the pool for a browser first, in the pool's fair order (below /snap's captures,
 * with a guaranteed share), and claims a job only once it has one: so a job is claimed by an
 * instance with a browser free for it, in the jobs queue's fair order (JobQueue.claim), and
 * counted in its account's running captures from its claim to its end. It asks on the
 * capture.jobQueued event, after every capture that ends here, and on a poll (jobs left by
 * a dead instance, whose lease ran out; accounts whose captures ended elsewhere). The loop
 * itself (claiming while there is room, the browser asked for before each claim, stopping) is
 * shared/claim-loop.ts.
 *
 * Research is the lowest class of the jobs queue (below scheduled captures, with the queue's
 * starvation guard), and at most `researchSessions` domains run at once on an instance (fewer
 * than its browsers when it has two or more), so however many domains wait, the browsers
 * /snap and configurations need are never all held by research.
 */
import type { LoggerInstance, ServiceBroker } from 'moleculer';
import { type JobKind, type ScreenshotRef, emit } from '../../shared/contracts';
import { billsAiCredits } from '../../ai/public/ai-record';
import { releaseCredits, withCaptureCredits, withCredits } from '../../billing/public/credits';
import { ClaimLoop } from '../../shared/claim-loop';
import { failureOf, isUnavailable } from '../../shared/errors';
import { withOnlyLogContext } from '../../shared/logging';
import type { ConcurrencyLimits, Ticket } from '../fairness/account-slots';
import type { BrowserPool } from '../browsers/browser-pool';
import type { BrowserSlot } from '../browsers/browser-slot';
import { type CaptureTurn, turnOf } from '../browsers/engine';
import { ClassTurns } from '../fairness/fair-queue';
import { CAPTURE_KINDS, type ClaimTurns, type ClaimedJob, JOB_KINDS, type JobQueue, type LeasedJob, retryLater, whileRenewing } from './jobs';
import type { CapturePipeline } from './pipeline';

type CaptureJob = Extract<ClaimedJob, { options: unknown }>;
type ResearchJob = Extract<ClaimedJob, { kind: 'research' }>;

/** How a research domain ended: charged or not; null when its lease was lost (someone else records it). */
export type DomainOutcome = { charged: boolean } | null;

/** What runs a research domain (research/research.ts): the worker leases it, pays for it and hands it over. */
export interface DomainRunner {
  /** Researches the domain and records how it ended; throws only what sends it back to the queue (retryLater). */
  run(job: LeasedJob): Promise<DomainOutcome>;
  /** Records the domain as failed with `code` and `note`. */
  fail(job: LeasedJob, code: string, note: string, pages: [], charged: boolean): Promise<DomainOutcome>;
}

export interface WorkerOptions {
  /** Jobs run at once: the browsers of this instance. */
  sessions: number;
  /** The lease a claim takes; it is renewed every third of it while the job runs. */
  leaseMs: number;
  /** Queued jobs are looked for this often, besides the capture.jobQueued event. */
  pollMs?: number;
  /** A job that keeps killing its workers is failed after this many claims. */
  maxAttempts?: number;
  /** Research domains run at once (RESEARCH_SESSIONS); default 0: this worker takes none. */
  researchSessions?: number;
}

/** What a job's capture counts against: its account's running captures (ConcurrencyAdmission). */
export interface JobTickets {
  limitsFor(accountId: string): Promise<ConcurrencyLimits>;
  start(ticket: Ticket): Promise<boolean>;
  finish(ticket: Ticket): Promise<void>;
  lastStarts(accountIds: string[]): Promise<Map<string, number>>;
}

export interface JobWorkerDeps {
  broker: ServiceBroker;
  queue: JobQueue;
  pipeline: Pick<CapturePipeline, 'run'>;
  logger: Pick<LoggerInstance, 'info' | 'warn' | 'error'>;
  /** The browsers a claim waits for. */
  browsers: Pick<BrowserPool, 'acquire' | 'giveBack'>;
  /** The accounts' limits a claim respects. */
  tickets: JobTickets;
  /** Runs research domains; without it they are not claimed here. */
  research?: DomainRunner | null;
}

export class JobWorker {
  /** Asks the pool for a browser, claims a job with it, runs it; one claim at a time. */
  private readonly loop: ClaimLoop<ClaimedJob, BrowserSlot>;
  /** The last claim found a job: worth asking again when a capture ends here. */
  private jobsLeft = true;
  /** Research domains running here. */
  private researching = 0;
  private readonly maxAttempts: number;
  private readonly turns: ClaimTurns;

  private readonly broker: ServiceBroker;
  private readonly queue: JobQueue;
  private readonly pipeline: Pick<CapturePipeline, 'run'>;
  private readonly logger: Pick<LoggerInstance, 'info' | 'warn' | 'error'>;
  private readonly browsers: Pick<BrowserPool, 'acquire' | 'giveBack'>;
  private readonly tickets: JobTickets;
  private readonly research: DomainRunner | null;
  /** Fails the snaps' jobs whose lease ran out, every lease. */
  private snapSweep: NodeJS.Timeout | null = null;

  constructor(
    deps: JobWorkerDeps,
    private readonly options: WorkerOptions,
  ) {
    this.broker = deps.broker;
    this.queue = deps.queue;
    this.pipeline = deps.pipeline;
    this.logger = deps.logger;
    this.browsers = deps.browsers;
    this.tickets = deps.tickets;
    this.research = deps.research ?? null;
    const { tickets, browsers, logger } = deps;
    this.maxAttempts = options.maxAttempts ?? 3;
    this.turns = {
      kinds: new ClassTurns<JobKind>(JOB_KINDS),
      lastStarts: (accountIds) => tickets.lastStarts(accountIds),
      starter: async (accountId) => {
        try {
          const limits = await tickets.limitsFor(accountId);
          return (id) => tickets.start({ id, accountId, limits });
        } catch (err) {
          // Its jobs wait (the next claim asks again); the other accounts' go on.
          this.logger.warn(`the limits of account ${accountId} could not be read (${(err as Error).message}); its jobs wait`);
          return async () => false;
        }
      },
      // Only the id and account count here.
      undo: (job) => tickets.finish({ ...job, limits: { maxConcurrent: 0, maxQueued: 0 } }),
    };
    this.loop = new ClaimLoop<ClaimedJob, BrowserSlot>(
      { claim: () => this.claim(), run: (job, slot) => this.runClaimed(job, slot) },
      {
        concurrency: options.sessions,
        pollMs: options.pollMs ?? 2_000,
        // Asked as the jobs class, with no account yet: the claim picks the job.
        before: { acquire: () => browsers.acquire({ cls: 'jobs', ticket: null }), giveBack: (slot) => browsers.giveBack(slot) },
        log: logger,
        what: 'a job',
      },
    );
  }

  private get stopping(): boolean {
    return this.loop.stopping;
  }

  /**
   * Picks up jobs left queued (or orphaned by a dead instance) now and on every poll; fails the
   * snaps' jobs left running by a process that stopped mid-capture now and every lease.
   */
  start(): void {
    this.loop.start();
    void this.failLapsedSnaps();
    this.snapSweep = setInterval(() => void this.failLapsedSnaps(), this.options.leaseMs);
    this.snapSweep.unref();
  }

  private async failLapsedSnaps(): Promise<void> {
    try {
      const failed = await this.queue.failLapsedSnaps();
      if (failed > 0) this.logger.warn(`failed ${failed} snap job(s) left running by a process that stopped mid-capture (their lease ran out)`);
    } catch (err) {
      if (!this.stopping)
        this.logger.warn(`failing the snap jobs whose lease ran out failed (tried again in ${this.options.leaseMs} ms): ${(err as Error).message}`);
    }
  }

  /**
   * Stops claiming and waits up to `graceMs` for the running jobs. What still runs then is
   * left to fail with the browsers (the caller stops the pool) and goes back to the queue;
   * `idle()` waits for that.
   */
  async stop(graceMs: number): Promise<void> {
    if (this.snapSweep) clearInterval(this.snapSweep);
    this.snapSweep = null;
    await this.loop.stop(graceMs);
  }

  /** Claims no more jobs (shutdown has begun); the running ones go on. */
  stopClaiming(): void {
    this.loop.stopClaiming();
  }

  /** Waits for the claim under way and the running jobs. */
  async idle(): Promise<void> {
    await this.loop.idle();
  }

  /**
   * Asks the pool for a browser, then claims the next job for it (none: the browser goes back);
   * again while jobs come, up to one per browser of this instance. Resolves once claimed.
   */
  pump(): Promise<void> {
    return this.loop.pump();
  }

  /** The next job in the queue's fair order; research domains only while fewer than researchSessions run here. */
  private async claim(): Promise<ClaimedJob | null> {
    const researchRoom = this.research !== null && this.researching < (this.options.researchSessions ?? 0);
    const job = await this.queue.claim(this.turns, researchRoom ? JOB_KINDS : CAPTURE_KINDS);
    this.jobsLeft = job !== null;
    if (job?.kind === 'research') this.researching++;
    return job;
  }

  /** Runs a job claimed with `slot`: a capture on it; a research domain asks for a browser for each of its pages, so this one goes back now. */
  private async runClaimed(job: ClaimedJob, slot: BrowserSlot): Promise<void> {
    if (job.kind !== 'research') return this.run(job, slot);
    this.browsers.giveBack(slot);
    try {
      await this.run(job);
    } finally {
      this.researching--;
    }
  }

  /**
   * A capture ended here, so its account may start another: asks again, unless the last claim
   * found nothing (then the next capture.jobQueued event or poll does; a job held back by its
   * account's limit waits at most one poll longer).
   */
  wake(): void {
    if (this.jobsLeft) void this.pump();
  }

  /**
   * Runs one claimed job on the browser it was claimed with: the credits are reserved again
   * under the job's id (idempotent, so a job taken over after a crash is charged once),
   * committed when this worker recorded the screenshot (the AI credit only when its analysis
   * ran), refunded when it recorded the failure, left to the new holder when the lease
   * was lost, and released when the job is given up without running (interrupted too often).
   */
  async run(job: ClaimedJob, slot: BrowserSlot | null = null): Promise<void> {
    // Only the job's id: a pump started beneath a request (capture.jobQueued) may claim another request's job.
    return withOnlyLogContext({ job_id: job.id }, async () => {
      await whileRenewing(this.queue, job, this.options.leaseMs, () => (job.kind === 'research' ? this.runResearch(job) : this.runJob(job, slot)));
    });
  }

  private async runJob(job: CaptureJob, slot: BrowserSlot | null): Promise<void> {
    const credit = { accountId: job.accountId, amounts: { screenshots: 1 }, reservationId: `job:${job.id}` };
    const billAi = billsAiCredits(job.options);
    // Counted as running since its claim, under the job's id. Its plan's limits were read for
    // the claim and are cached; they matter no more (a running ticket starts again whatever
    // they say), so a failed read costs nothing.
    const ticket: Ticket = {
      id: job.id,
      accountId: job.accountId,
      limits: await this.tickets.limitsFor(job.accountId).catch(() => ({ maxConcurrent: 1, maxQueued: 0 })),
    };
    const turn: CaptureTurn = turnOf({ cls: 'jobs', ticket }, slot);
    // Its wait in the queue, on its first attempt (a job taken over has run before).
    if (job.attempts === 1) turn.waitedMs = Math.max(0, Date.now() - job.createdAtMs);
    try {
      if (job.attempts > this.maxAttempts) {
        this.logger.warn(`job ${job.id} was interrupted ${this.maxAttempts} times; it is given up`);
        await this.queue.fail(job, 'internal_error', `The capture was interrupted ${this.maxAttempts} times and was given up.`);
        // Never run: its credits (reserved when it was started, or by an earlier run) are released, none reserved to do it.
        await releaseCredits(this.broker, job.accountId, credit.reservationId, billAi);
        return;
      }
      const ref: ScreenshotRef | null = await withCaptureCredits(this.broker, credit, billAi, () => this.pipeline.run(job, job.options, turn), {
        settle: (stored) => (stored ? 'commit' : 'hold'),
        analysed: (stored) => stored?.ai?.ai_analyzed === true,
        onFailure: async (err) => ((await this.recordFailure(job, err)) || (await this.deleted(job)) ? 'refund' : 'hold'),
      });
      if (ref) void emit(this.broker, 'capture.completed', { accountId: job.accountId, configId: job.configId, jobId: job.id, screenshotId: ref.id });
      // The lease was lost: to the new holder, or to the job's deletion with its configuration, which nothing else settles.
      else if (await this.deleted(job)) await releaseCredits(this.broker, job.accountId, credit.reservationId, billAi);
    } catch {
      // Recorded by recordFailure (or, for a failed commit, the job is complete anyway).
    } finally {
      // A browser the capture never took (it failed before: credits, route, checks) goes back.
      if (turn.slot) this.browsers.giveBack(turn.slot);
      await this.tickets.finish(ticket);
    }
  }

  /**
   * One research domain, counted as running in its account's counts from its claim to its
   * end, and paid with one research credit reserved under the job's id (so a domain taken over
   * after a crash is charged once): committed or refunded as the runner says (research.ts),
   * left pending when the lease was lost or the domain went back to the queue, released when
   * it is given up without running. A month without research credit left fails the domain
   * (domain_research_limit_reached).
   */
  private async runResearch(job: ResearchJob): Promise<void> {
    const research = this.research;
    if (!research) return;
    const ticket: Ticket = { id: job.id, accountId: job.accountId, limits: { maxConcurrent: 0, maxQueued: 0 } };
    const credit = { accountId: job.accountId, amounts: { research_domains: 1 }, reservationId: `research:${job.id}` };
    try {
      if (job.attempts > this.maxAttempts) {
        this.logger.warn(`research domain ${job.id} was interrupted ${this.maxAttempts} times; it is given up`);
        await research.fail(job, 'internal_error', `The domain's research was interrupted ${this.maxAttempts} times and was given up.`, [], false);
        await releaseCredits(this.broker, job.accountId, credit.reservationId);
        return;
      }
      await withCredits(this.broker, credit, () => research.run(job), {
        settle: (outcome) => (outcome === null ? 'hold' : outcome.charged ? 'commit' : 'refund'),
        onFailure: async (err) => {
          if (this.stopping || retryLater(err)) {
            await this.queue.release(job).catch(() => undefined);
            return 'hold';
          }
          // The credit could not be reserved (the month's research credits are used up), or
          // recording failed: the domain fails with what happened.
          const failure = failureOf(err);
          if (!failure.known) this.logger.error(`research domain ${job.id} failed`, err);
          await research.fail(job, failure.code, failure.note, [], false).catch(() => null);
          return 'refund';
        },
      });
    } catch {
      // Recorded above.
    } finally {
      await this.tickets.finish(ticket);
    }
  }

  /**
   * True when the job is gone (its configuration was deleted while it ran): its credit, which
   * the deletion gave back before this run may have reserved it again, is this run's to give
   * back. False when that cannot be read (the credit stays pending).
   */
  private async deleted(job: CaptureJob): Promise<boolean> {
    return (await this.queue.find(job.accountId, job.id).catch(() => null)) === undefined;
  }

  /** True when this worker recorded the failure (it still held the lease). */
  private async recordFailure(job: CaptureJob, err: unknown): Promise<boolean> {
    // Shutting down, a service it needs did not answer (its node died, NATS restarted), or no
    // browser came free in time (a Grid node lost): not the job's fault. It goes back to the
    // queue, for another instance or a later try (at most maxAttempts claims in all), with
    // its credit still pending (reserved again under the same id, so charged once).
    const type = (err as { type?: unknown } | null)?.type;
    const unavailable = isUnavailable(err) || type === 'capacity_exhausted' || type === 'concurrency_limit_reached';
    if (this.stopping || unavailable) {
      if (unavailable) this.logger.warn(`job ${job.id}: ${(err as Error).message}; it goes back to the queue`);
      await this.queue.release(job).catch(() => undefined);
      return false;
    }
    const failure = failureOf(err);
    if (!failure.known) this.logger.error(`job ${job.id} failed`, err);
    else this.logger.info({ error_code: failure.code }, `job ${job.id} failed: ${failure.note}`);
    return this.queue.fail(job, failure.code, failure.note).catch(() => false);
  }
}
