/**
 * The composition root: starts the services this process runs (SERVICES) on one broker.
 * bin/serve.ts, the admin CLI, the benchmark and the tests all start the system through
 * here, so there is one code path. It sits above the services: they import shared/, never
 * this file or each other.
 */
import { ServiceBroker } from 'moleculer';
import { brokerOptions } from '../moleculer.config';
import type { ApiHandle } from '../services/api/api.service';
import type { BillingDeps } from '../services/billing/billing.service';
import type { CaptureHandle } from '../services/capture/capture.service';
import type { NotifierDeps, NotifierHandle } from '../services/notifier/notifier.service';
import type { SchedulerDeps, SchedulerHandle } from '../services/scheduler/scheduler.service';
import type { Config } from '../services/shared/config';
import { migrateLatest, pendingMigrations } from '../services/shared/database';
import { tuneHeap } from './heap';

export interface SystemOverrides {
  billing?: Omit<BillingDeps, 'config'>;
  scheduler?: Omit<SchedulerDeps, 'config'>;
  notifier?: Omit<NotifierDeps, 'config'>;
  /** Where log lines go instead of stdout (the admin CLI: stderr). */
  logStream?: { write(line: string): unknown };
}

/** A started system: its broker, and the handles of the services that have one (null when not run here). */
export interface System {
  broker: ServiceBroker;
  api: ApiHandle | null;
  capture: CaptureHandle | null;
  scheduler: SchedulerHandle | null;
  notifier: NotifierHandle | null;
}

/**
 * Stops a started system: first tells capture that shutdown has begun (no new job, no new
 * browser), then stops the broker, letting requests and jobs in flight finish. Every way of
 * stopping the service goes through here.
 *
 * In one process without a transporter (the embedded default), the services but billing are
 * stopped first and billing last: the others settle credits while they drain (a capture cut
 * short by the stop is refunded, a finished one committed), and billing's stop writes the
 * embedded ledger for the last time; stopped beside them, as the broker stops its services, it
 * wrote the counters before those settlements, which then changed memory only and were lost.
 * With a transporter the broker stops as it does (it first tells the other nodes to route
 * nothing more here); billing's counters are then Redis's, which a settlement reaches whenever
 * it comes, retried while billing restarts (billing/public/credits.ts).
 */
export async function stopSystem(system: System): Promise<void> {
  system.capture?.drain();
  const { broker } = system;
  if (!broker.transit) {
    await Promise.all(broker.services.filter((service) => service.name !== 'billing').map((service) => broker.destroyService(service)));
  }
  await broker.stop();
}

/**
 * Without MIGRATE_ON_START (the full stack's default, where `npm run migrate` runs once before the
 * services), a database that has not run this code's migrations is refused at start: its
 * services would answer from tables that are not there yet (a webhook delivery failing on a
 * column, the usage ledger's table missing) with nothing saying to migrate. A database that
 * cannot be reached (or not within 5 s) is left to the services, which say so as they start.
 */
async function refuseUnmigrated(database: Config['database']): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const pending = await Promise.race([
    pendingMigrations(database).catch(() => null),
    new Promise<null>((resolve) => {
      timer = setTimeout(() => resolve(null), 5_000);
    }),
  ]);
  clearTimeout(timer);
  if (!pending?.length) return;
  throw new Error(
    `the database has not run ${pending.length} migration${pending.length === 1 ? '' : 's'} of this release (${pending[0]}${pending.length > 1 ? ', …' : ''}): ` +
      'run `npm run migrate` with the same DATABASE_URL first (the migrate step of docker-compose and the Kubernetes init container do), or set MIGRATE_ON_START=true',
  );
}

export async function startSystem(config: Readonly<Config>, overrides: SystemOverrides = {}): Promise<System> {
  tuneHeap();
  if (config.migrateOnStart) await migrateLatest(config.database);
  else await refuseUnmigrated(config.database);
  const broker = new ServiceBroker(brokerOptions(config, overrides.logStream));
  const runs = (name: Config['services'][number]) => config.services.includes(name);
  const system: System = { broker, api: null, capture: null, scheduler: null, notifier: null };
  // Each service's code is loaded only where it runs: a process of one service (a capture
  // instance, the admin CLI's billing) starts without reading the others' modules and their
  // SDKs (about 1.5 s of CPU for all of them on this machine).
  if (runs('api')) {
    const { apiService } = await import('../services/api/api.service');
    const api = apiService({ config });
    broker.createService(api.schema);
    system.api = api.handle;
  }
  if (runs('billing')) {
    const { billingService } = await import('../services/billing/billing.service');
    broker.createService(billingService({ config, ...(overrides.billing ?? {}) }).schema);
  }
  if (runs('ai')) {
    const { aiService } = await import('../services/ai/ai.service');
    broker.createService(aiService({ config }).schema);
  }
  if (runs('proxy')) {
    const { proxyService } = await import('../services/proxy/proxy.service');
    broker.createService(proxyService({ config }).schema);
  }
  if (runs('capture')) {
    const { captureService } = await import('../services/capture/capture.service');
    const capture = captureService({ config });
    broker.createService(capture.schema);
    system.capture = capture.handle;
  }
  if (runs('scheduler')) {
    const { schedulerService } = await import('../services/scheduler/scheduler.service');
    const scheduler = schedulerService({ config, ...(overrides.scheduler ?? {}) });
    broker.createService(scheduler.schema);
    system.scheduler = scheduler.handle;
  }
  if (runs('notifier')) {
    const { notifierService } = await import('../services/notifier/notifier.service');
    const notifier = notifierService({ config, ...(overrides.notifier ?? {}) });
    broker.createService(notifier.schema);
    system.notifier = notifier.handle;
  }
  await broker.start();
  try {
    await system.api?.listen();
  } catch (err) {
    // The port is taken (or the host wrong): nothing the services started may outlive this.
    await broker.stop();
    throw err;
  }
  return system;
}
