/**
 * The real backends the integration tests use (MariaDB, Redis, NATS on this machine and
 * in CI). Each test run gets its own MariaDB database, Redis key prefix and NATS
 * namespace, so runs never see each other's data.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knex, { type Knex } from 'knex';
import { freePort } from '../../ops/stack';
import { type Config, loadConfig } from '../../services/shared/config';
import { knexConfig } from '../../services/shared/database';

export const MYSQL_ADMIN_URL = process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/test';
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
export const NATS_URL = process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222';

/** A logger for a Redis connection a test makes itself (shared/redis.ts logs its outages through it). */
export const quietLog = { error: (): void => undefined, info: (): void => undefined };

export function uniqueName(prefix: string): string {
  return `${prefix}${Date.now().toString(36)}${crypto.randomBytes(3).toString('hex')}`;
}

/** A new, empty MariaDB database; drop() removes it. */
export async function freshMysqlDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = uniqueName('snaptest_');
  const admin = knex({ client: 'mysql2', connection: MYSQL_ADMIN_URL });
  try {
    await admin.raw(`CREATE DATABASE \`${name}\``);
  } catch (err) {
    await admin.destroy();
    throw new Error(`MariaDB at ${MYSQL_ADMIN_URL} is needed by the integration tests (${(err as Error).message}). Start it, or set TEST_MYSQL_URL.`);
  }
  await admin.destroy();
  const url = new URL(MYSQL_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const db = knex({ client: 'mysql2', connection: MYSQL_ADMIN_URL });
      await db.raw(`DROP DATABASE IF EXISTS \`${name}\``);
      await db.destroy();
    },
  };
}

export function tempDir(prefix = 'snaptest-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

/**
 * Settings every test system gets unless its env says otherwise. The egress gateway runs,
 * as in production; it resolves names with the shared test DNS server (test-dns.ts, whose
 * address the root hooks put here as EGRESS_DNS_SERVERS), which sends the fixture names to
 * 127.0.0.1 and refuses every other name. Suites that make a name on loopback stand for a
 * public site (the in-page checks, without the gateway) use IN_PAGE_POLICY_ONLY.
 */
export const TEST_DEFAULTS: Record<string, string> = {};

/**
 * For suites where a fixture name Chromium maps to 127.0.0.1 stands for a public site
 * (--host-resolver-rules), to test the in-page policy: no gateway, and the policy's early
 * checks use the system resolver, which does not know the name (as before the gateway).
 */
export const IN_PAGE_POLICY_ONLY: Record<string, string> = { EGRESS_GATEWAY: 'off', EGRESS_DNS_SERVERS: '' };

/** A config as the process would load it from these environment variables. */
export function configFrom(env: Record<string, string | undefined>): Readonly<Config> {
  return loadConfig({ PORT: '0', LOG_LEVEL: 'warn', ...TEST_DEFAULTS, ...env });
}

/** A TCP port free right now on 127.0.0.1 (links such as direct_link need the real port). */
export { freePort };

export type Backend = 'sqlite' | 'mysql';

/** Config for an embedded (SQLite) or full-stack (MariaDB, Redis) system; cleanup() undoes it. */
export async function backendConfig(
  backend: Backend,
  env: Record<string, string | undefined> = {},
): Promise<{ config: Readonly<Config>; env: Record<string, string>; cleanup(): Promise<void> }> {
  const dataDir = tempDir();
  const port = String(await freePort());
  if (backend === 'sqlite') {
    const e = { DATA_DIR: dataDir, PORT: port, ...TEST_DEFAULTS, ...env } as Record<string, string>;
    return { config: configFrom(e), env: e, cleanup: async () => fs.rmSync(dataDir, { recursive: true, force: true }) };
  }
  const db = await freshMysqlDatabase();
  const e = {
    DATA_DIR: dataDir,
    PORT: port,
    ...TEST_DEFAULTS,
    DATABASE_URL: db.url,
    MIGRATE_ON_START: 'true',
    REDIS_URL: REDIS_URL,
    REDIS_PREFIX: `${uniqueName('t')}:`,
    ...env,
  } as Record<string, string>;
  return {
    config: configFrom(e),
    env: e,
    cleanup: async () => {
      await db.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** A fresh database of the backend, migrated to the latest, opened with Knex; cleanup() closes and removes it. */
export async function migratedDatabase(backend: Backend): Promise<{ db: Knex; cleanup(): Promise<void> }> {
  const b = await backendConfig(backend);
  const db = knex(knexConfig(b.config.database));
  try {
    await db.migrate.latest();
  } catch (err) {
    await db.destroy();
    await b.cleanup();
    throw err;
  }
  return {
    db,
    cleanup: async () => {
      await db.destroy();
      await b.cleanup();
    },
  };
}
