/**
 * What a billing instance counts, for GET /metrics (merged over the instances by the api,
 * shared/metrics.ts): reservations refused because a monthly quota ran out, by kind, and the
 * accounts that ran out of each kind this month (read from the shared usage store at scrape
 * time, so taken from one instance, not summed). Many accounts running out at once is a sign
 * of a wrong plan or a runaway client (the SnapAccountsOutOfQuota alert).
 */
import { Counter, Gauge, Registry } from 'prom-client';
import type { UsageKind } from '../shared/contracts';
import { METRIC_PREFIX as P, type MetricsSnapshot } from '../shared/metrics';
import { USAGE_KINDS, type UsageStore } from './usage-store';

export class BillingMetrics {
  readonly registry = new Registry();
  private readonly refusals: Counter<'kind'>;

  constructor(store: () => UsageStore, month: () => string, log: { warn(...a: unknown[]): void }) {
    const registers = [this.registry];
    this.refusals = new Counter({
      name: `${P}quota_refusals_total`,
      help: 'Reservations refused because the monthly quota of a kind (screenshots, ai_credits, bandwidth_bytes) ran out: answered 402.',
      labelNames: ['kind'],
      registers,
    });
    for (const kind of USAGE_KINDS) this.refusals.inc({ kind }, 0);
    new Gauge({
      name: `${P}accounts_quota_exhausted`,
      help: 'Accounts that ran out of each kind of monthly quota this month (UTC), over every instance.',
      labelNames: ['kind'],
      aggregator: 'first',
      registers,
      async collect() {
        try {
          const counts = await Promise.all(USAGE_KINDS.map((kind) => store().exhaustedAccounts(kind, month())));
          for (const [i, kind] of USAGE_KINDS.entries()) this.set({ kind }, counts[i] ?? 0);
        } catch (err) {
          this.reset();
          log.warn(`metrics: the usage store could not be read: ${(err as Error).message}`);
        }
      },
    });
  }

  refused(kind: UsageKind): void {
    this.refusals.inc({ kind });
  }

  snapshot(): Promise<MetricsSnapshot> {
    return this.registry.getMetricsAsJSON();
  }
}
