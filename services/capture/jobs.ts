/**
 * The jobs table as a durable queue. A job is written before its id is given out; any
 * capture instance claims it with a lease (a random token and an expiry) and keeps
 * renewing the lease while it works. If the instance dies, the lease runs out and another
 * instance claims the job again. Only the holder of the current lease can complete or fail
 * the job, so it finishes exactly once.
 *
 * On MySQL/MariaDB the claim uses SELECT ... FOR UPDATE SKIP LOCKED, so instances never
 * wait on each other's rows; SQLite (embedded, one process) serialises writers anyway.
 */
import type { Knex } from 'knex';
import type { JobKind } from '../shared/contracts';
import type { SnapOptions } from '../shared/screenshot-options';
import { randomId } from '../shared/secrets';

export interface ClaimedJob {
  id: string;
  accountId: string;
  configId: string;
  kind: JobKind;
  options: SnapOptions;
  leaseToken: string;
  attempts: number;
}

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

  async enqueue(job: { id: string; accountId: string; configId: string; kind: JobKind; options: SnapOptions }): Promise<void> {
    await this.db('jobs').insert({
      id: job.id,
      account_id: job.accountId,
      config_id: job.configId,
      kind: job.kind,
      status: 'queued',
      options: JSON.stringify(job.options),
      created_at_ms: this.now(),
    });
  }

  /** The oldest claimable job (queued, or running with an expired lease), or null. */
  async claim(): Promise<ClaimedJob | null> {
    const now = this.now();
    const token = randomId(12);
    return this.db.transaction(async (trx) => {
      let query = trx('jobs')
        .whereIn('kind', ['config', 'scheduled'])
        .where((q) => q.where('status', 'queued').orWhere((r) => r.where('status', 'running').where('lease_until_ms', '<', now)))
        .orderBy('created_at_ms')
        .first('id', 'account_id', 'config_id', 'kind', 'options', 'attempts');
      if (this.mysql) query = query.forUpdate().skipLocked();
      const row = await query;
      if (!row) return null;
      const attempts = Number(row.attempts) + 1;
      await trx('jobs').where({ id: row.id }).update({ status: 'running', lease_token: token, lease_until_ms: now + this.leaseMs, attempts });
      return {
        id: row.id,
        accountId: row.account_id,
        configId: row.config_id,
        kind: row.kind as JobKind,
        options: JSON.parse(row.options) as SnapOptions,
        leaseToken: token,
        attempts,
      };
    });
  }

  /** Extends the lease; false when it was lost (another instance took the job over). */
  async renew(job: ClaimedJob): Promise<boolean> {
    const n = await this.db('jobs').where({ id: job.id, lease_token: job.leaseToken, status: 'running' }).update({ lease_until_ms: this.now() + this.leaseMs });
    return n === 1;
  }

  /**
   * Records the screenshot and completes the job in one transaction, only while this
   * worker holds the lease. Returns the screenshot id, or null when the lease was lost.
   */
  async complete(job: ClaimedJob, screenshot: Record<string, unknown>): Promise<number | null> {
    return this.db.transaction(async (trx) => {
      let held = trx('jobs').where({ id: job.id, lease_token: job.leaseToken, status: 'running' }).first('id');
      if (this.mysql) held = held.forUpdate();
      if (!(await held)) return null;
      const [inserted] = await trx('screenshots').insert(screenshot);
      const screenshotId = Number(inserted);
      await trx('jobs').where({ id: job.id }).update({ status: 'completed', screenshot_id: screenshotId, finished_at_ms: this.now(), lease_token: null, lease_until_ms: null });
      return screenshotId;
    });
  }

  /** Fails the job while this worker holds the lease; false when the lease was lost. */
  async fail(job: ClaimedJob, errorCode: string, note: string): Promise<boolean> {
    const n = await this.db('jobs')
      .where({ id: job.id, lease_token: job.leaseToken, status: 'running' })
      .update({ status: 'failed', error_code: errorCode, note, finished_at_ms: this.now(), lease_token: null, lease_until_ms: null });
    return n === 1;
  }

  /** Gives a job back to the queue (e.g. when this instance is shutting down). */
  async release(job: ClaimedJob): Promise<void> {
    await this.db('jobs').where({ id: job.id, lease_token: job.leaseToken, status: 'running' }).update({ status: 'queued', lease_token: null, lease_until_ms: null });
  }

  async find(accountId: string, jobId: string): Promise<JobRow | undefined> {
    return this.db('jobs').where({ id: jobId, account_id: accountId }).first('id', 'account_id', 'config_id', 'status', 'error_code', 'note', 'screenshot_id');
  }
}
