/**
 * What a notifier instance counts, for GET /metrics (summed over the instances by the api,
 * shared/metrics.ts): its delivery attempts by outcome, and the deliveries still pending
 * (read from the shared outbox at scrape time, so taken from one instance, not summed).
 */
import type { Knex } from 'knex';
import { Counter, Gauge, Registry } from 'prom-client';
import { METRIC_PREFIX as P, type MetricsSnapshot } from '../shared/metrics';

/** What an attempt led to: delivered, to be tried again, or given up (failed). */
export type AttemptOutcome = 'delivered' | 'retrying' | 'failed';

/** What the dispatcher tells about each attempt it records. */
export interface AttemptObserver {
  attempted(sendTo: string, outcome: AttemptOutcome): void;
}

export class NotifierMetrics implements AttemptObserver {
  readonly registry = new Registry();
  private readonly attempts: Counter<'send_to' | 'outcome'>;

  constructor(db: Knex, log: { warn(...a: unknown[]): void }) {
    const registers = [this.registry];
    this.attempts = new Counter({
      name: `${P}webhook_delivery_attempts_total`,
      help: 'Webhook and Slack delivery attempts recorded, by send_to (webhook, slack) and outcome (delivered, retrying, failed: given up).',
      labelNames: ['send_to', 'outcome'],
      registers,
    });
    new Gauge({
      name: `${P}webhook_deliveries_pending`,
      help: 'Deliveries not yet delivered nor given up (due now or waiting for a retry), read from the outbox.',
      aggregator: 'first',
      registers,
      async collect() {
        try {
          const row = (await db('webhook_deliveries').where('status', 'pending').count({ n: '*' }).first()) as { n: number | string } | undefined;
          this.set(Number(row?.n ?? 0));
        } catch (err) {
          this.reset();
          log.warn(`metrics: the webhook outbox could not be read: ${(err as Error).message}`);
        }
      },
    });
  }

  attempted(sendTo: string, outcome: AttemptOutcome): void {
    this.attempts.inc({ send_to: sendTo, outcome });
  }

  snapshot(): Promise<MetricsSnapshot> {
    return this.registry.getMetricsAsJSON();
  }
}
