/**
 * CapturePipeline with the engine stubbed (sinon; its browsers are proved in snap.test.ts),
 * on a real SQLite database and a real file store: when the browser may clean up after a
 * capture. The engine is told to hold the used context back until the capture is recorded
 * (its answer goes first; BrowserSlot.recycle), and is always told, whatever the outcome.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import type { Knex } from 'knex';
import sinon from 'sinon';
import type { CaptureEngine, CaptureHow } from '../../../services/capture/browsers/engine';
import { CaptureFiles } from '../../../services/capture/jobs/files';
import { JobQueue } from '../../../services/capture/jobs/jobs';
import type { CaptureOutput } from '../../../services/capture/page/page-capture';
import { type Analyst, CapturePipeline, type Router } from '../../../services/capture/jobs/pipeline';
import { ScreenshotRepository } from '../../../services/capture/jobs/screenshots';
import type { Config } from '../../../services/shared/config';
import { acquireDatabase, migrateLatest, releaseDatabase } from '../../../services/shared/database';
import { serviceError } from '../../../services/shared/errors';
import { captureKey, type SnapOptions } from '../../../services/shared/screenshot-options';
import { LocalFileStore } from '../../../services/shared/storage';
import { tempDir } from '../../support/backends';

const OPTIONS: SnapOptions = { url: 'https://example.test/' };
const OUTPUT: CaptureOutput = { image: Buffer.from('a jpeg'), contentType: 'image/jpeg' };

/** Whether a promise has settled by now (after what is already queued on the event loop). */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((r) => setImmediate(r));
  return done;
}

describe('CapturePipeline (unit: engine stubbed, SQLite and local files)', () => {
  let dir: string;
  let database: Config['database'];
  let db: Knex;
  let queue: JobQueue;
  let screenshots: ScreenshotRepository;
  let pipeline: CapturePipeline;
  let pipelineDeps: () => ConstructorParameters<typeof CapturePipeline>[0];
  let capture: sinon.SinonStub;
  /** The promise the engine was given to hold the used context back for. */
  let answered: Promise<unknown> | undefined;

  beforeEach(async () => {
    dir = tempDir();
    database = { client: 'better-sqlite3', filename: path.join(dir, 'pipeline.sqlite') };
    await migrateLatest(database);
    db = acquireDatabase(database);
    queue = new JobQueue(db, 60_000);
    screenshots = new ScreenshotRepository(db, { appUrl: 'http://app', cdnUrl: 'http://cdn' });
    answered = undefined;
    capture = sinon.stub().callsFake(async (_o: SnapOptions, how: CaptureHow & { finish: (out: CaptureOutput) => Promise<unknown> }) => {
      answered = how.answered;
      return how.finish(OUTPUT);
    });
    const engine: Pick<CaptureEngine, 'capture'> = { capture } as unknown as Pick<CaptureEngine, 'capture'>;
    const analyst: Analyst = { check: sinon.stub().resolves(), analyze: sinon.stub().rejects(new Error('no analysis here')) };
    const router: Router = { route: sinon.stub().resolves(null), checkBandwidth: sinon.stub().resolves(), chargeBandwidth: sinon.stub().resolves() };
    pipelineDeps = () => ({ engine, files: new CaptureFiles(new LocalFileStore(path.join(dir, 'files'))), screenshots, queue, analyst, router });
    pipeline = new CapturePipeline(pipelineDeps());
  });

  afterEach(async () => {
    sinon.restore();
    await releaseDatabase(database);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const start = (id: string) => queue.start({ id, accountId: 'acc', configId: 'cfg' });

  it('has the browser hold the used context back until the capture is recorded', async () => {
    const insert = screenshots.insert.bind(screenshots);
    let heldWhileRecording: boolean | null = null;
    sinon.stub(screenshots, 'insert').callsFake(async (row, trx) => {
      heldWhileRecording = !(await settled(answered!));
      return insert(row, trx);
    });
    const ref = await pipeline.snap(await start('j1'), OPTIONS, undefined, captureKey(OPTIONS));
    expect(ref.job_id).to.equal('j1');
    expect(answered, 'the engine was told when the capture is answered').to.be.instanceOf(Promise);
    expect(heldWhileRecording).to.equal(true);
    expect(await settled(answered!)).to.equal(true);
  });

  it('announces the webhook delivery it writes with a capture (notifier.deliveriesAdded), and nothing for a capture without one', async () => {
    const deliveriesAdded = sinon.spy();
    const announcing = new CapturePipeline({ ...pipelineDeps(), deliveriesAdded });
    await announcing.snap(await start('j3'), OPTIONS, undefined, captureKey(OPTIONS));
    expect(deliveriesAdded.called).to.equal(false);
    await announcing.snap(await start('j4'), { ...OPTIONS, webhook_url: 'https://hooks.example.test/x' } as SnapOptions, undefined, 'k4');
    expect(deliveriesAdded.calledOnceWith('acc')).to.equal(true);
    expect(await db('webhook_deliveries').where({ job_id: 'j4' }).count({ n: '*' })).to.deep.equal([{ n: 1 }]);
  });

  it('lets the browser clean up when the capture fails too', async () => {
    capture.callsFake(async (_o: SnapOptions, how: CaptureHow) => {
      answered = how.answered;
      throw serviceError('page_load_failed', 'The page could not be loaded.');
    });
    const failure = await pipeline.snap(await start('j2'), OPTIONS, undefined, captureKey(OPTIONS)).then(
      () => null,
      (err: { type?: string }) => err,
    );
    expect(failure?.type).to.equal('page_load_failed');
    expect(await settled(answered!)).to.equal(true);
  });
});
