/**
 * shared/define-service.ts: a service's actions answer under their contract names, its
 * events arrive, and the database of its tables is given back after its own stopped()
 * (even when that throws). What the compiler refuses is proved by the @ts-expect-error
 * lines: were any of them accepted, the build would fail.
 */
import { expect } from 'chai';
import { ServiceBroker } from 'moleculer';
import sinon from 'sinon';
import { call, emit } from '../../services/shared/contracts';
import { type ActionTable, type EventTable, defineService, ServiceDatabase } from '../../services/shared/define-service';

// Never called: what defineService must refuse at compile time.
void (() => {
  // @ts-expect-error a result that is not the contract's
  ({ put: async () => ({ proxy: null, result: null }) }) satisfies Partial<ActionTable<'proxy'>>;
  // @ts-expect-error params the contract does not give
  ({ test: async (ctx) => ({ proxy: ctx.params.proxy, result: { exit_ip: null, ms: 0 } }) }) satisfies Partial<ActionTable<'proxy'>>;
  // @ts-expect-error an action the contract does not name
  ({ removeAll: async () => ({ removed: true }) }) satisfies Partial<ActionTable<'proxy'>>;
  // @ts-expect-error an event the contract does not name
  ({ 'capture.complete': () => undefined }) satisfies EventTable;
  defineService('proxy', {
    // @ts-expect-error an action of the contract missing (proxy.remove)
    actions: {
      summaries: async () => [],
      realLocations: async () => [],
      checkRoute: async () => ({ ok: true as const }),
      route: async () => null,
      testLocation: async (ctx) => ({ location: ctx.params.name, via: '', target: null, upstream: '', exit_ip: null, ms: 0 }),
      put: { handler: async () => Promise.reject(new Error('not here')) },
      list: async () => [],
      test: async () => Promise.reject(new Error('not here')),
    },
  });
});

describe('defineService', () => {
  let broker: ServiceBroker;
  afterEach(async () => {
    await broker?.stop();
  });

  it('answers the actions under their contract names and delivers the events', async () => {
    broker = new ServiceBroker({ logger: false });
    const completed = sinon.spy();
    broker.createService(
      defineService('notifier', {
        actions: {
          webhookSecret: async (ctx) => ({ secret: `whsec_${ctx.params.accountId}` }),
          rotateSecret: { handler: async () => ({ secret: 'whsec_new', previous_valid_until: 'then' }), timeout: 5_000 },
          listDeliveries: async () => ({ deliveries: [], has_more: false }),
          retryDelivery: async () => Promise.reject(new Error('not here')),
          listChangeNotifications: async () => ({ change_notifications: [], has_more: false }),
          deleteForConfig: async () => ({ ok: true as const }),
          metrics: () => [],
        },
        events: { 'capture.completed': (ctx) => completed(ctx.params.jobId) },
      }),
    );
    await broker.start();
    expect(await call(broker, 'notifier.webhookSecret', { accountId: 'acct_1' })).to.deep.equal({ secret: 'whsec_acct_1' });
    expect(await call(broker, 'notifier.rotateSecret', { accountId: 'acct_1' })).to.deep.equal({ secret: 'whsec_new', previous_valid_until: 'then' });
    expect(await call(broker, 'notifier.metrics', {})).to.deep.equal([]);
    await emit(broker, 'capture.completed', { accountId: 'acct_1', configId: 'c', jobId: 'job_1', screenshotId: 's' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(completed.calledOnceWith('job_1')).to.equal(true);
  });

  for (const failing of [false, true]) {
    it(`releases the database after the service's own stopped()${failing ? ', even when it throws' : ''}`, async () => {
      broker = new ServiceBroker({ logger: false });
      const database = sinon.createStubInstance(ServiceDatabase);
      const stopped = sinon.spy(async () => {
        expect(database.release.called).to.equal(false);
        if (failing) throw new Error('stopping failed');
      });
      broker.createService(defineService('api', { database, actions: { metrics: () => [] }, stopped }));
      await broker.start();
      await broker.stop();
      expect(stopped.calledOnce).to.equal(true);
      expect(database.release.calledOnce).to.equal(true);
    });
  }
});
