/**
 * One domain of a domain research job, run by the job worker under the job's lease: its home
 * page captured and read (image, text, links), then up to two pages it links to that are
 * likely to hold the fields (research-pages.ts), then the fields extracted by the ai service
 * from the images and the text (ai.research), then the outcome recorded (research-jobs.ts).
 *
 * Who pays: the domain's credit is charged when it was researched, and when the site failed
 * it (it did not load, it is refused by the egress policy, it ran out of time): the work was
 * done. It is refunded when the failure was ours or the AI provider's. A service that cannot
 * be reached (a node gone, no browser free) is neither: the domain goes back to the queue
 * for another try, its credit still reserved under the same id.
 */
import type { LoggerInstance } from 'moleculer';
import { RESEARCH_LIMITS, type ResearchExtraction, type ResearchPageInput, type ResearchStatus } from '../../shared/domain-research';
import { type ErrorCode, failureOf, serviceError } from '../../shared/errors';
import type { SnapOptions } from '../../shared/screenshot-options';
import { randomId } from '../../shared/secrets';
import type { FileStore } from '../../shared/storage';
import type { CaptureEngine, CaptureOutput, PageReading } from '../browsers/engine';
import { type LeasedJob, retryLater } from '../jobs/jobs';
import type { DomainOutcome, DomainRunner } from '../jobs/worker';
import type { CaptureObserver } from '../jobs/metrics';
import type { DomainRecord, DomainWork, ResearchRepository, StoredPage } from './research-jobs';
import { fieldTerms, pickPages } from './research-pages';

/** Failures that are the site's: the domain's credit is charged. */
export const SITE_FAILURES: ReadonlySet<ErrorCode> = new Set(['page_load_failed', 'url_not_allowed', 'capture_timeout']);

/** How a page of a site is captured for research: a viewport JPEG, half a second after its load. */
export function pageOptions(url: string): SnapOptions {
  return { url, image_format: 'jpeg', quality: 70, wait: 500 };
}

/** A page read and its image stored. */
interface ReadPage {
  reading: PageReading;
  stored: StoredPage;
}

export interface ResearchDeps {
  repo: Pick<ResearchRepository, 'work' | 'finish'>;
  /** An engine whose captures also read the page (readingCapture). */
  engine: Pick<CaptureEngine, 'capture'>;
  store: Pick<FileStore, 'put' | 'delete'>;
  analyst: {
    /** The provider and model, again (a key removed since the request): throws the spec's error. */
    check(work: DomainWork): Promise<unknown>;
    extract(work: DomainWork, pages: ResearchPageInput[]): Promise<ResearchExtraction>;
  };
  /** The body of the webhook delivery of a request that ended. */
  delivery(status: ResearchStatus): string;
  /** Told when a request ended (its delivery is due). */
  ended(status: ResearchStatus, accountId: string): void;
  /** Told of every page capture (kind research; metrics.ts). */
  observer?: Pick<CaptureObserver, 'captured' | 'egressBytes'>;
  log: Pick<LoggerInstance, 'info' | 'warn' | 'error'>;
}

/** Whether the domain's credit is spent; null when the lease was lost (another instance's outcome counts). */
export type { DomainOutcome } from '../jobs/worker';

export class ResearchRunner implements DomainRunner {
  constructor(private readonly deps: ResearchDeps) {}

  /** Researches the domain of `job` and records how it ended. Throws only what sends it back to the queue. */
  async run(job: LeasedJob): Promise<DomainOutcome> {
    const work = await this.deps.repo.work(job.id);
    if (!work) return this.fail(job, 'internal_error', 'The domain is no longer known.', [], false);
    const pages: ReadPage[] = [];
    try {
      await this.deps.analyst.check(work);
      pages.push(await this.read(work.url));
      const home = (pages[0] as ReadPage).reading;
      for (const url of pickPages(home.url, home.links, fieldTerms(work.structures), RESEARCH_LIMITS.pages - 1)) {
        try {
          pages.push(await this.read(url));
        } catch (err) {
          if (retryLater(err)) throw err;
          // A page besides the home page that cannot be read is left out; the others still count.
          this.deps.log.info({ error_code: failureOf(err).code }, `research: ${url} could not be read; left out`);
        }
      }
      const extraction = await this.deps.analyst.extract(
        work,
        pages.map((p) => ({
          url: p.reading.url,
          title: p.reading.title,
          text: p.reading.text,
          image: { name: p.stored.image_name, contentType: 'image/jpeg' },
        })),
      );
      const stored = pages.map((p) => p.stored);
      if (!extraction.ok) return this.fail(job, extraction.error.error_code, extraction.error.note, stored, false);
      return this.record(job, { status: 'completed', data: extraction.data, sources: extraction.sources, pages: stored });
    } catch (err) {
      if (retryLater(err)) {
        await this.discard(pages);
        throw err;
      }
      const failure = failureOf(err);
      if (!failure.known) this.deps.log.error(`research domain ${job.id} failed`, err);
      return this.fail(
        job,
        failure.code,
        failure.known ? failure.note : 'The domain could not be researched because of a failure on our side; it was logged.',
        pages.map((p) => p.stored),
        SITE_FAILURES.has(failure.code),
      );
    }
  }

  /** Records the domain as failed; `charged`: whether its credit is spent. */
  async fail(job: LeasedJob, code: string, note: string, pages: StoredPage[], charged: boolean): Promise<DomainOutcome> {
    const outcome = await this.record(job, { status: 'failed', error: { error_code: code, note }, pages });
    return outcome && { charged };
  }

  private async record(job: LeasedJob, record: DomainRecord): Promise<DomainOutcome> {
    const { recorded, ended } = await this.deps.repo.finish(job, record, this.deps.delivery);
    if (!recorded) {
      this.deps.log.info(`research domain ${job.id} finished after its lease was lost; another instance holds it, its pages are removed`);
      await Promise.allSettled(record.pages.map((p) => this.deps.store.delete(p.image_name)));
      return null;
    }
    if (ended) this.deps.ended(ended, job.accountId);
    return { charged: record.status === 'completed' };
  }

  /** Captures and reads one page, and stores its image. */
  private async read(url: string): Promise<ReadPage> {
    const started = performance.now();
    let out: CaptureOutput;
    try {
      out = await this.deps.engine.capture(pageOptions(url));
    } catch (err) {
      this.deps.observer?.captured('research', 'failure', failureOf(err).code, (performance.now() - started) / 1000);
      throw err;
    }
    this.deps.observer?.captured('research', 'success', null, (performance.now() - started) / 1000);
    this.deps.observer?.egressBytes('direct', out.egressBytes ?? 0);
    if (!out.reading || !out.image) throw new Error('a research capture came back without its reading');
    // An error page holds no facts of the site (a snap captures it; research does not read it).
    if (out.reading.status >= 400) throw serviceError('page_load_failed', `${url} answered HTTP ${out.reading.status}: the page could not be read.`);
    const name = `${randomId(18)}.jpeg`;
    await this.deps.store.put(name, out.image, 'image/jpeg');
    return { reading: out.reading, stored: { url: out.reading.url, title: out.reading.title, image_name: name } };
  }

  private async discard(pages: ReadPage[]): Promise<void> {
    await Promise.allSettled(pages.map((p) => this.deps.store.delete(p.stored.image_name)));
  }
}
