/**
 * Schedules: every tick claims the due configurations with row locks (FOR UPDATE SKIP
 * LOCKED on MySQL), moves each to its next slot and starts one capture job. Any number of
 * scheduler instances may run: a due slot is claimed by exactly one. The next run is
 * stored, so schedules survive restarts; after downtime a configuration captures once (the
 * next slot is the first one after now). The same holds while the capture workers are behind:
 * a slot that falls due while its configuration's previous scheduled job still waits (marked
 * pending here, or queued in capture and not yet started) is skipped, moved on as after
 * downtime, so a configuration has at most one scheduled job waiting; one whose previous job is
 * running is queued. The check is made in the claim's transaction, on the locked row, so two
 * schedulers never both queue one. A slot's job is marked pending in the claim's
 * transaction and handed to capture after it, so a scheduler that dies in between loses no
 * slot: another hands the job over later, under the same id.
 *
 * The pending mark is a lease (shared/lease.ts): its token is the job's id, its time when it
 * was marked; it runs out after PENDING_STALE_MS, and only the hand-over that holds it clears it.
 */
import type { Knex } from 'knex';
import schedule from 'node-schedule';
import { scheduledJobsWaiting } from '../capture/public/scheduled-waiting';
import type { ParamsOf } from '../shared/contracts';
import type { ConfigOptions } from '../shared/screenshot-options';
import { type LeaseColumns, Leases } from '../shared/lease';
import { randomId } from '../shared/secrets';
import type { ConfigRow } from './configs';
import { type Interval, nextRunAfter } from './schedule';

/** How many due configurations one transaction claims (a tick claims batches until none is due). */
export const TICK_BATCH = 50;
/** A tick stops after this many batches, so it ends well before the next (the rest wait one tick). */
const MAX_BATCHES_PER_TICK = 40;
/**
 * A slot marked pending longer than this was claimed by a scheduler that died before the
 * hand-over (which takes one call to capture, bounded by the broker's 15 s timeout).
 */
export const PENDING_STALE_MS = 60_000;

export interface ScheduleRunnerDeps {
  db: Knex;
  /** Hands a job to capture (capture.enqueue, idempotent by job id). */
  enqueue(job: ParamsOf<'capture.enqueue'>): Promise<unknown>;
  /** Withdraws the jobs of a configuration deleted meanwhile (capture.deleteForConfig: deleted, their credits given back). */
  withdraw(of: ParamsOf<'capture.deleteForConfig'>): Promise<unknown>;
  now: () => number;
  log: { warn(msg: string): void; info(msg: string): void };
}

export type Started = Array<{ configId: string; jobId: string }>;

type ClaimedRow = Pick<ConfigRow, 'id' | 'account_id' | 'capture_options'>;

/** A due configuration as its claim reads it: with its slot's job mark, set while a job is claimed and not yet handed over. */
type DueRow = ConfigRow & { pending_job_id: string | null };

/** A claim's outcome: the slots whose job it marked pending, and those it skipped (the configuration's previous scheduled job still waits). */
interface Claimed {
  jobs: Array<{ row: DueRow; jobId: string }>;
  skipped: Array<{ configId: string; waitingJobId: string }>;
}

/** A slot's pending job as a lease: the job's id its token, its time when it was marked. */
const PENDING_LEASE: LeaseColumns = { table: 'screenshot_configs', token: 'pending_job_id', time: { since: 'job_pending_since_ms' } };

export class ScheduleRunner {
  private job: schedule.Job | null = null;
  private readonly pending: Leases;

  constructor(private readonly deps: ScheduleRunnerDeps) {
    this.pending = new Leases(deps.db, PENDING_LEASE, PENDING_STALE_MS, deps.now);
  }

  private get db(): Knex {
    return this.deps.db;
  }

  /**
   * Ticks every `seconds` (node-schedule): a slot is at most one tick late. One tick at a
   * time per instance: a tick that overruns its interval (a large round, a stalled machine)
   * is not joined by the next; that one is skipped.
   */
  start(seconds: number): void {
    let ticking = false;
    this.job = schedule.scheduleJob(`*/${seconds} * * * * *`, () => {
      if (ticking) return;
      ticking = true;
      this.tick()
        .catch((err: Error) => this.deps.log.warn(`scheduler tick failed: ${err.message}`))
        .finally(() => {
          ticking = false;
        });
    });
  }

  stop(): void {
    this.job?.cancel();
    this.job = null;
  }

