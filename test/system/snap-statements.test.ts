/**
 * The database statements one /snap issues (issue 46: fewer statements per /snap), counted
 * on the embedded default (SQLite) and on MariaDB: every statement Knex sends while the
 * snap's request runs (its request id rides in the log context into every service the
 * snap calls, in this one process), each named by where it comes from. A change that adds
 * a statement to the snap's path fails here, with the statement named.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { acquireDatabase, releaseDatabase } from '../../services/shared/database';
import { currentLogContext } from '../../services/shared/logging';
import { type Backend, backendConfig } from '../support/backends';
import { CAPTURE_SERVICES } from '../support/capture-helpers';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { sharedGrid } from '../support/grid';
import { qs, request } from '../support/http';
import { type RunningSystem, runSystem } from '../support/system';
import { sleep } from '../support/wait';

/** What each statement of a /snap is, by its SQL (quotes dropped, lower case); the first that matches names it. */
const ORIGINS: Array<[RegExp, string]> = [
  [/^select .* from api_keys as k .*join accounts as a .*join plans as p .*left join account_addons/, 'billing: key, plan and add-ons (accounts.byToken)'],
  [/^select .* from api_keys as k .*join accounts as a .*join plans as p/, 'billing: key and plan (accounts.byToken)'],
  [/^select .* from account_addons/, 'billing: add-ons (accounts.byToken)'],
  [/^select .* from screenshot_configs/, 'scheduler: snap configuration (configs.snapConfig)'],
  [
    /^insert into screenshot_configs .* on conflict .* returning id$/,
    'scheduler: snap configuration made or found, its last job noted, in one (configs.snapConfig)',
  ],
  [/^insert into screenshot_configs/, 'scheduler: snap configuration made (configs.snapConfig)'],
  [/^update screenshot_configs set last_job_id/, 'scheduler: its last job noted (configs.noteJob)'],
  [/^insert into jobs/, 'capture: the job started, running (jobs.start)'],
  [/^begin/, 'capture: transaction begins (jobs.complete)'],
  [/^select .* from jobs .* for update$|^select .* from jobs where .*lease_token/, 'capture: the lease checked (lease.whileHeld)'],
  [/^insert into screenshots/, 'capture: the screenshot recorded (screenshots.insert)'],
  [/^update jobs set .*status/, 'capture: the job completed under its lease (lease.end)'],
  [/^commit/, 'capture: transaction commits (jobs.complete)'],
];

