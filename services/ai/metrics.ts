/**
 * What an ai instance counts, for GET /metrics (summed over the instances by the api,
 * shared/metrics.ts): analyses of captures by provider and outcome, and the other AI requests
 * (POST /ai/analyze, domain research) by kind, provider and outcome.
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

  private readonly requests = new Counter({
    name: `${P}ai_requests_total`,
    help:
      'AI requests other than analyses of captures, by kind (images: POST /ai/analyze; research: one domain of a domain research job), provider, outcome ' +
      '(success, failure) and error_code (failures only).',
    labelNames: ['kind', 'provider', 'outcome', 'error_code'],
    registers: [this.registry],
  });

  analysed(provider: string, errorCode: string | null): void {
    this.analyses.inc(errorCode ? { provider, outcome: 'failure', error_code: errorCode } : { provider, outcome: 'success' });
  }

  /** The observer of one kind of request besides captures' analyses. */
  of(kind: 'images' | 'research'): AnalysisObserver {
    return {
      analysed: (provider, errorCode) =>
        this.requests.inc(errorCode ? { kind, provider, outcome: 'failure', error_code: errorCode } : { kind, provider, outcome: 'success' }),
    };
  }

  snapshot(): Promise<MetricsSnapshot> {
    return this.registry.getMetricsAsJSON();
  }
}
