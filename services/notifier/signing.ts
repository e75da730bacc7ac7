/**
 * Signing per Standard Webhooks (DESIGN section 3), with the reference implementation
 * (npm `standardwebhooks`) so what we sign is exactly what receivers' libraries verify.
 * Pure: secrets in, headers out.
 */
import crypto from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import type { ActiveSecrets } from '../shared/rotating-secrets';

/** How long a rotated-out secret keeps signing (a second signature) beside the new one. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

/** A new account signing secret: whsec_ + base64 of 24 random bytes. */
export function newSigningSecret(): string {
  return `whsec_${crypto.randomBytes(24).toString('base64')}`;
}

/**
 * The three headers of one attempt, signed over the exact bytes sent. Several signatures
 * (space separated) while a rotation's overlap runs; receivers accept any one.
 */
export function signedHeaders(secrets: ActiveSecrets, id: string, at: Date, body: string): Record<string, string> {
  const signatures = [secrets.current, ...secrets.previous].map((s) => new Webhook(s).sign(id, at, body));
  return {
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': signatures.join(' '),
  };
}
