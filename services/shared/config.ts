/**
 * The one place that reads process.env. Every setting is parsed and checked once at
 * start-up and the result is frozen; a bad value stops the process with a message that
 * names the variable. Both running modes (embedded and full stack) come from here.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const ALL_SERVICES = ['api', 'billing', 'capture', 'ai', 'proxy', 'scheduler', 'notifier'] as const;
export type ServiceName = (typeof ALL_SERVICES)[number];

/** What SERVICE_AI_PROVIDER may name: a provider, or any server speaking OpenAI's chat completions. */
export const AI_BACKENDS = ['anthropic', 'openai', 'openrouter', 'openai-compatible'] as const;
export type AiBackend = (typeof AI_BACKENDS)[number];

/** What REAL_LOCATIONS_PROVIDER may name: the residential proxy networks with a preset (services/proxy/presets.ts). */
export const REAL_LOCATION_PROVIDERS = ['brightdata', 'oxylabs', 'decodo', 'iproyal'] as const;
export type RealLocationProvider = (typeof REAL_LOCATION_PROVIDERS)[number];

/** A provider preset: the real-location catalogue built from one proxy account (docs/api.md, "Real locations"). */
export interface RealLocationPreset {
  provider: RealLocationProvider;
  /** REAL_LOCATIONS_USERNAME / REAL_LOCATIONS_PASSWORD: the account's proxy user, without targeting parameters. */
  username: string;
  password: string;
  /** REAL_LOCATIONS_GATEWAY: another host:port than the preset's own gateway; null: the preset's. */
  gateway: { host: string; port: number } | null;
}

/** The operator's own AI backend, used for ai_provider=service (billed in AI credits). */
export interface ServiceAiConfig {
  provider: AiBackend;
  /** SERVICE_AI_BASE_URL, else the provider's *_BASE_URL; null = the SDK's public endpoint. */
  baseUrl: string | null;
  apiKey: string | null;
  model: string;
}

