/**
 * Signed links (docs/api.md, "Signed links"): a GET /render URL that carries the account's
 * public id, an optional expiry and an HMAC-SHA256 signature made with the account's link
 * signing secret, so the URL can be put on a public page without the API key. Pure: the
 * canonical query, the signature and its constant-time comparison, and the published records.
 * billing signs and verifies with it (the secret never leaves billing but through
 * GET /signing_secret); the api builds and reads the query with it.
 */
import crypto from 'node:crypto';
import { Type } from '@sinclair/typebox';

/** The link's own parameters: who signed it, until when, and the signature (everything else is a snap option). */
export const LINK_ACCOUNT_PARAM = 'account';
export const LINK_EXPIRES_PARAM = 'expires';
export const LINK_SIGNATURE_PARAM = 'signature';

/** Parameters a signed link may never carry: an API key in a public URL would give the account away. */
export const KEYS_REFUSED_IN_LINKS = ['access_token', 'access_key', 'api_key'] as const;

/** How long a rotated-out link secret keeps verifying beside the new one: as long as the webhook secret's overlap (24 hours). */
export const LINK_ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** A new link signing secret: lsk_ + base64url of 32 random bytes. */
export function newLinkSecret(): string {
  return `lsk_${crypto.randomBytes(32).toString('base64url')}`;
}

/** RFC 3986 percent-encoding of UTF-8: only A-Z a-z 0-9 - . _ ~ stay as they are (encodeURIComponent leaves !'()* too). */
export function rfc3986(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The name/value pairs of a query string ("?" optional), decoded as browsers and URLSearchParams decode them ("+" is a space). */
export function queryPairs(search: string): Array<[string, string]> {
  return [...new URLSearchParams(search.startsWith('?') ? search.slice(1) : search)];
}

/**
 * The text a link's signature covers: every parameter but `signature`, each name and value
 * RFC 3986-encoded, as name=value, sorted by the encoded name (then value), joined with "&".
 * Two spellings of one query (other escaping, other order, "+" or "%20") have one canonical form.
 */
export function canonicalQuery(pairs: ReadonlyArray<readonly [string, string]>): string {
  return pairs
    .filter(([name]) => name !== LINK_SIGNATURE_PARAM)
    .map(([name, value]) => [rfc3986(name), rfc3986(value)] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([name, value]) => `${name}=${value}`)
    .join('&');
}

/** The signature of a canonical query: lowercase hex of HMAC-SHA256 keyed with the secret (its UTF-8 text, prefix included). */
export function linkSignature(secret: string, canonical: string): string {
  return crypto.createHmac('sha256', secret).update(canonical, 'utf8').digest('hex');
}

/** Whether `given` is the signature of `canonical` under `secret`, compared in constant time (crypto.timingSafeEqual). */
export function signatureMatches(secret: string, canonical: string, given: string): boolean {
  const expected = Buffer.from(linkSignature(secret, canonical), 'utf8');
  const got = Buffer.from(given.toLowerCase(), 'utf8');
  return got.length === expected.length && crypto.timingSafeEqual(got, expected);
}

/** GET /signing_secret: the secret, and the public id links name in `account`. */
export const SIGNING_SECRET_SCHEMA = Type.Object({
  secret: Type.String({ description: 'The link signing secret (lsk_…): the HMAC-SHA256 key of signed links. Keep it server-side, like the API key.' }),
  account: Type.String({ description: 'The public id of the account, the `account` parameter of its signed links.' }),
});

/** POST /signing_secret/rotate: the new secret, and until when links signed with the previous one still verify. */
export const ROTATED_SIGNING_SECRET_SCHEMA = Type.Object({
  ...SIGNING_SECRET_SCHEMA.properties,
  previous_valid_until: Type.Union([Type.String(), Type.Null()], {
    description: 'ISO 8601: links signed with the previous secret verify until then (24 hours); null with revoke_previous=true (refused at once).',
  }),
});

/** POST /signed_links: a signed /render URL for the options given. */
export const SIGNED_LINK_SCHEMA = Type.Object({
  url: Type.String({ description: 'The signed GET /render URL: put it in <img src>; it answers what GET /snap answers for the same options.' }),
  account: Type.String({ description: 'The public id of the account (the `account` parameter of the link).' }),
  expires: Type.Union([Type.Integer(), Type.Null()], { description: 'Unix seconds after which the link is refused (410 link_expired); null: never.' }),
});
