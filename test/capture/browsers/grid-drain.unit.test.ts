/**
 * GridDrainWatch over the Grid's /status answer (Selenium 4's shape, as a 4.20 hub gives it):
 * which sessions it finds on draining nodes, what it asks the pool, and how it reports a Grid
 * it cannot read. The pool is a sinon stub; the Grid's answer is handed in as fetch's.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { GridDrainWatch, drainingSessions } from '../../../services/capture/browsers/grid-drain';

const status = (nodes: Array<{ availability: string; sessions: Array<string | null> }>) =>
  new Response(
    JSON.stringify({
      value: {
        ready: true,
        message: 'Selenium Grid ready.',
        nodes: nodes.map((n, i) => ({
          id: `node-${i}`,
          uri: `http://127.0.0.1:${5555 + i}`,
          maxSessions: n.sessions.length,
          availability: n.availability,
          slots: n.sessions.map((sessionId) => ({
            id: { hostId: `node-${i}`, id: 'slot' },
            session: sessionId ? { sessionId, start: '2026-11-26T00:00:00Z' } : null,
          })),
        })),
      },
    }),
    { status: 200, headers: { 'content-type': 'application/json' } },
  );

describe('GridDrainWatch (unit: the Grid answered by a stub fetch)', () => {
  it("finds the sessions of the draining nodes only, from the Grid's /status", async () => {
    const fetchFn = sinon.stub<Parameters<typeof fetch>, ReturnType<typeof fetch>>().resolves(
      status([
        { availability: 'UP', sessions: ['a', null] },
        { availability: 'DRAINING', sessions: ['b', 'c'] },
        { availability: 'DOWN', sessions: ['d'] },
      ]),
    );
    expect([...(await drainingSessions('http://127.0.0.1:4444', fetchFn))]).to.deep.equal(['b', 'c']);
    expect(String(fetchFn.firstCall.args[0])).to.equal('http://127.0.0.1:4444/status');
  });

  it('asks the pool to retire them, and says how many moved', async () => {
    const pool = { retireSessions: sinon.stub().returns(1) };
    const log = { info: sinon.stub(), warn: sinon.stub() };
    const fetchFn = sinon
      .stub<Parameters<typeof fetch>, ReturnType<typeof fetch>>()
      .callsFake(async () => status([{ availability: 'DRAINING', sessions: ['b'] }]));
    const watch = new GridDrainWatch({ seleniumUrl: 'http://127.0.0.1:4444/', pool, log, fetchFn });
    await watch.check();
    sinon.assert.calledOnce(pool.retireSessions);
    expect([...pool.retireSessions.firstCall.args[0]]).to.deep.equal(['b']);
    sinon.assert.calledOnce(log.info);
  });

  it('leaves the pool alone while no node drains', async () => {
    const pool = { retireSessions: sinon.stub().returns(0) };
    const fetchFn = sinon.stub<Parameters<typeof fetch>, ReturnType<typeof fetch>>().callsFake(async () => status([{ availability: 'UP', sessions: ['a'] }]));
    await new GridDrainWatch({ seleniumUrl: 'http://127.0.0.1:4444', pool, log: { info: sinon.stub(), warn: sinon.stub() }, fetchFn }).check();
    sinon.assert.notCalled(pool.retireSessions);
  });

  it('warns once while the Grid cannot be read, and again after it could', async () => {
    const pool = { retireSessions: sinon.stub().returns(0) };
    const log = { info: sinon.stub(), warn: sinon.stub() };
    const fetchFn = sinon.stub<Parameters<typeof fetch>, ReturnType<typeof fetch>>();
    fetchFn.onCall(0).rejects(new Error('connect ECONNREFUSED 127.0.0.1:4444'));
    fetchFn.onCall(1).rejects(new Error('connect ECONNREFUSED 127.0.0.1:4444'));
    fetchFn.onCall(2).callsFake(async () => status([]));
    fetchFn.onCall(3).callsFake(async () => new Response('busy', { status: 503 }));
    const watch = new GridDrainWatch({ seleniumUrl: 'http://127.0.0.1:4444', pool, log, fetchFn });
    for (let i = 0; i < 4; i++) await watch.check();
    expect(log.warn.args.map(([m]) => String(m))).to.have.length(2);
    expect(String(log.warn.secondCall.args[0])).to.contain('503');
  });

  it('runs on its interval until stopped', async () => {
    const clock = sinon.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    try {
      const pool = { retireSessions: sinon.stub().returns(0) };
      const fetchFn = sinon.stub<Parameters<typeof fetch>, ReturnType<typeof fetch>>().callsFake(async () => status([]));
      const watch = new GridDrainWatch({
        seleniumUrl: 'http://127.0.0.1:4444',
        pool,
        log: { info: sinon.stub(), warn: sinon.stub() },
        everyMs: 1_000,
        fetchFn,
      });
      watch.start();
      await clock.tickAsync(3_000);
      watch.stop();
      await clock.tickAsync(3_000);
      expect(fetchFn.callCount).to.equal(3);
    } finally {
      clock.restore();
    }
  });
});