export interface Config {
  /** HTTP port of the api service. */
  port: number;
  /** OPS_PORT: a process's own /health and /metrics (for processes without the api); null: none. */
  opsPort: number | null;
  /** STOP_ON_STDIN_END: the process stops (cleanly) when its standard input closes, i.e. when the supervisor holding it dies. */
  stopOnStdinEnd: boolean;
  host: string;
  baseUrl: string;
  cdnUrl: string;
  appUrl: string;
  /** Folder for the SQLite file, local images and the generated secrets key in embedded mode. */
  dataDir: string;
  /** Knex connection: a mysql:// URL, or a path to a SQLite file. */
  database: { client: 'mysql2'; url: string } | { client: 'better-sqlite3'; filename: string };
  migrateOnStart: boolean;
  redisUrl: string | null;
  /** Prefix of every Redis key, so several deployments (or test runs) can share one Redis. */
  redisPrefix: string;
  transporter: string | null;
  namespace: string;
  nodeId: string | null;
  services: ServiceName[];
  seleniumUrl: string | null;
  storageUrl: string | null;
  /** Another GCS JSON API endpoint (an emulator or a local server); unset = Google's, with default credentials. */
  gcsApiEndpoint: string | null;
  /**
   * AES-256-GCM key (64 hex) for stored provider keys and proxy passwords. Unset: embedded
   * mode generates one into DATA_DIR on first use; the full stack refuses to store a secret
   * (see shared/secrets.ts).
   */
  secretsKey: string | null;
  ai: {
    /** Each provider's API address exactly as its SDK takes it; null = the SDK's default (the public endpoint). */
    baseUrls: { anthropic: string | null; openai: string | null; openrouter: string | null };
    /** The most one provider call (key check, model list, analysis), retries included, may take. */
    timeoutMs: number;
    /** The most fetching one image of POST /ai/analyze may take, redirects included (AI_IMAGE_TIMEOUT_MS). */
    imageTimeoutMs: number;
    /** null: no backend configured; ai_provider=service answers 503 ai_service_not_configured. */
    service: ServiceAiConfig | null;
  };
  allowPrivateNetworks: boolean;
  /**
   * The real-location catalogue: a provider preset (REAL_LOCATIONS_PROVIDER and its
   * credentials) and/or a file (REAL_LOCATIONS_FILE, JSON, DESIGN section 3) whose names
   * override the preset's; neither: no real locations.
   */
  realLocations: { file: string | null; preset: RealLocationPreset | null };
  /** The page an own proxy's test fetches through it (PROXY_TEST_URL: an IP-echo endpoint) and how long it may take. */
  proxyTest: { url: string; timeoutMs: number };
  rateLimit: { max: number; windowSeconds: number };
  /**
   * How long billing keeps a key's account (its plan and add-ons) in memory after reading it (ACCOUNT_CACHE_MS;
   * 0: read on every request). A change made through billing clears it at once on every billing instance; the
   * admin CLI's changes (its own in-process billing) reach a running service within this time.
   */
  accountCacheMs: number;
  /** How long a capture instance keeps the configuration a snap of a page and options is recorded under (SNAP_CONFIG_CACHE_MS; 0: asked every snap). */
  snapConfigCacheMs: number;
  /**
   * The web console (/console, services/api/console/): a session ends after sessionIdleSeconds without a request or
   * sessionMaxSeconds after its sign-in, whichever comes first; one client address may try signInMax sign-ins per window.
   */
  console: {
    sessionIdleSeconds: number;
    sessionMaxSeconds: number;
    signInMax: number;
    signInWindowSeconds: number;
    /** CONSOLE_OPERATOR_TOKEN: signs in to the operator view (/console/operator); null: that view is off (404). */
    operatorToken: string | null;
  };
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
  /** json: one JSON object per line (default); text: one readable line, for a person at a terminal. */
  logFormat: 'json' | 'text';
  /** Largest accepted request body, bytes. */
  bodyLimit: number;
  /**
   * TRUST_PROXY: whose X-Forwarded-For / -Proto / -Host the api believes (the client's address
   * for rate limits and logs, TLS for Secure cookies): true (anyone), false (no one), or a list
   * of addresses, CIDRs and the names loopback, linklocal, uniquelocal.
   */
  trustProxy: boolean | string;
  /** METRICS_TOKEN: when set, GET /metrics needs `Authorization: Bearer <it>`; null: /metrics is open like /health. */
  metricsToken: string | null;
  /**
   * MCP_INTROSPECTION_CLIENT_ID and _SECRET: the client the official PagePixels MCP server
   * authenticates as when it asks POST /oauth/introspect whether a key is good (the same two
   * values are set on that server); null: /oauth/introspect is off (404).
   */
  introspectionClient: { id: string; secret: string } | null;
  /** Seconds between scheduler rounds (a due capture starts at most this late). */
  schedulerTickSeconds: number;
  webhooks: {
    /** The most one delivery attempt may take, connection included (a 2xx within it is delivered). */
    timeoutMs: number;
    /** Attempts one notifier instance makes at once. */
    concurrency: number;
    /** Attempts under way at once for one account, over every instance: an account's slow or dead receivers never hold every sender. */
    accountConcurrency: number;
    /** How often a notifier looks for what no instance announced: deliveries left by a dead instance, retries another instance scheduled before it stopped, an event lost. */
    pollMs: number;
  };
  capture: {
    /** Browser sessions this capture instance keeps warm (at most the Grid's free slots). */
    sessions: number;
    queueMax: number;
    queueTimeoutMs: number;
    timeoutMs: number;
    /** Lease of a claimed job; another instance takes the job over when it runs out. */
    jobLeaseMs: number;
    /** Domains of domain research this instance runs at once (RESEARCH_SESSIONS); 0: none. */
    researchSessions: number;
    /** Megabytes of visual change baselines kept decoded between comparisons (VISUAL_CACHE_MB); 0: none. */
    visualCacheMb: number;
    /**
     * The browser binary. Embedded mode: Chromium's headless shell by default. On a Grid: null
     * unless CHROME_BIN is set, so each Node starts the browser its own stereotype names.
     */
    chromeBin: string | null;
    chromedriverBin: string;
    /**
     * GRID_CDP: direct (default) speaks to each browser's own DevTools socket when its Grid node is on this host, else
     * through the Grid's relay (se:cdp); relay always uses the relay (services/capture/browsers/grid-cdp.ts).
     */
    gridCdp: 'direct' | 'relay';
    /** Extra Chromium flags, space separated (e.g. --host-resolver-rules for test fixtures). */
    extraArgs: string[];
    /** The egress gateway every browser context uses as its proxy (DESIGN section 5); null when EGRESS_GATEWAY=off. */
    gateway: GatewayConfig | null;
    /** DNS servers the egress policy asks (EGRESS_DNS_SERVERS: IP addresses, each with or without a port, comma separated); empty: the system resolver. */
    dnsServers: string[];
    /** Addresses or CIDR ranges the egress policy lets through although private (EGRESS_ALLOW_ADDRESSES): an internal site meant to be captured. */
    allowAddresses: string[];
  };
}

