/**
 * One secret per account, sealed with the deployment's SecretBox (whoever checks a signature
 * needs the secret itself, so it is encrypted, not hashed), made on first use, and rotated with
 * an overlap: the old one keeps working beside the new one for `overlapMs`, each old one until
 * its own time (a second rotation within the overlap does not cut the first one short), or not
 * at all when the rotation revokes them (a leaked secret). The webhook signing secret
 * (notifier/signing-secrets.ts) and the link signing secret (billing/link-secrets.ts) are
 * kept this way, each in its own table of the same shape: `secret_sealed`, and
 * `previous_sealed` holding the earlier ones as JSON, [{sealed, until}], newest first; a row
 * written before that holds one sealed secret there, with `previous_until_ms`.
 */
import type { Knex } from 'knex';
import { isUniqueViolation } from './database';
import type { SecretBox } from './secrets';

interface SecretRow {
  account_id: string;
  secret_sealed: string;
  previous_sealed: string | null;
  previous_until_ms: number | string | null;
}

/** The secrets of an account that work now: the current one, then the earlier ones still in their overlap. */
export interface ActiveSecrets {
  current: string;
  previous: string[];
}

/** The earlier secrets a row keeps, with when each stops working. */
function previousOf(row: SecretRow): Array<{ sealed: string; until: number }> {
  if (!row.previous_sealed) return [];
  if (row.previous_sealed.startsWith('[')) return JSON.parse(row.previous_sealed) as Array<{ sealed: string; until: number }>;
  return [{ sealed: row.previous_sealed, until: row.previous_until_ms === null ? 0 : Number(row.previous_until_ms) }];
}

export class RotatingSecrets {
  constructor(
    private readonly db: Knex,
    private readonly box: SecretBox,
    private readonly now: () => number,
    private readonly table: string,
    private readonly newSecret: () => string,
    private readonly overlapMs: number,
    /** What the secret is, and how to make a new one, for the note when it was sealed under another SECRETS_KEY. */
    private readonly unreadable: { what: string; storeAgain: string },
  ) {}

  /** The account's secrets that work now (the current one is made when the account has none). */
  async active(accountId: string): Promise<ActiveSecrets> {
    return this.activeIn(await this.row(accountId));
  }

  /** The same, or null for an account that has no secret (none is made: for checking a signature). */
  async existing(accountId: string): Promise<ActiveSecrets | null> {
    const row = (await this.db(this.table).where({ account_id: accountId }).first()) as SecretRow | undefined;
    return row ? this.activeIn(row) : null;
  }

  /** The account's current secret (made on first use). */
  async current(accountId: string): Promise<string> {
    return this.openCurrent(await this.row(accountId));
  }

  private openCurrent(row: SecretRow): string {
    return this.box.open(row.secret_sealed, this.unreadable.what, this.unreadable.storeAgain);
  }

  /**
   * A new current secret. The earlier ones keep working, the one just replaced until
   * `previous_valid_until` (ISO 8601); with `revokePrevious`, none of them does (null then).
   */
  async rotate(accountId: string, revokePrevious = false): Promise<{ secret: string; previous_valid_until: string | null }> {
    // Written only over the row as read: a rotation that came in between is read again and
    // rotated over, so a revoking rotation never answers null while an old secret still works.
    for (;;) {
      const old = await this.row(accountId);
      const now = this.now();
      const until = revokePrevious ? null : now + this.overlapMs;
      const previous = until === null ? [] : [{ sealed: old.secret_sealed, until }, ...previousOf(old).filter((p) => p.until > now)];
      const secret = this.newSecret();
      const changed = await this.db(this.table)
        .where({ account_id: accountId, secret_sealed: old.secret_sealed })
        .update({
          secret_sealed: this.box.seal(secret),
          previous_sealed: previous.length ? JSON.stringify(previous) : null,
          previous_until_ms: until,
        });
      if (changed === 1) return { secret, previous_valid_until: until === null ? null : new Date(until).toISOString() };
    }
  }

  private activeIn(row: SecretRow): ActiveSecrets {
    const now = this.now();
    return {
      current: this.openCurrent(row),
      // An earlier one sealed under another SECRETS_KEY verifies nothing now: left out.
      previous: previousOf(row)
        .filter((p) => p.until > now)
        .flatMap((p) => {
          try {
            return [this.box.open(p.sealed)];
          } catch {
            return [];
          }
        }),
    };
  }

  private async row(accountId: string): Promise<SecretRow> {
    const found = (await this.db(this.table).where({ account_id: accountId }).first()) as SecretRow | undefined;
    if (found) return found;
    try {
      await this.db(this.table).insert({ account_id: accountId, secret_sealed: this.box.seal(this.newSecret()), created_at_ms: this.now() });
    } catch (err) {
      // Two first uses at once: the other one's secret stands.
      if (!isUniqueViolation(err)) throw err;
    }
    return (await this.db(this.table).where({ account_id: accountId }).first()) as SecretRow;
  }
}
