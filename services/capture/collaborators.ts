/**
 * The capture service's collaborators: every call it makes to another service, in one place,
 * as the interfaces its rooms declare (the pipeline's Analyst and Router, research's analyst,
 * fair sharing's accountOf, the snap's configuration). Each room takes these as plain
 * collaborators, so a unit test passes a sinon stub where the service passes the broker.
 */
import type { ServiceBroker } from 'moleculer';
import { bandwidth, releaseCredits } from '../billing/public/credits';
import type { Config } from '../shared/config';
import { broadcast, call, emit } from '../shared/contracts';
import { type SnapOptions, captureKey } from '../shared/screenshot-options';
import type { Analyst, Router, Uploader } from './jobs/pipeline';
import type { SnapConfigs } from './jobs/snaps';
import type { ResearchDeps } from './research/research';

export interface Collaborators {
  /** billing.account: an account's plan and limits, for jobs that carry only its id. */
  accountOf: (accountId: string) => ReturnType<typeof call<'billing.account'>>;
  /** ai: the checks before a capture and the analysis after it. */
  analyst: Analyst;
  /** proxy and billing: a capture's route, and the bandwidth a real location spends. */
  router: Router;
  /** proxy: a capture's file uploaded to the account's own bucket (store_to). */
  uploader: Uploader;
  /** scheduler: the configuration a snap is recorded under. */
  snapConfigs: SnapConfigs;
  /** ai: what research asks of a domain's pages. */
  researchAnalyst: ResearchDeps['analyst'];
  /** A research job's end, announced (the notifier and the api listen). */
  researchEnded: ResearchDeps['ended'];
  /** A job queued here, announced to every capture instance (one of them claims it). */
  jobQueued: (jobId: string) => void;
  /** A configuration's archive deleted here, broadcast to every capture instance (each forgets the configuration). */
  configDeleted: (accountId: string, configId: string) => void;
  /** billing: the credits of a job deleted before it ended, given back (`job:<id>` and `job:<id>:ai`). */
  releaseJobCredits: (accountId: string, jobId: string) => Promise<void>;
  /** Webhook deliveries written with a capture or its change alerts, announced (a notifier sends them without waiting for its poll). */
  deliveriesAdded: (accountId: string) => void;
}

export function collaboratorsOf(broker: ServiceBroker, config: Readonly<Config>): Collaborators {
  // Provider calls are bounded by AI_TIMEOUT_MS; the broker's timeout is a backstop.
  const aiTimeout = { timeout: config.ai.timeoutMs + 15_000 };
  const analysing = (options: SnapOptions | Record<string, unknown>) => ({ ...options, analyze_image_with_ai: true });
  return {
    accountOf: (accountId) => call(broker, 'billing.account', { accountId }),
    analyst: {
      check: (accountId, options) => call(broker, 'ai.check', { accountId, options }),
      analyze: (accountId, options, image) => call(broker, 'ai.analyze', { accountId, options, image }, aiTimeout),
    },
    router: {
      route: (accountId, options) =>
        options.real_location !== undefined || options.custom_proxy_id !== undefined
          ? call(broker, 'proxy.route', {
              accountId,
              ...(options.real_location !== undefined ? { realLocation: options.real_location } : {}),
              ...(options.custom_proxy_id !== undefined ? { customProxyId: options.custom_proxy_id } : {}),
            })
          : Promise.resolve(null),
      // The credits helper: the month's room asked (402 real_location_bandwidth_exhausted when no byte is left), nothing held.
      checkBandwidth: (accountId) => bandwidth.ensureRoom(broker, accountId),
      chargeBandwidth: (accountId, bytes) => bandwidth.charge(broker, accountId, bytes),
    },
    // The proxy service reads the file from storage and uploads it (its action bounds the time): the credentials never come here.
    uploader: {
      store: (accountId, destination, key, file) => call(broker, 'proxy.storeFile', { accountId, destination, key, file }, { timeout: 40_000 }),
    },
    snapConfigs: {
      snapConfig: async (accountId, options, jobId) => ({
        id: (await call(broker, 'scheduler.snapConfig', { accountId, options, snapKey: captureKey(options), ...(jobId ? { jobId } : {}) })).id,
        noted: jobId !== undefined,
      }),
      noteJob: (configId, jobId) => void call(broker, 'scheduler.noteJob', { configId, jobId }).catch(() => undefined),
    },
    researchAnalyst: {
      check: (work) => call(broker, 'ai.check', { accountId: work.accountId, options: analysing(work.aiOptions) }),
      extract: (work, pages) =>
        call(
          broker,
          'ai.research',
          { accountId: work.accountId, options: analysing(work.aiOptions), domain: work.domain, notes: work.notes, fields: work.structures, pages },
          aiTimeout,
        ),
    },
    researchEnded: (status, accountId) => void emit(broker, 'capture.researchEnded', { accountId, researchId: status.job_id }),
    jobQueued: (jobId) => void emit(broker, 'capture.jobQueued', { jobId }),
    configDeleted: (accountId, configId) => void broadcast(broker, 'capture.configDeleted', { accountId, configId }, ['capture']).catch(() => undefined),
    // Both ids: an `:ai` one that was never reserved is nothing to give back.
    releaseJobCredits: (accountId, jobId) => releaseCredits(broker, accountId, `job:${jobId}`, true),
    deliveriesAdded: (accountId) => void emit(broker, 'notifier.deliveriesAdded', { accountId }),
  };
}
