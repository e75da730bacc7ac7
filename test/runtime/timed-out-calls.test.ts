/**
 * A remote call that timed out is forgotten (runtime/timed-out-calls.ts): over real
 * NATS, a node whose action never answers; the caller gets its RequestTimeoutError, and
 * then stops at once instead of waiting its whole shutdown timeout for the lost call.
 */
import { expect } from 'chai';
import { ServiceBroker } from 'moleculer';
import { brokerOptions } from '../../moleculer.config';
import { NATS_URL, configFrom, uniqueName } from '../support/backends';

describe('remote calls that time out (two brokers over NATS)', function () {
  this.timeout(60_000);

  it('are forgotten: the caller stops at once afterwards', async () => {
    const namespace = uniqueName('ns');
    const config = configFrom({ TRANSPORTER: NATS_URL, NAMESPACE: namespace, LOG_LEVEL: 'fatal' });
    const caller = new ServiceBroker({ ...brokerOptions(config), nodeID: uniqueName('caller-') });
    // The silent node: its action never answers (it is not tracked, so it stops at once too).
    const silent = new ServiceBroker({ namespace, nodeID: uniqueName('silent-'), transporter: NATS_URL, logger: false, tracking: { enabled: false } });
    silent.createService({ name: 'silent', actions: { wait: () => new Promise(() => undefined) } });
    try {
      await Promise.all([caller.start(), silent.start()]);
      await caller.waitForServices(['silent'], 10_000);
      const err = await caller.call('silent.wait', {}, { timeout: 300 }).then(
        () => null,
        (e: { type?: string }) => e,
      );
      expect(err?.type).to.equal('REQUEST_TIMEOUT');
    } finally {
      await silent.stop();
    }
    const t0 = Date.now();
    await caller.stop();
    expect(Date.now() - t0, 'the stop waited for the lost call').to.be.below(3_000);
  });
});
