/**
 * The outbox across processes (MariaDB, NATS): two notifier instances send each attempt
 * once; a notifier killed (SIGKILL) mid-delivery and started again delivers everything,
 * and a delivery cut off by the kill is sent again only after its lease ran out; with a slow
 * poll, a delivery announced from another process is sent at once and its retry when due.
 */
import crypto from 'node:crypto';
import { expect } from 'chai';
import knex, { type Knex } from 'knex';
import { emit } from '../../services/shared/contracts';
import { knexConfig } from '../../services/shared/database';
import { appendDelivery } from '../../services/notifier/public/outbox';
import { NATS_URL, backendConfig, uniqueName } from '../support/backends';
import { startServeProcess } from '../support/processes';
import { type RunningSystem, runSystem } from '../support/system';
import { startReceiver } from './receivers';
import { until } from '../support/wait';

function countBy(ids: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const id of ids) counts[id] = (counts[id] ?? 0) + 1;
  return counts;
}

describe('notifier instances over MariaDB and NATS', function () {
  this.timeout(120_000);
  const secretsKey = crypto.randomBytes(32).toString('hex');

  it('two instances send each attempt once', async () => {
    const b = await backendConfig('mysql', {
      TRANSPORTER: NATS_URL,
      NAMESPACE: uniqueName('ns'),
      ALLOW_PRIVATE_NETWORKS: 'true',
      SECRETS_KEY: secretsKey,
      WEBHOOK_POLL_MS: '50',
      WEBHOOK_CONCURRENCY: '4',
    });
    // Every delivery fails once (500), then succeeds: two attempts each, whoever makes them.
    const seen = new Set<string>();
    const r = await startReceiver(() => ({ status: 200 }));
    r.script = (n) => {
      const id = String(r.received[n]!.headers['webhook-id']);
      if (seen.has(id)) return { status: 200 };
      seen.add(id);
      return { status: 500 };
    };
    const systems: RunningSystem[] = [];
    const db: Knex = knex(knexConfig(b.config.database));
    try {
      systems.push(await runSystem({ ...b.config, services: ['billing', 'notifier'] }));
      systems.push(await runSystem({ ...b.config, migrateOnStart: false, services: ['notifier'] }));
      const ids: string[] = [];
      for (let i = 0; i < 30; i++) {
        ids.push(
          await appendDelivery(db, {
            accountId: 'acct_cluster',
            configId: 'cfg',
            kind: 'capture',
            sendTo: 'webhook',
            url: `${r.origin}/x`,
            body: JSON.stringify({ i }),
            jobId: null,
            now: Date.now() - 10_000,
          }),
        );
      }
      // The retry is due about 5 s after the failure.
      await until('every delivery to be delivered', async () => {
        const open = await db('webhook_deliveries').whereNot({ status: 'delivered' }).count({ n: '*' });
        return Number(open[0]?.n) === 0;
      });
      const received = countBy(r.received.map((x) => String(x.headers['webhook-id'])));
      expect(Object.keys(received).sort()).to.deep.equal([...ids].sort());
      expect(
        Object.values(received).every((n) => n === 2),
        JSON.stringify(received),
      ).to.equal(true);
      const attempts = await db('webhook_attempts').select('delivery_id', 'number', 'status_code');
      expect(attempts).to.have.length(60);
      const perDelivery = countBy(attempts.map((a) => a.delivery_id));
      expect(Object.values(perDelivery).every((n) => n === 2)).to.equal(true);
    } finally {
      for (const s of systems.reverse()) await s.stop();
      await r.stop();
      await db.destroy();
      await b.cleanup();
    }
  });

  it('with a slow poll, sends a delivery on notifier.deliveriesAdded from another process and its retry when it comes due', async () => {
    const b = await backendConfig('mysql', {
      TRANSPORTER: NATS_URL,
      NAMESPACE: uniqueName('ns'),
      ALLOW_PRIVATE_NETWORKS: 'true',
      SECRETS_KEY: secretsKey,
      // Nothing here is left to the poll.
      WEBHOOK_POLL_MS: '60000',
    });
    // The first attempt fails (500); the retry (due 4 to 6 s after it) succeeds.
    const arrivals: number[] = [];
    const r = await startReceiver();
    r.script = () => {
      arrivals.push(Date.now());
      return { status: arrivals.length === 1 ? 500 : 200 };
    };
    const db: Knex = knex(knexConfig(b.config.database));
    const systems: RunningSystem[] = [];
    try {
      // The announcer (billing only) and the notifier are two brokers: the event crosses NATS.
      systems.push(await runSystem({ ...b.config, services: ['billing'] }));
      systems.push(await runSystem({ ...b.config, migrateOnStart: false, services: ['notifier'] }));
      const announcer = systems[0]!.broker;
      await announcer.waitForServices(['notifier'], 30_000);
      const id = await appendDelivery(db, {
        accountId: 'acct_wake',
        configId: 'cfg',
        kind: 'capture',
        sendTo: 'webhook',
        url: `${r.origin}/x`,
        body: JSON.stringify({ wake: true }),
        jobId: null,
        now: Date.now(),
      });
      const announced = Date.now();
      await emit(announcer, 'notifier.deliveriesAdded', { accountId: 'acct_wake' });
      await until('the first attempt', async () => arrivals.length === 1, 10_000, 50);
      expect(arrivals[0]! - announced).to.be.below(3_000);
      await until('the retry', async () => arrivals.length === 2, 15_000, 50);
      const gap = arrivals[1]! - arrivals[0]!;
      expect(gap).to.be.within(4_000 - 100, 6_000 + 1_500);
      await until(
        'the delivery to be recorded delivered',
        async () => (await db('webhook_deliveries').where({ id }).first('status'))?.status === 'delivered',
        10_000,
        50,
      );
    } finally {
      for (const s of systems.reverse()) await s.stop();
      await r.stop();
      await db.destroy();
      await b.cleanup();
    }
  });

  it('delivers everything after the notifier is killed mid-delivery and started again; the cut delivery waits for its lease', async () => {
    const b = await backendConfig('mysql', {
      ALLOW_PRIVATE_NETWORKS: 'true',
      SECRETS_KEY: secretsKey,
      WEBHOOK_TIMEOUT_MS: '2000',
      WEBHOOK_POLL_MS: '100',
      WEBHOOK_CONCURRENCY: '1',
    });
    const leaseMs = 2 * 2000 + 5000;
    const arrivals: Array<{ id: string; at: number }> = [];
    let hangFirst = true;
    const r = await startReceiver();
    r.script = (n) => {
      arrivals.push({ id: String(r.received[n]!.headers['webhook-id']), at: Date.now() });
      if (hangFirst) {
        hangFirst = false;
        return 'hang';
      }
      return { status: 200 };
    };
    const db: Knex = knex(knexConfig(b.config.database));
    // Migrated by a system that runs nothing else, then stopped.
    const migrator = await runSystem({ ...b.config, services: ['billing'] });
    await migrator.stop();
    const stops: Array<() => Promise<void>> = [];
    try {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        ids.push(
          await appendDelivery(db, {
            accountId: 'acct_kill',
            configId: 'cfg',
            kind: 'capture',
            sendTo: 'webhook',
            url: `${r.origin}/x`,
            body: JSON.stringify({ i }),
            jobId: null,
            now: Date.now() - 10_000 + i,
          }),
        );
      }
      const env = { ...b.env, SERVICES: 'notifier', MIGRATE_ON_START: 'false', PORT: '0' };
      const first = await startServeProcess(env, /ServiceBroker .* started/, { timeoutMs: 60_000 });
      stops.push(first.stop);
      await until('the first attempt to arrive', async () => arrivals.length === 1);
      first.child.kill('SIGKILL');
      await new Promise((res) => first.child.once('exit', res));
      const killedAt = Date.now();

      const second = await startServeProcess(env, /ServiceBroker .* started/, { timeoutMs: 60_000 });
      stops.push(second.stop);
      await until(
        'every delivery to be delivered',
        async () => {
          const open = await db('webhook_deliveries').whereNot({ status: 'delivered' }).count({ n: '*' });
          return Number(open[0]?.n) === 0;
        },
        60_000,
      );
      const cut = arrivals[0]!;
      const again = arrivals.filter((a) => a.id === cut.id);
      expect(again, 'the cut delivery is sent again, once').to.have.length(2);
      // Not while the dead instance's lease still held it.
      expect(again[1]!.at - cut.at).to.be.at.least(leaseMs - 500);
      expect(again[1]!.at).to.be.greaterThan(killedAt);
      expect(Object.keys(countBy(arrivals.map((a) => a.id))).sort()).to.deep.equal([...ids].sort());
      expect(arrivals.filter((a) => a.id !== cut.id)).to.have.length(4);
      const attempts = await db('webhook_attempts').select('delivery_id');
      expect(attempts).to.have.length(5);
    } finally {
      for (const stop of stops.reverse()) await stop();
      await r.stop();
      await db.destroy();
      await b.cleanup();
    }
  });
});
