/**
 * The sender loop: claims due deliveries (on the capture.completed and notifier.deliveriesAdded
 * events, after every attempt, when a retry this instance scheduled comes due, and on a slow
 * poll for what no instance announces: leases that ran out, an event lost), signs each
 * with the account's secrets, posts it, and records the attempt under the claim's lease.
 * At most `concurrency` attempts at once per instance; the loop is shared/claim-loop.ts.
 */
import type { LoggerInstance } from 'moleculer';
import type { ClaimedDelivery, DeliveryRepository } from './deliveries';
import { ClaimLoop } from '../shared/claim-loop';
import { toEnvelope } from '../shared/errors';
import { withOnlyLogContext } from '../shared/logging';
import { type PostOptions, type PostResult, postJson } from './http-post';
import { afterAttempt } from './retry-policy';
import type { AttemptObserver } from './metrics';
import { signedHeaders } from './signing';
import type { SigningSecrets } from './signing-secrets';

export interface DispatcherOptions {
  concurrency: number;
  pollMs: number;
  post: PostOptions;
}

export interface DispatcherDeps {
  deliveries: DeliveryRepository;
  secrets: SigningSecrets;
  logger: Pick<LoggerInstance, 'info' | 'warn' | 'error'>;
  now: () => number;
  /** Told of every recorded attempt's outcome (metrics.ts). */
  observer?: AttemptObserver | null;
}

export class Dispatcher {
  private readonly loop: ClaimLoop<ClaimedDelivery>;
  private readonly deliveries: DeliveryRepository;
  private readonly secrets: SigningSecrets;
  private readonly logger: Pick<LoggerInstance, 'info' | 'warn' | 'error'>;
  private readonly now: () => number;
  private readonly observer: AttemptObserver | null;

  constructor(
    deps: DispatcherDeps,
    private readonly options: DispatcherOptions,
  ) {
    this.deliveries = deps.deliveries;
    this.secrets = deps.secrets;
    this.logger = deps.logger;
    this.now = deps.now;
    this.observer = deps.observer ?? null;
    this.loop = new ClaimLoop<ClaimedDelivery>(
      { claim: () => this.deliveries.claim(), run: (d) => this.attempt(d) },
      { concurrency: options.concurrency, pollMs: options.pollMs, log: this.logger, what: 'a webhook delivery' },
    );
  }

  /** Polls for due work; `autoPoll` false leaves it to pump() (tests with a controllable clock). */
  start(autoPoll: boolean): void {
    this.loop.start(autoPoll);
  }

  /** Stops claiming and waits for the attempts under way (each is bounded by the timeout). */
  async stop(): Promise<void> {
    await this.loop.stop();
  }

  async idle(): Promise<void> {
    await this.loop.idle();
  }

  /** Claims due deliveries while this instance has room; resolves once they are claimed. */
  pump(): Promise<void> {
    return this.loop.pump();
  }

  /** One attempt, its lines tagged with the delivery's id (the webhook-id header receivers see), and nothing else. */
  private attempt(d: ClaimedDelivery): Promise<void> {
    return withOnlyLogContext({ delivery_id: d.id }, () => this.attemptDelivery(d));
  }

  private async attemptDelivery(d: ClaimedDelivery): Promise<void> {
    try {
      const started = this.now();
      const t0 = performance.now();
      let answer: PostResult;
      try {
        const secrets = await this.secrets.active(d.accountId);
        answer = await postJson(d.url, d.body, signedHeaders(secrets, d.id, new Date(started), d.body), this.options.post);
      } catch (err) {
        // Nothing is sent unsigned: a secret that cannot be opened (SECRETS_KEY unset in
        // the full stack, or changed) is a failed attempt, in the log like any other.
        const { body } = toEnvelope(err);
        if (body.error_code === 'internal_error') this.logger.error(`webhook delivery ${d.id} could not be signed`, err);
        answer = { status: null, body: '', retryAfter: null, error: `not sent: ${body.note}` };
      }
      const duration = Math.round(performance.now() - t0);
      const scheduled = afterAttempt(d.sendTo, answer, d.attempts + 1, this.now());
      // A failed or delivered delivery sent once more by hand gets that one attempt.
      const planned = d.lastChance && scheduled.status === 'pending' ? { status: 'failed' as const, nextAt: null } : scheduled;
      const error = planned.status === 'delivered' ? null : (answer.error ?? (d.sendTo === 'slack' ? `Slack answered "${answer.body.slice(0, 100)}"` : null));
      const next = await this.deliveries.finish(d, { at_ms: started, status_code: answer.status, duration_ms: duration, error }, planned);
      const outcome = next?.status ?? planned.status;
      // Not the URL: a Slack incoming-webhook URL is itself a secret.
      this.logger.info(
        { kind: d.sendTo, attempt: d.attempts + 1, status_code: answer.status, ms: duration, outcome, ...(error ? { error } : {}) },
        `webhook delivery ${d.id}: attempt ${d.attempts + 1} ${outcome}`,
      );
      if (next) {
        this.observer?.attempted(d.sendTo, next.status === 'pending' ? 'retrying' : next.status);
        // Its retry is claimed when it comes due (by this instance, which knows when), not at the next poll.
        if (next.status === 'pending' && next.nextAt !== null) this.loop.wakeIn(next.nextAt - this.now());
      } else this.logger.warn(`webhook delivery ${d.id}: the lease ran out during the attempt; its outcome is not recorded and it will be tried again`);
    } catch (err) {
      // The database failed: the lease runs out and the delivery is claimed again later.
      this.logger.error(`webhook delivery ${d.id}: the attempt could not be recorded: ${(err as Error).message}`);
    }
  }
}
