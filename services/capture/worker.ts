/**
 * The job worker: claims queued jobs (configurations' and scheduled captures) while this
 * instance has free browsers, and runs each through the pipeline under its lease, paying
 * with the credit reserved when the job was started.
 *
 * Claiming happens on the capture.jobQueued event, after every finished job, and on a
 * poll (jobs left by a dead instance, whose lease ran out). One claimer at a time.
 */
import type { LoggerInstance, ServiceBroker } from 'moleculer';
import { type ScreenshotRef, emit } from '../shared/contracts';
import { billsAiCredits } from '../shared/ai-record';
import { withCaptureCredits } from '../shared/credits';
import { failureOf, isUnavailable } from '../shared/errors';
import { withOnlyLogContext } from '../shared/logging';
import type { ClaimedJob, JobQueue } from './jobs';
import type { CapturePipeline } from './pipeline';

export interface WorkerOptions {
  /** Jobs run at once: the browsers of this instance. */
  sessions: number;
  /** The lease a claim takes; it is renewed every third of it while the job runs. */
  leaseMs: number;
  /** Queued jobs are looked for this often, besides the capture.jobQueued event. */
  pollMs?: number;
  /** A job that keeps killing its workers is failed after this many claims. */
  maxAttempts?: number;
}

export class JobWorker {
  private readonly inFlight = new Set<Promise<void>>();
  private poller: NodeJS.Timeout | null = null;
  private claiming = false;
  private stopping = false;
  private readonly pollMs: number;
  private readonly maxAttempts: number;

  constructor(
    private readonly broker: ServiceBroker,
    private readonly queue: JobQueue,
    private readonly pipeline: Pick<CapturePipeline, 'run'>,
    private readonly logger: Pick<LoggerInstance, 'info' | 'warn' | 'error'>,
    private readonly options: WorkerOptions,
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
        const job = await this.queue.claim();
        if (!job) break;
        const run: Promise<void> = this.run(job).finally(() => {
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

  /**
   * Runs one claimed job: the credits are reserved again under the job's id (idempotent, so
   * a job taken over after a crash is charged once), committed when this worker recorded
   * the screenshot (the AI credit only when its analysis ran), refunded when it recorded the
   * failure, and left to the new holder when the lease was lost.
   */
  async run(job: ClaimedJob): Promise<void> {
    // Only the job's id: a pump started beneath a request (capture.jobQueued) may claim another request's job.
    return withOnlyLogContext({ job_id: job.id }, () => this.runJob(job));
  }

  private async runJob(job: ClaimedJob): Promise<void> {
    const renew = setInterval(() => void this.queue.renew(job).catch(() => undefined), Math.max(500, Math.floor(this.options.leaseMs / 3)));
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
    } finally {
      clearInterval(renew);
    }
  }

  /** True when this worker recorded the failure (it still held the lease). */
  private async recordFailure(job: ClaimedJob, err: unknown): Promise<boolean> {
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