export interface GatewayConfig {
  /** Where each slot's gateway listens (EGRESS_GATEWAY_BIND). */
  bindHost: string;
  /** The address the browsers reach it at (EGRESS_GATEWAY_HOST): this host as the Chrome nodes see it. */
  advertisedHost: string;
  /** A gateway connection idle this long is closed (EGRESS_IDLE_TIMEOUT_MS). */
  idleTimeoutMs: number;
  /** A connection to a target (or upstream) not established this long is given up (EGRESS_CONNECT_TIMEOUT_MS). */
  connectTimeoutMs: number;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | null {
  const v = env[name];
  return v === undefined || v.trim() === '' ? null : v.trim();
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = str(env, name);
  if (raw === null) return fallback;
  if (!/^-?\d+$/.test(raw)) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = str(env, name);
  if (raw === null) return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

/**
 * A value as an error message quotes it, with anything before its last `@` left out: the user
 * and password of a URL (`mysql://app:pw@db/snap`) or of a proxy's host (`user:pw@host:port`),
 * which a value that does not parse may still hold.
 */
export function quoted(raw: string): string {
  const at = raw.lastIndexOf('@');
  if (at < 0) return `"${raw}"`;
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(raw)?.[0] ?? '';
  return `"${scheme}[REDACTED]${raw.slice(at)}"`;
}

function url(env: Env, name: string, protocols: string[]): string | null {
  const raw = str(env, name);
  if (raw === null) return null;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be a URL, got ${quoted(raw)}`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(`${name} must start with ${protocols.map((p) => `${p}//`).join(' or ')}, got ${quoted(raw)}`);
  }
  return raw.replace(/\/+$/, '');
}

/**
 * An address to listen on (HOST, EGRESS_GATEWAY_BIND): an IP address, or localhost. Any other
 * name would be looked up when the server starts, and a name that does not resolve would fail
 * there without naming the variable (or, for the gateway, keep the instance unready for good).
 */
function bindAddress(env: Env, name: string, fallback: string): string {
  const raw = str(env, name);
  if (raw === null) return fallback;
  if (net.isIP(raw) || raw.toLowerCase() === 'localhost') return raw;
  throw new ConfigError(`${name} must be an IP address to listen on (such as 0.0.0.0, 127.0.0.1 or ::) or localhost, got "${raw}"`);
}

function gatewayConfig(env: Env): GatewayConfig | null {
  if (!bool(env, 'EGRESS_GATEWAY', true)) return null;
  const bindHost = bindAddress(env, 'EGRESS_GATEWAY_BIND', '127.0.0.1');
  // Listening on every interface: the browsers are elsewhere (Grid nodes), and reach this
  // instance by its host name unless told otherwise (in Docker, the container's host name is
  // its short id, which the network resolves, one per scaled instance).
  const advertisedHost = str(env, 'EGRESS_GATEWAY_HOST') ?? (bindHost === '0.0.0.0' || bindHost === '::' ? os.hostname() : bindHost);
  return {
    bindHost,
    advertisedHost,
    idleTimeoutMs: int(env, 'EGRESS_IDLE_TIMEOUT_MS', 30_000, 1000, 600_000),
    connectTimeoutMs: int(env, 'EGRESS_CONNECT_TIMEOUT_MS', 10_000, 100, 600_000),
  };
}

/** The proxies whose forwarding headers are believed: by default those on loopback and private networks (an ingress, a sidecar), never a client on the internet. */
export const DEFAULT_TRUST_PROXY = 'loopback,linklocal,uniquelocal';

function trustProxy(env: Env): Config['trustProxy'] {
  const raw = str(env, 'TRUST_PROXY') ?? DEFAULT_TRUST_PROXY;
  if (raw === 'true' || raw === 'false') return raw === 'true';
  const entries = raw.split(',').map((e) => e.trim());
  for (const e of entries) {
    if (e === 'loopback' || e === 'linklocal' || e === 'uniquelocal') continue;
    // Express's hop count: proxy-addr would read it as an address (1 is 0.0.0.1) and trust no actual proxy.
    if (/^\d+$/.test(e)) {
      throw new ConfigError(
        `TRUST_PROXY: "${e}" is a number, and hop counts are not supported; list the proxies' addresses or CIDRs (e.g. 10.0.0.0/8), or loopback, linklocal, uniquelocal`,
      );
    }
    const [address = '', bits, ...more] = e.split('/');
    const family = net.isIP(address);
    // proxy-addr takes prefix lengths from 1 (a /0 is everyone: true).
    if (!family || more.length > 0 || (bits !== undefined && (!/^\d{1,3}$/.test(bits) || Number(bits) < 1 || Number(bits) > (family === 6 ? 128 : 32)))) {
      throw new ConfigError(
        `TRUST_PROXY: "${e}" is not an IP address, a CIDR (prefix 1 to 32 for IPv4, 1 to 128 for IPv6), loopback, linklocal or uniquelocal; or use true or false`,
      );
    }
  }
  return entries.join(',');
}

