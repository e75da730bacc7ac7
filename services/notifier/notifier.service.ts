/**
 * notifier: owns webhook_secrets, webhook_deliveries (the outbox capture appends to in the
 * transaction that records a capture), webhook_attempts, change_readings and
 * change_notifications (recorded with the capture too, public/change-alerts.ts). Sends capture deliveries,
 * change alerts and the end of domain research jobs, signed per Standard Webhooks, with
 * retries; keeps the delivery log.
 *
 * Wiring only: signing in signing.ts and signing-secrets.ts, the outbox in deliveries.ts,
 * the schedule in retry-policy.ts, the wire in http-post.ts, the loop in dispatcher.ts.
 */
import type { Knex } from 'knex';
import type { Config } from '../shared/config';
import { defineService, ServiceDatabase } from '../shared/define-service';
import { egressPolicyFor } from '../shared/egress';
import { serviceError } from '../shared/errors';
import { SecretBox } from '../shared/secrets';
import type { ServiceUnit } from '../shared/service-unit';
import { ChangeNotifications } from './change-notifications';
import { DeliveryRepository } from './deliveries';
import { Dispatcher } from './dispatcher';
import { NotifierMetrics } from './metrics';
import { SigningSecrets } from './signing-secrets';

export interface NotifierDeps {
  config: Readonly<Config>;
  /** Injected for tests (a controllable clock); defaults to Date.now. */
  now?: () => number;
  /** Polls for due retries on its own; tests that drive pump() themselves turn it off. */
  autoPoll?: boolean;
  /** false: answers its actions but sends nothing (the admin CLI). */
  send?: boolean;
}

export interface NotifierHandle {
  /** Claims and sends what is due now; resolves when those attempts are recorded. */
  pump(): Promise<void>;
}

interface NotifierState {
  db: Knex;
  deliveries: DeliveryRepository;
  alerts: ChangeNotifications;
  secrets: SigningSecrets;
  dispatcher: Dispatcher;
  metrics: NotifierMetrics;
}

export function notifierService(deps: NotifierDeps): ServiceUnit<NotifierHandle> {
  const { config } = deps;
  const now = deps.now ?? Date.now;
  const database = new ServiceDatabase(config.database);
  let s: NotifierState;

  const schema = defineService('notifier', {
    database,
    actions: {
      webhookSecret: async (ctx) => ({ secret: await s.secrets.current(ctx.params.accountId) }),
      rotateSecret: async (ctx) => s.secrets.rotate(ctx.params.accountId),
      listDeliveries: async (ctx) => {
        const { accountId, configId, status, paging } = ctx.params;
        return s.deliveries.list(accountId, { ...(configId ? { configId } : {}), ...(status ? { status } : {}) }, paging);
      },
      retryDelivery: async (ctx) => {
        const view = await s.deliveries.retry(ctx.params.accountId, ctx.params.id);
        if (!view) throw serviceError('not_found', `No webhook delivery "${ctx.params.id}" in this account.`);
        void s.dispatcher.pump();
        return view;
      },
      listChangeNotifications: (ctx) => s.alerts.list(ctx.params.accountId, ctx.params.configId, ctx.params.paging, ctx.params.history === true),
      deleteForConfig: async (ctx) => {
        const { accountId, configId } = ctx.params;
        await s.db.transaction(async (trx) => {
          await s.alerts.deleteForConfig(trx, accountId, configId);
          await s.deliveries.deleteForConfig(trx, accountId, configId);
        });
        return { ok: true as const };
      },
      metrics: () => s.metrics.snapshot(),
    },
    events: {
      'capture.completed': () => void s.dispatcher.pump(),
      'capture.researchEnded': () => void s.dispatcher.pump(),
      'notifier.deliveriesAdded': () => void s.dispatcher.pump(),
    },
    created() {
      const db = database.knex;
      // A lease outlasts the attempt it covers, so it only runs out when its sender died.
      const deliveries = new DeliveryRepository(db, 2 * config.webhooks.timeoutMs + 5_000, now, config.webhooks.accountConcurrency);
      const secrets = new SigningSecrets(db, new SecretBox(config), now);
      // The policy captures obey (EGRESS_DNS_SERVERS, EGRESS_ALLOW_ADDRESSES, ALLOW_PRIVATE_NETWORKS).
      const policy = egressPolicyFor(config);
      const metrics = new NotifierMetrics(db, this.logger);
      const dispatcher = new Dispatcher(
        { deliveries, secrets, logger: this.logger, now, observer: metrics },
        {
          concurrency: config.webhooks.concurrency,
          pollMs: config.webhooks.pollMs,
          post: { timeoutMs: config.webhooks.timeoutMs, admit: (host) => policy.admit(host) },
        },
      );
      s = { db, deliveries, alerts: new ChangeNotifications(db), secrets, dispatcher, metrics };
    },
    started() {
      if (deps.send !== false) s.dispatcher.start(deps.autoPoll ?? true);
    },
    async stopped() {
      await s.dispatcher.stop();
    },
  });
  return { schema, handle: { pump: () => s.dispatcher.pump().then(() => s.dispatcher.idle()) } };
}
