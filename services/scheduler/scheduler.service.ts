/**
 * scheduler: owns screenshot_configs. Configuration CRUD, the unscheduled configuration
 * each snap belongs to, and schedules: node-schedule ticks, and every tick claims the due
 * configurations with row locks (FOR UPDATE SKIP LOCKED on MySQL), moves each to its next
 * slot and starts one capture job. Any number of scheduler instances may run: a due slot is
 * claimed by exactly one. The next run is stored, so schedules survive restarts; after
 * downtime a configuration captures once (the next slot is the first one after now).
 */
import type { Knex } from 'knex';
import type { LoggerInstance, ServiceBroker, ServiceSchema } from 'moleculer';
import schedule from 'node-schedule';
import type { Config } from '../shared/config';
import { type ConfigView, type Handler, call } from '../shared/contracts';
import { acquireDatabase, isUniqueViolation, releaseDatabase } from '../shared/database';
import { serviceError } from '../shared/errors';
import { embedUrl } from '../shared/links';
import { fetchPage } from '../shared/paging';
import { type ConfigOptions, scheduleOf } from '../shared/screenshot-options';
import { randomId } from '../shared/secrets';
import type { ServiceUnit } from '../shared/service-unit';
import { type Interval, nextRunAfter } from './schedule';

export interface SchedulerDeps {
  config: Readonly<Config>;
  /** Injected for tests (a controllable clock); defaults to Date.now. */
  now?: () => number;
  /** Ticks on their own (node-schedule); tests that drive tick() themselves turn it off. */
  autoTick?: boolean;
}

/** How many due configurations one transaction claims (a tick claims batches until none is due). */
const TICK_BATCH = 50;
/** A tick stops after this many batches, so it ends well before the next (the rest wait one tick). */
const MAX_BATCHES_PER_TICK = 40;
/**
 * A slot marked pending longer than this was claimed by a scheduler that died before the
 * hand-over (which takes one call to capture, bounded by the broker's 15 s timeout).
 */
const PENDING_STALE_MS = 60_000;

interface ConfigRow {
  id: string;
  account_id: string;
  url: string;
  options: string;
  capture_options: string | null;
  scheduled: number | boolean;
  scheduled_every: number | null;
  scheduled_interval: string | null;
  next_run_at_ms: number | string | null;
  schedule_anchor_ms: number | string | null;
  last_job_id: string | null;
  created_at_ms: number | string;
}

export interface SchedulerHandle {
  /** One scheduling round now (tests turn autoTick off and drive it); the jobs started. */
  tick(): Promise<Array<{ configId: string; jobId: string }>>;
}