/** MCP_INTROSPECTION_CLIENT_ID and _SECRET: both or neither. No message here may quote the secret. */
function introspectionClient(env: Env): Config['introspectionClient'] {
  const id = str(env, 'MCP_INTROSPECTION_CLIENT_ID');
  const secret = str(env, 'MCP_INTROSPECTION_CLIENT_SECRET');
  if (id === null && secret === null) return null;
  if (id === null)
    throw new ConfigError(
      'MCP_INTROSPECTION_CLIENT_SECRET is set but MCP_INTROSPECTION_CLIENT_ID is not; set both (the same values as on the MCP server) or neither',
    );
  if (secret === null)
    throw new ConfigError(
      'MCP_INTROSPECTION_CLIENT_ID is set but MCP_INTROSPECTION_CLIENT_SECRET is not; set both (the same values as on the MCP server) or neither',
    );
  if (secret.length < 16) throw new ConfigError('MCP_INTROSPECTION_CLIENT_SECRET must be at least 16 characters (e.g. openssl rand -hex 24)');
  return { id, secret };
}

function list(env: Env, name: string): string[] {
  return (str(env, name) ?? '')
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
}

function addressRanges(env: Env, name: string): string[] {
  const ranges = list(env, name);
  for (const r of ranges) {
    const [address = '', bits] = r.split('/');
    const family = net.isIP(address);
    const max = family === 6 ? 128 : 32;
    if (!family || (bits !== undefined && (!/^\d+$/.test(bits) || Number(bits) > max))) {
      throw new ConfigError(`${name}: "${r}" is not an IP address or CIDR range (e.g. 10.1.2.3 or 10.1.0.0/16)`);
    }
  }
  return ranges;
}

/**
 * EGRESS_DNS_SERVERS: IP addresses, each with or without a port (10.0.0.2, 10.0.0.2:53, fd00::53,
 * [fd00::53]:53), as dns.Resolver's setServers takes them: it takes no names (the resolver
 * would need DNS to find its DNS server), and a port 0 aborts the process.
 */
function dnsServers(env: Env): string[] {
  const servers = list(env, 'EGRESS_DNS_SERVERS');
  for (const s of servers) {
    if (net.isIP(s)) continue;
    const m = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(s) ?? /^([^:[\]]+):(\d{1,5})$/.exec(s);
    const family = m ? net.isIP(m[1] as string) : 0;
    const port = m?.[2] === undefined ? 53 : Number(m[2]);
    if (!m || family !== (s.startsWith('[') ? 6 : 4) || port < 1 || port > 65535) {
      throw new ConfigError(
        `EGRESS_DNS_SERVERS: "${s}" is not an IP address, with or without a port (e.g. 10.0.0.2, 10.0.0.2:5353 or [fd00::53]:53); host names cannot be used`,
      );
    }
  }
  return servers;
}

/**
 * TRANSPORTER: the NATS server(s) the processes meet at, nats://host:port, several separated by
 * commas (a cluster). NATS is the transporter this project installs and tests; Moleculer would
 * refuse anything else only when the broker starts, with a stack trace naming no variable.
 */
function transporter(env: Env): string | null {
  const raw = str(env, 'TRANSPORTER');
  if (raw === null) return null;
  for (const part of raw.split(',').map((p) => p.trim())) {
    let parsed: URL | null = null;
    try {
      parsed = new URL(part);
    } catch {
      parsed = null;
    }
    if (parsed === null || parsed.protocol !== 'nats:' || parsed.hostname === '') {
      throw new ConfigError(`TRANSPORTER must be a NATS address, nats://host:port (several separated by commas), got ${quoted(raw)}`);
    }
  }
  return raw;
}

/**
 * CHROME_BIN or CHROMEDRIVER_BIN as set, when this process starts them itself (embedded mode
 * with the capture service): a file it may run. Unset, the defaults are not checked here (the
 * setup script installs them); a path that is wrong would otherwise keep every browser slot
 * failing, the instance never ready, with no line naming the path.
 */
