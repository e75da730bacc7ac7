/**
 * The in-process usage store kept on disk (usage-ledger.ts) on a real database, SQLite and
 * MariaDB: a month's usage and its pending reservations outlive a restart, two processes add
 * to the same counters without losing either's, a reservation settled within one write never
 * reaches the database, and a failed write is taken again. Then the embedded system itself:
 * usage counted, the system stopped and started again, /account_limits still counts it.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import sinon from 'sinon';
import { DatabaseUsageLedger, FLUSH_MS } from '../../services/billing/usage-ledger';
import { MemoryUsageStore, USAGE_KINDS } from '../../services/billing/usage-store';
import type { Config } from '../../services/shared/config';
import type { Limits, Reservation } from '../../services/shared/contracts';
import { acquireDatabase, migrateLatest, releaseDatabase } from '../../services/shared/database';
import { backendConfig } from '../support/backends';
import { request } from '../support/http';
import { runSystem } from '../support/system';

const MONTH = '2026-11';
const LIMITS: Limits = { screenshots: 100, ai_credits: 100, bandwidth_bytes: 1e9, research_domains: 100 };
const EXPIRES = new Date(Date.now() + 40 * 24 * 3600 * 1000);
const reservation = (id: string, screenshots: number, accountId = 'acct-ledger'): Reservation => ({ id, accountId, month: MONTH, amounts: { screenshots } });

for (const backend of ['sqlite', 'mysql'] as const) {
  describe(`usage ledger: the in-process counters kept in the database (${backend})`, function () {
    this.timeout(30_000);
    let database: Config['database'];
    let knex: Knex;
    let cleanup: () => Promise<void>;
    const opened: MemoryUsageStore[] = [];

    const open = async (ledger = new DatabaseUsageLedger(knex, USAGE_KINDS), onError?: (err: unknown) => void) => {
      const store = new MemoryUsageStore(Date.now, ledger, onError);
      await store.start();
      opened.push(store);
      return store;
    };
    const rows = async () => ({
      counters: await knex('usage_counters').select('account_id', 'month', 'screenshots'),
      reservations: await knex('usage_reservations').select('account_id', 'id', 'amounts'),
    });

    beforeEach(async () => {
      const b = await backendConfig(backend, { REDIS_URL: undefined });
      cleanup = b.cleanup;
      database = b.config.database;
      await migrateLatest(database);
      knex = acquireDatabase(database);
    });
    afterEach(async () => {
      sinon.restore();
      for (const store of opened.splice(0)) await store.close();
      await releaseDatabase(database);
      await cleanup();
    });

    it('keeps the counts and the pending reservations across a restart; a reservation settled after it is settled for good', async () => {
      const first = await open();
      for (const id of ['a', 'b']) {
        expect(await first.reserve(reservation(id, 1), LIMITS, EXPIRES)).to.deep.equal({ ok: true });
        expect(await first.commit(reservation(id, 1))).to.equal(true);
      }
      expect(await first.reserve(reservation('job:queued', 3), LIMITS, EXPIRES)).to.deep.equal({ ok: true });
      await first.close();
      expect(await rows()).to.deep.equal({
        counters: [{ account_id: 'acct-ledger', month: MONTH, screenshots: 5 }],
        reservations: [{ account_id: 'acct-ledger', id: 'job:queued', amounts: '3,0,0,0' }],
      });

      const second = await open();
      expect((await second.usage('acct-ledger', MONTH)).screenshots).to.equal(5);
      // The same id reserved again (the job's next attempt) is not counted twice; its refund gives its 3 back.
      expect(await second.reserve(reservation('job:queued', 3), LIMITS, EXPIRES)).to.deep.equal({ ok: true });
      expect((await second.usage('acct-ledger', MONTH)).screenshots).to.equal(5);
      expect(await second.refund(reservation('job:queued', 3))).to.equal(true);
      await second.close();
      expect(await rows()).to.deep.equal({ counters: [{ account_id: 'acct-ledger', month: MONTH, screenshots: 2 }], reservations: [] });

      const third = await open();
      expect((await third.usage('acct-ledger', MONTH)).screenshots).to.equal(2);
      expect(await third.refund(reservation('job:queued', 3))).to.equal(false);
    });

    it("keeps a pending reservation's deadline across a restart, and the next process gives it back once it is past", async () => {
      const first = await open();
      const settleBy = Date.now() + 5_000;
      expect(await first.reserve({ ...reservation('snap:killed', 1), settleBy }, LIMITS, EXPIRES)).to.deep.equal({ ok: true });
      expect(await first.reserve(reservation('job:waiting', 1), LIMITS, EXPIRES)).to.deep.equal({ ok: true });
      // The process stops with the snap's request unanswered (SIGKILL writes nothing more: what it wrote is what a restart finds).
      await first.close();

      const second = await open();
      expect((await second.usage('acct-ledger', MONTH)).screenshots).to.equal(2);
      expect(await second.giveBackOverdue(settleBy - 1), 'before its deadline').to.equal(0);
      expect(await second.giveBackOverdue(settleBy)).to.equal(1);
      expect((await second.usage('acct-ledger', MONTH)).screenshots, "the job's reservation has no deadline: it stays").to.equal(1);
      await second.close();
      expect((await rows()).reservations).to.deep.equal([{ account_id: 'acct-ledger', id: 'job:waiting', amounts: '1,0,0,0' }]);
    });

    it('writes within a second without being closed, and a reservation made and committed in between never reaches the database', async () => {
      const store = await open();
      const write = sinon.spy(DatabaseUsageLedger.prototype, 'write');
      await store.reserve(reservation('snap-1', 1), LIMITS, EXPIRES);
      await store.commit(reservation('snap-1', 1));
      await new Promise((r) => setTimeout(r, FLUSH_MS * 1.5));
      expect(write.callCount).to.equal(1);
      expect(write.firstCall.args[0].pending).to.deep.equal([]);
      expect(await rows()).to.deep.equal({ counters: [{ account_id: 'acct-ledger', month: MONTH, screenshots: 1 }], reservations: [] });
      await new Promise((r) => setTimeout(r, FLUSH_MS * 1.5));
      expect(write.callCount, 'nothing changed: nothing written').to.equal(1);
    });

    it('adds what each process counted: two processes on one database lose neither', async () => {
      const server = await open();
      const cli = await open();
      await server.reserve(reservation('s', 2), LIMITS, EXPIRES);
      await cli.reserve(reservation('c', 3), LIMITS, EXPIRES);
      await server.commit(reservation('s', 2));
      await cli.commit(reservation('c', 3));
      await cli.close();
      await server.close();
      expect((await (await open()).usage('acct-ledger', MONTH)).screenshots).to.equal(5);
    });

    it('takes a failed write again with the next, and a reservation settled while its row was written is deleted by it', async () => {
      const ledger = new DatabaseUsageLedger(knex, USAGE_KINDS);
      const real = ledger.write.bind(ledger);
      const errors: unknown[] = [];
      let release: () => void = () => undefined;
      const stub = sinon.stub(ledger, 'write');
      stub.onFirstCall().rejects(new Error('database is locked'));
      stub.onSecondCall().callsFake(async (changes, now) => {
        await new Promise<void>((r) => {
          release = r;
        });
        return real(changes, now);
      });
      stub.callsFake(real);
      const store = await open(ledger, (err) => errors.push(err));
      await store.reserve(reservation('job:1', 2), LIMITS, EXPIRES);
      await new Promise((r) => setTimeout(r, FLUSH_MS * 1.5));
      expect(errors.map((e) => (e as Error).message)).to.deep.equal(['database is locked']);
      // The second write holds job:1's row; the job is committed while it is under way.
      await new Promise((r) => setTimeout(r, FLUSH_MS));
      expect(stub.callCount).to.equal(2);
      await store.commit(reservation('job:1', 2));
      release();
      await store.close();
      expect(await rows()).to.deep.equal({ counters: [{ account_id: 'acct-ledger', month: MONTH, screenshots: 2 }], reservations: [] });
    });
  });
}

describe('usage ledger: the embedded system counts a month across its restart', function () {
  this.timeout(60_000);

  it('/account_limits counts what was used before the system stopped', async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing,ai,proxy' });
    try {
      let sys = await runSystem(b.config);
      const { account_id, access_token } = await sys.account('paid');
      await sys.broker.call('billing.charge', { accountId: account_id, amounts: { screenshots: 7 } });
      const used = async () =>
        (await request<{ results: { screenshot_current_month_usage: number } }>(sys.base, 'GET', `/account_limits?access_token=${access_token}`)).body.results
          .screenshot_current_month_usage;
      expect(await used()).to.equal(7);
      await sys.stop();
      sys = await runSystem(b.config);
      try {
        expect(await used()).to.equal(7);
      } finally {
        await sys.stop();
      }
    } finally {
      await b.cleanup();
    }
  });
});
