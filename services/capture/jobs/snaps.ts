/**
 * What the capture service's job actions do: a snap taken while its request waits (admitted
 * by its account's limits, recorded as a job under its configuration, captured by the
 * pipeline), a snap given up by the api, a job queued or looked up, a thumbnail made on first
 * request, and a configuration's archive deleted (rows first, then files).
 */
import type { Knex } from 'knex';
import type { JobStatus, ParamsOf, ScreenshotRef } from '../../shared/contracts';
import { failureOf, serviceError } from '../../shared/errors';
import { captureKey, type SnapOptions } from '../../shared/screenshot-options';
import { diffImagesOfConfig } from '../../notifier/public/visual-alerts';
import type { ConcurrencyAdmission } from '../fairness/concurrency-admission';
import { turnOf } from '../browsers/engine';
import type { CaptureFiles } from './files';
import { type JobQueue, finishedAnswer, statusOfJob, whileRenewing } from './jobs';
import type { CaptureMetrics } from './metrics';
import type { CapturePipeline } from './pipeline';
import type { ScreenshotRepository } from './screenshots';

/** The scheduler as a snap sees it: the configuration a snap is recorded under, and its latest job noted. */
export interface SnapConfigs {
  /**
   * The configuration; `jobId`, when given, is noted as its latest job by the same call to the
   * scheduler when one is made (`noted`); otherwise (a configuration kept here) noteJob is left to the caller.
   */
  snapConfig(accountId: string, options: SnapOptions, jobId?: string): Promise<{ id: string; noted?: boolean }>;
  noteJob(configId: string, jobId: string): void;
  /** The configuration is being deleted (snap-configs.ts forgets what it kept of it). */
  forget?(configId: string): void;
}

export interface SnapDeskDeps {
  db: Knex;
  admission: Pick<ConcurrencyAdmission, 'ticket' | 'admit' | 'finish' | 'release'>;
  queue: JobQueue;
  /** The jobs' lease (CAPTURE_JOB_LEASE_MS): a snap's is renewed every third of it while it runs. */
  leaseMs: number;
  pipeline: Pick<CapturePipeline, 'snap'>;
  screenshots: ScreenshotRepository;
  files: Pick<CaptureFiles, 'thumbnailOf' | 'remove'>;
  metrics: Pick<CaptureMetrics, 'refused'>;
  configs: SnapConfigs;
  /** A job was queued (every instance's worker hears of it; one claims it). */
  jobQueued: (jobId: string) => void;
  /** A configuration's archive was deleted (every capture instance hears of it and forgets the configuration). */
  configDeleted?: (accountId: string, configId: string) => void;
  /** Gives back the credits a job held (`job:<id>` and its `:ai`); never throws (a reservation not given back expires). */
  releaseJobCredits?: (accountId: string, jobId: string) => Promise<void>;
}

export class SnapDesk {
  constructor(private readonly deps: SnapDeskDeps) {}

  /**
   * A snap: captured while the HTTP request waits; its job is recorded for GET /jobs. An
   * attempt after the first (its instance disappeared under it: the api takes it again here)
   * keeps its job, its place in its account's counts and in the fair order.
   */
  async take(p: ParamsOf<'capture.take'>): Promise<ScreenshotRef> {
    const { admission, queue, screenshots } = this.deps;
    // Its account's limits first (429 past them), before anything is written; a ticket still
    // counted from an earlier attempt is taken over as it is.
    const ticket = admission.ticket(p.jobId, p.account);
    try {
      await admission.admit(ticket);
    } catch (err) {
      this.deps.metrics.refused('snap', failureOf(err).code);
      throw err;
    }
    try {
      // A first attempt's job is noted as its configuration's latest with the same call (one request, not two).
      const snapConfig = await this.deps.configs.snapConfig(p.account.accountId, p.options, p.attempt === 1 ? p.jobId : undefined);
      const owner = { id: p.jobId, accountId: p.account.accountId, configId: snapConfig.id };
      const begun = p.attempt > 1 ? await queue.retake(owner) : { leased: await queue.start(owner) };
      if ('finished' in begun) return finishedAnswer(begun.finished, screenshots);
      const job = begun.leased;
      if (p.attempt === 1 && !snapConfig.noted) this.deps.configs.noteJob(job.configId, job.id);
      // Its lease renewed while it runs: one that runs out is a stopped process's (JobQueue.failLapsedSnaps).
      const turn = turnOf({ cls: 'snap', ticket, since: p.since, again: p.attempt > 1 });
      return await whileRenewing(queue, job, this.deps.leaseMs, () => this.deps.pipeline.snap(job, p.options, turn, captureKey(p.options, p.targets)));
    } finally {
      await admission.finish(ticket);
    }
  }

