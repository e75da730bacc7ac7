/**
 * Signed links (docs/api.md, "Signed links"): GET /render answers what GET /snap answers for
 * the same options, with no API key, when the URL carries the account's public id (`account`),
 * an optional expiry (`expires`, unix seconds) and `signature`, the HMAC-SHA256 of the
 * canonical query under the account's link signing secret (billing/public/signed-links.ts).
 * The signature is verified by billing (the secret never reaches the api) before anything
 * else is read or spent; then the snap runs through the one snap path (snap-routes.ts), so
 * the ttl cache, admission and credits are /snap's. Also the secret and its rotation
 * (GET /signing_secret, POST /signing_secret/rotate, as the webhook secret's), and
 * POST /signed_links, which signs a link for the caller.
 */
import { Type } from '@sinclair/typebox';
import {
  KEYS_REFUSED_IN_LINKS,
  LINK_ACCOUNT_PARAM,
  LINK_EXPIRES_PARAM,
  LINK_SIGNATURE_PARAM,
  ROTATED_SIGNING_SECRET_SCHEMA,
  SIGNED_LINK_SCHEMA,
  SIGNING_SECRET_SCHEMA,
  canonicalQuery,
  queryPairs,
} from '../billing/public/signed-links';
import type { TargetPolicy } from '../shared/address-policy';
import { call } from '../shared/contracts';
import { serviceError } from '../shared/errors';
import { OPTION_DEFAULTS, type SnapOptions } from '../shared/screenshot-options';
import type { FileStore } from '../shared/storage';
import { ok, paramsOfPairs, type PublicRouteContext, type RouteDef, publicRoute, route } from './http';
import { KEY_ONLY_PARAMS, type ParamShape, type RawParams, SNAP_PARAMS, objectParams } from './request-schemas';
import { SNAP_ANSWERS, SNAP_ERRORS, snap } from './snap-routes';
import { MAX_HEAD_BYTES } from './protocol-errors';
import type { SnapTiming } from '../capture/public/snap-timing';

type JsonSchema = Record<string, unknown>;

/** The latest expiry a link may be given: ten years ahead. */
const MAX_EXPIRES_IN_SECONDS = 10 * 366 * 86_400;
/**
 * The longest query a signed link may have: GET /render reads its request line and headers
 * within MAX_HEAD_BYTES, and a browser loading it as an image sends about 1-2 KB of headers; 8
 * KB are left for them (and the signature).
 */
const MAX_LINK_QUERY = MAX_HEAD_BYTES - 8 * 1024;

/** The note of a key found in a link: it would give the account away to whoever reads the page. */
function keyInLink(name: string): Error {
  return serviceError(
    'invalid_parameter',
    `${name}: a signed link must not carry an API key (whoever reads the page would have it); leave it out, the signature stands for the key.`,
    { param: name },
  );
}

/** The snap options' schema with `extra` properties added (for /openapi.json). */
function snapSchemaWith(extra: Record<string, JsonSchema>, required: string[]): JsonSchema {
  const base = SNAP_PARAMS.schema as { properties: Record<string, JsonSchema>; required: string[] };
  return { ...base, properties: { ...base.properties, ...extra }, required: [...base.required, ...required] };
}

const EXPIRES_SCHEMA: JsonSchema = {
  type: 'integer',
  minimum: 0,
  description: 'Unix seconds (UTC) after which the link is refused with 410 link_expired. Left out: the link never expires (until the secret rotates).',
};

/** GET /render: the snap options and the link's own parameters; checked in the handler, signature first. */
const RENDER_PARAMS: ParamShape<RawParams> = {
  schema: snapSchemaWith(
    {
      [LINK_ACCOUNT_PARAM]: { type: 'string', description: "The account's public id (GET /signing_secret answers it as `account`)." },
      [LINK_EXPIRES_PARAM]: EXPIRES_SCHEMA,
      [LINK_SIGNATURE_PARAM]: {
        type: 'string',
        pattern: '^[0-9a-fA-F]{64}$',
        description:
          'Hex HMAC-SHA256, keyed with the signing secret, of the canonical query: every other parameter, names and values RFC 3986-encoded, ' +
          'name=value, sorted by name, joined with "&".',
      },
    },
    [LINK_ACCOUNT_PARAM, LINK_SIGNATURE_PARAM],
  ),
  // Nothing is read before the signature verifies (the handler): the raw parameters as sent.
  parse: (raw) => raw,
};

/** A link's `expires`: unix seconds, digits only. */
function expiresOf(value: string | undefined): number | null {
  if (value === undefined) return null;
  if (!/^\d{1,12}$/.test(value)) throw serviceError('invalid_parameter', `expires: must be unix seconds (digits only); got ${JSON.stringify(value)}.`);
  return Number(value);
}

