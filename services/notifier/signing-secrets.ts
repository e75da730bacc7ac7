/**
 * webhook_secrets: one signing secret per account, sealed with the deployment's SecretBox
 * (the receiver needs the secret itself, so it is encrypted, not hashed). Made on first
 * use; a rotation keeps the old one signing beside the new one for ROTATION_OVERLAP_MS.
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

export class SigningSecrets {
  constructor(
    private readonly db: Knex,
    private readonly box: SecretBox,
    private readonly now: () => number,
  ) {}

  /** The account's secrets that sign now (the current one is made when the account has none). */
  async active(accountId: string): Promise<ActiveSecrets> {
    const row = await this.row(accountId);
    const until = row.previous_until_ms === null ? 0 : Number(row.previous_until_ms);
    return {
      current: this.box.open(row.secret_sealed),
      previous: row.previous_sealed && until > this.now() ? this.box.open(row.previous_sealed) : null,
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
    const until = this.now() + ROTATION_OVERLAP_MS;
    await this.db('webhook_secrets')
      .where({ account_id: accountId, secret_sealed: old.secret_sealed })
      .update({ secret_sealed: this.box.seal(secret), previous_sealed: old.secret_sealed, previous_until_ms: until });
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
