/**
 * POST /oauth/introspect (RFC 7662), so the official PagePixels MCP server runs unchanged in
 * front of this service (docs/clients.md): it checks every bearer token its MCP clients send
 * by asking its issuer (RAILS_ISSUER_URL, set to this service) with HTTP Basic client
 * credentials, and then forwards the token to the REST API. Here the token is the account's
 * API key; the answer says whether it is good, with the account as `sub` and the MCP scopes
 * that server requires. Off (404) unless the operator sets MCP_INTROSPECTION_CLIENT_ID and
 * _SECRET, the same values as on the MCP server. A key is never logged or echoed.
 */
import { Type } from '@sinclair/typebox';
import type { Config } from '../shared/config';
import { call } from '../shared/contracts';
import { serviceError } from '../shared/errors';
import { sameSecret } from '../shared/secrets';
import { type RouteDef, publicRoute } from './http';
import { objectParams } from './request-schemas';

/** The scopes an introspected key carries: the MCP server lets a token through with any scope starting mcp_. */
export const MCP_SCOPES = 'mcp_read mcp_write';

const PARAMS = objectParams(
  Type.Object(
    {
      token: Type.String({ minLength: 1, maxLength: 512, description: 'The bearer token to check: an API key of this service.' }),
      token_type_hint: Type.Optional(Type.String({ maxLength: 32, description: 'RFC 7662 hint (access_token); not needed.' })),
    },
    { additionalProperties: false },
  ),
  { secret: 'token' },
);

/** The client's id when its Basic credentials match the configured ones; otherwise the envelope's 401. */
function checkClient(header: string | undefined, client: NonNullable<Config['introspectionClient']>): void {
  const basic = header ? /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header)?.[1] : undefined;
  if (!basic) {
    throw serviceError(
      'access_token_required',
      'Introspection needs the client credentials as "Authorization: Basic <base64 of MCP_INTROSPECTION_CLIENT_ID:MCP_INTROSPECTION_CLIENT_SECRET>".',
    );
  }
  const decoded = Buffer.from(basic, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const [id, secret] = colon < 0 ? [decoded, ''] : [decoded.slice(0, colon), decoded.slice(colon + 1)];
  if (!sameSecret(id, client.id) || !sameSecret(secret, client.secret)) {
    throw serviceError('access_token_invalid', 'The client credentials do not match MCP_INTROSPECTION_CLIENT_ID and MCP_INTROSPECTION_CLIENT_SECRET.');
  }
}

export function oauthRoutes(config: Pick<Config, 'introspectionClient'>): RouteDef[] {
  return [
    publicRoute({
      method: 'POST',
      url: '/oauth/introspect',
      summary:
        'RFC 7662 token introspection for the official PagePixels MCP server: is this API key good? Needs HTTP Basic client credentials ' +
        '(MCP_INTROSPECTION_CLIENT_ID/_SECRET); 404 when they are not configured.',
      tag: 'operations',
      auth: false,
      params: PARAMS,
      response: {
        type: 'object',
        properties: {
          success: { type: 'boolean' },
          active: { type: 'boolean' },
          sub: { type: 'string' },
          scope: { type: 'string' },
          client_id: { type: 'string' },
          token_type: { type: 'string' },
        },
      },
      errors: ['not_found', 'access_token_required', 'access_token_invalid', 'invalid_parameter', 'rate_limited'],
      handler: async ({ broker, params, request }) => {
        const client = config.introspectionClient;
        if (!client)
          throw serviceError(
            'not_found',
            'Token introspection is off on this server: the operator sets MCP_INTROSPECTION_CLIENT_ID and MCP_INTROSPECTION_CLIENT_SECRET to turn it on.',
          );
        checkClient(request.headers.authorization, client);
        try {
          const account = await call(broker, 'billing.authenticate', { token: params.token });
          return { success: true, active: true, sub: account.accountId, scope: MCP_SCOPES, client_id: client.id, token_type: 'Bearer' };
        } catch (err) {
          if ((err as { type?: string }).type === 'access_token_invalid') return { success: true, active: false };
          throw err;
        }
      },
    }),
  ];
}