/** Cache-Control of a rendered link: public for as long as the capture is reused (ttl), never past the link's expiry. */
function cacheControl(options: SnapOptions, expires: number | null): string {
  const ttl = options.ttl ?? OPTION_DEFAULTS.ttl;
  const left = expires === null ? ttl : Math.min(ttl, expires - Math.floor(Date.now() / 1000));
  return left > 0 ? `public, max-age=${left}` : 'no-store';
}

/** The link's own parameters, which are not snap options. */
const LINK_PARAMS: ReadonlySet<string> = new Set([LINK_ACCOUNT_PARAM, LINK_EXPIRES_PARAM, LINK_SIGNATURE_PARAM]);

/**
 * The signature first: nothing else of the link is read before it verifies. Then the link's
 * form (its expiry's, no key in it), and the options, read from exactly the pairs the signature
 * covers (the whole query after the first "?"): a parameter the request carries that they do
 * not (a second "?", a body, an escape two parsers read apart) is refused, never used unsigned.
 */
async function render(ctx: PublicRouteContext<RawParams>, store: FileStore, policy: TargetPolicy, timing: SnapTiming): Promise<unknown> {
  const url = ctx.request.url;
  const pairs = queryPairs(url.includes('?') ? url.slice(url.indexOf('?') + 1) : '');
  const given = new Map(pairs);
  const signature = given.get(LINK_SIGNATURE_PARAM) ?? '';
  const accountId = given.get(LINK_ACCOUNT_PARAM) ?? '';
  if (signature === '' || accountId === '') {
    throw serviceError(
      'invalid_signature',
      'A signed link needs `account` (the public id GET /signing_secret answers) and `signature` in its query; POST /signed_links makes one.',
    );
  }
  const expiresText = given.get(LINK_EXPIRES_PARAM);
  const wellFormed = expiresText !== undefined && /^\d{1,12}$/.test(expiresText);
  const account = await call(ctx.broker, 'billing.verifyLink', {
    account: accountId,
    canonical: canonicalQuery(pairs),
    signature,
    expires: wellFormed ? Number(expiresText) : null,
  });
  const expires = expiresOf(expiresText);
  for (const [name] of pairs) if ((KEYS_REFUSED_IN_LINKS as readonly string[]).includes(name)) throw keyInLink(name);
  const signed = paramsOfPairs(pairs.filter(([name]) => !LINK_PARAMS.has(name)));
  const unsigned = Object.keys(ctx.raw).find((name) => !LINK_PARAMS.has(name) && !(name in signed));
  if (unsigned !== undefined) {
    throw serviceError(
      'invalid_signature',
      `${unsigned}: not in the signed query (a parameter after a second "?", in a body, or escaped as no browser escapes it); sign the link with every option in its query.`,
    );
  }
  const options = SNAP_PARAMS.parse(signed);
  ctx.reply.header('cache-control', cacheControl(options, expires));
  try {
    return await snap({ ...ctx, account, params: options }, store, policy, timing, options);
  } catch (err) {
    // A refusal is never cached.
    ctx.reply.removeHeader('cache-control');
    throw err;
  }
}

/** POST /signed_links: the options (as a snap takes them) and the expiry, ready to sign. */
interface LinkRequest {
  pairs: Array<[string, string]>;
  expires: number | null;
}

/** A value as a GET query carries it (JSON-valued options as JSON text). */
function queryValue(value: unknown): string {
  if (typeof value === 'string') return value;
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

const SIGNED_LINK_PARAMS: ParamShape<LinkRequest> = {
  schema: snapSchemaWith(
    {
      [LINK_EXPIRES_PARAM]: EXPIRES_SCHEMA,
      expires_in: {
        type: 'integer',
        minimum: 1,
        maximum: MAX_EXPIRES_IN_SECONDS,
        description: 'Seconds from now until the link expires (instead of expires).',
      },
    },
    [],
  ),
  parse(raw) {
    const { [LINK_EXPIRES_PARAM]: at, expires_in: within, ...options } = raw;
    for (const name of [LINK_ACCOUNT_PARAM, LINK_SIGNATURE_PARAM]) {
      if (options[name] !== undefined)
        throw serviceError('invalid_parameter', `${name}: is set by the server when it signs the link; leave it out.`, { param: name });
    }
    for (const name of KEYS_REFUSED_IN_LINKS) if (options[name] !== undefined) throw keyInLink(name);
    const present = (v: unknown) => v !== undefined && v !== null && v !== '';
    if (present(at) && present(within)) throw serviceError('invalid_parameter', 'Give expires or expires_in, not both.', { param: 'expires_in' });
    const now = Math.floor(Date.now() / 1000);
    let expires: number | null = null;
    if (present(at)) {
      expires = Number(at);
      if (!Number.isInteger(expires) || expires <= now || expires > now + MAX_EXPIRES_IN_SECONDS) {
        throw serviceError('invalid_parameter', `expires: must be unix seconds in the future (at most ten years ahead); got ${JSON.stringify(at)}.`, {
          param: LINK_EXPIRES_PARAM,
        });
      }
    } else if (present(within)) {
      const seconds = Number(within);
      if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_EXPIRES_IN_SECONDS) {
        throw serviceError('invalid_parameter', `expires_in: must be whole seconds from 1 to ${MAX_EXPIRES_IN_SECONDS}; got ${JSON.stringify(within)}.`, {
          param: 'expires_in',
        });
      }
      expires = now + seconds;
    }
    const pairs = Object.entries(options)
      .filter(([, v]) => present(v))
      .map(([k, v]) => [k, queryValue(v)] as [string, string]);
    // The options as the link will carry them (text, as on GET) are what /render will take: a link that would be refused is not signed.
    SNAP_PARAMS.parse(Object.fromEntries(pairs));
    return { pairs, expires };
  },
};

