/**
 * Stand-ins for the residential proxy networks the presets speak to (which tests can never
 * reach): a real HTTP proxy (proxy-chain) on 127.0.0.1 that relays only requests whose
 * proxy credentials follow that provider's documented syntax for the account it was given,
 * and answers 407 to anything else. Each grammar below is written from the provider's
 * documentation (the URLs in services/proxy/presets.ts), independently of the presets'
 * code, and reads the targeting back: what the provider would have been asked for.
 */
import { Server as ProxyServer } from 'proxy-chain';
import type { RealLocationProvider } from '../../services/shared/config';

/** What one relayed request asked the provider for (lower case as sent). */
export interface Asked {
  country: string | null;
  state: string | null;
  city: string | null;
  session: string;
}

const word = '[a-z0-9]+';
const words = `${word}(?:_${word})*`;

/** The account's own proxy user and password, as the operator sets them. */
export interface Account {
  username: string;
  password: string;
}

/** Reads the credentials of one request as `provider` would, or null when its syntax refuses them. */
export function parseCredentials(provider: RealLocationProvider, account: Account, username: string, password: string): Asked | null {
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  switch (provider) {
    case 'brightdata': {
      // brd-customer-<id>-zone-<zone>-country-xx[-state-yy|-city-name]-session-<alnum>
      if (password !== account.password) return null;
      const m = new RegExp(`^${esc(account.username)}-country-([a-z]{2})(?:-state-([a-z]{2})|-city-(${word}))?-session-([A-Za-z0-9]+)$`).exec(username);
      if (!m || (m[2] && m[1] !== 'us')) return null;
      return { country: m[1] ?? null, state: m[2] ?? null, city: m[3] ?? null, session: m[4] as string };
    }
    case 'oxylabs': {
      // customer-<user>(-cc-XX[-city-name]|-st-us_name)-sessid-<alnum>
      if (password !== account.password) return null;
      const m = new RegExp(`^customer-${esc(account.username)}-(?:cc-([A-Z]{2})(?:-city-(${words}))?|st-(us_${words}))-sessid-([A-Za-z0-9]+)$`).exec(username);
      if (!m) return null;
      return { country: m[1]?.toLowerCase() ?? (m[3] ? 'us' : null), state: m[3] ?? null, city: m[2] ?? null, session: m[4] as string };
    }
    case 'decodo': {
      // user-<user>-country-xx[-state-us_name][-city-name]-session-<id>
      if (password !== account.password) return null;
      const m = new RegExp(`^user-${esc(account.username)}-country-([a-z]{2})(?:-state-(us_${words}))?(?:-city-(${words}))?-session-([A-Za-z0-9]+)$`).exec(
        username,
      );
      if (!m || (m[2] && m[1] !== 'us')) return null;
      return { country: m[1] ?? null, state: m[2] ?? null, city: m[3] ?? null, session: m[4] as string };
    }
    case 'iproyal': {
      // <password>_country-xx[_state-name|_city-name]_session-<8 alnum>_lifetime-<n><unit>
      if (username !== account.username) return null;
      const m = new RegExp(
        `^${esc(account.password)}_country-([a-z]{2})(?:_state-(${word})|_city-(${word}))?_session-([A-Za-z0-9]{8})_lifetime-\\d+[smhd]$`,
      ).exec(password);
      if (!m || (m[2] && m[1] !== 'us')) return null;
      return { country: m[1] ?? null, state: m[2] ?? null, city: m[3] ?? null, session: m[4] as string };
    }
  }
}

export interface ProviderUpstream {
  readonly port: number;
  /** Every relayed request's targeting, in order. */
  readonly asked: Asked[];
  /** Requests refused with 407 (their user names, never the passwords). */
  readonly refused: string[];
  /** Bytes the upstream relayed to and from the gateway, counted when each connection closed. */
  bytes(): number;
  close(): Promise<void>;
}

export async function startProviderUpstream(provider: RealLocationProvider, account: Account): Promise<ProviderUpstream> {
  const asked: Asked[] = [];
  const refused: string[] = [];
  let bytes = 0;
  const server = new ProxyServer({
    port: 0,
    host: '127.0.0.1',
    prepareRequestFunction: ({ username, password }) => {
      const parsed = parseCredentials(provider, account, username ?? '', password ?? '');
      if (parsed) asked.push(parsed);
      else refused.push(username ?? '');
      return { requestAuthentication: parsed === null };
    },
  });
  server.on('connectionClosed', ({ stats }: { stats?: { srcTxBytes: number; srcRxBytes: number } }) => {
    bytes += (stats?.srcTxBytes ?? 0) + (stats?.srcRxBytes ?? 0);
  });
  await server.listen();
  return { port: server.port, asked, refused, bytes: () => bytes, close: () => server.close(true) };
}

/** Test accounts of each provider, in the form its dashboard gives them. */
export const ACCOUNTS: Record<RealLocationProvider, Account> = {
  brightdata: { username: 'brd-customer-hl_1a2b3c4d-zone-residential1', password: 'zone-secret' },
  oxylabs: { username: 'snap_user', password: 'oxy-secret' },
  decodo: { username: 'spuser123', password: 'decodo-secret' },
  iproyal: { username: 'royaluser', password: 'royalsecret' },
};
