/**
 * The jobs table as a durable queue. A job is written before its id is given out; any
 * capture instance claims it with a lease (a random token and an expiry) and keeps
 * renewing the lease while it works. If the instance dies, the lease runs out and another
 * instance claims the job again. Only the holder of the current lease can complete or fail
 * the job, so it finishes exactly once.
 *
 * A snap's job is written here too, already running under a lease of its own (start): it
 * is answered in its HTTP request, so no worker ever claims it, but it completes and fails
 * the same way and GET /jobs reads it like any other. Its lease is renewed while its capture
 * runs (whileRenewing); one that ran out belongs to a process that stopped mid-capture (killed,
 * out of memory) with no other taking it again, and fails (failLapsedSnaps).
 *
 * A domain of a domain research job is a job too (kind 'research', written with its request
 * by research-jobs.ts), the lowest class.
 *
 * Claims follow the fair order of fair-queue.ts over every instance: configurations' jobs (a
 * client asked for them) before scheduled ones, research last, with the starvation guard
 * (a class passed over while it waited gets its turn); account by account
 * in turn, by when each account last started a capture anywhere (AccountSlots); an account
 * that already runs all its plan allows is passed by. On MySQL/MariaDB the claim uses
 * SELECT ... FOR UPDATE SKIP LOCKED, so instances never wait on each other's rows; SQLite
 * (embedded, one process) serialises writers anyway. The lease (the claim's locks, renewing,
 * ending under the token) is shared/lease.ts, as the outbox's and the scheduler's are.
 */
import type { Knex } from 'knex';
import type { CaptureJobKind, JobKind, JobStatus, ScreenshotRef } from '../../shared/contracts';
import { isErrorCode, isUnavailable, serviceError } from '../../shared/errors';
import { isMysql } from '../../shared/database';
import type { SnapOptions } from '../../shared/screenshot-options';
import { type LeaseColumns, Leases, newLeaseToken } from '../../shared/lease';
import { type ClassTurns, inTurnOrder } from '../fairness/fair-queue';

/** The kinds the jobs queue holds, highest priority first. */
export const JOB_KINDS: readonly JobKind[] = ['config', 'scheduled', 'research'];
/** The kinds a client or a schedule asked for: captures. */
export const CAPTURE_KINDS: readonly CaptureJobKind[] = ['config', 'scheduled'];
/** Where a job's lease is kept (lease_token, lease_until_ms): only a running job is held. */
export const JOB_LEASE: LeaseColumns = { table: 'jobs', held: { status: 'running' } };

/** A job this instance holds the lease of: only it may complete or fail the job. */
export interface LeasedJob {
  id: string;
  accountId: string;
  configId: string;
  leaseToken: string;
}

/** A queued job claimed by a worker: a capture with its options, or a research domain. */
export type ClaimedJob = LeasedJob & {
  attempts: number;
  /** When it was queued (ms). */
  createdAtMs: number;
} & ({ kind: CaptureJobKind; options: SnapOptions } | { kind: 'research' });

/** What orders a claim and lets its capture start. */
export interface ClaimTurns {
  /** Priority between the kinds (fair-queue.ts's guard; one per instance is enough to keep a share). */
  kinds: ClassTurns<JobKind>;
  /** When each account last started a capture, on any instance. */
  lastStarts(accountIds: string[]): Promise<Map<string, number>>;
  /**
   * What counts a job of the account as running in its account's counts (false while the
   * account runs all its plan allows). Asked for before the job's row is locked: it may read
   * the account's plan, which in embedded mode shares the one SQLite connection.
   */
  starter(accountId: string): Promise<(jobId: string) => Promise<boolean>>;
  /** Takes back a start whose claim did not go through. */
  undo(job: { id: string; accountId: string }): Promise<void>;
}

/** After this long a snap's job with no lease at all (written before snaps had one) is taken for stopped: longer than any snap's budget. */
const UNLEASED_SNAP_STALE_MS = 60 * 60 * 1000;

/** The failure of a snap's job whose process stopped while it ran (failLapsedSnaps). */
export const SNAP_STOPPED_NOTE =
  'The service stopped while this capture ran (its process ended before it finished, and no other took it again); it is not charged: its credit is given back within minutes. Take it again.';

/**
 * Runs `work` while renewing `job`'s lease every third of `leaseMs` (at least every 500 ms), so
 * that no instance takes the job over, nor fails it as abandoned, while this one works on it.
 */
export async function whileRenewing<T>(queue: Pick<JobQueue, 'renew'>, job: LeasedJob, leaseMs: number, work: () => Promise<T>): Promise<T> {
  const renew = setInterval(() => void queue.renew(job).catch(() => undefined), Math.max(500, Math.floor(leaseMs / 3)));
  try {
    return await work();
  } finally {
    clearInterval(renew);
  }
}

