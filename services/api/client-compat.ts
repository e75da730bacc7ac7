/**
 * The compatibility policy (docs/clients.md): an unknown parameter is refused with a note
 * naming it, except the short list below of what the official clients send that carries no
 * option. Those are taken off the request before its parameters are validated, counted by
 * client kind (ApiMetrics), and change nothing else. Nothing that would change a capture is
 * on this list: aliases and other value shapes map onto the option they mean instead
 * (request-schemas.ts, client-shapes.ts).
 */
import type { FastifyRequest } from 'fastify';
import { serviceError } from '../shared/errors';
import type { RawParams } from './request-schemas';

/** The kinds of client the markers tell apart (the `client` label of snap_api_client_markers_total). */
export type ClientKind = 'mcp' | 'microsoft' | 'n8n' | 'other';

/** A marker a request carried, for the metrics. */
export interface ClientMarker {
  client: ClientKind;
  marker: string;
}

/** Parameters that only say which client sent the request, and the client each names. */
const MARKER_PARAMS: Record<string, ClientKind> = { mcp: 'mcp', microsoft: 'microsoft' };
/** Headers that only say which client sent the request (the MCP server's user, from its OAuth token). */
const MARKER_HEADERS: Record<string, ClientKind> = { 'x-mcp-subject': 'mcp' };

const BOOLEAN = /^(true|false|1|0|yes|no|on|off)$/i;
const FALSE = /^(false|0|no|off)$/i;

const isBooleanLike = (v: unknown) => typeof v === 'boolean' || (typeof v === 'string' && BOOLEAN.test(v.trim())) || v === 0 || v === 1;
const isFalse = (v: unknown) => v === false || v === 0 || (typeof v === 'string' && FALSE.test(v.trim()));

/** The client a request's other markers point to, for `json` (sent by the n8n node on every call). */
function clientOf(request: FastifyRequest, seen: ClientMarker[]): ClientKind {
  if (seen.length > 0) return (seen[0] as ClientMarker).client;
  return /^n8n\b/i.test(String(request.headers['user-agent'] ?? '')) ? 'n8n' : 'other';
}

/**
 * Takes the markers off `params` and returns them. `answersJson`: the route always answers
 * JSON (it has no `json` option), so `json=true` asks for nothing and is a marker there;
 * `json=false` would ask for something it cannot do and is refused.
 */
export function takeClientMarkers(params: RawParams, request: FastifyRequest, answersJson: boolean): ClientMarker[] {
  const seen: ClientMarker[] = [];
  for (const [name, client] of Object.entries(MARKER_PARAMS)) {
    if (!(name in params)) continue;
    const value = params[name];
    if (!isBooleanLike(value)) {
      throw serviceError('invalid_parameter', `${name}: marks a call from an official client and takes true or false, got ${JSON.stringify(value)}.`, {
        param: name,
      });
    }
    delete params[name];
    seen.push({ client, marker: name });
  }
  for (const [header, client] of Object.entries(MARKER_HEADERS)) {
    if (request.headers[header] !== undefined) seen.push({ client, marker: header });
  }
  if (answersJson && 'json' in params && params.json !== '' && params.json !== undefined) {
    if (!isBooleanLike(params.json) || isFalse(params.json)) {
      throw serviceError('invalid_parameter', `json: this endpoint always answers JSON; leave json out (or send json=true).`, { param: 'json' });
    }
    delete params.json;
    seen.push({ client: clientOf(request, seen), marker: 'json' });
  }
  return seen;
}