  /**
   * One scheduling round: first the jobs of slots a dead scheduler claimed but never handed
   * over; then claims due configurations in batches (locked rows, skipped by other
   * instances), moves each to its first slot after now, marks its job pending in the same
   * transaction, and hands the jobs to capture. Returns the jobs started.
   */
  async tick(): Promise<Started> {
    const at = this.deps.now();
    const started = await this.recoverPending(at);
    for (let round = 0; round < MAX_BATCHES_PER_TICK; round++) {
      const { jobs: claimed, skipped } = await this.claimDue(at);
      if (skipped.length > 0) {
        const which = skipped.map((s) => `${s.configId} (waiting: ${s.waitingJobId})`).join(', ');
        this.deps.log.info(
          `skipped the due slot of ${skipped.length} scheduled configuration(s) whose previous scheduled capture has not started yet (moved to their next slot, nothing queued or charged): ${which}`,
        );
      }
      await Promise.all(
        claimed.map(async ({ row, jobId }) => {
          try {
            if (await this.handOver(row, jobId)) started.push({ configId: row.id, jobId });
          } catch (err) {
            // Capture may have recorded the job all the same (an answer that timed out): the
            // slot's mark stays, under this job's id, and once it lapses the job is handed over
            // again under that same id (recoverPending), which capture takes at most once. A
            // slot made due again would be claimed under a new id: a second capture.
            this.deps.log.warn(`could not start the scheduled capture ${jobId} of ${row.id} (handed over again within a minute): ${(err as Error).message}`);
          }
        }),
      );
      if (claimed.length + skipped.length < TICK_BATCH) break;
    }
    return started;
  }

  /**
   * One batch of due configurations, moved to their next slot in one transaction: each with its
   * job marked pending, but for one whose previous scheduled job still waits (its mark not yet
   * cleared by a hand-over, or queued in capture and not started), whose slot is skipped.
   * Both are read on the rows the claim locked, which other schedulers pass by, so no other
   * queues a job of them meanwhile; and after the lock: a hand-over clears its mark only once
   * capture has recorded the job, so a mark read cleared means the job is there to be read (on
   * MySQL the jobs are the transaction's first plain read, its snapshot taken then).
   */
  private claimDue(at: number): Promise<Claimed> {
    return this.pending.claim(
      (trx) =>
        trx('screenshot_configs')
          .where('scheduled', true)
          .where('next_run_at_ms', '<=', at)
          .orderBy('next_run_at_ms')
          .limit(TICK_BATCH)
          .select('id', 'account_id', 'capture_options', 'scheduled_every', 'scheduled_interval', 'schedule_anchor_ms', 'next_run_at_ms', 'pending_job_id'),
      async (due: DueRow[], grant, trx) => {
        const out: Claimed = { jobs: [], skipped: [] };
        const queued = await scheduledJobsWaiting(
          trx,
          due.filter((r) => !r.pending_job_id),
        );
        for (const row of due) {
          const next = nextRunAfter(Number(row.schedule_anchor_ms), Number(row.scheduled_every), row.scheduled_interval as Interval, at);
          const waitingJobId = row.pending_job_id ?? queued.get(row.id);
          if (waitingJobId) {
            await trx('screenshot_configs').where('id', row.id).update({ next_run_at_ms: next });
            out.skipped.push({ configId: row.id, waitingJobId });
            continue;
          }
          const jobId = randomId(12);
          await grant(row.id, { next_run_at_ms: next, last_job_id: jobId }, jobId);
          out.jobs.push({ row, jobId });
        }
        return out;
      },
      // Marked when claimed, not when the tick began: a batch claimed late in a long tick is not
      // already lapsed, for another scheduler to hand over beside this one.
      this.deps.now(),
    );
  }

  /**
   * Hands a claimed slot's job to capture (idempotent by job id), then clears the slot's mark.
   * A configuration deleted between the claim and the hand-over, after its delete swept its
   * jobs, has no mark to clear: the job handed over is withdrawn (false then).
   */
  private async handOver(row: ClaimedRow, jobId: string): Promise<boolean> {
    await this.deps.enqueue({
      accountId: row.account_id,
      configId: row.id,
      jobId,
      kind: 'scheduled',
      options: JSON.parse(row.capture_options ?? '{}') as ConfigOptions,
    });
    if (await this.pending.end({ id: row.id, leaseToken: jobId })) return true;
    if (await this.db('screenshot_configs').where({ id: row.id }).first('id')) return true; // another scheduler handed it over and cleared it
    await this.deps.withdraw({ accountId: row.account_id, configId: row.id });
    return false;
  }

  /**
   * Slots claimed by a scheduler that died before handing their job to capture (their mark
   * is older than any hand-over takes): their job is handed over now, under the id the claim
   * recorded, so it runs once (capture.enqueue ignores an id it already has).
   */
  private async recoverPending(at: number): Promise<Started> {
    const stale = await this.pending.claim(
      (trx) => this.pending.lapsed(trx('screenshot_configs'), at).limit(TICK_BATCH).select('id', 'account_id', 'capture_options', 'pending_job_id'),
      async (rows: Array<ClaimedRow & { pending_job_id: string }>, grant) => {
        // Marked again now, under the same job id: other schedulers leave them alone while this one hands them over.
        for (const r of rows) await grant(r.id, {}, r.pending_job_id);
        return rows;
      },
      at,
    );
    const recovered: Started = [];
    for (const row of stale) {
      try {
        if (!(await this.handOver(row, row.pending_job_id))) continue;
        recovered.push({ configId: row.id, jobId: row.pending_job_id });
        this.deps.log.warn(`handed over the scheduled capture ${row.pending_job_id} of ${row.id}, left behind by a scheduler that stopped`);
      } catch (err) {
        this.deps.log.warn(`could not hand over the scheduled capture ${row.pending_job_id} of ${row.id}: ${(err as Error).message}`);
      }
    }
    return recovered;
  }
}
