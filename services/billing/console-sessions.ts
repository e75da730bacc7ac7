/**
 * console_sessions: the web console's sessions (services/api/console/). Signing in with an API
 * key opens one; its id (32 random bytes) goes to the browser in an HttpOnly cookie and only
 * its SHA-256 is stored, so a copy of the table opens no session. A session keeps the hash of
 * the key it was opened with, never the key: billing maps it to the account through api_keys
 * exactly as it maps a key (AccountRepository.byKeyHash), so a key revoked or rotated ends its
 * sessions on their next request. A session ends after `idleMs` without a request or `maxMs`
 * after it opened, whichever comes first; each carries a random CSRF token its forms send back.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Config } from '../shared/config';

const TABLE = 'console_sessions';

/** How long a session lives: without a request (idle), and at most (from its sign-in). */
export interface SessionPolicy {
  idleMs: number;
  maxMs: number;
}

/** The policy CONSOLE_SESSION_IDLE_SECONDS and CONSOLE_SESSION_MAX_SECONDS set. */
export function consoleSessionPolicy(config: Pick<Config, 'console'>): SessionPolicy {
  return { idleMs: config.console.sessionIdleSeconds * 1000, maxMs: config.console.sessionMaxSeconds * 1000 };
}

interface SessionRow {
  id_hash: string;
  account_id: string;
  key_hash: string;
  csrf_token: string;
  created_at_ms: number | string;
  seen_at_ms: number | string;
  expires_at_ms: number | string;
}

/** A live session as find() gives it. */
export interface FoundSession {
  accountId: string;
  keyHash: string;
  csrf: string;
  expiresAtMs: number;
}

/** seen_at_ms is written at most this often (a page load is not a write each time). */
const TOUCH_EVERY_MS = 60_000;

const hashOf = (session: string) => crypto.createHash('sha256').update(session, 'utf8').digest('hex');

export class ConsoleSessions {
  constructor(
    private readonly db: Knex,
    private readonly policy: SessionPolicy,
    private readonly now: () => number,
  ) {}

  /** Opens a session for the account of the key whose hash is `keyHash`; `session` is the cookie's value. */
  async open(accountId: string, keyHash: string): Promise<{ session: string; csrf: string; expiresAtMs: number }> {
    const at = this.now();
    await this.purge(at);
    const session = crypto.randomBytes(32).toString('base64url');
    const csrf = crypto.randomBytes(24).toString('base64url');
    const expiresAtMs = at + this.policy.maxMs;
    await this.db(TABLE).insert({
      id_hash: hashOf(session),
      account_id: accountId,
      key_hash: keyHash,
      csrf_token: csrf,
      created_at_ms: at,
      seen_at_ms: at,
      expires_at_ms: expiresAtMs,
    });
    return { session, csrf, expiresAtMs };
  }

  /** The live session `session` names, its last use noted; null (and the row deleted) once it expired, or for none. */
  async find(session: string): Promise<FoundSession | null> {
    if (!session) return null;
    const idHash = hashOf(session);
    const row = (await this.db(TABLE).where({ id_hash: idHash }).first()) as SessionRow | undefined;
    if (!row) return null;
    const at = this.now();
    const seen = Number(row.seen_at_ms);
    const expiresAtMs = Math.min(Number(row.expires_at_ms), seen + this.policy.idleMs);
    if (at >= expiresAtMs) {
      await this.db(TABLE).where({ id_hash: idHash }).delete();
      return null;
    }
    if (at - seen >= TOUCH_EVERY_MS) await this.db(TABLE).where({ id_hash: idHash }).update({ seen_at_ms: at });
    return {
      accountId: row.account_id,
      keyHash: row.key_hash,
      csrf: row.csrf_token,
      expiresAtMs: Math.min(Number(row.expires_at_ms), at + this.policy.idleMs),
    };
  }

  /** Ends a session (sign-out, or its key revoked); true when there was one. */
  async close(session: string): Promise<boolean> {
    if (!session) return false;
    return (
      (await this.db(TABLE)
        .where({ id_hash: hashOf(session) })
        .delete()) > 0
    );
  }

  /** Deletes the sessions that have ended (past their limit, or idle too long). */
  private async purge(at: number): Promise<void> {
    await this.db(TABLE)
      .where('expires_at_ms', '<=', at)
      .orWhere('seen_at_ms', '<=', at - this.policy.idleMs)
      .delete();
  }
}
