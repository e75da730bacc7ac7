/**
 * One capture from options to a recorded screenshot: the engine drives a browser (the
 * thumbnail is made while it still holds it), the files are written, and the screenshot
 * is inserted as its job completes, under the job's lease. Snaps and queued jobs both
 * come through here; they differ only in who holds the lease and who pays.
 */
import { failureOf } from '../shared/errors';
import type { ScreenshotRef } from '../shared/contracts';
import type { SnapOptions } from '../shared/screenshot-options';
import type { CaptureEngine } from './engine';
import { type CaptureFiles, render } from './files';
import type { JobQueue, LeasedJob } from './jobs';
import { ScreenshotRepository } from './screenshots';

export class CapturePipeline {
  constructor(
    private readonly engine: Pick<CaptureEngine, 'capture'>,
    private readonly files: CaptureFiles,
    private readonly screenshots: ScreenshotRepository,
    private readonly queue: JobQueue,
  ) {}

  /**
   * Captures and records the job's screenshot. Null when the lease was lost while the
   * capture ran (another instance took the job over and its result counts): the files
   * written here are removed again.
   */
  async run(job: LeasedJob, options: SnapOptions): Promise<ScreenshotRef | null> {
    const files = await this.files.write(await this.engine.capture(options, render(options)));
    const row = ScreenshotRepository.newRow(job, options, files);
    const id = await this.queue.complete(job, (trx) => this.screenshots.insert(row, trx));
    if (id === null) {
      await this.files.remove(files);
      return null;
    }
    return this.screenshots.toRef({ ...row, id });
  }

  /** A snap: its job cannot be taken over, so it completes, or fails with the error rethrown. */
  async snap(job: LeasedJob, options: SnapOptions): Promise<ScreenshotRef> {
    try {
      const ref = await this.run(job, options);
      if (ref) return ref;
      throw new Error(`the lease of snap job ${job.id} was lost`);
    } catch (err) {
      const failure = failureOf(err);
      await this.queue.fail(job, failure.code, failure.note);
      throw err;
    }
  }
}
