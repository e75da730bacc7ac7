/**
 * shared/lease.ts on real databases (SQLite and MariaDB) with a controlled clock, over a table
 * of its own: what a claim leases, when a lease runs out, that only the current token renews,
 * ends or works under a lease, and, on MariaDB, the row locks (SKIP LOCKED) that let claimers
 * on several instances pass each other's rows by. Its uses are proved with their owners: the
 * jobs queue (test/capture/jobs/jobs.test.ts, research-queue.test.ts), the outbox
 * (test/notifier/deliveries.test.ts) and the scheduler (test/scheduler/schedule-runner.test.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import knex, { type Knex } from 'knex';
import { knexConfig } from '../../services/shared/database';
import { type Held, type LeaseColumns, Leases } from '../../services/shared/lease';
import { type Backend, freshMysqlDatabase, tempDir } from '../support/backends';

const MS = 10_000;
const T0 = 1_000_000;
const TABLE: LeaseColumns = { table: 'lease_test', held: { status: 'open' } };
const SINCE: LeaseColumns = { table: 'lease_test', token: 'mark', time: { since: 'marked_at_ms' }, held: { status: 'open' } };

interface Row {
  id: string;
  seq: number;
  status: string;
  note: string | null;
  lease_token: string | null;
  lease_until_ms: number | string | null;
  mark: string | null;
  marked_at_ms: number | string | null;
}

/** A promise and the function that settles it. */
function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/** What `p` settled to within `ms`, or 'still waiting'. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | 'still waiting'> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'still waiting'>((resolve) => (timer = setTimeout(() => resolve('still waiting'), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

for (const backend of ['sqlite', 'mysql'] as Backend[]) {
  describe(`shared/lease.ts (${backend}, controlled clock)`, function () {
    this.timeout(30_000);
    let db: Knex;
    let drop: () => Promise<void>;
    let clock: number;
    let lease: Leases;

    beforeEach(async () => {
      if (backend === 'mysql') {
        const fresh = await freshMysqlDatabase();
        db = knex(knexConfig({ client: 'mysql2', url: fresh.url }));
        drop = fresh.drop;
      } else {
        const dir = tempDir();
        db = knex(knexConfig({ client: 'better-sqlite3', filename: path.join(dir, 'lease.sqlite') }));
        drop = async () => fs.rmSync(dir, { recursive: true, force: true });
      }
      await db.schema.createTable('lease_test', (t) => {
        t.string('id', 32).primary();
        t.integer('seq').notNullable();
        t.string('status', 16).notNullable();
        t.string('note', 64).nullable();
        t.string('lease_token', 32).nullable();
        t.bigInteger('lease_until_ms').nullable();
        t.string('mark', 32).nullable();
        t.bigInteger('marked_at_ms').nullable();
        // As the owners' tables have: a claim reads its candidates through an index, so it locks those it reads, not the table.
        t.index(['status', 'seq']);
      });
      clock = T0;
      lease = new Leases(db, TABLE, MS, () => clock);
    });
    afterEach(async () => {
      await db.destroy();
      await drop();
    });

    const insert = (...ids: string[]) => db('lease_test').insert(ids.map((id, i) => ({ id, seq: i, status: 'open' })));
    const row = async (id: string) => (await db('lease_test').where({ id }).first()) as Row;
    /** The oldest open row nobody holds, claimed under a lease; or null. */
    const claimOne = (l: Leases = lease, take: (row: Row) => Promise<unknown> = async () => undefined): Promise<Held | null> =>
      l.claim(
        (trx) => l.unheld(trx('lease_test').where('status', 'open'), clock).orderBy('seq').limit(1).select('*'),
        async ([r]: Row[], grant) => {
          if (!r) return null;
          await take(r);
          return { id: r.id, leaseToken: await grant(r.id, { note: 'claimed' }) };
        },
      );

    it('leases the row a claim takes (token and time, with what it writes beside) and hands it out again only once the lease ran out', async () => {
      await insert('a', 'b');
      const a = await claimOne();
      expect(a?.id).to.equal('a');
      expect(await row('a')).to.include({ note: 'claimed', lease_token: a?.leaseToken });
      expect(Number((await row('a')).lease_until_ms)).to.equal(T0 + MS);
      expect((await claimOne())?.id).to.equal('b');
      expect(await claimOne(), 'both are held').to.equal(null);

      clock = T0 + MS - 1;
      expect(await claimOne(), 'not run out yet').to.equal(null);
      clock = T0 + MS + 1;
      const again = await claimOne();
      expect(again?.id).to.equal('a');
      expect(again?.leaseToken).to.be.a('string').and.not.equal(a?.leaseToken);
    });

    it('leaves a row the claim read but did not grant as it was, and rolls the claim back when taking fails', async () => {
      await insert('a');
      const none = await lease.claim(
        (trx) => trx('lease_test').where('status', 'open').select('*'),
        async (rows: Row[]) => rows.length,
      );
      expect(none).to.equal(1);
      expect(await row('a')).to.include({ lease_token: null, lease_until_ms: null, note: null });
      let message = '';
      await lease
        .claim(
          (trx) => trx('lease_test').where('status', 'open').select('*'),
          async (rows: Row[], grant) => {
            await grant(rows[0]!.id, { note: 'half-written' });
            throw new Error('the starter said no');
          },
        )
        .catch((err: Error) => (message = err.message));
      expect(message).to.equal('the starter said no');
      expect(await row('a')).to.include({ note: null });
      expect(await row('a')).to.include({ lease_token: null, lease_until_ms: null });
      expect((await claimOne())?.id).to.equal('a');
    });

    it('renews, ends and works under a lease only with the current token, and only while the row is held', async () => {
      await insert('a');
      const stale = (await claimOne()) as Held;
      clock += MS + 1;
      const current = (await claimOne()) as Held;
      expect(current.id).to.equal('a');

      expect(await lease.renew(stale)).to.equal(false);
      let ran = false;
      expect(await lease.whileHeld(stale, async () => (ran = true))).to.equal(null);
      expect(ran).to.equal(false);
      expect(await lease.end(stale, { status: 'done' })).to.equal(false);
      expect(await row('a')).to.include({ status: 'open', lease_token: current.leaseToken });

      clock += MS - 1;
      expect(await lease.renew(current)).to.equal(true);
      expect(Number((await row('a')).lease_until_ms)).to.equal(clock + MS);
      clock += MS - 1;
      expect(await claimOne(), 'the renewed lease keeps its row').to.equal(null);

      expect(await lease.end(current, { status: 'done', note: 'finished' })).to.equal(true);
      expect(await row('a')).to.include({ status: 'done', note: 'finished', lease_token: null, lease_until_ms: null });
      expect(await lease.end(current, { status: 'failed' }), 'ended once').to.equal(false);
      expect(await lease.renew(current)).to.equal(false);

      // A row outside the held condition is not held, whatever token it carries.
      await db('lease_test')
        .where({ id: 'a' })
        .update({ lease_token: current.leaseToken, lease_until_ms: clock + MS });
      expect(await lease.renew(current)).to.equal(false);
      expect(await lease.whileHeld(current, async () => true)).to.equal(null);
    });

    it('commits the work done under a lease with its end, gives it the columns asked for, and rolls both back when the work fails', async () => {
      await insert('a', 'b');
      const a = (await claimOne()) as Held;
      const seen = await lease.whileHeld(
        a,
        async (trx, held) => {
          await trx('lease_test').where({ id: 'b' }).update({ note: 'written with a' });
          await lease.end(a, { status: 'done' }, trx);
          return held;
        },
        ['seq', 'note'],
      );
      expect(seen).to.deep.include({ id: 'a', note: 'claimed' });
      expect(Number(seen?.seq)).to.equal(0);
      expect(await row('a')).to.include({ status: 'done', lease_token: null });
      expect(await row('b')).to.include({ note: 'written with a' });

      const b = (await claimOne()) as Held;
      let message = '';
      await lease
        .whileHeld(b, async (trx) => {
          await lease.end(b, { status: 'done' }, trx);
          await trx('lease_test').where({ id: 'a' }).update({ note: 'lost' });
          throw new Error('recording failed');
        })
        .catch((err: Error) => (message = err.message));
      expect(message).to.equal('recording failed');
      expect(await row('b')).to.include({ status: 'open', lease_token: b.leaseToken });
      expect(await row('a')).to.include({ note: 'claimed' });
    });

    it('endWith: commits the work with the end under the current token, and rolls the work back when the lease was lost or the work fails', async () => {
      await insert('a', 'b', 'c');
      const a = (await claimOne()) as Held;
      const written = await lease.endWith(
        a,
        async (trx) => {
          await trx('lease_test').where({ id: 'c' }).update({ note: 'written with a' });
          return 'done by a';
        },
        (result) => ({ status: 'done', note: result }),
      );
      expect(written).to.equal('done by a');
      expect(await row('a')).to.include({ status: 'done', note: 'done by a', lease_token: null, lease_until_ms: null });
      expect(await row('c')).to.include({ note: 'written with a' });

      // b's lease runs out and another claim takes it over: the stale holder's work is rolled back with its end.
      const stale = (await claimOne()) as Held;
      clock += MS + 1;
      const current = (await claimOne()) as Held;
      expect(current.id).to.equal(stale.id);
      const lost = await lease.endWith(
        stale,
        async (trx) => {
          await trx('lease_test').where({ id: 'c' }).update({ note: 'written by a stale holder' });
          return 'stale';
        },
        () => ({ status: 'done' }),
      );
      expect(lost).to.equal(null);
      expect(await row('c')).to.include({ note: 'written with a' });
      expect(await row('b')).to.include({ status: 'open', lease_token: current.leaseToken });

      let message = '';
      await lease
        .endWith(
          current,
          async (trx) => {
            await trx('lease_test').where({ id: 'c' }).update({ note: 'lost' });
            throw new Error('recording failed');
          },
          () => ({ status: 'done' }),
        )
        .catch((err: Error) => (message = err.message));
      expect(message).to.equal('recording failed');
      expect(await row('c')).to.include({ note: 'written with a' });
      expect(await row('b')).to.include({ status: 'open', lease_token: current.leaseToken });
    });

    it('a lease whose time is when it was taken (the scheduler’s mark) runs out its term after it, under the token given', async () => {
      await insert('a', 'b');
      const marks = new Leases(db, SINCE, MS, () => clock);
      const mark = (id: string, token: string) =>
        marks.claim(
          (trx) => trx('lease_test').where({ id }).select('id'),
          async (rows: Row[], grant) => Promise.all(rows.map((r) => grant(r.id, {}, token))),
        );
      expect(await mark('a', 'job-a')).to.deep.equal(['job-a']);
      expect(await row('a')).to.include({ mark: 'job-a', lease_token: null });
      expect(Number((await row('a')).marked_at_ms)).to.equal(T0);
      const lapsedIds = async () => (await marks.lapsed(db('lease_test'), clock).select('id')).map((r: { id: string }) => r.id);
      clock = T0 + MS - 1;
      expect(await lapsedIds()).to.deep.equal([]);
      clock = T0 + MS + 1;
      expect(await lapsedIds(), 'a row never marked is not lapsed').to.deep.equal(['a']);
      expect(await marks.renew({ id: 'a', leaseToken: 'job-a' })).to.equal(true);
      expect(Number((await row('a')).marked_at_ms)).to.equal(clock);
      expect(await lapsedIds()).to.deep.equal([]);
      expect(await marks.end({ id: 'a', leaseToken: 'job-b' })).to.equal(false);
      expect(await marks.end({ id: 'a', leaseToken: 'job-a' }, { note: 'handed over' })).to.equal(true);
      expect(await row('a')).to.include({ mark: null, marked_at_ms: null, note: 'handed over' });
    });

    if (backend === 'mysql') {
      it('a claim passes by the row another claim holds locked (SKIP LOCKED), without waiting for it', async () => {
        await insert('a', 'b');
        const held = gate();
        const reading = gate();
        // The first claim has read and locked "a", and waits before granting it.
        const first = claimOne(lease, async () => {
          reading.open();
          await held.opened;
        });
        await reading.opened;
        try {
          const second = await within(claimOne(), 5_000);
          expect(second, 'the second claim waited for the first').to.not.equal('still waiting');
          expect((second as Held | null)?.id).to.equal('b');
        } finally {
          held.open();
        }
        expect((await first)?.id).to.equal('a');
      });

      it('work under a lease holds its row locked: a claim of the lease that ran out meanwhile passes it by until the work is done', async () => {
        await insert('a');
        const a = (await claimOne()) as Held;
        clock += MS + 1;
        const working = gate();
        const done = gate();
        const work = lease.whileHeld(a, async (trx) => {
          working.open();
          await done.opened;
          await lease.end(a, { status: 'done' }, trx);
          return true;
        });
        await working.opened;
        try {
          const meanwhile = await within(claimOne(), 5_000);
          expect(meanwhile, 'the claim took the row the work holds').to.equal(null);
        } finally {
          done.open();
        }
        expect(await work).to.equal(true);
        expect(await row('a')).to.include({ status: 'done' });
        expect(await claimOne()).to.equal(null);
      });
    }
  });
}
