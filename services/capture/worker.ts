/**
 * The job worker: claims queued jobs (configurations' and scheduled captures, and domains of
 * domain research jobs) while this instance has free browsers, and runs each under its
 * lease: a capture through the pipeline, paying with the credit reserved when the job was
 * started; a research domain through the research runner, paying one research credit.
 *
 * Research comes after interactive work. Captures are claimed first, and research domains
 * when no capture waits, at most `researchSessions` at once on an instance (fewer than its
 * browsers when it has two or more), so the browsers /snap and configurations need are never
 * all held by research, however many domains wait. So that a steady stream of captures cannot
 * starve research either, after RESEARCH_TURN captures in a row claimed while a research
 * slot was free, the next claim looks for a research domain first.
 *
 * Claiming happens on the capture.jobQueued event, after every finished job, and on a
 * poll (jobs left by a dead instance, whose lease ran out). One claimer at a time.
 */
import type { LoggerInstance, ServiceBroker } from 'moleculer';
import { type JobKind, type ScreenshotRef, emit } from '../shared/contracts';
import { billsAiCredits } from '../shared/ai-record';
import { withCaptureCredits, withCredits } from '../shared/credits';
import { failureOf, isUnavailable } from '../shared/errors';
import { withOnlyLogContext } from '../shared/logging';
import { CAPTURE_KINDS, type ClaimedJob, type JobQueue, RESEARCH_KINDS } from './jobs';
import type { CapturePipeline } from './pipeline';
import { type ResearchRunner, retryLater } from './research';

/** Captures claimed in a row, while research could have run, before research is looked for first. */
export const RESEARCH_TURN = 3;

type CaptureJob = Extract<ClaimedJob, { options: unknown }>;
type ResearchJob = Extract<ClaimedJob, { kind: 'research' }>;

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

export class JobWorker {
  private readonly inFlight = new Set<Promise<void>>();
  private poller: NodeJS.Timeout | null = null;
  private claiming = false;
  private stopping = false;
  private readonly pollMs: number;
  private readonly maxAttempts: number;
  /** Research domains running here. */
  private researching = 0;
  /** Captures claimed in a row while a research slot was free. */
  private capturesInARow = 0;

  constructor(
    private readonly broker: ServiceBroker,
    private readonly queue: JobQueue,
    private readonly pipeline: Pick<CapturePipeline, 'run'>,
    private readonly logger: Pick<LoggerInstance, 'info' | 'warn' | 'error'>,
    private readonly options: WorkerOptions,
    private readonly research: Pick<ResearchRunner, 'run' | 'fail'> | null = null,
  ) {
    this.pollMs = options.pollMs ?? 2_000;
    this.maxAttempts = options.maxAttempts ?? 3;
  }

  /** Picks up jobs left queued (or orphaned by a dead instance) now and on every poll. */
  start(): void {
    this.poller = setInterval(() => void this.pump(), this.pollMs);
    void this.pump();
  }

  /**
   * Stops claiming and waits up to `graceMs` for the running jobs. What still runs then is
   * left to fail with the browsers (the caller stops the pool) and goes back to the queue;
   * `idle()` waits for that.
   */
  async stop(graceMs: number): Promise<void> {
    this.stopClaiming();
    await Promise.race([this.idle(), new Promise((r) => setTimeout(r, graceMs).unref())]);
  }

  /** Claims no more jobs (shutdown has begun); the running ones go on. */
  stopClaiming(): void {
    this.stopping = true;
    if (this.poller) clearInterval(this.poller);
  }

