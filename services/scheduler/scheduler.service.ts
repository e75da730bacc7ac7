/**
 * scheduler: owns screenshot_configs. Configuration CRUD and the unscheduled configuration
 * each snap belongs to (configs.ts), and schedules: node-schedule ticks, each claiming the
 * due configurations and starting one capture job per slot (schedule-runner.ts). Any
 * number of scheduler instances may run: a due slot is claimed by exactly one.
 */
import type { ServiceSchema } from 'moleculer';
import type { Config } from '../shared/config';
import { type Handler, call } from '../shared/contracts';
import { acquireDatabase, releaseDatabase } from '../shared/database';
import type { ServiceUnit } from '../shared/service-unit';
import { ConfigRepository } from './configs';
import { ScheduleRunner, type Started } from './schedule-runner';

export interface SchedulerDeps {
  config: Readonly<Config>;
  /** Injected for tests (a controllable clock); defaults to Date.now. */
  now?: () => number;
  /** Ticks on their own (node-schedule); tests that drive tick() themselves turn it off. */
  autoTick?: boolean;
}

export interface SchedulerHandle {
  /** One scheduling round now (tests turn autoTick off and drive it); the jobs started. */
  tick(): Promise<Started>;
}

export function schedulerService(deps: SchedulerDeps): ServiceUnit<SchedulerHandle> {
  const { config } = deps;
  const now = deps.now ?? Date.now;
  let configs: ConfigRepository;
  let runner: ScheduleRunner;

  const create: Handler<'scheduler.create'> = (ctx) => configs.create(ctx.params);
  const get: Handler<'scheduler.get'> = (ctx) => configs.get(ctx.params.accountId, ctx.params.id);
  const update: Handler<'scheduler.update'> = (ctx) => configs.update(ctx.params);
  const list: Handler<'scheduler.list'> = (ctx) => configs.list(ctx.params);
  const remove: Handler<'scheduler.remove'> = (ctx) => configs.remove(ctx.params.accountId, ctx.params.id);
  const noteJob: Handler<'scheduler.noteJob'> = async (ctx) => {
    await configs.noteJob(ctx.params.configId, ctx.params.jobId);
    return { ok: true };
  };
  const embedInfo: Handler<'scheduler.embedInfo'> = (ctx) => configs.embedInfo(ctx.params.id);
  const snapConfig: Handler<'scheduler.snapConfig'> = (ctx) => configs.snapConfig(ctx.params);

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
      const db = acquireDatabase(config.database);
      configs = new ConfigRepository(db, config, now);
      runner = new ScheduleRunner({ db, now, log: this.logger, enqueue: (job) => call(this.broker, 'capture.enqueue', job) });
    },
    started() {
      if (deps.autoTick !== false) runner.start(config.schedulerTickSeconds);
    },
    async stopped() {
      runner.stop();
      await releaseDatabase(config.database);
    },
  };
  return { schema, handle: { tick: () => runner.tick() } };
}
