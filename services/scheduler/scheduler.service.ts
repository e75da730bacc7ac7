/**
 * scheduler: owns screenshot_configs. Configuration CRUD and the unscheduled configuration
 * each snap belongs to (configs.ts), and schedules: node-schedule ticks, each claiming the
 * due configurations and starting one capture job per slot, none while the configuration's
 * previous scheduled job still waits (schedule-runner.ts). Any number of scheduler instances
 * may run: a due slot is claimed by exactly one.
 */
import type { Config } from '../shared/config';
import { call } from '../shared/contracts';
import { defineService, ServiceDatabase } from '../shared/define-service';
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
  const database = new ServiceDatabase(config.database);
  let configs: ConfigRepository;
  let runner: ScheduleRunner;

  const schema = defineService('scheduler', {
    database,
    actions: {
      create: (ctx) => configs.create(ctx.params),
      get: (ctx) => configs.get(ctx.params.accountId, ctx.params.id),
      update: (ctx) => configs.update(ctx.params),
      list: (ctx) => configs.list(ctx.params),
      remove: (ctx) => configs.remove(ctx.params.accountId, ctx.params.id),
      noteJob: async (ctx) => ({ noted: await configs.noteJob(ctx.params.configId, ctx.params.jobId) }),
      embedInfo: (ctx) => configs.embedInfo(ctx.params.id),
      snapConfig: (ctx) => configs.snapConfig(ctx.params),
    },
    created() {
      const db = database.knex;
      configs = new ConfigRepository(db, config, now);
      runner = new ScheduleRunner({
        db,
        now,
        log: this.logger,
        enqueue: (job) => call(this.broker, 'capture.enqueue', job),
        withdraw: (of) => call(this.broker, 'capture.deleteForConfig', of),
      });
    },
    started() {
      if (deps.autoTick !== false) runner.start(config.schedulerTickSeconds);
    },
    async stopped() {
      runner.stop();
    },
  });
  return { schema, handle: { tick: () => runner.tick() } };
}
