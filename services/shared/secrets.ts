/**
 * API keys and stored secrets. API keys are random and high-entropy, so a plain SHA-256
 * is a sound one-way hash for them (no slow KDF needed) and lets us find a key by its hash.
 * Provider keys and proxy passwords use AES-256-GCM under SECRETS_KEY (SecretBox).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from './config';
import { serviceError } from './errors';

const KEY_PREFIX = 'sk_';

export function newApiKey(): string {
  return KEY_PREFIX + crypto.randomBytes(24).toString('base64url');
}

export function hashApiKey(key: string): string {
  return crypto.createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Random, unguessable identifier for public links and records. */
/** Compares two secrets in constant time, so one cannot be guessed a character at a time. */
export function sameSecret(given: string, expected: string): boolean {
  const a = crypto.createHash('sha256').update(given).digest();
  const b = crypto.createHash('sha256').update(expected).digest();
  return crypto.timingSafeEqual(a, b);
}

export function randomId(bytes = 12): string {
  return idText(crypto.randomBytes(bytes));
}

/**
 * An id of randomId's form that the same seed always gives (the first `bytes` of its SHA-256):
 * as unguessable as the seed, for a name a retried step must find again.
 */
export function derivedId(seed: string, bytes = 12): string {
  return idText(crypto.createHash('sha256').update(seed).digest().subarray(0, bytes));
}

const idText = (b: Buffer) => b.toString('base64url').replace(/[-_]/g, (c) => (c === '-' ? 'x' : 'y'));

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

/** The file in DATA_DIR holding the SECRETS_KEY the embedded mode generated. */
export const GENERATED_KEY_FILE = 'secrets.key';

function readKeyFile(file: string): string {
  const key = fs.readFileSync(file, 'utf8').trim();
  if (!/^[0-9a-fA-F]{64}$/.test(key)) throw new Error(`${file} does not hold a 64-hex-character key; restore it, or set SECRETS_KEY`);
  return key;
}

/**
 * The key in DATA_DIR/secrets.key, made (0600) when missing. Written to a temporary file and
 * linked into place, so two processes on one DATA_DIR (server and admin CLI) agree on one key
 * and neither ever reads a half-written file.
 */
export function generatedSecretsKey(dataDir: string): string {
  const file = path.join(dataDir, GENERATED_KEY_FILE);
  if (fs.existsSync(file)) return readKeyFile(file);
  fs.mkdirSync(dataDir, { recursive: true });
  const tmp = `${file}.${process.pid}.${randomId(6)}`;
  fs.writeFileSync(tmp, `${crypto.randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  try {
    fs.linkSync(tmp, file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  return readKeyFile(file);
}

/**
 * Seals and opens stored secrets under the deployment's key, found on first use: SECRETS_KEY
 * when set; else, in embedded mode (SQLite, one machine), a key generated once into DATA_DIR,
 * so `npm start` works from a fresh clone; else (the full stack, where instances share a
 * database but not a disk) no key exists, and storing or reading a secret is 503
 * secrets_not_configured. That is decided per use, not at start, so a deployment that
 * stores no secrets runs without SECRETS_KEY.
 */
export class SecretBox {
  private key: string | null = null;

  constructor(private readonly config: Pick<Config, 'secretsKey' | 'dataDir' | 'database'>) {}

  /** Whether a key is (or will be) available, for a warning at start. */
  get configured(): boolean {
    return this.config.secretsKey !== null || this.config.database.client === 'better-sqlite3';
  }

  private currentKey(): string {
    if (this.key) return this.key;
    if (this.config.secretsKey) this.key = this.config.secretsKey;
    else if (this.config.database.client === 'better-sqlite3') this.key = generatedSecretsKey(this.config.dataDir);
    else {
      throw serviceError(
        'secrets_not_configured',
        'This server cannot store secrets such as provider keys: its operator has not set SECRETS_KEY. Ask the operator to set it (64 hex characters, e.g. ' +
          "from 'openssl rand -hex 32') and restart.",
      );
    }
    return this.key;
  }

  seal(plain: string): string {
    return encryptSecret(plain, this.currentKey());
  }

  /**
   * Opens a sealed secret. One sealed under another key (SECRETS_KEY changed since) cannot be
   * read: 412 secret_unreadable, whose note says what it is and how to store it again (`what`,
   * `storeAgain`), never a 500.
   */
  open(sealed: string, what = 'A secret stored on this server', storeAgain = 'store it again'): string {
    const key = this.currentKey();
    try {
      return decryptSecret(sealed, key);
    } catch {
      throw serviceError(
        'secret_unreadable',
        `${what} can no longer be read: it was sealed under another SECRETS_KEY than the server runs with now. ${storeAgain[0]?.toUpperCase()}${storeAgain.slice(1)} ` +
          '(or ask the operator to restore the key it was stored under).',
      );
    }
  }
}
