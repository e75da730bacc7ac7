/**
 * link_signing_secrets: one link signing secret per account, sealed with the deployment's
 * SecretBox (verifying needs the secret itself, so it is encrypted, not hashed), made on
 * first use. A rotation keeps the old one verifying beside the new one for
 * LINK_ROTATION_OVERLAP_MS (as the webhook secret's rotation does), unless told to revoke it
 * at once (a leaked secret). Signs and verifies here, so the secret never leaves billing but
 * through GET /signing_secret.
 */
import type { Knex } from 'knex';
import { isUniqueViolation } from '../shared/database';
import type { SecretBox } from '../shared/secrets';
import { LINK_ROTATION_OVERLAP_MS, linkSignature, newLinkSecret, signatureMatches } from './public/signed-links';

interface SecretRow {
  account_id: string;
  secret_sealed: string;
  previous_sealed: string | null;
  previous_until_ms: number | string | null;
}

const TABLE = 'link_signing_secrets';

export class LinkSecrets {
  constructor(
    private readonly db: Knex,
    private readonly box: SecretBox,
    private readonly now: () => number,
  ) {}

  /** The account's current secret (made on first use). */
  async current(accountId: string): Promise<string> {
    return this.box.open((await this.row(accountId)).secret_sealed);
  }

  /** The signature of `canonical` with the current secret. */
  async sign(accountId: string, canonical: string): Promise<string> {
    return linkSignature(await this.current(accountId), canonical);
  }

  /** Whether `signature` signs `canonical` with the current secret, or the previous one while its overlap runs. Makes no secret for an account that has none. */
  async verify(accountId: string, canonical: string, signature: string): Promise<boolean> {
    const row = (await this.db(TABLE).where({ account_id: accountId }).first()) as SecretRow | undefined;
    if (!row) return false;
    const until = row.previous_until_ms === null ? 0 : Number(row.previous_until_ms);
    const secrets = [row.secret_sealed, ...(row.previous_sealed && until > this.now() ? [row.previous_sealed] : [])].map((s) => this.box.open(s));
    // Every secret is compared, so the time taken does not tell which one matched.
    return secrets.map((secret) => signatureMatches(secret, canonical, signature)).some(Boolean);
  }

  /**
   * A new current secret. The old one verifies too until `previous_valid_until` (ISO 8601),
   * or not at all with `revokePrevious` (null then).
   */
  async rotate(accountId: string, revokePrevious: boolean): Promise<{ secret: string; previous_valid_until: string | null }> {
    const old = await this.row(accountId);
    const secret = newLinkSecret();
    const until = revokePrevious ? null : this.now() + LINK_ROTATION_OVERLAP_MS;
    await this.db(TABLE)
      .where({ account_id: accountId, secret_sealed: old.secret_sealed })
      .update({ secret_sealed: this.box.seal(secret), previous_sealed: revokePrevious ? null : old.secret_sealed, previous_until_ms: until });
    return { secret: await this.current(accountId), previous_valid_until: until === null ? null : new Date(until).toISOString() };
  }

  private async row(accountId: string): Promise<SecretRow> {
    const found = (await this.db(TABLE).where({ account_id: accountId }).first()) as SecretRow | undefined;
    if (found) return found;
    try {
      await this.db(TABLE).insert({ account_id: accountId, secret_sealed: this.box.seal(newLinkSecret()), created_at_ms: this.now() });
    } catch (err) {
      // Two first uses at once: the other one's secret stands.
      if (!isUniqueViolation(err)) throw err;
    }
    return (await this.db(TABLE).where({ account_id: accountId }).first()) as SecretRow;
  }
}