const ROTATE_PARAMS = objectParams(
  Type.Object(
    {
      revoke_previous: Type.Optional(
        Type.Boolean({
          description: 'true: links signed with the previous secret are refused at once (a leaked secret); default: they verify for 24 hours more.',
        }),
      ),
    },
    { additionalProperties: false },
  ),
);

/** `timing` and `baseUrl`: a snap's times (snap-routes.ts) and the address signed links start with (APP_URL). */
export function signedLinkRoutes(store: FileStore, policy: TargetPolicy, timing: SnapTiming, baseUrl: string): RouteDef[] {
  return [
    route({
      method: 'GET',
      url: '/signing_secret',
      summary: "The account's link signing secret (lsk_…) and public id: sign GET /render links with them (HMAC-SHA256 of the canonical query).",
      tag: 'signed links',
      params: KEY_ONLY_PARAMS,
      response: ok(SIGNING_SECRET_SCHEMA.properties),
      errors: ['invalid_parameter', 'secrets_not_configured', 'secret_unreadable'],
      handler: async (ctx) => ({ success: true, ...(await call(ctx.broker, 'billing.linkSecret', { accountId: ctx.account.accountId })) }),
    }),
    route({
      method: 'POST',
      url: '/signing_secret/rotate',
      summary: 'A new link signing secret; links signed with the old one verify for 24 hours more, or not at all with revoke_previous=true.',
      tag: 'signed links',
      params: ROTATE_PARAMS,
      response: ok(ROTATED_SIGNING_SECRET_SCHEMA.properties),
      errors: ['invalid_parameter', 'secrets_not_configured'],
      handler: async (ctx) => ({
        success: true,
        ...(await call(ctx.broker, 'billing.rotateLinkSecret', { accountId: ctx.account.accountId, revokePrevious: ctx.params.revoke_previous === true })),
      }),
    }),
    route({
      method: 'POST',
      url: '/signed_links',
      summary: 'A signed GET /render URL for the snap options given (and expires or expires_in): put it in <img src> on a public page. Spends nothing.',
      tag: 'signed links',
      params: SIGNED_LINK_PARAMS,
      response: ok(SIGNED_LINK_SCHEMA.properties),
      errors: ['invalid_parameter', 'secrets_not_configured', 'secret_unreadable'],
      handler: async (ctx) => {
        const account = ctx.account.accountId;
        const { expires } = ctx.params;
        const pairs: Array<[string, string]> = [...ctx.params.pairs, [LINK_ACCOUNT_PARAM, account]];
        if (expires !== null) pairs.push([LINK_EXPIRES_PARAM, String(expires)]);
        const canonical = canonicalQuery(pairs);
        // Its request line is what GET /render reads of it, with the browser's headers, within MAX_HEAD_BYTES: a longer link could never load.
        if (canonical.length > MAX_LINK_QUERY) {
          const [longest] = [...ctx.params.pairs].sort((a, b) => b[1].length - a[1].length)[0] ?? ['url'];
          throw serviceError(
            'invalid_parameter',
            `The link's query would be ${canonical.length} characters; GET /render reads at most ${MAX_LINK_QUERY} (the request line and a browser's headers ` +
              `together are limited to ${MAX_HEAD_BYTES / 1024} KB). Shorten ${longest}, the longest option, or capture with POST /snap instead.`,
            { param: longest },
          );
        }
        const { signature } = await call(ctx.broker, 'billing.signLink', { accountId: account, canonical });
        return { success: true, url: `${baseUrl.replace(/\/+$/, '')}/render?${canonical}&${LINK_SIGNATURE_PARAM}=${signature}`, account, expires };
      },
    }),
    publicRoute({
      method: 'GET',
      url: '/render',
      // No HEAD: it would capture and spend.
      noHead: true,
      summary:
        'A signed link (no API key): what GET /snap answers for the same options, when account, expires and signature verify. ' +
        'Cached publicly for ttl seconds (never past expires); a capture reused within ttl spends nothing.',
      tag: 'signed links',
      auth: false,
      params: RENDER_PARAMS,
      response: SNAP_ANSWERS,
      errors: ['invalid_signature', 'link_expired', 'rate_limited', ...SNAP_ERRORS, 'service_unavailable', 'internal_error'],
      handler: (ctx) => render(ctx, store, policy, timing),
    }),
  ];
}
