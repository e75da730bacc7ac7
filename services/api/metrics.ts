/**
 * What an api instance counts, for GET /metrics (summed over the api instances, as the
 * other services' registries are: shared/metrics.ts): the client markers requests carried
 * (client-compat.ts), so an operator sees which official clients call, and the tool calls of
 * the MCP endpoint (mcp-http.ts) by tool and outcome.
 */
import { Counter, Histogram, Registry } from 'prom-client';
import { METRIC_PREFIX as P, type MetricsSnapshot } from '../shared/metrics';
import type { ClientMarker } from './client-compat';
import type { RequestObserver } from './http';
import type { ToolCallReport } from './mcp-server';

export class ApiMetrics implements RequestObserver {
  readonly registry = new Registry();
  private readonly markers: Counter<'client' | 'marker'>;
  private readonly toolCalls: Counter<'tool' | 'outcome'>;
  private readonly toolSeconds: Histogram<'tool'>;

  constructor() {
    this.markers = new Counter({
      name: `${P}api_client_markers_total`,
      help:
        'Parameters and headers that only say which official client called (mcp, microsoft, json on an endpoint that always answers JSON, ' +
        'X-MCP-Subject), accepted and ignored, by client kind and marker.',
      labelNames: ['client', 'marker'],
      registers: [this.registry],
    });
    this.toolCalls = new Counter({
      name: `${P}api_mcp_tool_calls_total`,
      help: 'Tool calls on the MCP endpoint (/mcp), by tool and outcome: ok, or the error_code the tool answered.',
      labelNames: ['tool', 'outcome'],
      registers: [this.registry],
    });
    this.toolSeconds = new Histogram({
      name: `${P}api_mcp_tool_call_seconds`,
      help: 'How long tool calls on the MCP endpoint took, image included, by tool.',
      labelNames: ['tool'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers: [this.registry],
    });
  }

  clientMarkers(markers: ClientMarker[]): void {
    for (const m of markers) this.markers.inc({ client: m.client, marker: m.marker });
  }

  mcpToolCall(call: ToolCallReport): void {
    this.toolCalls.inc({ tool: call.tool, outcome: call.outcome });
    this.toolSeconds.observe({ tool: call.tool }, call.ms / 1000);
  }

  snapshot(): Promise<MetricsSnapshot> {
    return this.registry.getMetricsAsJSON();
  }
}
