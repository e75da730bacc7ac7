/**
 * Metrics across the cluster. Each service that has something to count (capture, notifier,
 * ai) keeps a prom-client Registry of its own and answers a `metrics` action with
 * `registry.getMetricsAsJSON()`; the api asks every node that runs such a service (a
 * separate process each, in the full stack) and merges the answers with prom-client's
 * AggregatorRegistry: counters and histograms are summed over the nodes, and gauges read
 * from the shared database at scrape time are marked `aggregator: 'first'` by their owner,
 * so that two instances reading the same rows do not double them.
 *
 * No metric here lives in prom-client's global registry: several brokers share one process
 * in tests (and could in a deployment), and each service instance counts for itself.
 */
import type { ServiceBroker } from 'moleculer';
import { AggregatorRegistry, Gauge, Registry } from 'prom-client';
import { type ActionName, type MetricsSnapshot, type ParamsOf, type ResultOf, call } from './contracts';
import { serviceError } from './errors';
import { sameSecret } from './secrets';

/** Every metric name starts with this. */
export const METRIC_PREFIX = 'snap_';

export type { MetricsSnapshot } from './contracts';

/** The services that answer a `metrics` action. */
export const METERED_SERVICES = ['api', 'billing', 'capture', 'notifier', 'ai'] as const;
export type MeteredService = (typeof METERED_SERVICES)[number];

/** How long one node may take to answer a metrics or pressure call before it is skipped. */
export const NODE_CALL_TIMEOUT_MS = 3_000;

/** The nodes where `service` runs now, from the broker's registry (this process's own included). */
export function nodesOf(broker: ServiceBroker, service: string): string[] {
  const list = broker.registry.getServiceList({ onlyAvailable: true, skipInternal: true }) as Array<{ name: string; nodeID: string }>;
  return [...new Set(list.filter((s) => s.name === service).map((s) => s.nodeID))].sort();
}

/** What every node of a service answered to one action; nodes that failed or did not answer in time are listed, not thrown. */
export interface NodeAnswers<T> {
  answers: Array<{ nodeID: string; value: T }>;
  failed: string[];
}

/** Calls `action` on each node that runs its service, at once, each bounded by `timeoutMs`. */
export async function callEveryNode<A extends ActionName>(
  broker: ServiceBroker,
  action: A,
  params: ParamsOf<A>,
  timeoutMs = NODE_CALL_TIMEOUT_MS,
): Promise<NodeAnswers<ResultOf<A>>> {
  const service = action.split('.')[0] ?? action;
  const nodes = nodesOf(broker, service);
  // Untracked: Moleculer keeps a timed-out remote call in its list of running contexts for
  // good (the answer it gave up on never settles it), and broker.stop() would then wait its
  // whole shutdown timeout for a read that nobody needs.
  const settled = await Promise.allSettled(nodes.map((nodeID) => call(broker, action, params, { nodeID, timeout: timeoutMs, tracking: false })));
  const out: NodeAnswers<ResultOf<A>> = { answers: [], failed: [] };
  settled.forEach((r, i) => {
    const nodeID = nodes[i] as string;
    if (r.status === 'fulfilled') out.answers.push({ nodeID, value: r.value });
    else out.failed.push(nodeID);
  });
  return out;
}

/** How one service's nodes answered a scrape. */
export interface ScrapeReport {
  service: string;
  answered: number;
  failed: number;
}

/**
 * The Prometheus text of the merged snapshots, with two gauges about the scrape itself:
 * the nodes of each service that answered, and those that did not (their counters are
 * missing from this scrape, so a sum may dip: Prometheus' rate() treats it as a reset).
 */
export async function mergeSnapshots(snapshots: MetricsSnapshot[], reports: ScrapeReport[]): Promise<string> {
  const meta = new Registry();
  const nodes = new Gauge({
    name: `${METRIC_PREFIX}metrics_scrape_nodes`,
    help: 'Nodes of each service whose metrics are in this scrape.',
    labelNames: ['service'],
    registers: [meta],
  });
  const errors = new Gauge({
    name: `${METRIC_PREFIX}metrics_scrape_errors`,
    help: 'Nodes of each service that did not answer this scrape in time (their counters are missing from it).',
    labelNames: ['service'],
    registers: [meta],
  });
  for (const r of reports) {
    nodes.set({ service: r.service }, r.answered);
    errors.set({ service: r.service }, r.failed);
  }
  const merged = AggregatorRegistry.aggregate([...snapshots, await meta.getMetricsAsJSON()]);
  return merged.metrics();
}

/** Prometheus' text exposition format, version 0.0.4. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** METRICS_TOKEN, when set: as `Authorization: Bearer` (Prometheus' `authorization` setting) or the access_token parameter. */
export function checkMetricsToken(token: string | null, given: unknown, header: string | undefined): void {
  if (token === null) return;
  const bearer = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header)?.[1] : undefined;
  const sent = typeof given === 'string' && given !== '' ? given : bearer;
  if (!sent)
    throw serviceError(
      'access_token_required',
      'This server protects /metrics with METRICS_TOKEN: send "Authorization: Bearer <METRICS_TOKEN>" (or the access_token parameter).',
    );
  if (!sameSecret(sent, token)) throw serviceError('access_token_invalid', 'The token does not match METRICS_TOKEN.');
}
