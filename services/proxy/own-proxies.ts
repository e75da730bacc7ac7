/**
 * Accounts' own proxies (Bring Your Own Proxy), as pure rules: what PUT /proxies accepts
 * (protocols and default ports of DESIGN section 3, a user name only with a password, the
 * stored password kept when an update leaves it out), the record the spec shows (never
 * the password), the upstream URL the gateway chains to, and which error a failed test is.
 */
import { addressOf } from '../shared/egress';
import { serviceError } from '../shared/errors';
import { dateOf } from '../shared/database';

export const PROXY_PROTOCOLS = ['http', 'https', 'socks5'] as const;
export type ProxyProtocol = (typeof PROXY_PROTOCOLS)[number];
export const DEFAULT_PORTS: Record<ProxyProtocol, number> = { http: 8080, https: 443, socks5: 1080 };

export interface ProxyRow {
  id: number;
  account_id: string;
  protocol: string;
  host: string;
  port: number;
  username: string | null;
  password_encrypted: string | null;
  verified: boolean | number;
  exit_ip: string | null;
  last_test_ms: number | null;
  last_error: string | null;
  /** When the last test passed (null when it did not), as the driver answers a timestamp. */
  verified_at?: unknown;
}

/**
 * What a stored proxy points to, for a capture's ttl key (CaptureTargets): its id and where its
 * traffic goes (protocol, host, port, and the user name, which many providers read as the exit's
 * country or session). A change of password alone keeps it.
 */
export function proxyIdentity(row: Pick<ProxyRow, 'id' | 'protocol' | 'host' | 'port' | 'username'>): string {
  return JSON.stringify([row.id, row.protocol, row.host, row.port, row.username]);
}

export interface ProxyParams {
  id?: number;
  protocol?: string;
  host?: string;
  port?: number;
  username?: string;
  password?: string;
}

/** What is stored: the password in the clear here (sealed by the caller), or undefined to keep the stored one. */
export interface ProxyFields {
  protocol: ProxyProtocol;
  host: string;
  port: number;
  username: string | null;
  password: string | null | undefined;
}

const HOST = /^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/i;

/** Validates PUT /proxies (an update merges over `existing`); invalid_proxy names what is wrong. */
export function proxyFields(p: ProxyParams, existing: ProxyRow | null): ProxyFields {
  const protocol = (p.protocol ?? existing?.protocol ?? 'http').toLowerCase();
  if (!(PROXY_PROTOCOLS as readonly string[]).includes(protocol)) {
    throw serviceError('invalid_proxy', `protocol: "${p.protocol}" is not supported; use http, https or socks5.`);
  }
  // An IPv4 address written another way (127.1, 2130706433) is stored as the address it is.
  const host = addressOf((p.host ?? existing?.host ?? '').trim().replace(/^\[|\]$/g, ''));
  if (!host) throw serviceError('invalid_proxy', 'host: required (a host name or an IPv4 address).');
  if (!HOST.test(host)) throw serviceError('invalid_proxy', `host: "${host}" is not a host name or an IPv4 address.`);
  const port = p.port ?? (p.protocol === undefined && existing ? existing.port : DEFAULT_PORTS[protocol as ProxyProtocol]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw serviceError('invalid_proxy', `port: ${port} is not between 1 and 65535.`);
  const username = p.username !== undefined ? p.username || null : (existing?.username ?? null);
  const password = p.password !== undefined ? p.password || null : undefined;
  const hasPassword = password !== undefined ? password !== null : Boolean(existing?.password_encrypted);
  if (username && !hasPassword) throw serviceError('invalid_proxy', 'username: a user name needs a password (give password too).');
  return { protocol: protocol as ProxyProtocol, host: host.toLowerCase(), port, username, password };
}

/** A proxy's label: its host and port (the spec's proxy record). */
export function labelOf(row: Pick<ProxyRow, 'host' | 'port'>): string {
  return `${row.host}:${row.port}`;
}

/** The proxy's URL with the password masked (`display_url`, answered by PUT /proxies): never the password. */
export function displayUrlOf(row: Pick<ProxyRow, 'protocol' | 'host' | 'port' | 'username' | 'password_encrypted'>): string {
  const user = row.username ? `${row.username}:${row.password_encrypted ? '****' : ''}@` : '';
  return `${row.protocol}://${user}${row.host}:${row.port}`;
}

/** The spec's proxy record. */
export function proxyRecord(row: ProxyRow) {
  return {
    id: Number(row.id),
    label: labelOf(row),
    protocol: row.protocol,
    host: row.host,
    port: Number(row.port),
    username: row.username,
    has_password: Boolean(row.password_encrypted),
    verified: Boolean(row.verified),
    exit_ip: row.exit_ip,
    last_test_ms: row.last_test_ms === null ? null : Number(row.last_test_ms),
    last_error: row.last_error,
  };
}

/** The record PUT /proxies answers: the spec's proxy record with verified_at and display_url. */
export function storedProxyRecord(row: ProxyRow) {
  return { ...proxyRecord(row), verified_at: dateOf(row.verified_at)?.toISOString() ?? null, display_url: displayUrlOf(row) };
}

/** The URL the gateway chains to (credentials encoded into it), with `host` replaced by the address checked for it. */
export function upstreamUrl(row: Pick<ProxyRow, 'protocol' | 'port' | 'username'>, address: string, password: string | null): string {
  const user = row.username ? `${encodeURIComponent(row.username)}${password !== null ? `:${encodeURIComponent(password)}` : ''}@` : '';
  const host = address.includes(':') ? `[${address}]` : address;
  return `${row.protocol}://${user}${host}:${row.port}`;
}

export type ProxyFailure = 'proxy_auth_failed' | 'proxy_connection_failed' | 'proxy_host_not_found' | 'proxy_timeout';

/**
 * What a failed test is, from the status the local chaining proxy (proxy-chain) answered:
 * 597 the upstream refused the credentials (407, or a SOCKS authentication failure), 593 its
 * name did not resolve, 594/595/596/599/502/590 it could not be reached or failed, 504 it
 * timed out.
 */
export function failureOfStatus(status: number): ProxyFailure {
  if (status === 597 || status === 407) return 'proxy_auth_failed';
  if (status === 593) return 'proxy_host_not_found';
  if (status === 504) return 'proxy_timeout';
  return 'proxy_connection_failed';
}

export const FAILURE_NOTES: Record<ProxyFailure, string> = {
  proxy_auth_failed: 'The proxy refused the user name and password; check them (the proxy is stored, unverified).',
  proxy_connection_failed:
    'The proxy could not be reached or did not relay the test page; check its host, port and protocol (the proxy is stored, unverified).',
  proxy_host_not_found: "The proxy's host name does not resolve; check it (the proxy is stored, unverified).",
  proxy_timeout: 'The proxy did not answer in time (the proxy is stored, unverified).',
};