function executableFile(env: Env, name: string, what: string): void {
  const file = str(env, name);
  if (file === null) return;
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    throw new ConfigError(`${name}: there is no ${what} at "${file}"; set it to the ${what}'s path, or unset it for the default`);
  }
  if (!stat.isFile()) throw new ConfigError(`${name}: "${file}" is not a file; set it to the ${what}'s path, or unset it for the default`);
  try {
    fs.accessSync(file, fs.constants.X_OK);
  } catch {
    throw new ConfigError(`${name}: "${file}" is not executable by this process; set it to the ${what}'s path, or unset it for the default`);
  }
}

/** CHROME_EXTRA_ARGS: a JSON array of flags (for flags containing spaces), or flags separated by spaces. */
function chromeArgs(env: Env): string[] {
  const raw = str(env, 'CHROME_EXTRA_ARGS');
  if (raw === null) return [];
  if (!raw.startsWith('[')) return raw.split(/\s+/);
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = null;
  }
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) {
    throw new ConfigError('CHROME_EXTRA_ARGS must be a JSON array of strings, or flags separated by spaces');
  }
  return parsed;
}

/** The other variables of VARIABLE_GROUPS' group led by `lead`. */
function groupOf(lead: string): readonly string[] {
  const group = VARIABLE_GROUPS.find((g) => g.lead === lead);
  if (!group) throw new Error(`no variable group led by ${lead}`);
  return group.others;
}

/** A group of variables is all or nothing: one of `others` set while `lead` is not stops the process. */
function refuseStray(env: Env, lead: string, choices: readonly string[], others: readonly string[]): void {
  const stray = others.find((n) => str(env, n) !== null);
  if (stray) throw new ConfigError(`${stray} is set but ${lead} is not; set ${lead} to one of ${choices.join(', ')}`);
}

/**
 * SERVICE_AI_*: all or nothing, checked now so a half-configured backend stops the process
 * instead of failing the first analysis. No message here may quote SERVICE_AI_API_KEY.
 */
function serviceAi(env: Env, baseUrls: Config['ai']['baseUrls']): ServiceAiConfig | null {
  const provider = str(env, 'SERVICE_AI_PROVIDER');
  const baseUrl = url(env, 'SERVICE_AI_BASE_URL', ['http:', 'https:']);
  const apiKey = str(env, 'SERVICE_AI_API_KEY');
  const model = str(env, 'SERVICE_AI_MODEL');
  if (provider === null) {
    refuseStray(env, 'SERVICE_AI_PROVIDER', AI_BACKENDS, groupOf('SERVICE_AI_PROVIDER'));
    return null;
  }
  if (!(AI_BACKENDS as readonly string[]).includes(provider)) {
    throw new ConfigError(`SERVICE_AI_PROVIDER must be one of ${AI_BACKENDS.join(', ')}; got "${provider}"`);
  }
  const kind = provider as AiBackend;
  if (kind === 'openai-compatible' && baseUrl === null) {
    throw new ConfigError(
      "SERVICE_AI_PROVIDER=openai-compatible needs SERVICE_AI_BASE_URL (the server's OpenAI-style base URL, such as http://127.0.0.1:11434/v1)",
    );
  }
  if (kind !== 'openai-compatible' && apiKey === null) throw new ConfigError(`SERVICE_AI_PROVIDER=${kind} needs SERVICE_AI_API_KEY`);
  // No model is picked for the operator: the operator pays for it.
  if (model === null) throw new ConfigError('SERVICE_AI_MODEL is required with SERVICE_AI_PROVIDER: the model every service-credit analysis uses');
  return { provider: kind, baseUrl: baseUrl ?? (kind === 'openai-compatible' ? null : baseUrls[kind]), apiKey, model };
}

/** host:port, or [ipv6]:port. */
function hostPort(env: Env, name: string): { host: string; port: number } | null {
  const raw = str(env, name);
  if (raw === null) return null;
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([A-Za-z0-9.-]+)):(\d{1,5})$/.exec(raw);
  const port = Number(m?.[3]);
  if (!m || port < 1 || port > 65535) throw new ConfigError(`${name} must be host:port (e.g. 127.0.0.1:24000 or proxy.example.net:7000), got ${quoted(raw)}`);
  return { host: (m[1] ?? m[2]) as string, port };
}

/**
 * REAL_LOCATIONS_PROVIDER and its credentials: all or nothing, so a half-configured preset
 * stops the process instead of failing the first capture. No message quotes the password.
 */
