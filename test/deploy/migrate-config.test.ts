/**
 * db/migrate.js reads the database settings alone: an environment with half of another
 * variable group (an AI provider's key, a real-location password: what every pod's Secret
 * may hold) does not stop it. The real script, as a separate process, on SQLite in a
 * temporary DATA_DIR.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import knex from 'knex';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const MIGRATIONS = fs.readdirSync(path.join(ROOT, 'db', 'migrations')).filter((f) => f.endsWith('.ts')).length;

describe('db/migrate.js with unrelated, half-set variable groups', function () {
  this.timeout(60_000);
  let dataDir: string;

  beforeEach(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'migrate-config-'));
  });
  afterEach(() => {
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  for (const [name, half] of [
    ['SERVICE_AI_API_KEY without SERVICE_AI_PROVIDER', { SERVICE_AI_API_KEY: 'sk-test' }],
    ['REAL_LOCATIONS_PASSWORD without REAL_LOCATIONS_PROVIDER', { REAL_LOCATIONS_PASSWORD: 'pw' }],
  ] as const) {
    it(`migrates with ${name} in its environment`, async () => {
      const run = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'db', 'migrate.js')], {
        // Only what the step is given: its database settings and the half group.
        env: { PATH: process.env.PATH, DATA_DIR: dataDir, ...half },
        encoding: 'utf8',
      });
      expect(run.status, `${run.stdout}${run.stderr}`).to.equal(0);
      expect(run.stdout).to.include('Applied migrations');
      const db = knex({ client: 'better-sqlite3', connection: { filename: path.join(dataDir, 'snapservice.sqlite') }, useNullAsDefault: true });
      try {
        expect(await db('knex_migrations').count({ n: '*' }).first()).to.deep.equal({ n: MIGRATIONS });
      } finally {
        await db.destroy();
      }
    });
  }
});