function origin(sql: string): string {
  const plain = sql.replace(/[`"]/g, '').replace(/\s+/g, ' ').trim().toLowerCase();
  return ORIGINS.find(([re]) => re.test(plain))?.[1] ?? `unknown: ${plain}`;
}

/**
 * The statements of a /snap (ttl=0) of a page the account snapped moments ago, the same on
 * both databases. Before issue 46 there were 10: the key and plan, then the add-ons (billing,
 * every request); the snap configuration (scheduler, every snap); the job started; the last
 * job noted; and the record's transaction of five (BEGIN, the lease checked FOR UPDATE, the
 * screenshot, the job completed, COMMIT). Now the key, plan and add-ons are one read kept
 * for ACCOUNT_CACHE_MS and the snap configuration is kept for SNAP_CONFIG_CACHE_MS (neither is
 * read here: the first snap read them), and the record's transaction ends the lease last
 * instead of checking it first (lease.endWith).
 */
export const SNAP_STATEMENTS = [
  'capture: the job started, running (jobs.start)',
  'scheduler: its last job noted (configs.noteJob)',
  'capture: transaction begins (jobs.complete)',
  'capture: the screenshot recorded (screenshots.insert)',
  'capture: the job completed under its lease (lease.end)',
  'capture: transaction commits (jobs.complete)',
];

/**
 * The statements of a /snap of a page new to the account: its snap configuration is made, with
 * the snap's job noted in it. On SQLite in one statement (an upsert answering the row's id, new
 * or found); MySQL answers no id from an upsert, so on the MySQL client it is a read, then the insert.
 */
export const NEW_PAGE_STATEMENTS: Record<Backend, string[]> = {
  sqlite: [
    'scheduler: snap configuration made or found, its last job noted, in one (configs.snapConfig)',
    ...SNAP_STATEMENTS.filter((s) => !s.startsWith('scheduler:')),
  ],
  mysql: [
    'scheduler: snap configuration (configs.snapConfig)',
    'scheduler: snap configuration made (configs.snapConfig)',
    ...SNAP_STATEMENTS.filter((s) => !s.startsWith('scheduler:')),
  ],
};

for (const backend of ['sqlite', 'mysql'] as Backend[]) {
  describe(`statements per /snap on ${backend === 'sqlite' ? 'the embedded default (SQLite)' : 'MariaDB'}`, function () {
    this.timeout(90_000);
    let fx: FixtureServer;
    let sys: RunningSystem;
    let cleanup: () => Promise<void>;
    let db: Knex;
    let token: string;
    const seen: Array<{ requestId: string | undefined; sql: string }> = [];
    const listen = (q: { sql: string }) => seen.push({ requestId: currentLogContext().request_id, sql: q.sql });

    before(async () => {
      fx = await startFixtures();
      const grid = await sharedGrid();
      const b = await backendConfig(backend, { SERVICES: CAPTURE_SERVICES, SELENIUM_URL: grid.url, ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1' });
      cleanup = b.cleanup;
      sys = await runSystem(b.config);
      // The process's one Knex for this database: the services' own.
      db = acquireDatabase(b.config.database);
      db.on('query', listen);
      token = (await sys.account('paid')).access_token;
    });
    after(async () => {
      db?.off('query', listen);
      if (sys) await releaseDatabase(sys.config.database);
      await sys?.stop();
      await fx?.stop();
      await cleanup?.();
    });

    const snap = (requestId: string, params: Record<string, string | number | boolean> = {}) =>
      request(sys.base, 'GET', `/snap?${qs({ access_token: token, url: `${fx.origin}/plain`, ttl: 0, wait: 0, ...params })}`, {
        headers: { 'x-request-id': requestId },
      });

    /** One /snap under a request id of ours; the statements issued under it (the work it leaves behind included). */
    async function statementsOfSnap(requestId: string, params: Record<string, string> = {}): Promise<string[]> {
      const r = await snap(requestId, params);
      expect(r.status, r.raw.toString('utf8', 0, 300)).to.equal(200);
      // What the snap left to run after its answer (the scheduler's note of its last job).
      await sleep(500);
      return seen.filter((s) => s.requestId === requestId).map((s) => origin(s.sql));
    }

    it(`a /snap issues at most ${SNAP_STATEMENTS.length} statements: these ones`, async () => {
      // The first snap of a page makes its snap configuration; the next ones find it.
      await statementsOfSnap(`req_statements_first_${backend}`);
      const statements = await statementsOfSnap(`req_statements_${backend}`);
      expect(statements.length, statements.join('\n')).to.be.at.most(SNAP_STATEMENTS.length);
      expect([...statements].sort(), statements.join('\n')).to.deep.equal([...SNAP_STATEMENTS].sort());
    });

    it(`a /snap of a page new to the account issues ${NEW_PAGE_STATEMENTS[backend].length} statements: these ones`, async () => {
      const statements = await statementsOfSnap(`req_statements_new_${backend}`, { url: `${fx.origin}/plain?new` });
      expect([...statements].sort(), statements.join('\n')).to.deep.equal([...NEW_PAGE_STATEMENTS[backend]].sort());
    });

    it('records a snap under a new configuration once its configuration was deleted (the one kept is forgotten)', async () => {
      const configOf = async (requestId: string) => {
        const r = await snap(requestId, { json: true, url: `${fx.origin}/white` });
        expect(r.status, JSON.stringify(r.body)).to.equal(200);
        return String(r.body.screenshot_configuration_id);
      };
      const first = await configOf(`req_config_first_${backend}`);
      expect(await configOf(`req_config_again_${backend}`), 'the same page and options: the same configuration').to.equal(first);
      const deleted = await request(sys.base, 'DELETE', `/screenshot_configs/${first}?${qs({ access_token: token })}`);
      expect(deleted.status, JSON.stringify(deleted.body)).to.equal(200);
      const next = await configOf(`req_config_after_${backend}`);
      expect(next).to.not.equal(first);
      expect((await request(sys.base, 'GET', `/screenshot_configs/${next}?${qs({ access_token: token })}`)).status).to.equal(200);
    });
  });
}
