/**
 * GoneOwners over the Grid's /status answer (Selenium 4's shape, the owner as a session's
 * extension capability, as a 4.20 Grid gives it back): which sessions it ends for a gone
 * capture instance, how (its browser closed over the relay, then the session deleted), when
 * (after the grace, only if the node stayed gone and others are heard), and what it does when
 * the Grid cannot be read. The Grid is a stub fetch, the CDP relay a sinon
 * stub; test/system/instance-death-cluster.test.ts and test/stack/faults.test.ts end the
 * sessions of a SIGKILLed instance on a real Grid.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { SESSION_OWNER_CAPABILITY, sessionOwner } from '../../../services/capture/browsers/browser-slot';
import { GoneOwners, type GoneOwnersOptions } from '../../../services/capture/browsers/gone-owners';
import type { CdpSocket } from '../../../services/capture/browsers/grid-cdp';

const DEAD = sessionOwner('capture-a', 'inst-1');
const ALIVE = sessionOwner('capture-b', 'inst-2');

const statusAnswer = (sessions: Array<{ id: string; owner?: string }>) =>
  new Response(
    JSON.stringify({
      value: {
        ready: true,
        nodes: [
          {
            uri: 'http://127.0.0.1:5555',
            availability: 'UP',
            slots: sessions.map(({ id, owner }) => ({
              session: {
                sessionId: id,
                start: '2026-11-30T00:00:00Z',
                capabilities: {
                  browserName: 'chrome-headless-shell',
                  'se:cdp': `ws://127.0.0.1:4444/session/${id}/se/cdp`,
                  ...(owner ? { [SESSION_OWNER_CAPABILITY]: owner } : {}),
                },
              },
            })),
          },
          { uri: 'http://127.0.0.1:5556', availability: 'UP', slots: [{ session: null }] },
        ],
      },
    }),
    { status: 200, headers: { 'content-type': 'application/json' } },
  );

/** A Grid answering /status with `sessions` and each DELETE with `deleteStatus(id)`; what it was asked, in order. */
function grid(sessions: Array<{ id: string; owner?: string }>, deleteStatus: (id: string) => number = () => 200) {
  const asked: string[] = [];
  const headers: Array<Record<string, string>> = [];
  const fetchFn = sinon.stub<Parameters<typeof fetch>, ReturnType<typeof fetch>>().callsFake(async (input, init) => {
    const url = new URL(String(input));
    asked.push(`${init?.method ?? 'GET'} ${url.href}`);
    headers.push((init?.headers ?? {}) as Record<string, string>);
    if (url.pathname.endsWith('/status')) return statusAnswer(sessions);
    const id = url.pathname.split('/').pop() as string;
    return new Response(JSON.stringify({ value: null }), { status: deleteStatus(id) });
  });
  return { fetchFn, asked, headers };
}

function relay() {
  const sockets: Array<{ url: string; sent: string[]; closed: boolean }> = [];
  const open = sinon.stub<[string, number], Promise<CdpSocket>>().callsFake(async (url) => {
    const socket = { url, sent: [] as string[], closed: false };
    sockets.push(socket);
    return {
      send: async <T>(method: string) => {
        socket.sent.push(method);
        return {} as T;
      },
      close: () => {
        socket.closed = true;
      },
    };
  });
  return { open, sockets };
}

const log = () => ({ info: sinon.stub(), warn: sinon.stub() });

/** A GoneOwners in a cluster where every node that left stays gone and others are heard, unless `o` says otherwise. */
const goneOwners = (o: Omit<GoneOwnersOptions, 'cluster' | 'graceMs'> & Partial<GoneOwnersOptions>) =>
  new GoneOwners({ cluster: { isBack: () => false, hearsOthers: () => true }, graceMs: 10_000, ...o });

