/** Starts the real system in this process for a test, and stops it afterwards. */
import type { ServiceBroker } from 'moleculer';
import type { Config } from '../../services/shared/config';
import { uniqueName } from './backends';
import { call } from '../../services/shared/contracts';
import { type SystemOverrides, httpPort, startSystem } from '../../services/shared/system';
import type { Addon } from '../../services/shared/contracts';

export interface RunningSystem {
  broker: ServiceBroker;
  base: string;
  config: Readonly<Config>;
  account(plan?: string, addons?: Partial<Record<Addon, number>>): Promise<{ account_id: string; access_token: string }>;
  stop(): Promise<void>;
}

export async function runSystem(config: Readonly<Config>, overrides: SystemOverrides = {}): Promise<RunningSystem> {
  // Several brokers share this process in some tests; each needs its own node id.
  const broker = await startSystem({ ...config, nodeId: config.nodeId ?? uniqueName('node-') }, overrides);
  const base = config.services.includes('api') ? `http://127.0.0.1:${httpPort(broker)}` : '';
  return {
    broker,
    base,
    config,
    account: (plan = 'free', addons = {}) => call(broker, 'billing.createAccount', { plan, addons }),
    stop: () => broker.stop(),
  };
}