function realLocationPreset(env: Env): RealLocationPreset | null {
  const raw = str(env, 'REAL_LOCATIONS_PROVIDER');
  const username = str(env, 'REAL_LOCATIONS_USERNAME');
  const password = str(env, 'REAL_LOCATIONS_PASSWORD');
  const gateway = hostPort(env, 'REAL_LOCATIONS_GATEWAY');
  if (raw === null) {
    refuseStray(env, 'REAL_LOCATIONS_PROVIDER', REAL_LOCATION_PROVIDERS, groupOf('REAL_LOCATIONS_PROVIDER'));
    return null;
  }
  // Smartproxy is Decodo's former name.
  const provider = raw.toLowerCase() === 'smartproxy' ? 'decodo' : raw.toLowerCase();
  if (!(REAL_LOCATION_PROVIDERS as readonly string[]).includes(provider)) {
    throw new ConfigError(`REAL_LOCATIONS_PROVIDER must be one of ${REAL_LOCATION_PROVIDERS.join(', ')} (smartproxy is decodo); got "${raw}"`);
  }
  if (username === null)
    throw new ConfigError(`REAL_LOCATIONS_PROVIDER=${provider} needs REAL_LOCATIONS_USERNAME (the proxy user of your ${provider} account)`);
  if (password === null) throw new ConfigError(`REAL_LOCATIONS_PROVIDER=${provider} needs REAL_LOCATIONS_PASSWORD (that proxy user's password)`);
  return { provider: provider as RealLocationProvider, username, password, gateway };
}

function gridCdpOf(env: Env): Config['capture']['gridCdp'] {
  const raw = str(env, 'GRID_CDP') ?? 'direct';
  if (raw !== 'direct' && raw !== 'relay') {
    throw new ConfigError(
      `GRID_CDP must be direct (the browser's own DevTools socket when its Grid node is on this host) or relay (always the Grid's se:cdp); got "${raw}"`,
    );
  }
  return raw;
}

function logFormatOf(env: Env): Config['logFormat'] {
  const logFormat = (str(env, 'LOG_FORMAT') ?? 'json') as Config['logFormat'];
  if (!['json', 'text'].includes(logFormat)) throw new ConfigError(`LOG_FORMAT must be json or text; got "${logFormat}"`);
  return logFormat;
}

/**
 * The variables that go together, all or nothing (each group's check is in loadConfig): a
 * process given one of `others` without `lead` refuses to start. The secret among them
 * (a password, an API key) is kept apart from the rest in a deployment (a Secret), so every
 * process that receives it must receive the rest too.
 */
export const VARIABLE_GROUPS: ReadonlyArray<{ lead: string; others: readonly string[] }> = [
  { lead: 'SERVICE_AI_PROVIDER', others: ['SERVICE_AI_BASE_URL', 'SERVICE_AI_API_KEY', 'SERVICE_AI_MODEL'] },
  { lead: 'REAL_LOCATIONS_PROVIDER', others: ['REAL_LOCATIONS_USERNAME', 'REAL_LOCATIONS_PASSWORD', 'REAL_LOCATIONS_GATEWAY'] },
  { lead: 'MCP_INTROSPECTION_CLIENT_ID', others: ['MCP_INTROSPECTION_CLIENT_SECRET'] },
];

/**
 * The database settings alone (DATA_DIR, DATABASE_URL): what the migration step
 * (db/migrate.ts) reads, so it runs whatever else of the service's configuration its
 * environment holds, or lacks.
 */
export function loadDatabaseConfig(env: Env = process.env): Readonly<Pick<Config, 'dataDir' | 'database'>> {
  const dataDir = path.resolve(str(env, 'DATA_DIR') ?? 'data');
  const databaseUrl = url(env, 'DATABASE_URL', ['mysql:', 'mariadb:', 'sqlite:', 'file:']);
  let database: Config['database'];
  if (databaseUrl === null) database = { client: 'better-sqlite3', filename: path.join(dataDir, 'snapservice.sqlite') };
  else if (/^(sqlite|file):/.test(databaseUrl)) {
    database = { client: 'better-sqlite3', filename: path.resolve(databaseUrl.replace(/^(sqlite|file):(\/\/)?/, '')) };
  } else database = { client: 'mysql2', url: databaseUrl.replace(/^mariadb:/, 'mysql:') };
  return Object.freeze({ dataDir, database });
}

