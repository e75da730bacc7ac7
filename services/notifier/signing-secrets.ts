/**
 * webhook_secrets: one signing secret per account, sealed with the deployment's SecretBox
 * (the receiver needs the secret itself, so it is encrypted, not hashed). Made on first
 * use; a rotation keeps the old one signing beside the new one for ROTATION_OVERLAP_MS, each
 * old one until its own time (a second rotation within the day does not cut the first short).
 * `previous_sealed` holds them as JSON, [{sealed, until}], newest first; a row written before
 * that holds one sealed secret, with `previous_until_ms`.
 */
import type { Knex } from 'knex';
import { isUniqueViolation } from '../shared/database';
import type { SecretBox } from '../shared/secrets';
import { type ActiveSecrets, ROTATION_OVERLAP_MS, newSigningSecret } from './signing';

interface SecretRow {
  account_id: string;
  secret_sealed: string;
  previous_sealed: string | null;
  previous_until_ms: number | string | null;
}

/** The earlier secrets a row keeps, with when each stops signing. */
function previousOf(row: SecretRow): Array<{ sealed: string; until: number }> {
  if (!row.previous_sealed) return [];
  if (row.previous_sealed.startsWith('[')) return JSON.parse(row.previous_sealed) as Array<{ sealed: string; until: number }>;
  return [{ sealed: row.previous_sealed, until: row.previous_until_ms === null ? 0 : Number(row.previous_until_ms) }];
}

export class SigningSecrets {
  constructor(
    private readonly db: Knex,
    private readonly box: SecretBox,
    private readonly now: () => number,
  ) {}

  /** The account's secrets that sign now (the current one is made when the account has none). */
  async active(accountId: string): Promise<ActiveSecrets> {
    const row = await this.row(accountId);
    const now = this.now();
    return {
      current: this.box.open(row.secret_sealed),
      previous: previousOf(row)
        .filter((p) => p.until > now)
        .map((p) => this.box.open(p.sealed)),
    };
  }

  /** The account's current secret (made on first use). */
  async current(accountId: string): Promise<string> {
    return (await this.active(accountId)).current;
  }

  /** A new current secret; the old one signs too until `previous_until` (ISO 8601). */
  async rotate(accountId: string): Promise<{ secret: string; previous_valid_until: string }> {
    const old = await this.row(accountId);
    const secret = newSigningSecret();
    const now = this.now();
    const until = now + ROTATION_OVERLAP_MS;
    const previous = [{ sealed: old.secret_sealed, until }, ...previousOf(old).filter((p) => p.until > now)];
    await this.db('webhook_secrets')
      .where({ account_id: accountId, secret_sealed: old.secret_sealed })
      .update({ secret_sealed: this.box.seal(secret), previous_sealed: JSON.stringify(previous), previous_until_ms: until });
    return { secret: await this.current(accountId), previous_valid_until: new Date(until).toISOString() };
  }

  private async row(accountId: string): Promise<SecretRow> {
    const found = (await this.db('webhook_secrets').where({ account_id: accountId }).first()) as SecretRow | undefined;
    if (found) return found;
    try {
      await this.db('webhook_secrets').insert({ account_id: accountId, secret_sealed: this.box.seal(newSigningSecret()), created_at_ms: this.now() });
    } catch (err) {
      // Two first uses at once: the other one's secret stands.
      if (!isUniqueViolation(err)) throw err;
    }
    return (await this.db('webhook_secrets').where({ account_id: accountId }).first()) as SecretRow;
  }
}
