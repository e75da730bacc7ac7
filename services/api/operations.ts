/**
 * The operator's endpoints: GET /health (ready once a browser is), GET /pressure (load of
 * the capture nodes, for load balancers and autoscalers) and GET /metrics (Prometheus
 * text). Each asks every node of the cluster that runs the service concerned, not only
 * this process: in the full stack the api runs apart from the capture, notifier and ai
 * instances (shared/metrics.ts). A node that does not answer in time is left out and
 * counted, never fails the answer.
 */
import type { ServiceBroker } from 'moleculer';
import type { Config } from '../shared/config';
import type { NodePressure } from '../shared/contracts';
import { serviceError } from '../shared/errors';
import {
  METERED_SERVICES,
  type MetricsSnapshot,
  type NodeAnswers,
  PROMETHEUS_CONTENT_TYPE,
  type ScrapeReport,
  callEveryNode,
  checkMetricsToken,
  mergeSnapshots,
} from '../shared/metrics';
import type { RouteDef } from './http';

/** GET /pressure's answer (browserless' /pressure, in this API's snake_case). */
export interface ClusterPressure {
  /** When this was measured, epoch ms. */
  date: number;
  /** Whether a new capture would now get a browser or a place in a queue. */
  is_available: boolean;
  /** One word: '' when available, else full, no_browsers or no_capture_nodes. */
  reason: '' | 'full' | 'no_browsers' | 'no_capture_nodes';
  /** The reason in words ('' when available). */
  message: string;
  /** Captures holding a browser, on every capture node. */
  running: number;
  /** Captures waiting for a browser. */
  queued: number;
  /** Browsers alive: the captures that can run at once. */
  max_concurrent: number;
  /** Captures that may wait (the nodes' CAPTURE_QUEUE_MAX, summed). */
  max_queued: number;
  /** Browsers the nodes are configured to keep (CAPTURE_SESSIONS, summed). */
  slots_configured: number;
  /** Captures refused with capacity_exhausted in the last minute. */
  recently_rejected: number;
  /** Capture nodes that answered. */
  nodes: number;
  /** Capture nodes registered that did not answer in time (left out of the sums). */
  nodes_unreachable: number;
}

/** Whether one capture node takes a new capture now: a live browser free, or room in its queue. */
function accepts(p: NodePressure): boolean {
  return p.slots > 0 && (p.running < p.slots || p.queued < p.queue_max);
}

/** The capture nodes' answers, summed into the cluster's pressure. */
export function clusterPressure(nodes: NodeAnswers<NodePressure>, now: number): ClusterPressure {
  const all = nodes.answers.map((a) => a.value);
  const sum = (f: (p: NodePressure) => number) => all.reduce((n, p) => n + f(p), 0);
  const base = {
    running: sum((p) => p.running),
    queued: sum((p) => p.queued),
    max_concurrent: sum((p) => p.slots),
    max_queued: sum((p) => p.queue_max),
    slots_configured: sum((p) => p.slots_configured),
    recently_rejected: sum((p) => p.recently_rejected),
    nodes: all.length,
    nodes_unreachable: nodes.failed.length,
  };
  const unavailable = (reason: ClusterPressure['reason'], message: string): ClusterPressure => ({ date: now, is_available: false, reason, message, ...base });
  if (all.length === 0) {
    return unavailable(
      'no_capture_nodes',
      nodes.failed.length ? `No capture node answered (${nodes.failed.length} registered did not answer in time).` : 'No capture service is running.',
    );
  }
  if (base.max_concurrent === 0) return unavailable('no_browsers', 'No capture node has a live browser (starting, or the Grid is unreachable).');
  if (!all.some(accepts)) return unavailable('full', 'Every browser is busy and every wait queue is full.');
  return { date: now, is_available: true, reason: '', message: '', ...base };
}

