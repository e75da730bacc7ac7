/**
 * The web console on the full stack: two api instances (each with every service) sharing one
 * MariaDB and one Redis. A session opened on one is known to the other (billing keeps sessions
 * in the database), signing out on one ends it on both, the table holds only hashes, and
 * sign-in attempts from one address are counted over both instances (in Redis).
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import knex from 'knex';
import { knexConfig } from '../../../services/shared/database';
import { backendConfig } from '../../support/backends';
import { CAPTURE_SERVICES } from '../../support/capture-helpers';
import { consoleGet, consoleSignIn, consoleSignOut, consoleToken } from '../../support/console';
import { sharedGrid } from '../../support/grid';
import { type RunningSystem, runSystem } from '../../support/system';

describe('web console on the full stack: two api instances, MariaDB and Redis', function () {
  this.timeout(120_000);
  const systems: RunningSystem[] = [];
  let cleanup: () => Promise<void>;

  before(async () => {
    const grid = await sharedGrid();
    const b = await backendConfig('mysql', { SERVICES: CAPTURE_SERVICES, SELENIUM_URL: grid.url, CAPTURE_SESSIONS: '1', CONSOLE_SIGNIN_MAX: '3' });
    cleanup = b.cleanup;
    systems.push(await runSystem(b.config));
    systems.push(await runSystem({ ...b.config, migrateOnStart: false, port: 0 }));
  });
  after(async () => {
    for (const s of systems) await s.stop();
    await cleanup?.();
  });

  it('knows a session opened on one instance on the other, ends it on both when signed out on either, and stores only hashes', async () => {
    const [one, two] = [systems[0]!.base, systems[1]!.base];
    const { access_token } = await systems[0]!.account('paid');
    const signedIn = await consoleSignIn(one, access_token, { 'x-forwarded-for': '192.0.2.10' });
    expect(signedIn.status).to.equal(303);
    const page = await consoleGet(two, signedIn.session, '/console');
    expect(page.status).to.equal(200);
    expect(await page.text()).to.contain('<h1>Overview</h1>');

    const db = knex(knexConfig(systems[0]!.config.database));
    try {
      const rows = await db('console_sessions');
      expect(rows.map((r) => r.id_hash)).to.include(crypto.createHash('sha256').update(signedIn.session).digest('hex'));
      expect(JSON.stringify(rows)).not.to.contain(signedIn.session).and.not.to.contain(access_token);
    } finally {
      await db.destroy();
    }

    expect((await consoleSignOut(two, signedIn.session, await consoleToken(two, signedIn.session))).status).to.equal(303);
    for (const base of [one, two]) expect((await consoleGet(base, signedIn.session, '/console')).status, base).to.equal(303);
  });

  it('counts sign-in attempts from one address over both instances', async () => {
    const from = { 'x-forwarded-for': '192.0.2.20' };
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await consoleSignIn(systems[i % 2]!.base, `sk_guess${i}`, from)).status);
    expect(statuses).to.deep.equal([401, 401, 401, 429]);
  });
});