/**
 * What an ended job no longer keeps: its options, read only by its claim (an ended job is never
 * claimed again). A configuration's job holds its configuration's options, a /snap_html
 * document among them (up to BODY_LIMIT_BYTES); kept for every capture, they would pile up.
 */
const ENDED = { options: null } as const;

/** A claimable job as its claim reads it. */
interface ClaimRow {
  id: string;
  account_id: string;
  config_id: string;
  kind: JobKind;
  options: string;
  attempts: number | string;
  created_at_ms: number | string;
}

/** The oldest claimable job of one account and kind. */
interface Head {
  accountId: string;
  kind: JobKind;
  since: number;
}

export interface JobRow {
  id: string;
  account_id: string;
  config_id: string;
  status: 'queued' | 'running' | 'completed' | 'failed';
  error_code: string | null;
  note: string | null;
  screenshot_id: number | null;
  /** When it was queued and when it ended (absent where a query did not read them). */
  created_at_ms?: number | string;
  finished_at_ms?: number | string | null;
}

export class JobQueue {
  private readonly lease: Leases;

  constructor(
    private readonly db: Knex,
    leaseMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.lease = new Leases(db, JOB_LEASE, leaseMs, now);
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

  /** Records a snap's job as running under a lease held by the request that captures it (its first attempt). */
  async start(job: { id: string; accountId: string; configId: string }): Promise<LeasedJob> {
    const leased = { ...job, leaseToken: newLeaseToken() };
    const now = this.now();
    await this.db('jobs').insert({
      id: job.id,
      account_id: job.accountId,
      config_id: job.configId,
      kind: 'snap',
      status: 'running',
      attempts: 1,
      lease_token: leased.leaseToken,
      ...this.lease.timeOf(now),
      created_at_ms: now,
    });
    return leased;
  }

  /**
   * A snap's job taken again after the instance that ran it disappeared (the api says so): a
   * new lease, so that the old holder can no longer complete it, and one more attempt. When it
   * already finished (recorded just before its instance went), its row is the answer; when the
   * first attempt never wrote it, it is started now.
   */
  async retake(job: { id: string; accountId: string; configId: string }): Promise<{ leased: LeasedJob } | { finished: JobRow }> {
    const leaseToken = newLeaseToken();
    const n = await this.db('jobs')
      .where({ id: job.id, account_id: job.accountId, kind: 'snap', status: 'running' })
      .update({ lease_token: leaseToken, ...this.lease.timeOf(), attempts: this.db.raw('attempts + 1') });
    if (n === 1) return { leased: { ...job, leaseToken } };
    const row = await this.find(job.accountId, job.id);
    if (row) return { finished: row };
    return { leased: await this.start(job) };
  }

  /**
   * Fails a snap's job whoever holds it (the api gave up on it: its instance disappeared and no
   * other could take it in time), in the caller's transaction when given. One that completed
   * before the api heard of it (its answer lost with the transporter) fails too: its request
   * was answered that it failed and was not charged. Returns that job's screenshot id, for the
   * caller to withdraw; null for a job that was running (or had failed, or is unknown).
   */
  async abandon(accountId: string, jobId: string, errorCode: string, note: string, trx: Knex | Knex.Transaction = this.db): Promise<number | null> {
    // Read, then failed from the state read: a running job its instance completes between the two
    // is read again. Locked on MySQL, where a plain read inside a transaction would answer the
    // same snapshot for ever (REPEATABLE READ) and the loop never end.
    for (;;) {
      let read = trx('jobs').where({ id: jobId, account_id: accountId, kind: 'snap' }).whereIn('status', ['running', 'completed']);
      if (isMysql(trx)) read = read.forUpdate();
      const row = (await read.first('status', 'screenshot_id')) as Pick<JobRow, 'status' | 'screenshot_id'> | undefined;
      if (!row) return null;
      const n = await trx('jobs')
        .where({ id: jobId, account_id: accountId, kind: 'snap', status: row.status })
        .update({ status: 'failed', error_code: errorCode, note, screenshot_id: null, lease_token: null, finished_at_ms: this.now() });
      if (n === 1) return row.status === 'completed' && row.screenshot_id !== null ? Number(row.screenshot_id) : null;
    }
  }

  /**
   * Fails the snaps' jobs nobody holds any more: their lease ran out (or they were written
   * before snaps had one), so the process capturing each stopped mid-capture (SIGKILL, the OOM
   * killer, the machine gone) and no instance took it again; their requests got no answer, and
   * their credit is given back by billing (a snap's reservation has a deadline). Any instance
   * may run this at any time: a job whose lease is held is left alone. Returns how many failed.
   */
  async failLapsedSnaps(): Promise<number> {
    const now = this.now();
    // A row with no lease at all was written by an instance from before snaps had one: still
    // being captured, perhaps (a rolling upgrade), so it is taken as stopped only once it is
    // older than any snap can run.
    const lapsed = this.db('jobs')
      .where({ kind: 'snap', status: 'running' })
      .where((w) => w.whereNotNull('lease_until_ms').orWhere('created_at_ms', '<', now - UNLEASED_SNAP_STALE_MS));
    return this.lease.unheld(lapsed, now).update({
      status: 'failed',
      error_code: 'capacity_exhausted',
      note: SNAP_STOPPED_NOTE,
      lease_token: null,
      lease_until_ms: null,
      finished_at_ms: this.now(),
    });
  }

  /**
   * The next job in the fair order (queued, or running with an expired lease), claimed under a
   * lease and counted as running in its account's counts; null when none may start now.
   */
  async claim(turns: ClaimTurns, kindsTaken: readonly JobKind[] = JOB_KINDS): Promise<ClaimedJob | null> {
    const now = this.now();
    const heads = await this.heads(now, kindsTaken);
    const waiting = new Set(heads.map((h) => h.kind));
    const kinds = new Set(waiting);
    for (let kind = turns.kinds.pick(kinds); kind; kind = turns.kinds.pick(kinds)) {
      const ofKind = heads.filter((h) => h.kind === kind);
      const last = await turns.lastStarts(ofKind.map((h) => h.accountId));
      for (const head of inTurnOrder(ofKind, (a) => last.get(a))) {
        const job = await this.claimOf(head, now, turns);
        if (job) {
          turns.kinds.served(kind, waiting);
          return job;
        }
      }
      // Every account with jobs of this kind runs all it may (or another instance took them).
      kinds.delete(kind);
    }
    return null;
  }

  /** Claimable jobs (queued, or running with an expired lease). */
  private claimable(q: Knex.QueryBuilder, now: number): Knex.QueryBuilder {
    return q.where((w) => w.where('status', 'queued').orWhere((r) => this.lease.lapsed(r.where('status', 'running'), now)));
  }

  /** Per account and kind (of `kinds`), its oldest claimable job's time. */
  private async heads(now: number, kinds: readonly JobKind[]): Promise<Head[]> {
    const grouped = (q: Knex.QueryBuilder) =>
      q.whereIn('kind', kinds).groupBy('account_id', 'kind').select('account_id', 'kind').min({ since: 'created_at_ms' });
    const [queued, lapsed] = (await Promise.all([
      grouped(this.db('jobs').where('status', 'queued')),
      grouped(this.lease.lapsed(this.db('jobs').where('status', 'running'), now)),
    ])) as Array<Array<{ account_id: string; kind: JobKind; since: number | string }>>;
    const heads = new Map<string, Head>();
    for (const r of [...(queued ?? []), ...(lapsed ?? [])]) {
      const key = `${r.kind}\u0000${r.account_id}`;
      const since = Number(r.since);
      const known = heads.get(key);
      if (!known || since < known.since) heads.set(key, { accountId: r.account_id, kind: r.kind, since });
    }
    return [...heads.values()];
  }

  /** The account's oldest claimable job of the kind, claimed, if its account may start a capture now. */
  private async claimOf(head: Head, now: number, turns: ClaimTurns): Promise<ClaimedJob | null> {
    const token = newLeaseToken();
    const start = await turns.starter(head.accountId);
    let started: ClaimedJob | null = null;
    try {
      return await this.lease.claim(
        (trx) =>
          this.claimable(trx('jobs').where({ account_id: head.accountId, kind: head.kind }), now)
            .orderBy('created_at_ms')
            .limit(1)
            .select('id', 'account_id', 'config_id', 'kind', 'options', 'attempts', 'created_at_ms'),
        async ([row]: ClaimRow[], grant) => {
          if (!row) return null;
          const attempts = Number(row.attempts) + 1;
          const leased = {
            id: row.id,
            accountId: row.account_id,
            configId: row.config_id,
            leaseToken: token,
            attempts,
            createdAtMs: Number(row.created_at_ms),
          };
          const job: ClaimedJob =
            row.kind === 'research'
              ? { ...leased, kind: 'research' }
              : { ...leased, kind: row.kind as CaptureJobKind, options: JSON.parse(row.options) as SnapOptions };
          if (!(await start(job.id))) return null;
          started = job;
          await grant(row.id, { status: 'running', attempts }, token);
          return job;
        },
        now,
      );
    } catch (err) {
      if (started) await turns.undo(started);
      throw err;
    }
  }

  /** Extends the lease; false when it was lost (another instance took the job over). */
  async renew(job: LeasedJob): Promise<boolean> {
    return this.lease.renew(job);
  }

  /**
   * Records the screenshot (`record`, in the same transaction) and completes the job, only
   * while this worker holds the lease. Returns the screenshot id, or null when the lease
   * was lost.
   */
  async complete(job: LeasedJob, record: (trx: Knex.Transaction) => Promise<number>): Promise<number | null> {
    // The record first, then the job completed under its lease, in one transaction: a lost lease rolls the record back.
    return this.lease.endWith(job, record, (screenshotId) => ({ status: 'completed', screenshot_id: screenshotId, finished_at_ms: this.now(), ...ENDED }));
  }

  /** Fails the job while this worker holds the lease; false when the lease was lost. */
  async fail(job: LeasedJob, errorCode: string, note: string): Promise<boolean> {
    return this.lease.end(job, { status: 'failed', error_code: errorCode, note, finished_at_ms: this.now(), ...ENDED });
  }

  /** Gives a job back to the queue (e.g. when this instance is shutting down). */
  async release(job: LeasedJob): Promise<void> {
    await this.lease.end(job, { status: 'queued' });
  }

  /**
   * Deletes a configuration's jobs (inside the caller's transaction when given). Returns the
   * ids of the configuration's and scheduled jobs deleted before they ended: the credits they
   * hold (`job:<id>`, reserved when started or by the worker) are to be released. A snap's
   * job is not among them (its request settles its credit).
   */
  async deleteForConfig(accountId: string, configId: string, trx: Knex | Knex.Transaction = this.db): Promise<string[]> {
    const unfinished = await trx('jobs')
      .where({ account_id: accountId, config_id: configId })
      .whereIn('status', ['queued', 'running'])
      .whereNot({ kind: 'snap' })
      .pluck('id');
    await trx('jobs').where({ account_id: accountId, config_id: configId }).delete();
    return unfinished.map(String);
  }

  /** A capture's job (GET /jobs); a research domain's is not one. */
  async find(accountId: string, jobId: string): Promise<JobRow | undefined> {
    return this.db('jobs')
      .where({ id: jobId, account_id: accountId })
      .whereNot({ kind: 'research' })
      .first('id', 'account_id', 'config_id', 'status', 'error_code', 'note', 'screenshot_id', 'created_at_ms', 'finished_at_ms');
  }
}

/**
 * The answer of a snap's job that finished before its request heard of it (its instance
 * disappeared with the answer): its screenshot, or its failure as it was recorded.
 */
export async function finishedAnswer(row: JobRow, screenshots: ScreenshotLookup): Promise<ScreenshotRef> {
  const status = await statusOfJob(row, screenshots);
  if (status.status === 'completed') return status.screenshot;
  const code = status.status === 'failed' && isErrorCode(status.error_code) ? status.error_code : 'internal_error';
  throw serviceError(code, status.status === 'failed' ? status.note : 'The capture ended in no state it can be answered from.');
}

/** Where a job's screenshot is looked up (the screenshots table). */
export interface ScreenshotLookup {
  byId(id: number): Promise<ScreenshotRef | null>;
}

/** What GET /jobs shows of a job, its screenshot looked up when it completed. */
export async function statusOfJob(row: JobRow, screenshots: ScreenshotLookup): Promise<JobStatus> {
  return jobStatusOf(row, row.status === 'completed' && row.screenshot_id !== null ? await screenshots.byId(row.screenshot_id) : null);
}

/** What GET /jobs shows of a job: a completed job whose screenshot is gone reads as failed. */
export function jobStatusOf(row: JobRow, screenshot: ScreenshotRef | null): JobStatus {
  // Its timings, when the row was read with them (the web console's capture page shows them).
  const timings =
    row.created_at_ms === undefined
      ? {}
      : { timings: { queued_at_ms: Number(row.created_at_ms), finished_at_ms: row.finished_at_ms == null ? null : Number(row.finished_at_ms) } };
  if (row.status === 'completed' && screenshot) return { status: 'completed', job_id: row.id, screenshot, ...timings };
  if (row.status === 'failed' || row.status === 'completed') {
    return { status: 'failed', job_id: row.id, error_code: row.error_code ?? 'internal_error', note: row.note ?? 'The capture failed.', ...timings };
  }
  return { status: row.status, job_id: row.id, ...timings };
}

/** A failure that is nobody's (a node gone, no browser free in time): the job goes back to the queue. */
export function retryLater(err: unknown): boolean {
  return isUnavailable(err) || (err as { type?: unknown } | null)?.type === 'capacity_exhausted';
}
