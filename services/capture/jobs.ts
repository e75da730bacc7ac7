/**
 * The jobs table as a durable queue. A job is written before its id is given out; any
 * capture instance claims it with a lease (a random token and an expiry) and keeps
 * renewing the lease while it works. If the instance dies, the lease runs out and another
 * instance claims the job again. Only the holder of the current lease can complete or fail
 * the job, so it finishes exactly once.
 *
 * A snap's job is written here too, already running under a lease of its own (start): it
 * is answered in its HTTP request, so no worker ever claims it, but it completes and fails
 * the same way and GET /jobs reads it like any other.
 *
 * A domain of a domain research job is a job too (kind 'research', written with its
 * request by research-jobs.ts); a claim names the kinds it takes, so the worker decides
 * which work comes first (worker.ts).
 *
 * On MySQL/MariaDB the claim uses SELECT ... FOR UPDATE SKIP LOCKED, so instances never
 * wait on each other's rows; SQLite (embedded, one process) serialises writers anyway.
 */
import type { Knex } from 'knex';
import type { CaptureJobKind, JobKind, JobStatus, ScreenshotRef } from '../shared/contracts';
import type { SnapOptions } from '../shared/screenshot-options';
import { randomId } from '../shared/secrets';

/** A job this instance holds the lease of: only it may complete or fail the job. */
export interface LeasedJob {
  id: string;
  accountId: string;
  configId: string;
  leaseToken: string;
}

/** The kinds a client or a schedule asked for: captures. */
export const CAPTURE_KINDS: readonly CaptureJobKind[] = ['config', 'scheduled'];
/** Domains of domain research jobs. */
export const RESEARCH_KINDS: readonly JobKind[] = ['research'];

/** A queued job claimed by a worker: a capture with its options, or a research domain. */
export type ClaimedJob = LeasedJob & { attempts: number } & ({ kind: CaptureJobKind; options: SnapOptions } | { kind: 'research' });

export interface JobRow {
  id: string;
  account_id: string;
  config_id: string;
  status: 'queued' | 'running' | 'completed' | 'failed';
  error_code: string | null;
  note: string | null;
  screenshot_id: number | null;
}

export class JobQueue {
  constructor(
    private readonly db: Knex,
    private readonly leaseMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  private get mysql(): boolean {
    return this.db.client.config.client === 'mysql2';
  }

  /** Records a queued job; an id it already has is left as it is (a scheduler handing a job over again). */
  async enqueue(job: { id: string; accountId: string; configId: string; kind: CaptureJobKind; options: SnapOptions }): Promise<void> {
    await this.db('jobs')
      .insert({
      id: job.id,
      account_id: job.accountId,
      config_id: job.configId,
      kind: job.kind,
      status: 'queued',
      options: JSON.stringify(job.options),
      created_at_ms: this.now(),
      })
      .onConflict('id')
      .ignore();
  }

  /** Records a snap's job as running under a lease held by the request that captures it. */
  async start(job: { id: string; accountId: string; configId: string }): Promise<LeasedJob> {
    const leased = { ...job, leaseToken: randomId(12) };
    await this.db('jobs').insert({
      id: job.id,
      account_id: job.accountId,
      config_id: job.configId,
      kind: 'snap',
      status: 'running',
      lease_token: leased.leaseToken,
      created_at_ms: this.now(),
    });
    return leased;
  }

  /** The oldest claimable job of `kinds` (queued, or running with an expired lease), or null. */
  async claim(kinds: readonly JobKind[] = CAPTURE_KINDS): Promise<ClaimedJob | null> {
    const now = this.now();
    const token = randomId(12);
    return this.db.transaction(async (trx) => {
      let query = trx('jobs')
        .whereIn('kind', kinds)
        .where((q) => q.where('status', 'queued').orWhere((r) => r.where('status', 'running').where('lease_until_ms', '<', now)))
        .orderBy('created_at_ms')
        .first('id', 'account_id', 'config_id', 'kind', 'options', 'attempts');
      if (this.mysql) query = query.forUpdate().skipLocked();
      const row = await query;
      if (!row) return null;
      const attempts = Number(row.attempts) + 1;
      await trx('jobs').where({ id: row.id }).update({ status: 'running', lease_token: token, lease_until_ms: now + this.leaseMs, attempts });
      const leased = { id: row.id, accountId: row.account_id, configId: row.config_id, leaseToken: token, attempts };
      if (row.kind === 'research') return { ...leased, kind: 'research' as const };
      return { ...leased, kind: row.kind as CaptureJobKind, options: JSON.parse(row.options) as SnapOptions };
    });
  }

  /** Extends the lease; false when it was lost (another instance took the job over). */
  async renew(job: LeasedJob): Promise<boolean> {
    const n = await this.db('jobs').where({ id: job.id, lease_token: job.leaseToken, status: 'running' }).update({ lease_until_ms: this.now() + this.leaseMs });
    return n === 1;
  }

  /**
   * Records the screenshot (`record`, in the same transaction) and completes the job, only
   * while this worker holds the lease. Returns the screenshot id, or null when the lease
   * was lost.
   */
  async complete(job: LeasedJob, record: (trx: Knex.Transaction) => Promise<number>): Promise<number | null> {
    return this.db.transaction(async (trx) => {
      let held = trx('jobs').where({ id: job.id, lease_token: job.leaseToken, status: 'running' }).first('id');
      if (this.mysql) held = held.forUpdate();
      if (!(await held)) return null;
      const screenshotId = await record(trx);
      await trx('jobs').where({ id: job.id }).update({ status: 'completed', screenshot_id: screenshotId, finished_at_ms: this.now(), lease_token: null, lease_until_ms: null });
      return screenshotId;
    });
  }

  /** Fails the job while this worker holds the lease; false when the lease was lost. */
  async fail(job: LeasedJob, errorCode: string, note: string): Promise<boolean> {
    const n = await this.db('jobs')
      .where({ id: job.id, lease_token: job.leaseToken, status: 'running' })
      .update({ status: 'failed', error_code: errorCode, note, finished_at_ms: this.now(), lease_token: null, lease_until_ms: null });
    return n === 1;
  }

  /** Gives a job back to the queue (e.g. when this instance is shutting down). */
  async release(job: LeasedJob): Promise<void> {
    await this.db('jobs').where({ id: job.id, lease_token: job.leaseToken, status: 'running' }).update({ status: 'queued', lease_token: null, lease_until_ms: null });
  }

  /** Deletes a configuration's jobs (inside the caller's transaction when given). */
  async deleteForConfig(accountId: string, configId: string, trx: Knex | Knex.Transaction = this.db): Promise<void> {
    await trx('jobs').where({ account_id: accountId, config_id: configId }).delete();
  }

  /** A capture's job (GET /jobs); a research domain's is not one. */
  async find(accountId: string, jobId: string): Promise<JobRow | undefined> {
    return this.db('jobs').where({ id: jobId, account_id: accountId }).whereNot({ kind: 'research' }).first('id', 'account_id', 'config_id', 'status', 'error_code', 'note', 'screenshot_id');
  }
}

/** What GET /jobs shows of a job: a completed job whose screenshot is gone reads as failed. */
export function jobStatusOf(row: JobRow, screenshot: ScreenshotRef | null): JobStatus {
  if (row.status === 'completed' && screenshot) return { status: 'completed', job_id: row.id, screenshot };
  if (row.status === 'failed' || row.status === 'completed') {
    return { status: 'failed', job_id: row.id, error_code: row.error_code ?? 'internal_error', note: row.note ?? 'The capture failed.' };
  }
  return { status: row.status, job_id: row.id };
}
