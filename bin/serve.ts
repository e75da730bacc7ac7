/**
 * `npm start`: runs the services named by SERVICES (default: all) in this process.
 * Stops cleanly on SIGINT/SIGTERM.
 */
import { type Config, ConfigError, loadConfig } from '../services/shared/config';
import { startOpsServer } from '../services/shared/ops-server';
import { startSystem, stopSystem } from '../services/system';

async function main(): Promise<void> {
  let config: Readonly<Config>;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      console.error(`Configuration error: ${err.message}`);
      process.exit(2);
    }
    throw err;
  }
  const system = await startSystem(config);
  const ops =
    config.opsPort === null
      ? null
      : await startOpsServer(system.broker, config.services, config.opsPort, config.host).catch(async (err) => {
          await stopSystem(system); // the port is taken: nothing started may outlive this
          throw err;
        });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await ops?.close();
    await stopSystem(system);
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  if (ops) console.log(`Ops endpoints on port ${ops.port}: /health and /metrics of this process`);
  if (config.services.includes('api')) {
    console.log(`Screenshot service ready on ${config.baseUrl} (health: ${config.baseUrl}/health, docs: ${config.baseUrl}/docs)`);
  }
}

main().catch((err) => {
  console.error('Failed to start:', err instanceof Error ? err.message : err);
  process.exit(1);
});
