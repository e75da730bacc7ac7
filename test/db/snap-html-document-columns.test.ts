/**
 * db/migrations/20261201000001_snap_html_document_columns.ts on SQLite and MariaDB: a /snap_html
 * document of up to the default BODY_LIMIT_BYTES (1 MB) is kept once, in the options its
 * captures run with, and those columns hold it (on MySQL they were TEXT, 64 KB, and the snap
 * was refused with "Data too long").
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { ClassTurns } from '../../services/capture/fairness/fair-queue';
import { type ClaimTurns, JOB_KINDS, JobQueue } from '../../services/capture/jobs/jobs';
import { ConfigRepository } from '../../services/scheduler/configs';
import { INLINE_DOCUMENT_URL, type SnapOptions, captureKey } from '../../services/shared/screenshot-options';
import { type Backend, migratedDatabase } from '../support/backends';

for (const backend of ['sqlite', 'mysql'] as Backend[]) {
  describe(`a /snap_html document of 1 MB stored on ${backend}`, function () {
    this.timeout(60_000);
    let db: Knex;
    let cleanup: () => Promise<void>;

    before(async () => {
      ({ db, cleanup } = await migratedDatabase(backend));
    });
    after(async () => {
      await db?.destroy();
      await cleanup?.();
    });

    it("is kept in its snap configuration, shown and run with, and in a configuration's job until it is claimed", async () => {
      // Multi-byte text as well: about 1 MB as UTF-8.
      const html = `<!doctype html><p>é€${'x'.repeat(1_000_000 - 64)}</p>`;
      const options = { url: INLINE_DOCUMENT_URL, html_content: html, wait: 0 } as SnapOptions;
      const configs = new ConfigRepository(db, { appUrl: 'http://app' }, Date.now);
      const { id } = await configs.snapConfig({ accountId: 'acc', options, snapKey: captureKey(options) });
      const read = await configs.get('acc', id);
      expect((read.config as Record<string, unknown>).html_content).to.equal(html);
      expect((read.options as Record<string, unknown>).html_content).to.equal(html);

      const queue = new JobQueue(db, 10_000);
      await queue.enqueue({ id: 'job1', accountId: 'acc', configId: id, kind: 'config', options: read.options as SnapOptions });
      const turns: ClaimTurns = {
        kinds: new ClassTurns(JOB_KINDS),
        lastStarts: async () => new Map(),
        starter: async () => async () => true,
        undo: async () => undefined,
      };
      const job = await queue.claim(turns);
      expect(job && 'options' in job ? job.options.html_content : null).to.equal(html);
    });
  });
}
