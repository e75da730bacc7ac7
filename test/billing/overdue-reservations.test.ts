/**
 * A snap's credit is reserved with a deadline (capture/public/snap-timing.ts): its request
 * settles it within its budget unless the process holding the request stopped (killed
 * mid-snap, with nothing answered), and billing then gives it back. Proved on the embedded
 * system: the reservation a /snap makes carries the deadline, a pass past it gives the credit
 * back while the request still waits (and the request's own late settlement then finds nothing),
 * and a restarted system gives back at start what its predecessor left pending past its deadline.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import sinon from 'sinon';
import { SETTLE_RETRY_MS } from '../../services/billing/public/credits';
import { MemoryUsageStore } from '../../services/billing/usage-store';
import { snapTiming } from '../../services/capture/public/snap-timing';
import { call, type Reservation } from '../../services/shared/contracts';
import { backendConfig } from '../support/backends';
import { qs, request } from '../support/http';
import { runSystem } from '../support/system';

describe('overdue reservations: a snap whose request stopped gives its credit back', function () {
  this.timeout(60_000);
  afterEach(() => sinon.restore());

  it("reserves a snap's credit with the request's deadline; past it, the credit is given back and the request's late settlement finds nothing", async () => {
    // A page that never answers: the snap waits on it for its whole navigation.
    const silent = http.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const b = await backendConfig('sqlite', { ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1' });
    const reserve = sinon.spy(MemoryUsageStore.prototype, 'reserve');
    const sys = await runSystem(b.config);
    try {
      const { access_token } = await sys.account('paid');
      const used = async () =>
        (await request<{ results: { screenshot_current_month_usage: number } }>(sys.base, 'GET', `/account_limits?access_token=${access_token}`)).body.results
          .screenshot_current_month_usage;
      const sent = Date.now();
      const snap = request(sys.base, 'GET', `/snap?${qs({ access_token, ttl: 0, navigation_timeout: 4000, url: `http://127.0.0.1:${port}/never` })}`);
      for (let waited = 0; reserve.callCount === 0 && waited < 3000; waited += 20) await new Promise((r) => setTimeout(r, 20));
      if (reserve.callCount === 0) expect((await snap).raw.toString(), 'the snap reserved its credit').to.equal('');
      expect(reserve.callCount).to.equal(1);
      const held = reserve.firstCall.args[0] as Reservation;
      const { settleWithinMs } = snapTiming(b.config, SETTLE_RETRY_MS);
      expect(held.settleBy, 'the deadline the api asked for').to.be.within(sent + settleWithinMs, Date.now() + settleWithinMs);
      expect(await used()).to.equal(1);

      const store = reserve.firstCall.thisValue as MemoryUsageStore;
      expect(await store.giveBackOverdue((held.settleBy as number) - 1), 'not before its deadline').to.equal(0);
      expect(await store.giveBackOverdue(held.settleBy as number)).to.equal(1);
      expect(await used()).to.equal(0);

      const answer = await snap;
      expect(answer.status, 'the page never answered').to.equal(422);
      expect(await used(), 'given back once: the refund of the failed request finds nothing left').to.equal(0);
    } finally {
      await sys.stop();
      silent.closeAllConnections();
      silent.close();
      await b.cleanup();
    }
  });

  it('gives back at start what a stopped process left pending past its deadline, and nothing without one', async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing,ai,proxy' });
    try {
      let sys = await runSystem(b.config);
      const account = await call(sys.broker, 'billing.createAccount', { plan: 'paid', addons: {} });
      const context = await call(sys.broker, 'billing.authenticate', { token: account.access_token });
      await call(sys.broker, 'billing.reserve', { account: context, amounts: { screenshots: 1 }, settleWithinMs: 300 });
      await call(sys.broker, 'billing.reserve', { account: context, amounts: { screenshots: 1 }, reservationId: 'job:waiting' });
      const used = async () => (await call(sys.broker, 'billing.usage', { account: context })).usage.screenshots;
      expect(await used()).to.equal(2);
      // Stopped with both pending (as a killed process leaves its last write); started again after the deadline.
      await sys.stop();
      await new Promise((r) => setTimeout(r, 400));
      sys = await runSystem(b.config);
      try {
        expect(await used()).to.equal(1);
      } finally {
        await sys.stop();
      }
    } finally {
      await b.cleanup();
    }
  });
});