describe('GoneOwners (unit: the Grid answered by a stub fetch, the CDP relay by a stub)', () => {
  it("ends the gone owner's sessions only: each browser closed over its relay, then the session deleted", async () => {
    const g = grid([{ id: 's1', owner: DEAD }, { id: 's2', owner: ALIVE }, { id: 's3', owner: DEAD }, { id: 's4' }]);
    const r = relay();
    const l = log();
    const owners = goneOwners({ seleniumUrl: 'http://127.0.0.1:4444', log: l, open: r.open, fetchFn: g.fetchFn });
    expect(await owners.ownerGone(DEAD)).to.equal(2);
    expect(r.sockets.map((s) => [s.url, s.sent, s.closed])).to.deep.equal([
      ['ws://127.0.0.1:4444/session/s1/se/cdp', ['Browser.close'], true],
      ['ws://127.0.0.1:4444/session/s3/se/cdp', ['Browser.close'], true],
    ]);
    expect(g.asked).to.deep.equal(['GET http://127.0.0.1:4444/status', 'DELETE http://127.0.0.1:4444/session/s1', 'DELETE http://127.0.0.1:4444/session/s3']);
    // Each relay opened within a bound: a sweep never holds the service's stop for long.
    for (const call of r.open.getCalls()) expect(call.args[1]).to.be.within(1, 5_000);
    sinon.assert.calledOnceWithMatch(l.info, sinon.match('Ended 2 of the 2 Grid session(s) of capture instance capture-a/inst-1'));
  });

  it('takes a restarted process under the same node id for another owner', async () => {
    const g = grid([
      { id: 'old', owner: sessionOwner('capture-a', 'inst-1') },
      { id: 'new', owner: sessionOwner('capture-a', 'inst-9') },
    ]);
    const owners = goneOwners({ seleniumUrl: 'http://127.0.0.1:4444/', log: log(), open: relay().open, fetchFn: g.fetchFn });
    expect(await owners.ownerGone(sessionOwner('capture-a', 'inst-1'))).to.equal(1);
    expect(g.asked.filter((a) => a.startsWith('DELETE'))).to.deep.equal(['DELETE http://127.0.0.1:4444/session/old']);
  });

  it('counts a session another instance ended first (404) as ended, and one the Grid refused to end as not', async () => {
    const g = grid(
      [
        { id: 'gone', owner: DEAD },
        { id: 'refused', owner: DEAD },
      ],
      (id) => (id === 'gone' ? 404 : 500),
    );
    const l = log();
    const owners = goneOwners({ seleniumUrl: 'http://127.0.0.1:4444', log: l, open: relay().open, fetchFn: g.fetchFn });
    expect(await owners.ownerGone(DEAD)).to.equal(1);
    sinon.assert.calledOnceWithMatch(l.info, sinon.match('Ended 1 of the 2'));
  });

  it('deletes the session even when its relay cannot be opened', async () => {
    const g = grid([{ id: 's1', owner: DEAD }]);
    const open = sinon.stub().rejects(new Error('connect ECONNREFUSED'));
    const owners = goneOwners({ seleniumUrl: 'http://127.0.0.1:4444', log: log(), open, fetchFn: g.fetchFn });
    expect(await owners.ownerGone(DEAD)).to.equal(1);
    expect(g.asked).to.include('DELETE http://127.0.0.1:4444/session/s1');
  });

  it('does nothing, and warns, when the Grid cannot be read', async () => {
    const fetchFn = sinon.stub<Parameters<typeof fetch>, ReturnType<typeof fetch>>().rejects(new Error('connect ECONNREFUSED 127.0.0.1:4444'));
    const r = relay();
    const l = log();
    const owners = goneOwners({ seleniumUrl: 'http://127.0.0.1:4444', log: l, open: r.open, fetchFn });
    expect(await owners.ownerGone(DEAD)).to.equal(0);
    sinon.assert.calledOnce(fetchFn);
    sinon.assert.notCalled(r.open);
    sinon.assert.calledOnceWithMatch(l.warn, sinon.match('session timeout'));
  });

  it("sends SELENIUM_URL's credentials as a header, never in the URL", async () => {
    const g = grid([{ id: 's1', owner: DEAD }]);
    const owners = goneOwners({ seleniumUrl: 'http://grid-user:s%40cret@127.0.0.1:4444/wd/hub', log: log(), open: relay().open, fetchFn: g.fetchFn });
    expect(await owners.ownerGone(DEAD)).to.equal(1);
    expect(g.asked).to.deep.equal(['GET http://127.0.0.1:4444/wd/hub/status', 'DELETE http://127.0.0.1:4444/wd/hub/session/s1']);
    const basic = `Basic ${Buffer.from('grid-user:s@cret').toString('base64')}`;
    expect(g.headers.map((h) => h.authorization)).to.deep.equal([basic, basic]);
  });

  describe('a node Moleculer reports disconnected', () => {
    let clock: sinon.SinonFakeTimers;
    beforeEach(() => {
      clock = sinon.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    });
    afterEach(() => clock.restore());

    it('has its sessions ended once it has stayed gone for the grace', async () => {
      const g = grid([
        { id: 's1', owner: DEAD },
        { id: 's2', owner: ALIVE },
      ]);
      const owners = goneOwners({ seleniumUrl: 'http://127.0.0.1:4444', log: log(), open: relay().open, fetchFn: g.fetchFn });
      owners.nodeLeft('capture-a', 'inst-1');
      await clock.tickAsync(9_999);
      sinon.assert.notCalled(g.fetchFn);
      await clock.tickAsync(1);
      await owners.stop();
      expect(g.asked).to.deep.equal(['GET http://127.0.0.1:4444/status', 'DELETE http://127.0.0.1:4444/session/s1']);
    });

    it('keeps its sessions when it is back within the grace (a transporter restarted), as the same process', async () => {
      const g = grid([{ id: 's1', owner: DEAD }]);
      const isBack = sinon.stub().returns(true);
      const owners = goneOwners({
        seleniumUrl: 'http://127.0.0.1:4444',
        cluster: { isBack, hearsOthers: () => true },
        log: log(),
        open: relay().open,
        fetchFn: g.fetchFn,
      });
      owners.nodeLeft('capture-a', 'inst-1');
      await clock.tickAsync(10_000);
      await owners.stop();
      sinon.assert.calledOnceWithExactly(isBack, 'capture-a', 'inst-1');
      sinon.assert.notCalled(g.fetchFn);
    });

    it('keeps its sessions, and warns, when this instance hears no other node either (its own link is down)', async () => {
      const g = grid([{ id: 's1', owner: DEAD }]);
      const l = log();
      const owners = goneOwners({
        seleniumUrl: 'http://127.0.0.1:4444',
        cluster: { isBack: () => false, hearsOthers: () => false },
        log: l,
        open: relay().open,
        fetchFn: g.fetchFn,
      });
      owners.nodeLeft('capture-a', 'inst-1');
      await clock.tickAsync(10_000);
      await owners.stop();
      sinon.assert.notCalled(g.fetchFn);
      sinon.assert.calledOnceWithMatch(l.warn, sinon.match('hears no other node'));
    });

    it('is forgotten when the service stops within the grace (no timer left)', async () => {
      const g = grid([{ id: 's1', owner: DEAD }]);
      const owners = goneOwners({ seleniumUrl: 'http://127.0.0.1:4444', log: log(), open: relay().open, fetchFn: g.fetchFn });
      owners.nodeLeft('capture-a', 'inst-1');
      await owners.stop();
      expect(clock.countTimers()).to.equal(0);
      owners.nodeLeft('capture-a', 'inst-1');
      expect(clock.countTimers()).to.equal(0);
      await clock.tickAsync(10_000);
      sinon.assert.notCalled(g.fetchFn);
    });
  });

  it('stop() waits for the sweeps under way', async () => {
    let answer: (r: Response) => void = () => undefined;
    const fetchFn = sinon.stub<Parameters<typeof fetch>, ReturnType<typeof fetch>>().callsFake(
      () =>
        new Promise<Response>((resolve) => {
          answer = resolve;
        }),
    );
    const owners = goneOwners({ seleniumUrl: 'http://127.0.0.1:4444', log: log(), open: relay().open, fetchFn });
    void owners.ownerGone(DEAD);
    let stopped = false;
    const stopping = owners.stop().then(() => {
      stopped = true;
    });
    await new Promise((r) => setImmediate(r));
    expect(stopped).to.equal(false);
    answer(statusAnswer([]));
    await stopping;
    expect(stopped).to.equal(true);
  });
});
