/**
 * A cluster for tests across capture instances: MariaDB, Redis and NATS (a fresh database,
 * key prefix and namespace), the api, billing, scheduler, ai and proxy services in this
 * process, and capture instances as processes of their own (which a test may SIGKILL) on
 * the shared Grid.
 */
import knex, { type Knex } from 'knex';
import type { Config } from '../../services/shared/config';
import { knexConfig } from '../../services/shared/database';
import { NATS_URL, backendConfig, uniqueName } from './backends';
import { endSessionsStartedSince, sharedGrid } from './grid';
import { type ServiceProcess, startServeProcess } from './processes';
import { type RunningSystem, runSystem } from './system';
import { until } from './wait';

export interface CaptureCluster {
  config: Readonly<Config>;
  /** The cluster's database, for looking at jobs and screenshots. */
  db: Knex;
  /** The services other than capture, in this process. */
  front: RunningSystem;
  /** Starts one more capture instance (a process); stopped with the cluster unless it is gone already. */
  startCapture(): Promise<ServiceProcess>;
  /** Starts `n` capture instances and waits until the services here see every one of them. */
  startCaptures(n: number): Promise<ServiceProcess[]>;
  stop(): Promise<void>;
}

/**
 * `env` adds to or overrides the settings of every process (CAPTURE_SESSIONS, CAPTURE_JOB_LEASE_MS, ...);
 * `front` are the services run in this process (the notifier too, for a test of its deliveries).
 */
export async function startCaptureCluster(
  env: Record<string, string>,
  front: Config['services'] = ['api', 'billing', 'scheduler', 'ai', 'proxy'],
): Promise<CaptureCluster> {
  const grid = await sharedGrid();
  const started = new Date();
  const b = await backendConfig('mysql', {
    TRANSPORTER: NATS_URL,
    NAMESPACE: uniqueName('ns'),
    SELENIUM_URL: grid.url,
    ALLOW_PRIVATE_NETWORKS: 'true',
    ...env,
  });
  const db = knex(knexConfig(b.config.database));
  const system = await runSystem({ ...b.config, services: front });
  const captures: ServiceProcess[] = [];
  const startCapture = async () => {
    const capture = await startServeProcess({ ...b.env, SERVICES: 'capture', MIGRATE_ON_START: 'false', PORT: '0' }, /ServiceBroker .* started/, {
      timeoutMs: 60_000,
    });
    captures.push(capture);
    return capture;
  };
  return {
    config: b.config,
    db,
    front: system,
    startCapture,
    async startCaptures(n) {
      const started: ServiceProcess[] = [];
      for (let i = 0; i < n; i++) started.push(await startCapture());
      const seen = () => system.broker.registry.getServiceList({ onlyAvailable: true }).filter((s) => s.name === 'capture').length;
      await until(`${n} capture instances`, async () => seen() >= n);
      return started;
    },
    async stop() {
      for (const capture of captures.reverse()) await capture.stop();
      // A capture process a test killed with no instance left to end its Grid sessions left them behind.
      await endSessionsStartedSince(grid, started);
      await system.stop();
      await db.destroy();
      await b.cleanup();
    },
  };
}
