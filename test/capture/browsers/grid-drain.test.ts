/**
 * A Grid node drained as a scale-down's preStop drains it (`POST /se/grid/node/drain`): the
 * captures running on it finish, the service moves its browsers to the other node between
 * captures, and the node, left without sessions, shuts itself down, long before a grace
 * period would have it killed. Without the move the node keeps the service's warm sessions
 * and never stops.
 */
import { expect } from 'chai';
import { snapSuite } from '../../support/capture-helpers';
import { type Grid, gridModule } from '../../support/grid';
import { alive } from '../../support/processes';
import { sleep, until } from '../../support/wait';

interface NodeStatus {
  id: string;
  uri: string;
  availability: string;
  slots: Array<{ session: { sessionId: string } | null }>;
}

describe('snap on a Grid whose node is drained', function () {
  this.timeout(180_000);
  let grid: Grid | null = null;

  before(async () => {
    grid = await gridModule.startGrid({ mode: 'hub', nodes: 2, maxSessions: 2, port: 0, sessionTimeout: 120 });
  });
  const t = snapSuite(() => ({ SELENIUM_URL: grid!.url, CAPTURE_SESSIONS: '2', ALLOW_PRIVATE_NETWORKS: 'true' }));
  after(async () => {
    await grid?.stop();
  });

  async function nodes(): Promise<NodeStatus[]> {
    const body = (await (await fetch(`${grid!.url}/status`)).json()) as { value: { nodes: NodeStatus[] } };
    return body.value.nodes;
  }
  const sessionsOn = (node: NodeStatus) => node.slots.filter((s) => s.session).length;

  it("finishes the node's captures, moves the browsers off it and lets it stop", async () => {
    for (let i = 0; i < 2; i++) expect((await t.snap({ url: `${t.fx.origin}/plain` })).status).to.equal(200);
    await until('both browsers on the Grid', async () => (await nodes()).reduce((n, node) => n + sessionsOn(node), 0) === 2, 30_000);
    const nodePids = grid!.pids.slice(1);
    const drained = (await nodes()).sort((a, b) => sessionsOn(b) - sessionsOn(a))[0]!;

    // Both browsers busy with a page that answers after 2.5 s, then the drain begins.
    const running = [t.snap({ url: `${t.fx.origin}/slow` }), t.snap({ url: `${t.fx.origin}/slow?b` })];
    await sleep(700);
    const drain = await fetch(`${drained.uri}/se/grid/node/drain`, { method: 'POST', headers: { 'X-REGISTRATION-SECRET': '' } });
    expect(drain.status).to.equal(200);
    for (const r of await Promise.all(running)) expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);

    // The node had the service's sessions; once they moved it stopped (its process gone).
    await until('the drained node to stop', async () => nodePids.filter(alive).length === 1, 30_000);
    await until(
      'both browsers on the node left',
      async () => {
        const left = await nodes();
        return left.length === 1 && left[0]!.id !== drained.id && sessionsOn(left[0]!) === 2;
      },
      30_000,
    );
    for (let i = 0; i < 3; i++) {
      const r = await t.snap({ url: `${t.fx.origin}/plain` });
      expect(r.status, r.raw.toString().slice(0, 300)).to.equal(200);
    }
  });
});
