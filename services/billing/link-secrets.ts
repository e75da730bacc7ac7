/**
 * link_signing_secrets: each account's link signing secret, kept and rotated as every rotating
 * secret is (shared/rotating-secrets.ts): made on first use, sealed, and a rotation keeps each
 * old one verifying beside the new one for LINK_ROTATION_OVERLAP_MS, until its own time (as
 * the webhook secret's), unless told to revoke them at once (a leaked secret). Signs and
 * verifies here, so the secret never leaves billing but through GET /signing_secret.
 */
import type { Knex } from 'knex';
import { RotatingSecrets } from '../shared/rotating-secrets';
import type { SecretBox } from '../shared/secrets';
import { LINK_ROTATION_OVERLAP_MS, linkSignature, newLinkSecret, signatureMatches } from './public/signed-links';

export class LinkSecrets {
  private readonly secrets: RotatingSecrets;

  constructor(db: Knex, box: SecretBox, now: () => number) {
    this.secrets = new RotatingSecrets(db, box, now, 'link_signing_secrets', newLinkSecret, LINK_ROTATION_OVERLAP_MS, {
      what: "The account's link signing secret",
      storeAgain: 'make a new one with POST /signing_secret/rotate (links signed with the old one stop working)',
    });
  }

  /** The account's current secret (made on first use). */
  current(accountId: string): Promise<string> {
    return this.secrets.current(accountId);
  }

  /** The signature of `canonical` with the current secret. */
  async sign(accountId: string, canonical: string): Promise<string> {
    return linkSignature(await this.current(accountId), canonical);
  }

  /** Whether `signature` signs `canonical` with the current secret, or an earlier one while its overlap runs. Makes no secret for an account that has none. */
  async verify(accountId: string, canonical: string, signature: string): Promise<boolean> {
    const secrets = await this.secrets.existing(accountId);
    if (!secrets) return false;
    // Every secret is compared, so the time taken does not tell which one matched.
    return [secrets.current, ...secrets.previous].map((secret) => signatureMatches(secret, canonical, signature)).some(Boolean);
  }

  /** A new current secret. The earlier ones verify too until their own time (`previous_valid_until` for the one replaced), or not at all with `revokePrevious` (null then). */
  rotate(accountId: string, revokePrevious: boolean): Promise<{ secret: string; previous_valid_until: string | null }> {
    return this.secrets.rotate(accountId, revokePrevious);
  }
}