/** Why the cluster is not ready (no live browser on any capture node), or null when it is. */
export function notReadyBecause(nodes: NodeAnswers<NodePressure>): string | null {
  if (nodes.answers.some((a) => a.value.slots > 0)) return null;
  const unreachable = nodes.failed.length ? ` ${nodes.failed.length} capture node(s) did not answer in time.` : '';
  if (nodes.answers.length === 0) {
    return (
      `Not ready: no capture service is running, so no capture can be taken.${unreachable} Start one (SERVICES=capture) on the same TRANSPORTER and ` +
      `NAMESPACE.`
    );
  }
  return (
    `Not ready: ${nodes.answers.length} capture node(s) are running but none has a live browser yet (browsers still starting, or the Grid at ` +
    `SELENIUM_URL has no free slot).${unreachable}`
  );
}

/** GET /metrics: every metered service's nodes, merged (shared/metrics.ts). */
export async function clusterMetrics(broker: ServiceBroker): Promise<string> {
  const snapshots: MetricsSnapshot[] = [];
  const reports: ScrapeReport[] = [];
  await Promise.all(
    METERED_SERVICES.map(async (service) => {
      const nodes = await callEveryNode(broker, `${service}.metrics`, {});
      for (const a of nodes.answers) snapshots.push(a.value);
      reports.push({ service, answered: nodes.answers.length, failed: nodes.failed.length });
    }),
  );
  return mergeSnapshots(snapshots, reports);
}

const PRESSURE_SCHEMA = {
  type: 'object',
  properties: {
    pressure: {
      type: 'object',
      properties: {
        date: { type: 'integer' },
        is_available: { type: 'boolean' },
        reason: { type: 'string', enum: ['', 'full', 'no_browsers', 'no_capture_nodes'] },
        message: { type: 'string' },
        running: { type: 'integer' },
        queued: { type: 'integer' },
        max_concurrent: { type: 'integer' },
        max_queued: { type: 'integer' },
        slots_configured: { type: 'integer' },
        recently_rejected: { type: 'integer' },
        nodes: { type: 'integer' },
        nodes_unreachable: { type: 'integer' },
      },
    },
  },
};

export function operationRoutes(config: Pick<Config, 'metricsToken'>): RouteDef[] {
  return [
    {
      method: 'GET',
      url: '/health',
      summary: 'Readiness: 200 once a capture node has a live browser; before that 503 not_ready, the note saying what is missing.',
      tag: 'operations',
      auth: false,
      response: { type: 'object', properties: { success: { type: 'boolean' } } },
      errors: ['not_ready'],
      handler: async ({ broker }) => {
        const why = notReadyBecause(await callEveryNode(broker, 'capture.pressure', {}));
        if (why) throw serviceError('not_ready', why);
        return { success: true };
      },
    },
    {
      method: 'GET',
      url: '/pressure',
      summary: 'Load of every capture node, summed: 200 when a new capture would get a browser or a queue place, 503 (same body) when not.',
      tag: 'operations',
      auth: false,
      response: PRESSURE_SCHEMA,
      errors: [],
      handler: async ({ broker, reply }) => {
        const pressure = clusterPressure(await callEveryNode(broker, 'capture.pressure', {}), Date.now());
        return reply
          .code(pressure.is_available ? 200 : 503)
          .header('cache-control', 'no-store')
          .send({ pressure });
      },
    },
    {
      method: 'GET',
      url: '/metrics',
      summary: 'Prometheus text of every capture, notifier and ai node, merged. With METRICS_TOKEN set, needs Authorization: Bearer <METRICS_TOKEN>.',
      tag: 'operations',
      auth: false,
      response: { contentTypes: [PROMETHEUS_CONTENT_TYPE] },
      errors: config.metricsToken ? ['access_token_required', 'access_token_invalid'] : [],
      handler: async ({ broker, raw, request, reply }) => {
        checkMetricsToken(config.metricsToken, raw.access_token, request.headers.authorization);
        const text = await clusterMetrics(broker);
        return reply.code(200).header('content-type', PROMETHEUS_CONTENT_TYPE).header('cache-control', 'no-store').send(text);
      },
    },
  ];
}
