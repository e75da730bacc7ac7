/**
 * The fair order (services/capture/fairness/fair-queue.ts) on its own: accounts in turn within a class,
 * strict priority between classes with the starvation guard. The pool and the jobs queue use
 * it; their own tests (browser-pool.unit.test.ts, jobs.test.ts) prove they do.
 */
import { expect } from 'chai';
import { ClassTurns, FairQueue, PASS_LIMIT, type Waiting, inTurnOrder } from '../../../services/capture/fairness/fair-queue';

type Cls = 'snap' | 'jobs';
interface W extends Waiting<Cls> {
  name: string;
}

/** Serves the queue to the end, one at a time, the clock moving 1 ms a turn; the names in order. */
function serveAll(q: FairQueue<Cls, W>, start = 1_000): string[] {
  const order: string[] = [];
  for (let now = start; ; now++) {
    const w = q.next();
    if (!w) return order;
    q.serve(w, now);
    order.push(w.name);
  }
}

describe('the fair order of waiting work (unit)', () => {
  it("names, for a full queue, the newest waiter of the account with at least two more waiting than the newcomer's", () => {
    const q = new FairQueue<Cls, W>(['snap', 'jobs']);
    const all = () => true;
    for (let i = 1; i <= 3; i++) q.add({ cls: 'snap', accountId: 'A', since: i, name: `A${i}` });
    q.add({ cls: 'snap', accountId: 'B', since: 10, name: 'B1' });
    q.add({ cls: 'jobs', accountId: '', since: 0, name: 'worker' });
    expect(q.giveWay(all, 'C')?.name, 'C has none, A three').to.equal('A3');
    expect(q.giveWay(all, 'B')?.name, 'B has one, A three').to.equal('A3');
    expect(q.giveWay(all, 'A'), 'the busiest itself').to.equal(null);
    q.remove(q.giveWay(all, 'C')!);
    expect(q.giveWay(all, 'B'), 'A two, B one: no place to take').to.equal(null);
    // Only what `counted` counts: the worker's ask is no account's.
    expect(q.giveWay((w) => w.cls === 'snap', '')?.name).to.equal('A2');
  });

  it('serves accounts in turn, not whoever queued most', () => {
    const q = new FairQueue<Cls, W>(['snap', 'jobs']);
    for (let i = 1; i <= 4; i++) q.add({ cls: 'snap', accountId: 'A', since: i, name: `A${i}` });
    q.add({ cls: 'snap', accountId: 'B', since: 10, name: 'B1' });
    q.add({ cls: 'snap', accountId: 'C', since: 11, name: 'C1' });
    expect(serveAll(q)).to.deep.equal(['A1', 'B1', 'C1', 'A2', 'A3', 'A4']);
  });

  it("serves an account's own work by when each began waiting, not when it was added (work taken again keeps its place)", () => {
    const q = new FairQueue<Cls, W>(['snap', 'jobs']);
    q.add({ cls: 'snap', accountId: 'A', since: 50, name: 'A-new' });
    q.add({ cls: 'snap', accountId: 'A', since: 10, name: 'A-taken-again' });
    q.add({ cls: 'snap', accountId: 'B', since: 30, name: 'B1' });
    expect(serveAll(q)).to.deep.equal(['A-taken-again', 'B1', 'A-new']);
  });

  it('gives the next turn to the account that has waited longest for it: an account just served goes behind those waiting since before', () => {
    const q = new FairQueue<Cls, W>(['snap', 'jobs']);
    q.add({ cls: 'snap', accountId: 'A', since: 1, name: 'A1' });
    q.serve(q.next() as W, 100);
    // A's next capture came before B's, but A had its turn at 100, after B began waiting.
    q.add({ cls: 'snap', accountId: 'A', since: 50, name: 'A2' });
    q.add({ cls: 'snap', accountId: 'B', since: 60, name: 'B1' });
    expect(serveAll(q, 200)).to.deep.equal(['B1', 'A2']);
    // An account that waits since after another's last turn comes after it.
    q.add({ cls: 'snap', accountId: 'A', since: 300, name: 'A3' });
    q.add({ cls: 'snap', accountId: 'C', since: 400, name: 'C1' });
    expect(serveAll(q, 500)).to.deep.equal(['A3', 'C1']);
  });

  it('passes by what is not eligible (an account at its limit) and serves the next account', () => {
    const q = new FairQueue<Cls, W>(['snap', 'jobs']);
    q.add({ cls: 'snap', accountId: 'A', since: 1, name: 'A1' });
    q.add({ cls: 'snap', accountId: 'B', since: 2, name: 'B1' });
    expect(q.next((w) => w.accountId !== 'A')?.name).to.equal('B1');
  });

  it('serves the higher class first, but a lower class passed over three times in a row gets the next turn', () => {
    const q = new FairQueue<Cls, W>(['snap', 'jobs']);
    for (let i = 1; i <= 8; i++) q.add({ cls: 'snap', accountId: 'A', since: i, name: `S${i}` });
    for (let i = 1; i <= 2; i++) q.add({ cls: 'jobs', accountId: '', since: i, name: `J${i}` });
    expect(PASS_LIMIT).to.equal(3);
    expect(serveAll(q)).to.deep.equal(['S1', 'S2', 'S3', 'J1', 'S4', 'S5', 'S6', 'J2', 'S7', 'S8']);
  });

  it('counts a class as passed over only while it waited', () => {
    const turns = new ClassTurns<Cls>(['snap', 'jobs']);
    for (let i = 0; i < 10; i++) turns.served('snap', new Set(['snap']));
    expect(turns.pick(new Set(['snap', 'jobs']))).to.equal('snap');
    turns.served('snap', new Set(['snap', 'jobs']));
    turns.served('snap', new Set(['snap', 'jobs']));
    expect(turns.pick(new Set(['snap', 'jobs']))).to.equal('snap');
    turns.served('snap', new Set(['snap', 'jobs']));
    expect(turns.pick(new Set(['snap', 'jobs']))).to.equal('jobs');
    turns.served('jobs', new Set(['snap', 'jobs']));
    expect(turns.pick(new Set(['snap', 'jobs']))).to.equal('snap');
    expect(turns.pick(new Set())).to.equal(null);
  });

  it('orders accounts by when their turn began, then by the older wait', () => {
    const last = new Map([['A', 500]]);
    const ordered = inTurnOrder(
      [
        { accountId: 'A', since: 100 },
        { accountId: 'B', since: 400 },
        { accountId: 'C', since: 450 },
        { accountId: 'D', since: 600 },
      ],
      (a) => last.get(a),
    );
    expect(ordered.map((a) => a.accountId)).to.deep.equal(['B', 'C', 'A', 'D']);
  });
});