export function schedulerService(deps: SchedulerDeps): ServiceUnit<SchedulerHandle> {
  const { config } = deps;
  const now = deps.now ?? Date.now;
  let db: Knex;
  let broker: ServiceBroker;
  let logger: LoggerInstance;
  let job: schedule.Job | null = null;
  const isMysql = () => db.client.config.client === 'mysql2';

  const view = (row: ConfigRow): ConfigView => ({
    config: JSON.parse(row.options) as Record<string, unknown>,
    ids: { last_job_id: row.last_job_id, screenshot_config_id: row.id, embed_url: embedUrl(config, row.id) },
    created_at: String(Number(row.created_at_ms)),
  });

  async function own(accountId: string, id: string): Promise<ConfigRow> {
    const row = (await db('screenshot_configs').where({ id, account_id: accountId }).first()) as ConfigRow | undefined;
    if (!row) throw serviceError('not_found', `No screenshot configuration "${id}" in this account.`);
    return row;
  }

  /** Columns describing the schedule (or its absence), anchored at `at`. */
  function scheduleColumns(o: ConfigOptions, at: number) {
    const s = scheduleOf(o);
    if (!s) return { scheduled: false, scheduled_every: null, scheduled_interval: null, next_run_at_ms: null, schedule_anchor_ms: null };
    return {
      scheduled: true,
      scheduled_every: s.every,
      scheduled_interval: s.interval,
      schedule_anchor_ms: at,
      next_run_at_ms: nextRunAfter(at, s.every, s.interval, at),
    };
  }

  const create: Handler<'scheduler.create'> = async (ctx) => {
    const { accountId, input, jobId } = ctx.params;
    const at = now();
    const row = {
      id: randomId(12),
      account_id: accountId,
      url: input.options.url,
      options: JSON.stringify(input.given),
      capture_options: JSON.stringify(input.options),
      last_job_id: jobId,
      created_at_ms: at,
      ...scheduleColumns(input.options, at),
    };
    await db('screenshot_configs').insert(row);
    return view(row as unknown as ConfigRow);
  };

  const get: Handler<'scheduler.get'> = async (ctx) => {
    const row = await own(ctx.params.accountId, ctx.params.id);
    return { ...view(row), options: JSON.parse(row.capture_options ?? row.options) as ConfigOptions };
  };

  /**
   * PATCH: the given options are merged over the stored ones. Leaving out
   * scheduled_screenshot=true makes the configuration one-time; including it keeps (or
   * makes) it scheduled. A changed schedule is anchored anew; an unchanged one keeps its
   * slots. New options apply to the next capture.
   */
  const update: Handler<'scheduler.update'> = async (ctx) => {
    const { accountId, id, input } = ctx.params;
    return db.transaction(async (trx) => {
      let q = trx('screenshot_configs').where({ id, account_id: accountId }).first();
      if (isMysql()) q = q.forUpdate();
      const row = (await q) as ConfigRow | undefined;
      if (!row) throw serviceError('not_found', `No screenshot configuration "${id}" in this account.`);
      const given = { ...(JSON.parse(row.options) as Record<string, unknown>), ...input.given };
      const options = { ...(JSON.parse(row.capture_options ?? '{}') as ConfigOptions), ...input.options };
      if (input.options.scheduled_screenshot !== true) {
        delete given.scheduled_screenshot;
        options.scheduled_screenshot = undefined;
      }
      const at = now();
      const next = scheduleColumns(options, at);
      const unchanged =
        next.scheduled && Boolean(row.scheduled) && next.scheduled_every === row.scheduled_every && next.scheduled_interval === row.scheduled_interval;
      const columns = unchanged ? {} : next;
      const changes = { url: options.url, options: JSON.stringify(given), capture_options: JSON.stringify(options), ...columns };
      await trx('screenshot_configs').where({ id }).update(changes);
      return view({ ...row, ...changes } as ConfigRow);
    });
  };

  const list: Handler<'scheduler.list'> = async (ctx) => {
    const { accountId, paging } = ctx.params;
    const { items, has_more } = await fetchPage(db('screenshot_configs').where({ account_id: accountId }), paging, { table: 'screenshot_configs', columns: ['created_at_ms', 'id'], key: 'id' }, view);
    return { configs: items, has_more };
  };

  const remove: Handler<'scheduler.remove'> = async (ctx) => {
    const row = await own(ctx.params.accountId, ctx.params.id);
    await db('screenshot_configs').where({ id: row.id }).delete();
    return view(row);
  };

  const noteJob: Handler<'scheduler.noteJob'> = async (ctx) => {
    await db('screenshot_configs').where({ id: ctx.params.configId }).update({ last_job_id: ctx.params.jobId });
    return { ok: true };
  };

  const embedInfo: Handler<'scheduler.embedInfo'> = async (ctx) => {
    const row = (await db('screenshot_configs').where({ id: ctx.params.id }).first('options')) as Pick<ConfigRow, 'options'> | undefined;
    if (!row) throw serviceError('not_found', `No screenshot configuration "${ctx.params.id}".`);
    const placeholder = (JSON.parse(row.options) as { placeholder_url?: unknown }).placeholder_url;
    return { placeholder_url: typeof placeholder === 'string' && placeholder !== '' ? placeholder : null };
  };

  const snapConfig: Handler<'scheduler.snapConfig'> = async (ctx) => {
    const { accountId, options, snapKey } = ctx.params;
    const find = () => db('screenshot_configs').where({ account_id: accountId, snap_key: snapKey }).first('id');
    let row = await find();
    if (!row) {
      const id = randomId(12);
      try {
        await db('screenshot_configs').insert({
          id,
          account_id: accountId,
          url: options.url,
          options: JSON.stringify(options),
          capture_options: JSON.stringify(options),
          snap_key: snapKey,
          scheduled: false,
          created_at_ms: now(),
        });
        row = { id };
      } catch (err) {
        // Two snaps of the same page at once: the other one created it.
        if (!isUniqueViolation(err)) throw err;
        row = await find();
      }
    }
    return { id: String(row.id), embed_url: embedUrl(config, String(row.id)) };
  };

  /** Hands a claimed slot's job to capture (idempotent by job id), then clears the slot's mark. */
  async function handOver(row: Pick<ConfigRow, 'id' | 'account_id' | 'capture_options'>, jobId: string): Promise<void> {
    await call(broker, 'capture.enqueue', {
      accountId: row.account_id,
      configId: row.id,
      jobId,
      kind: 'scheduled',
      options: JSON.parse(row.capture_options ?? '{}'),
    });
    await db('screenshot_configs').where({ id: row.id, pending_job_id: jobId }).update({ pending_job_id: null, job_pending_since_ms: null });
  }

  /**
   * Slots claimed by a scheduler that died before handing their job to capture (their mark
   * is older than any hand-over takes): their job is handed over now, under the id the claim
   * recorded, so it runs once (capture.enqueue ignores an id it already has).
   */
  async function recoverPending(at: number): Promise<Array<{ configId: string; jobId: string }>> {
    const stale = await db.transaction(async (trx) => {
      let q = trx('screenshot_configs').whereNotNull('pending_job_id').where('job_pending_since_ms', '<', at - PENDING_STALE_MS).limit(TICK_BATCH);
      if (isMysql()) q = q.forUpdate().skipLocked();
      const rows = (await q.select('id', 'account_id', 'capture_options', 'pending_job_id')) as Array<ConfigRow & { pending_job_id: string }>;
      // Marked again now: other schedulers leave them alone while this one hands them over.
      for (const r of rows) await trx('screenshot_configs').where({ id: r.id }).update({ job_pending_since_ms: at });
      return rows;
    });
    const recovered: Array<{ configId: string; jobId: string }> = [];
    for (const row of stale) {
      try {
        await handOver(row, row.pending_job_id);
        recovered.push({ configId: row.id, jobId: row.pending_job_id });
        logger.warn(`handed over the scheduled capture ${row.pending_job_id} of ${row.id}, left behind by a scheduler that stopped`);
      } catch (err) {
        logger.warn(`could not hand over the scheduled capture ${row.pending_job_id} of ${row.id}: ${(err as Error).message}`);
      }
    }
    return recovered;
  }

  /**
   * One scheduling round: first the jobs of slots a dead scheduler claimed but never handed
   * over; then claims due configurations in batches (locked rows, skipped by other
   * instances), moves each to its first slot after now, marks its job pending in the same
   * transaction, and hands the jobs to capture. Returns the jobs started.
   */
  async function tick(): Promise<Array<{ configId: string; jobId: string }>> {
    const at = now();
    const started = await recoverPending(at);
    for (let round = 0; round < MAX_BATCHES_PER_TICK; round++) {
      const claimed = await db.transaction(async (trx) => {
        let q = trx('screenshot_configs').where('scheduled', true).where('next_run_at_ms', '<=', at).orderBy('next_run_at_ms').limit(TICK_BATCH);
        if (isMysql()) q = q.forUpdate().skipLocked();
        const due = (await q.select('id', 'account_id', 'capture_options', 'scheduled_every', 'scheduled_interval', 'schedule_anchor_ms', 'next_run_at_ms')) as ConfigRow[];
        const out: Array<{ row: ConfigRow; jobId: string }> = [];
        for (const row of due) {
          const jobId = randomId(12);
          const next = nextRunAfter(Number(row.schedule_anchor_ms), Number(row.scheduled_every), row.scheduled_interval as Interval, at);
          await trx('screenshot_configs').where({ id: row.id }).update({ next_run_at_ms: next, last_job_id: jobId, pending_job_id: jobId, job_pending_since_ms: at });
          out.push({ row, jobId });
        }
        return out;
      });
      await Promise.all(
        claimed.map(async ({ row, jobId }) => {
          try {
            await handOver(row, jobId);
            started.push({ configId: row.id, jobId });
          } catch (err) {
            // The job could not be recorded: make the slot due again so the next tick retries it.
            await db('screenshot_configs')
              .where({ id: row.id, pending_job_id: jobId })
              .update({ next_run_at_ms: Number(row.next_run_at_ms), pending_job_id: null, job_pending_since_ms: null });
            logger.warn(`could not start the scheduled capture of ${row.id}: ${(err as Error).message}`);
          }
        }),
      );
      if (claimed.length < TICK_BATCH) break;
    }
    return started;
  }

  const schema: ServiceSchema = {
    name: 'scheduler',
    actions: {
      create: { handler: create },
      get: { handler: get },
      update: { handler: update },
      list: { handler: list },
      remove: { handler: remove },
      noteJob: { handler: noteJob },
      embedInfo: { handler: embedInfo },
      snapConfig: { handler: snapConfig },
    },
    created() {
      db = acquireDatabase(config.database);
      broker = this.broker;
      logger = this.logger;
    },
    started() {
      if (deps.autoTick === false) return;
      // Every few seconds: a slot is at most one tick late.
      // One tick at a time per instance: a tick that overruns its interval (a large round,
      // a stalled machine) is not joined by the next; that one is skipped.
      let ticking = false;
      job = schedule.scheduleJob(`*/${config.schedulerTickSeconds} * * * * *`, () => {
        if (ticking) return;
        ticking = true;
        tick()
          .catch((err: Error) => logger.warn(`scheduler tick failed: ${err.message}`))
          .finally(() => {
            ticking = false;
          });
      });
    },
    async stopped() {
      job?.cancel();
      await releaseDatabase(config.database);
    },
  };
  return { schema, handle: { tick } };
}
