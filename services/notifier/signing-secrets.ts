/**
 * webhook_secrets: each account's webhook signing secret, kept and rotated as every rotating
 * secret is (shared/rotating-secrets.ts): a rotation keeps the old one signing beside the new
 * one for ROTATION_OVERLAP_MS, each old one until its own time.
 */
import type { Knex } from 'knex';
import { RotatingSecrets } from '../shared/rotating-secrets';
import type { SecretBox } from '../shared/secrets';
import { ROTATION_OVERLAP_MS, newSigningSecret } from './signing';

export class SigningSecrets {
  private readonly secrets: RotatingSecrets;

  constructor(db: Knex, box: SecretBox, now: () => number) {
    this.secrets = new RotatingSecrets(db, box, now, 'webhook_secrets', newSigningSecret, ROTATION_OVERLAP_MS, {
      what: "The account's webhook signing secret",
      storeAgain: 'make a new one with POST /webhook_secret/rotate and give it to your receivers',
    });
  }

  /** The account's secrets that sign now (the current one is made when the account has none). */
  active(accountId: string) {
    return this.secrets.active(accountId);
  }

  /** The account's current secret (made on first use). */
  current(accountId: string): Promise<string> {
    return this.secrets.current(accountId);
  }

  /** A new current secret; the old one signs too until `previous_valid_until` (ISO 8601). */
  async rotate(accountId: string): Promise<{ secret: string; previous_valid_until: string }> {
    const rotated = await this.secrets.rotate(accountId);
    return { secret: rotated.secret, previous_valid_until: rotated.previous_valid_until as string };
  }
}