export function loadConfig(env: Env = process.env): Readonly<Config> {
  const port = int(env, 'PORT', 3000, 0, 65535);
  const { dataDir, database } = loadDatabaseConfig(env);

  const baseUrl = url(env, 'BASE_URL', ['http:', 'https:']) ?? `http://localhost:${port}`;
  const servicesRaw = str(env, 'SERVICES');
  const services = servicesRaw === null || servicesRaw === 'all' ? [...ALL_SERVICES] : servicesRaw.split(',').map((s) => s.trim());
  for (const s of services) {
    if (!(ALL_SERVICES as readonly string[]).includes(s)) {
      throw new ConfigError(`SERVICES names an unknown service "${s}"; known: ${ALL_SERVICES.join(', ')}`);
    }
  }
  const logLevel = (str(env, 'LOG_LEVEL') ?? 'info') as Config['logLevel'];
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace'].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of fatal, error, warn, info, debug, trace; got "${logLevel}"`);
  }
  const logFormat = logFormatOf(env);
  const secretsKey = str(env, 'SECRETS_KEY');
  if (secretsKey !== null && !/^[0-9a-fA-F]{64}$/.test(secretsKey)) {
    throw new ConfigError('SECRETS_KEY must be 64 hex characters (32 bytes); generate one with: openssl rand -hex 32');
  }

  const metricsToken = str(env, 'METRICS_TOKEN');
  if (metricsToken !== null && !/^[\x21-\x7e]{16,256}$/.test(metricsToken)) {
    throw new ConfigError('METRICS_TOKEN must be 16 to 256 printable characters without spaces (e.g. openssl rand -hex 24)');
  }

  const operatorToken = str(env, 'CONSOLE_OPERATOR_TOKEN');
  if (operatorToken !== null && !/^[\x21-\x7e]{24,256}$/.test(operatorToken)) {
    throw new ConfigError('CONSOLE_OPERATOR_TOKEN must be 24 to 256 printable characters without spaces (e.g. openssl rand -hex 24)');
  }

  const seleniumUrl = url(env, 'SELENIUM_URL', ['http:', 'https:']);
  const aiBaseUrls = {
    anthropic: url(env, 'ANTHROPIC_BASE_URL', ['http:', 'https:']),
    openai: url(env, 'OPENAI_BASE_URL', ['http:', 'https:']),
    openrouter: url(env, 'OPENROUTER_BASE_URL', ['http:', 'https:']),
  };
  const opsPort = str(env, 'OPS_PORT') === null ? null : int(env, 'OPS_PORT', 0, 0, 65535);
  const sessions = int(env, 'CAPTURE_SESSIONS', 2, 1, 256);
  const webhookConcurrency = int(env, 'WEBHOOK_CONCURRENCY', 8, 1, 256);
  // On a Grid, CHROME_BIN is a path on the nodes and ChromeDriver is theirs: nothing here to check.
  if (seleniumUrl === null && services.includes('capture')) {
    executableFile(env, 'CHROME_BIN', 'browser');
    executableFile(env, 'CHROMEDRIVER_BIN', 'ChromeDriver');
  }
  const config: Config = {
    port,
    opsPort,
    stopOnStdinEnd: bool(env, 'STOP_ON_STDIN_END', false),
    host: bindAddress(env, 'HOST', '0.0.0.0'),
    baseUrl,
    cdnUrl: url(env, 'CDN_URL', ['http:', 'https:']) ?? `${baseUrl}/cdn`,
    appUrl: url(env, 'APP_URL', ['http:', 'https:']) ?? baseUrl,
    dataDir,
    database,
    migrateOnStart: bool(env, 'MIGRATE_ON_START', database.client === 'better-sqlite3'),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    redisPrefix: str(env, 'REDIS_PREFIX') ?? 'snap:',
    transporter: transporter(env),
    namespace: str(env, 'NAMESPACE') ?? '',
    nodeId: str(env, 'NODE_ID'),
    services: services as ServiceName[],
    seleniumUrl,
    storageUrl: url(env, 'STORAGE_URL', ['gs:', 'file:']),
    gcsApiEndpoint: url(env, 'GCS_API_ENDPOINT', ['http:', 'https:']),
    secretsKey,
    ai: {
      baseUrls: aiBaseUrls,
      timeoutMs: int(env, 'AI_TIMEOUT_MS', 60_000, 1000, 600_000),
      imageTimeoutMs: int(env, 'AI_IMAGE_TIMEOUT_MS', 20_000, 500, 120_000),
      service: serviceAi(env, aiBaseUrls),
    },
    allowPrivateNetworks: bool(env, 'ALLOW_PRIVATE_NETWORKS', false),
    realLocations: { file: str(env, 'REAL_LOCATIONS_FILE'), preset: realLocationPreset(env) },
    proxyTest: {
      url: url(env, 'PROXY_TEST_URL', ['http:', 'https:']) ?? 'https://api.ipify.org/?format=json',
      timeoutMs: int(env, 'PROXY_TEST_TIMEOUT_MS', 15_000, 100, 120_000),
    },
    rateLimit: {
      max: int(env, 'RATE_LIMIT_MAX', 600, 0, 1_000_000),
      windowSeconds: int(env, 'RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400),
    },
    accountCacheMs: int(env, 'ACCOUNT_CACHE_MS', 5000, 0, 60_000),
    snapConfigCacheMs: int(env, 'SNAP_CONFIG_CACHE_MS', 5000, 0, 60_000),
    console: {
      sessionIdleSeconds: int(env, 'CONSOLE_SESSION_IDLE_SECONDS', 12 * 3600, 60, 30 * 86_400),
      sessionMaxSeconds: int(env, 'CONSOLE_SESSION_MAX_SECONDS', 7 * 86_400, 60, 365 * 86_400),
      signInMax: int(env, 'CONSOLE_SIGNIN_MAX', 10, 1, 10_000),
      signInWindowSeconds: int(env, 'CONSOLE_SIGNIN_WINDOW_SECONDS', 300, 1, 86_400),
      operatorToken,
    },
    logLevel,
    logFormat,
    bodyLimit: int(env, 'BODY_LIMIT_BYTES', 1_048_576, 1024, 50 * 1_048_576),
    trustProxy: trustProxy(env),
    metricsToken,
    introspectionClient: introspectionClient(env),
    schedulerTickSeconds: int(env, 'SCHEDULER_TICK_SECONDS', 5, 1, 59),
    webhooks: {
      timeoutMs: int(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 100, 120_000),
      concurrency: webhookConcurrency,
      // Half an instance's senders by default, so another account always finds some free.
      accountConcurrency: int(env, 'WEBHOOK_ACCOUNT_CONCURRENCY', Math.max(1, Math.ceil(webhookConcurrency / 2)), 1, 256),
      pollMs: int(env, 'WEBHOOK_POLL_MS', 10_000, 50, 60_000),
    },
    capture: {
      sessions,
      // Half the browsers at most, so research never holds all of them (one when there is one).
      researchSessions: int(env, 'RESEARCH_SESSIONS', Math.max(1, Math.floor(sessions / 2)), 0, sessions),
      visualCacheMb: int(env, 'VISUAL_CACHE_MB', 256, 0, 65_536),
      queueMax: int(env, 'CAPTURE_QUEUE_MAX', 16, 0, 10_000),
      queueTimeoutMs: int(env, 'CAPTURE_QUEUE_TIMEOUT_MS', 30_000, 100, 600_000),
      timeoutMs: int(env, 'CAPTURE_TIMEOUT_MS', 60_000, 1000, 600_000),
      jobLeaseMs: int(env, 'CAPTURE_JOB_LEASE_MS', 30_000, 1000, 3_600_000),
      chromeBin: str(env, 'CHROME_BIN') ?? (seleniumUrl ? null : '/usr/bin/chromium-headless-shell'),
      chromedriverBin: str(env, 'CHROMEDRIVER_BIN') ?? '/usr/bin/chromedriver',
      gridCdp: gridCdpOf(env),
      extraArgs: chromeArgs(env),
      gateway: gatewayConfig(env),
      dnsServers: dnsServers(env),
      allowAddresses: addressRanges(env, 'EGRESS_ALLOW_ADDRESSES'),
    },
  };
  return Object.freeze(config);
}

/** The stdio MCP server (bin/mcp.ts, docs/mcp.md): a client of a running service, not the service. */
export interface McpStdioConfig {
  /** SNAPSERVICE_URL: the service its tools call (default http://localhost:3000, what `npm start` serves). */
  url: string;
  /** SNAPSERVICE_API_KEY: the account's API key the tools act with. */
  key: string;
  /** LOG_FORMAT of the lines it writes on stderr (its stdout is the protocol). */
  logFormat: Config['logFormat'];
}

/** The stdio MCP server's settings. No message here may quote the key. */
export function loadMcpStdioConfig(env: Env = process.env): Readonly<McpStdioConfig> {
  const key = str(env, 'SNAPSERVICE_API_KEY');
  if (key === null) throw new ConfigError("SNAPSERVICE_API_KEY is required: the account's API key (sk_…) the MCP tools act with");
  if (!/^\S+$/.test(key)) throw new ConfigError('SNAPSERVICE_API_KEY must be the API key alone, without spaces');
  return Object.freeze({ url: url(env, 'SNAPSERVICE_URL', ['http:', 'https:']) ?? 'http://localhost:3000', key, logFormat: logFormatOf(env) });
}