  /**
   * The api gave up on a snap: its job fails with this answer and its place in the counts is
   * given back. A capture that completed before the api heard of it is withdrawn (its row, then
   * its files): the request was told it failed and its credit is given back, so it is neither
   * listed nor reused within ttl.
   */
  async abandon(accountId: string, jobId: string, errorCode: string, note: string): Promise<void> {
    const { db, queue, screenshots, files } = this.deps;
    const withdrawn = await db.transaction(async (trx) => {
      const screenshotId = await queue.abandon(accountId, jobId, errorCode, note, trx);
      return screenshotId === null ? null : screenshots.withdraw(screenshotId, trx);
    });
    if (withdrawn) await files.remove(withdrawn);
    await this.deps.admission.release({ id: jobId, accountId });
  }

  /** A configuration's job (scheduled, or capture-now) queued for the workers. */
  async enqueue(job: Parameters<JobQueue['enqueue']>[0]): Promise<{ job_id: string }> {
    await this.deps.queue.enqueue(job);
    this.deps.jobQueued(job.id);
    return { job_id: job.id };
  }

  async jobStatus(accountId: string, jobId: string): Promise<JobStatus> {
    const row = await this.deps.queue.find(accountId, jobId);
    if (!row) throw serviceError('not_found', `No job "${jobId}" in this account.`);
    return statusOfJob(row, this.deps.screenshots);
  }

  /** A thumbnail is made when first asked for, and only one a screenshot recorded. */
  async thumbnail(name: string): Promise<{ made: boolean }> {
    const image = await this.deps.screenshots.imageOfThumbnail(name);
    return { made: image !== null && (await this.deps.files.thumbnailOf(name, image)) };
  }

  /**
   * Deletes a configuration's screenshots (rows and files) and jobs; the credits of its jobs
   * that had not ended are given back (a queued one never runs now; a running one loses its
   * lease, so records nothing).
   */
  async deleteForConfig(accountId: string, configId: string): Promise<{ screenshots: number }> {
    const { db, screenshots, queue, files } = this.deps;
    // No snap is recorded under it from now on: forgotten here at once, and on the other instances.
    this.deps.configs.forget?.(configId);
    this.deps.configDeleted?.(accountId, configId);
    const stored = await screenshots.filesOfConfig(accountId, configId);
    // The diff images of its visual change alerts (the notifier deletes the alerts next).
    const diffs = await diffImagesOfConfig(db, accountId, configId);
    const unfinished = await db.transaction(async (trx) => {
      await screenshots.deleteForConfig(accountId, configId, trx);
      return queue.deleteForConfig(accountId, configId, trx);
    });
    // After the rows are gone: a worker reserving again under a deleted job's id finds its lease lost and releases it itself (worker.ts).
    await Promise.all(unfinished.map((jobId) => this.deps.releaseJobCredits?.(accountId, jobId)));
    // Files go after the rows, so no listed screenshot ever points at a missing file.
    await Promise.all([...stored, ...diffs.map((name) => ({ image_name: name, thumb_name: null, html_name: null }))].map((f) => files.remove(f)));
    return { screenshots: stored.length };
  }
}
