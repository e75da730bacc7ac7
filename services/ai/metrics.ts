/**
 * What an ai instance counts, for GET /metrics (summed over the instances by the api,
 * shared/metrics.ts): analyses of captures by provider and outcome.
 */
import { Counter, Registry } from 'prom-client';
import { METRIC_PREFIX as P, type MetricsSnapshot } from '../shared/metrics';

/** What CaptureAnalysis tells about each analysis. */
export interface AnalysisObserver {
  analysed(provider: string, errorCode: string | null): void;
}

export class AiMetrics implements AnalysisObserver {
  readonly registry = new Registry();
  private readonly analyses = new Counter({
    name: `${P}ai_analyses_total`,
    help: 'Analyses of captures, by provider (service, anthropic, openai, openrouter), outcome (success, failure) and error_code (failures only).',
    labelNames: ['provider', 'outcome', 'error_code'],
    registers: [this.registry],
  });

  analysed(provider: string, errorCode: string | null): void {
    this.analyses.inc(errorCode ? { provider, outcome: 'failure', error_code: errorCode } : { provider, outcome: 'success' });
  }

  snapshot(): Promise<MetricsSnapshot> {
    return this.registry.getMetricsAsJSON();
  }
}
