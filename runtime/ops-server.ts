/**
 * OPS_PORT: a small HTTP listener for a process that does not run the api (a capture,
 * notifier or scheduler container), so a supervisor can check it and Prometheus can scrape
 * it on its own: GET /health (this process is up and, if it runs capture, has a live
 * browser) and GET /metrics (this process's own metrics only; the api's /metrics is the
 * whole cluster's). Nothing else is served; answers use the API's envelope.
 */
import http from 'node:http';
import type { ServiceBroker } from 'moleculer';
import { call } from '../services/shared/contracts';
import { type ErrorCode, toEnvelope } from '../services/shared/errors';
import {
  METERED_SERVICES,
  type MetricsSnapshot,
  PROMETHEUS_CONTENT_TYPE,
  type ScrapeReport,
  checkMetricsToken,
  mergeSnapshots,
} from '../services/shared/metrics';

export interface OpsServer {
  port: number;
  close(): Promise<void>;
}

function envelope(res: http.ServerResponse, status: number, error_code: ErrorCode, note: string): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify({ success: false, error_code, note }));
}

/** Why this process is not ready, or null when it is. */
async function notReady(broker: ServiceBroker, runs: (service: string) => boolean): Promise<string | null> {
  if (!broker.started) return 'The process is still starting.';
  if (!runs('capture')) return null;
  const pressure = await call(broker, 'capture.pressure', {}, { nodeID: broker.nodeID, timeout: 3_000, tracking: false });
  return pressure.slots > 0 ? null : 'No browser session is up yet on this capture instance (the Grid may be full or unreachable).';
}

/** This process's metered services' metrics, merged. */
async function ownMetrics(broker: ServiceBroker, runs: (service: string) => boolean): Promise<string> {
  const snapshots: MetricsSnapshot[] = [];
  const reports: ScrapeReport[] = [];
  for (const service of METERED_SERVICES) {
    if (!runs(service)) continue;
    snapshots.push(await call(broker, `${service}.metrics`, {}, { nodeID: broker.nodeID, timeout: 3_000, tracking: false }));
    reports.push({ service, answered: 1, failed: 0 });
  }
  return mergeSnapshots(snapshots, reports);
}

/** `metricsToken`: METRICS_TOKEN, which /metrics then needs here too (as on the api). */
export async function startOpsServer(
  broker: ServiceBroker,
  services: readonly string[],
  port: number,
  host: string,
  metricsToken: string | null,
): Promise<OpsServer> {
  const runs = (service: string) => services.includes(service);
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const answer = async () => {
      if (req.method !== 'GET' && req.method !== 'HEAD')
        return envelope(res, 405, 'method_not_allowed', 'The ops port answers GET /health and GET /metrics only.');
      if (path === '/health') {
        const why = await notReady(broker, runs);
        if (why) return envelope(res, 503, 'not_ready', why);
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' });
        return res.end(JSON.stringify({ success: true }));
      }
      if (path === '/metrics') {
        const query = new URL(req.url ?? '/', 'http://ops').searchParams;
        checkMetricsToken(metricsToken, query.get('access_token') ?? undefined, req.headers.authorization);
        const text = await ownMetrics(broker, runs);
        res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
        return res.end(text);
      }
      return envelope(res, 404, 'not_found', `There is no ${path} on the ops port; it answers GET /health and GET /metrics.`);
    };
    answer().catch((err) => {
      const e = toEnvelope(err);
      envelope(res, e.status, e.body.error_code, e.body.note);
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