  async idle(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  /** Claims queued jobs while this instance has free browsers. */
  async pump(): Promise<void> {
    if (this.claiming || this.stopping) return;
    this.claiming = true;
    try {
      while (!this.stopping && this.inFlight.size < this.options.sessions) {
        const job = await this.next();
        if (!job) break;
        const run: Promise<void> = this.run(job).finally(() => {
          if (job.kind === 'research') this.researching--;
          this.inFlight.delete(run);
          void this.pump();
        });
        this.inFlight.add(run);
      }
    } catch (err) {
      this.logger.warn(`claiming a job failed: ${(err as Error).message}`);
    } finally {
      this.claiming = false;
    }
  }

  /** The next job to run here: captures first, research when a slot is free for it and its turn came (see the header). */
  private async next(): Promise<ClaimedJob | null> {
    const researchRoom = this.research !== null && this.researching < (this.options.researchSessions ?? 0);
    const researchFirst = researchRoom && this.capturesInARow >= RESEARCH_TURN;
    const order: Array<readonly JobKind[]> = !researchRoom ? [CAPTURE_KINDS] : researchFirst ? [RESEARCH_KINDS, CAPTURE_KINDS] : [CAPTURE_KINDS, RESEARCH_KINDS];
    for (const kinds of order) {
      const job = await this.queue.claim(kinds);
      if (job?.kind === 'research') {
        this.researching++;
        this.capturesInARow = 0;
        return job;
      }
      if (job) {
        if (researchRoom) this.capturesInARow++;
        return job;
      }
      // No research waited when its turn came: the count starts again.
      if (kinds === RESEARCH_KINDS) this.capturesInARow = 0;
    }
    return null;
  }

  /**
   * Runs one claimed job: the credits are reserved again under the job's id (idempotent, so
   * a job taken over after a crash is charged once), committed when this worker recorded
   * the screenshot (the AI credit only when its analysis ran), refunded when it recorded the
   * failure, and left to the new holder when the lease was lost.
   */
  async run(job: ClaimedJob): Promise<void> {
    // Only the job's id: a pump started beneath a request (capture.jobQueued) may claim another request's job.
    return withOnlyLogContext({ job_id: job.id }, async () => {
      const renew = setInterval(() => void this.queue.renew(job).catch(() => undefined), Math.max(500, Math.floor(this.options.leaseMs / 3)));
      try {
        await (job.kind === 'research' ? this.runResearch(job) : this.runJob(job));
      } finally {
        clearInterval(renew);
      }
    });
  }

  private async runJob(job: CaptureJob): Promise<void> {
    const credit = { accountId: job.accountId, amounts: { screenshots: 1 }, reservationId: `job:${job.id}` };
    const billAi = billsAiCredits(job.options);
    try {
      if (job.attempts > this.maxAttempts) {
        this.logger.warn(`job ${job.id} was interrupted ${this.maxAttempts} times; it is given up`);
        await this.queue.fail(job, 'internal_error', `The capture was interrupted ${this.maxAttempts} times and was given up.`);
        await withCaptureCredits(this.broker, credit, billAi, async () => undefined, { settle: () => 'refund', analysed: () => false }).catch(() => undefined);
        return;
      }
      const ref: ScreenshotRef | null = await withCaptureCredits(this.broker, credit, billAi, () => this.pipeline.run(job, job.options), {
        settle: (stored) => (stored ? 'commit' : 'hold'),
        analysed: (stored) => stored?.ai?.ai_analyzed === true,
        onFailure: async (err) => ((await this.recordFailure(job, err)) ? 'refund' : 'hold'),
      });
      if (ref) void emit(this.broker, 'capture.completed', { accountId: job.accountId, configId: job.configId, jobId: job.id, screenshotId: ref.id });
    } catch {
      // Recorded by recordFailure (or, for a failed commit, the job is complete anyway).
    }
  }

  /**
   * One research domain, paid with one research credit reserved under the job's id (so a
   * domain taken over after a crash is charged once): committed or refunded as the runner
   * says (research.ts), left pending when the lease was lost or the domain went back to the
   * queue. A month without research credit left fails the domain (domain_research_limit_reached).
   */
  private async runResearch(job: ResearchJob): Promise<void> {
    const research = this.research;
    if (!research) return;
    const credit = { accountId: job.accountId, amounts: { research_domains: 1 }, reservationId: `research:${job.id}` };
    try {
      if (job.attempts > this.maxAttempts) {
        this.logger.warn(`research domain ${job.id} was interrupted ${this.maxAttempts} times; it is given up`);
        await research.fail(job, 'internal_error', `The domain's research was interrupted ${this.maxAttempts} times and was given up.`, [], false);
        await withCredits(this.broker, credit, async () => undefined, { settle: () => 'refund' }).catch(() => undefined);
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
    }
  }

  /** True when this worker recorded the failure (it still held the lease). */
  private async recordFailure(job: CaptureJob, err: unknown): Promise<boolean> {
    // Shutting down, a service it needs did not answer (its node died, NATS restarted), or no
    // browser came free in time (a Grid node lost): not the job's fault. It goes back to the
    // queue, for another instance or a later try (at most maxAttempts claims in all), with
    // its credit still pending (reserved again under the same id, so charged once).
    const unavailable = isUnavailable(err) || (err as { type?: unknown } | null)?.type === 'capacity_exhausted';
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
