/** Starts the real system in this process for a test, and stops it afterwards. */
import type { ServiceBroker } from 'moleculer';
import type { Config } from '../../services/shared/config';
import { uniqueName } from './backends';
import { call } from '../../services/shared/contracts';
import { type System, type SystemOverrides, startSystem, stopSystem } from '../../runtime/system';
import type { Addon } from '../../services/shared/contracts';

export interface RunningSystem {
  broker: ServiceBroker;
  /** The scheduler's handle, when this system runs it (tests drive tick() themselves). */
  scheduler: System['scheduler'];
  /** The capture service's handle, when this system runs it. */
  capture: System['capture'];
  /** The notifier's handle, when this system runs it (tests drive pump() with a controllable clock). */
  notifier: System['notifier'];
  base: string;
  config: Readonly<Config>;
  account(plan?: string, addons?: Partial<Record<Addon, number>>): Promise<{ account_id: string; access_token: string }>;
  stop(): Promise<void>;
}

export async function runSystem(config: Readonly<Config>, overrides: SystemOverrides = {}): Promise<RunningSystem> {
  // Several brokers share this process in some tests; each needs its own node id.
  const system = await startSystem({ ...config, nodeId: config.nodeId ?? uniqueName('node-') }, overrides);
  const { broker, api, capture, scheduler, notifier } = system;
  const base = api ? `http://127.0.0.1:${api.port()}` : '';
  return {
    broker,
    capture,
    scheduler,
    notifier,
    base,
    config,
    account: (plan = 'free', addons = {}) => call(broker, 'billing.createAccount', { plan, addons }),
    stop: () => stopSystem(system),
  };
}
