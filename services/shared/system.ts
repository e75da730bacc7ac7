/**
 * Starts the services this process runs (SERVICES) on one broker. bin/serve.ts, the admin
 * CLI and the tests all start the system through here, so there is one code path.
 */
import { ServiceBroker, type ServiceSchema } from 'moleculer';
import { brokerOptions } from '../../moleculer.config';
import { aiService } from '../ai/ai.service';
import { apiService } from '../api/api.service';
import { type BillingDeps, billingService } from '../billing/billing.service';
import { captureService } from '../capture/capture.service';
import { proxyService } from '../proxy/proxy.service';
import { type SchedulerDeps, schedulerService } from '../scheduler/scheduler.service';
import type { Config, ServiceName } from './config';
import { migrateLatest } from './database';

export interface SystemOverrides {
  billing?: Omit<BillingDeps, 'config'>;
  scheduler?: Omit<SchedulerDeps, 'config'>;
}

type Factory = (config: Readonly<Config>, overrides: SystemOverrides) => ServiceSchema;

const FACTORIES: Partial<Record<ServiceName, Factory>> = {
  api: (config) => apiService({ config }),
  billing: (config, o) => billingService({ config, ...(o.billing ?? {}) }),
  ai: (config) => aiService({ config }),
  proxy: (config) => proxyService({ config }),
  capture: (config) => captureService({ config }),
  scheduler: (config, o) => schedulerService({ config, ...(o.scheduler ?? {}) }),
};

export async function startSystem(config: Readonly<Config>, overrides: SystemOverrides = {}): Promise<ServiceBroker> {
  if (config.migrateOnStart) await migrateLatest(config.database);
  const broker = new ServiceBroker(brokerOptions(config));
  for (const name of config.services) {
    const factory = FACTORIES[name];
    if (factory) broker.createService(factory(config, overrides));
  }
  await broker.start();
  const api = broker.getLocalService('api') as (ReturnType<ServiceBroker['getLocalService']> & { listen(): Promise<void> }) | undefined;
  if (api) await api.listen();
  return broker;
}

/** The HTTP port the api service listens on in this broker (after start). */
export function httpPort(broker: ServiceBroker): number {
  const api = broker.getLocalService('api');
  if (!api) throw new Error('this broker runs no api service');
  return Number(api.settings.port);
}
