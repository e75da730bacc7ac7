/**
 * API keys and stored secrets. API keys are random and high-entropy, so a plain SHA-256
 * is a sound one-way hash for them (no slow KDF needed) and lets us find a key by its hash.
 * Provider keys and proxy passwords use AES-256-GCM under SECRETS_KEY.
 */
import crypto from 'node:crypto';

const KEY_PREFIX = 'sk_';

export function newApiKey(): string {
  return KEY_PREFIX + crypto.randomBytes(24).toString('base64url');
}

export function hashApiKey(key: string): string {
  return crypto.createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Random, unguessable identifier for public links and records. */
export function randomId(bytes = 12): string {
  return crypto.randomBytes(bytes).toString('base64url').replace(/[-_]/g, (c) => (c === '-' ? 'x' : 'y'));
}

export function encryptSecret(plain: string, keyHex: string): string {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', Buffer.from(keyHex, 'hex'), iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join(':');
}

export function decryptSecret(sealed: string, keyHex: string): string {
  const [version, iv, tag, body] = sealed.split(':');
  if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('unrecognised secret format');
  const decipher = crypto.createDecipheriv('aes-256-gcm', Buffer.from(keyHex, 'hex'), Buffer.from(iv, 'base64'));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
}

/** Masked hint such as "sk-a…9f3c" for showing that a secret is stored. */
export function hintOf(secret: string): string {
  if (secret.length <= 8) return '…';
  return `${secret.slice(0, 4)}…${secret.slice(-4)}`;
}
