/**
 * `npm start`: runs the services named by SERVICES (default: all) in this process.
 * Stops cleanly on SIGINT, SIGTERM and SIGHUP, one that comes while it starts included (it
 * stops once started). Everything it prints is a log line (JSON by default,
 * see services/shared/logging.ts), the readiness line included.
 */
import net from 'node:net';
import { Utils } from 'moleculer';
import { type Config, ConfigError, loadConfig } from '../services/shared/config';
import { startupLine } from '../services/shared/logging';
import { startOpsServer } from '../runtime/ops-server';
import { startSystem, stopSystem } from '../runtime/system';

/** How long a process that crashed may take to stop what it started before it exits anyway. */
const CRASH_STOP_MS = 10_000;
/** How long a signal that came while the services start waits for the start to end (the embedded default's takes up to 15 s). */
const START_STOP_MS = 30_000;

/**
 * PORT=0 without BASE_URL: a free port is picked before the configuration is read, so the
 * address the service writes into its links (BASE_URL's default, http://localhost:$PORT) names
 * the port it listens on, not port 0.
 */
async function withPortPicked(env: NodeJS.ProcessEnv): Promise<NodeJS.ProcessEnv> {
  if (env.PORT?.trim() !== '0' || env.BASE_URL) return env;
  // Read (and checked) as the service reads it: a bad HOST is a configuration error here too.
  const { host } = loadConfig(env);
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, host, resolve);
  });
  const { port } = probe.address() as net.AddressInfo;
  await new Promise((resolve) => probe.close(resolve));
  return { ...env, PORT: String(port) };
}

async function main(): Promise<void> {
  let config: Readonly<Config>;
  try {
    config = loadConfig(await withPortPicked(process.env));
  } catch (err) {
    if (err instanceof ConfigError) {
      // No configuration, so no LOG_FORMAT: the default format.
      process.stderr.write(`${startupLine('fatal', `Configuration error: ${err.message}`)}\n`);
      process.exit(2);
    }
    throw err;
  }
  // Listened to from the start: a signal while the services start (browsers launching) stops
  // them once started, where Node's default would end the process at once. Listened to for good,
  // not once: a signal that comes again while stopping is ignored. Ctrl-C under `npm start`
  // delivers SIGINT twice (from the terminal, and from npm, which hands it on). SIGHUP (the
  // terminal or SSH session closed) stops it as SIGTERM does.
  let onSignal: () => void = () => undefined;
  let signalled = false;
  // A start that does not end (the full stack waiting for an unreachable transporter) is not
  // waited for longer than START_STOP_MS after a signal: the process exits as the signal's
  // default would (its ChromeDrivers and browsers end with it, local-driver.ts).
  let started = false;
  let startCutOff: NodeJS.Timeout | null = null;
  const signal = () => {
    if (!started && startCutOff === null) startCutOff = setTimeout(() => process.exit(128 + 15), START_STOP_MS).unref();
    signalled = true;
    onSignal();
  };
  for (const name of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(name, signal);
  let system: Awaited<ReturnType<typeof startSystem>>;
  try {
    system = await startSystem(config);
    started = true;
    if (startCutOff) clearTimeout(startCutOff);
  } catch (err) {
    // The node it would have been (NODE_ID, or Moleculer's own default: host name and process id), as its other lines name it.
    const nodeID = config.nodeId ?? Utils.getNodeID();
    process.stderr.write(`${startupLine('fatal', `Failed to start: ${err instanceof Error ? err.message : String(err)}`, config.logFormat, nodeID)}\n`);
    process.exit(1);
  }
  const { broker } = system;
  let ops: Awaited<ReturnType<typeof startOpsServer>> | null = null;
  let stopping = false;
  /** Stops what this process started (browsers, drivers, servers), then exits; after a crash, within CRASH_STOP_MS whatever happens. */
  const shutdown = async (code: number, deadlineMs: number | null) => {
    if (stopping) return;
    stopping = true;
    const stopped = (async () => {
      await ops?.close();
      await stopSystem(system);
    })();
    if (deadlineMs === null) await stopped;
    else await Promise.race([stopped.catch(() => undefined), new Promise((r) => setTimeout(r, deadlineMs).unref())]);
    process.exit(code);
  };
  // A crash is a log line too (JSON, redacted), not Node's plain stack trace; the browsers
  // this process started are quit before it exits, as on a signal.
  process.on('uncaughtException', (err) => {
    process.stderr.write(`${startupLine('fatal', 'uncaught exception; stopping and exiting', config.logFormat, broker.nodeID, err)}\n`);
    void shutdown(1, CRASH_STOP_MS);
  });
  if (config.opsPort !== null) {
    ops = await startOpsServer(system.broker, config.services, config.opsPort, config.host, config.metricsToken).catch(async (err) => {
      await stopSystem(system); // the port is taken: nothing started may outlive this
      throw err;
    });
  }
  const stop = () => void shutdown(0, null);
  onSignal = stop;
  if (signalled) {
    stop();
    return;
  }
  if (config.stopOnStdinEnd) {
    // The supervisor holds the other end of this pipe: when it dies, whatever killed it
    // (SIGKILL included), the pipe closes and this process stops as on SIGTERM.
    process.stdin.on('end', stop);
    process.stdin.on('error', stop);
    process.stdin.resume();
  }
  // Written whatever LOG_LEVEL says, like the ready line below: supervisors (npm run stack) wait for it.
  process.stdout.write(`${startupLine('info', `Services started: ${config.services.join(',')}`, config.logFormat, broker.nodeID)}\n`);
  if (ops)
    process.stdout.write(
      `${startupLine('info', `Ops endpoints on port ${ops.port}: /health and /metrics of this process`, config.logFormat, broker.nodeID)}\n`,
    );
  if (config.services.includes('api')) {
    // Written whatever LOG_LEVEL says: scripts and tests wait for this line.
    const ready = `Screenshot service ready on ${config.baseUrl} (health: ${config.baseUrl}/health, docs: ${config.baseUrl}/docs)`;
    process.stdout.write(`${startupLine('info', ready, config.logFormat, broker.nodeID)}\n`);
  }
}

main().catch((err) => {
  process.stderr.write(`${startupLine('fatal', `Failed to start: ${err instanceof Error ? err.message : String(err)}`)}\n`);
  process.exit(1);
});
