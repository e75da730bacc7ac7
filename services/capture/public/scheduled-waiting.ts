/**
 * Which configurations have a scheduled capture still waiting in the jobs queue (queued: no
 * worker has started it), as the scheduler asks inside its claim of due slots: a slot that
 * falls due while its configuration's previous scheduled capture waits is skipped, so a
 * backlog holds at most one scheduled capture per configuration. A job a worker has started
 * (running), or one a client asked for (`config`: a configuration's first capture, capture
 * now), does not count. This is the only code outside capture that reads the jobs table, and
 * it only reads: the queue itself is services/capture/jobs/jobs.ts.
 */
import type { Knex } from 'knex';

/**
 * Of `configs`, those with a scheduled job queued and not yet started, each with that job's id,
 * read in the caller's transaction. Read through the queue's own index (status, kind, account):
 * the waiting jobs of the configurations' accounts, not every job a configuration ever had.
 */
export async function scheduledJobsWaiting(
  db: Knex | Knex.Transaction,
  configs: ReadonlyArray<{ id: string; account_id: string }>,
): Promise<Map<string, string>> {
  const waiting = new Map<string, string>();
  if (configs.length === 0) return waiting;
  const rows = (await db('jobs')
    .where({ status: 'queued', kind: 'scheduled' })
    .whereIn('account_id', [...new Set(configs.map((c) => c.account_id))])
    .whereIn(
      'config_id',
      configs.map((c) => c.id),
    )
    .select('config_id', 'id')) as Array<{ config_id: string; id: string }>;
  for (const r of rows) if (!waiting.has(r.config_id)) waiting.set(r.config_id, r.id);
  return waiting;
}
