/**
 * What an api instance counts, for GET /metrics (summed over the api instances, as the
 * other services' registries are: shared/metrics.ts): the client markers requests carried
 * (client-compat.ts), so an operator sees which official clients call.
 */
import { Counter, Registry } from 'prom-client';
import { METRIC_PREFIX as P, type MetricsSnapshot } from '../shared/metrics';
import type { ClientMarker } from './client-compat';

/** What the HTTP layer tells about each request. */
export interface RequestObserver {
  clientMarkers(markers: ClientMarker[]): void;
}

export class ApiMetrics implements RequestObserver {
  readonly registry = new Registry();
  private readonly markers: Counter<'client' | 'marker'>;

  constructor() {
    this.markers = new Counter({
      name: `${P}api_client_markers_total`,
      help: 'Parameters and headers that only say which official client called (mcp, microsoft, json on an endpoint that always answers JSON, X-MCP-Subject), accepted and ignored, by client kind and marker.',
      labelNames: ['client', 'marker'],
      registers: [this.registry],
    });
  }

  clientMarkers(markers: ClientMarker[]): void {
    for (const m of markers) this.markers.inc({ client: m.client, marker: m.marker });
  }

  snapshot(): Promise<MetricsSnapshot> {
    return this.registry.getMetricsAsJSON();
  }
}
