/**
 * console_sessions on a migrated SQLite database with a controlled clock: a session is found by
 * the id its cookie carries, which is stored only hashed; it ends after its idle time without a
 * request, or at its absolute limit however busy; closing ends it; ended sessions are deleted
 * as new ones open. (That a revoked or rotated key ends its sessions, and the sign-in rate
 * limit, are billing's actions: test/api/console/console.test.ts.)
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { ConsoleSessions, consoleSessionPolicy } from '../../services/billing/console-sessions';
import { migratedSqlite } from '../support/sqlite';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

describe('console sessions (SQLite, controlled clock)', () => {
  let db: Knex;
  let drop: () => Promise<void>;
  let clock: number;
  let sessions: ConsoleSessions;

  beforeEach(async () => {
    const m = await migratedSqlite();
    db = m.db;
    drop = m.drop;
    clock = Date.UTC(2026, 10, 28, 12);
    sessions = new ConsoleSessions(db, { idleMs: 12 * HOUR, maxMs: 7 * 24 * HOUR }, () => clock);
  });
  afterEach(async () => drop());

  it('reads its policy from the configuration (seconds)', () => {
    expect(
      consoleSessionPolicy({ console: { sessionIdleSeconds: 60, sessionMaxSeconds: 120, signInMax: 1, signInWindowSeconds: 1, operatorToken: null } }),
    ).to.deep.equal({
      idleMs: 60_000,
      maxMs: 120_000,
    });
  });

  it('opens a session found by its id, with its account, key hash and CSRF token; the id and no key are stored, only its hash', async () => {
    const opened = await sessions.open('acct_1', 'k'.repeat(64));
    expect(opened.session).to.match(/^[A-Za-z0-9_-]{43}$/);
    expect(opened.csrf).to.match(/^[A-Za-z0-9_-]{32}$/);
    expect(opened.csrf).not.to.equal(opened.session);
    expect(await sessions.find(opened.session)).to.deep.equal({
      accountId: 'acct_1',
      keyHash: 'k'.repeat(64),
      csrf: opened.csrf,
      expiresAtMs: clock + 12 * HOUR,
    });
    const rows = await db('console_sessions');
    expect(rows).to.have.length(1);
    expect(JSON.stringify(rows)).not.to.contain(opened.session);
    expect(rows[0].id_hash).to.equal(crypto.createHash('sha256').update(opened.session).digest('hex'));
    expect(await sessions.find(`${opened.session}x`)).to.equal(null);
    expect(await sessions.find('')).to.equal(null);
    const other = await sessions.open('acct_1', 'k'.repeat(64));
    expect(other.session).not.to.equal(opened.session);
    expect(other.csrf).not.to.equal(opened.csrf);
  });

  it('ends a session idle for its idle time, and keeps one in use alive until then', async () => {
    const { session } = await sessions.open('acct_1', 'h');
    clock += 11 * HOUR;
    expect(await sessions.find(session), 'used after 11 h').not.to.equal(null);
    clock += 11 * HOUR;
    expect(await sessions.find(session), '11 h after its last use').not.to.equal(null);
    clock += 12 * HOUR;
    expect(await sessions.find(session), '12 h after its last use').to.equal(null);
    expect(await db('console_sessions')).to.have.length(0);
  });

  it('ends a session at its absolute limit however often it is used', async () => {
    const { session, expiresAtMs } = await sessions.open('acct_1', 'h');
    expect(expiresAtMs).to.equal(clock + 7 * 24 * HOUR);
    for (let h = 0; h < 7 * 24 - 6; h += 6) {
      clock += 6 * HOUR;
      expect(await sessions.find(session), `after ${h + 6} h`).not.to.equal(null);
    }
    clock = expiresAtMs;
    expect(await sessions.find(session)).to.equal(null);
  });

  it('ends a closed session at once, and deletes ended sessions when another opens', async () => {
    const a = await sessions.open('acct_1', 'h');
    const b = await sessions.open('acct_2', 'h2');
    expect(await sessions.close(a.session)).to.equal(true);
    expect(await sessions.close(a.session)).to.equal(false);
    expect(await sessions.find(a.session)).to.equal(null);
    expect(await sessions.find(b.session)).not.to.equal(null);
    clock += 13 * HOUR;
    await sessions.open('acct_3', 'h3');
    expect((await db('console_sessions')).map((r) => r.account_id)).to.deep.equal(['acct_3']);
  });
});
