/**
 * Visual change comparisons as the capture process runs them (VisualAlerts on a migrated
 * SQLite database and a file store on disk, as capture-parts.ts builds it), for what the
 * process adds to the comparison itself:
 * - baselines kept in memory: a scheduled configuration's capture is compared with its
 *   baseline's decoded pixels without reading or decoding the baseline again, the memory holds
 *   one baseline per configuration and step (the one it moved from is dropped), and after a
 *   restart (nothing in memory) the baseline is read from the store, with the same result,
 *   decoding only its rows that differ by the row prints its record keeps;
 * - durability: the comparison a capture owes is written with it (owe, in the capture's
 *   transaction); one left behind by a process that stopped before it compared (its lease ran
 *   out) is completed by a fresh process's resume loop, with its alert and delivery (announced
 *   to the notifier); one run
 *   twice counts once; one that fails every time is given up.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import sharp from 'sharp';
import type { Knex } from 'knex';
import { MAX_PENDING_ATTEMPTS } from '../../../services/notifier/public/visual-alerts';
import type { ChangeReading } from '../../../services/notifier/public/change-alerts';
import { type VisualCapture, VisualAlerts } from '../../../services/notifier/public/visual-alerts';
import { VisualRasterCache } from '../../../services/notifier/public/visual-diff';
import { LocalFileStore } from '../../../services/shared/storage';
import { tempDir } from '../../support/backends';
import { migratedSqlite } from '../../support/sqlite';

function page(price: string): Buffer {
  let lines = '';
  for (let y = 120; y < 580; y += 24) lines += `<text x="20" y="${y}" font-size="16" font-family="sans-serif">Line ${y} lorem ipsum dolor sit amet</text>`;
  return Buffer.from(
    '<svg xmlns="http://www.w3.org/2000/svg" width="800" height="600"><rect width="100%" height="100%" fill="#ffffff"/>' +
      `${lines}<rect x="500" y="200" width="200" height="60" fill="#eeeeee"/><text x="520" y="240" font-size="28" font-family="sans-serif">${price}</text></svg>`,
  );
}

describe('visual change comparisons in the capture process', () => {
  let sqlite: Awaited<ReturnType<typeof migratedSqlite>>;
  let db: Knex;
  let store: LocalFileStore;
  let taken = 0;
  const reading: ChangeReading = {
    index: 0,
    selector: '',
    text: '',
    send_to: 'webhook',
    url: 'http://127.0.0.1:9/hook',
    visual: { threshold: 0.01, tolerance: 0.1, repeat: 1, ignore_selectors: [], region: null, masks: [], frameWidth: 800 },
  };

  before(async () => {
    sqlite = await migratedSqlite();
    db = sqlite.db;
    store = new LocalFileStore(tempDir());
  });
  afterEach(() => sinon.restore());
  after(async () => {
    await sqlite?.drop();
  });

  /** A capture of the configuration, stored as the capture job stores it (PNG at `level`: other bytes, the same pixels). */
  async function captureOf(price: string, level = 6): Promise<VisualCapture> {
    taken++;
    const image = await sharp(page(price)).png({ compressionLevel: level }).toBuffer();
    const imageName = `shot${taken}.png`;
    await store.put(imageName, image, 'image/png');
    return { accountId: 'acct1', configId: 'cfg1', jobId: `job${taken}`, now: 1_800_000_000_000 + taken * 3_600_000, imageName, image };
  }

  it("compares a scheduled capture with the baseline's pixels in memory, reading and decoding only the new capture", async () => {
    const visual = new VisualAlerts({ db, store, link: (n) => `http://127.0.0.1:1/${n}` });
    const reads = sinon.spy(store, 'get');
    expect(await visual.record(await captureOf('$10.00'), [reading]), 'the first capture is the baseline').to.deep.equal([]);
    expect(visual.rasters.size, 'kept decoded').to.equal(1);
    // The same pixels in other bytes: compared, unchanged; the baseline moves to it.
    expect(await visual.record(await captureOf('$10.00', 1), [reading])).to.deep.equal([]);
    expect(visual.rasters.size, 'the baseline it moved from is dropped').to.equal(1);
    const changed = await visual.record(await captureOf('$249.99'), [reading]);
    expect(changed).to.have.length(1);
    expect(changed[0]!.visual!.boxes[0]!.x).to.be.at.least(500);
    expect(reads.callCount, 'no baseline was read from the store').to.equal(0);
    expect(visual.rasters.size).to.equal(1);
  });

  it('reads the baseline from the store when it is not in memory (a restart), with the same result', async () => {
    const restarted = new VisualAlerts({ db, store, link: (n) => `http://127.0.0.1:1/${n}` });
    const reads = sinon.spy(store, 'get');
    expect(await restarted.record(await captureOf('$249.99', 1), [reading]), 'the same page').to.deep.equal([]);
    expect(reads.callCount).to.equal(1);
    const changed = await restarted.record(await captureOf('$7.00'), [reading]);
    expect(changed).to.have.length(1);
    expect(reads.callCount, 'the baseline decoded by the last comparison').to.equal(1);
    reads.restore();
    // Nothing kept at all: each comparison reads the baseline.
    const none = new VisualAlerts({ db, store, link: (n) => `http://127.0.0.1:1/${n}`, cacheBytes: 0 });
    const again = sinon.spy(store, 'get');
    expect(await none.record(await captureOf('$7.00', 1), [reading])).to.deep.equal([]);
    expect(await none.record(await captureOf('$8.00'), [reading])).to.have.length(1);
    expect(again.callCount).to.equal(2);
    expect(none.rasters.size).to.equal(0);
  });

  it('keeps a baseline read from the store in memory while differing captures are counted toward repeat', async () => {
    const repeat3 = { ...reading, index: 3, visual: { ...reading.visual!, repeat: 3 } };
    const first = await captureOf('$1.00');
    await new VisualAlerts({ db, store, link: (n) => `http://127.0.0.1:1/${n}` }).record(first, [repeat3]);
    const restarted = new VisualAlerts({ db, store, link: (n) => `http://127.0.0.1:1/${n}` });
    const reads = sinon.spy(store, 'get');
    expect(await restarted.record(await captureOf('$2.00'), [repeat3])).to.deep.equal([]);
    expect(reads.callCount, 'a miss: the baseline read once').to.equal(1);
    // Its record keeps its rows' prints (two 32-bit words per row of its 800x600 area): only
    // its rows that differ were decoded, so its image is kept without a decoded area.
    const row = await db('change_readings').where({ config_id: 'cfg1', step_index: 3 }).first('value');
    const prints = (JSON.parse(row.value) as { prints: { width: number; rows: string } }).prints;
    expect([prints.width, Buffer.from(prints.rows, 'base64').byteLength]).to.deep.equal([800, 600 * 8]);
    const kept = restarted.rasters.get(VisualRasterCache.key(first.imageName, null, 800));
    expect(kept?.image.equals(first.image)).to.equal(true);
    expect(kept?.area).to.equal(null);
    expect(await restarted.record(await captureOf('$2.00', 1), [repeat3])).to.deep.equal([]);
    expect(await restarted.record(await captureOf('$2.00', 2), [repeat3])).to.have.length(1);
    expect(reads.callCount, 'then kept').to.equal(1);
  });

  describe('comparisons owed with the capture', () => {
    let clock = 1_900_000_000_000;
    const now = () => clock;
    const link = (n: string) => `http://127.0.0.1:1/${n}`;
    const pending = () => db('visual_pending').select('*');
    const process = () => new VisualAlerts({ db, store, link, now, leaseMs: 30_000 });
    const priced = { ...reading, index: 1, url: 'http://127.0.0.1:9/owed' };
    const alertsOf = async () => (await db('change_notifications').where({ config_id: 'cfg1', step_index: 1 }).select('id')).length;
    /** A capture recorded as the pipeline records it: the owed comparison written in the capture's transaction. */
    async function recorded(alerts: VisualAlerts, price: string, level = 6) {
      const capture = await captureOf(price, level);
      const owed = await db.transaction((trx) => alerts.owe(trx, { ...capture, now: clock }, [priced]));
      return { capture: { ...capture, now: clock }, owed };
    }

    it('completes a comparison left behind by a process that stopped before it compared, in a fresh process', async () => {
      const first = process();
      const base = await recorded(first, '$10.00');
      await first.record(base.capture, [priced], base.owed);
      expect(await pending(), 'a comparison that ran is removed').to.have.length(0);

      // The page changes; the capture is recorded, and its process stops before comparing it.
      clock += 3_600_000;
      const dying = process();
      const left = await recorded(dying, '$249.99');
      expect(await pending()).to.have.length(1);
      const deliveriesBefore = (await db('webhook_deliveries').select('id')).length;

      // A fresh process: it leaves a comparison alone while its lease runs...
      const fresh = process();
      fresh.resume(false);
      await fresh.stopResuming();
      expect(await pending(), 'held by the process that recorded it').to.have.length(1);
      // ...and completes it once the lease ran out.
      clock += 31_000;
      const announce = sinon.spy();
      const restarted = new VisualAlerts({ db, store, link, now, leaseMs: 30_000, announce });
      restarted.resume(false);
      await restarted.stopResuming();
      await restarted.idle();
      expect(await pending()).to.have.length(0);
      expect(await alertsOf(), 'the change alerted').to.equal(1);
      expect(announce.args, 'its delivery announced to the notifier').to.deep.equal([['acct1']]);
      const alert = await db('change_notifications').where({ config_id: 'cfg1', step_index: 1 }).first('retrieved_value', 'job_id');
      expect(alert).to.deep.include({ retrieved_value: link(left.capture.imageName), job_id: left.capture.jobId });
      expect((await db('webhook_deliveries').select('id')).length, 'its delivery is in the outbox').to.equal(deliveriesBefore + 1);
    });

    it('stores one diff image for an alert whose comparison ran again after its process died before recording it', async () => {
      clock += 3_600_000;
      const first = process();
      const base = await recorded(first, '$20.00');
      await first.record(base.capture, [priced], base.owed);
      clock += 3_600_000;
      const dying = process();
      const left = await recorded(dying, '$21.50');
      const puts = sinon.spy(store, 'put');
      // The process dies after storing the diff image, before the alert's transaction.
      const died = sinon.stub(db, 'transaction').rejects(new Error('process killed'));
      expect(await dying.record(left.capture, [priced], left.owed)).to.deep.equal([]);
      died.restore();
      expect(await pending(), 'still owed').to.have.length(1);
      clock += 31_000;
      const restarted = process();
      restarted.resume(false);
      await restarted.stopResuming();
      await restarted.idle();
      const alert = await db('change_notifications').where({ config_id: 'cfg1', step_index: 1, job_id: left.capture.jobId }).first('diff_name');
      expect(alert?.diff_name).to.be.a('string');
      const names = puts.getCalls().map((c) => c.args[0] as string);
      expect(names, 'both runs wrote the same file').to.deep.equal([alert.diff_name, alert.diff_name]);
    });

    it('counts a comparison run twice once, and never compares a capture older than the baseline', async () => {
      const repeat2 = { ...priced, index: 2, visual: { ...priced.visual!, repeat: 2 } };
      const alerts = new VisualAlerts({ db, store, link, now });
      clock += 3_600_000;
      const base = { ...(await captureOf('$1.00')), now: clock };
      await alerts.record(base, [repeat2]);
      clock += 3_600_000;
      const changed = { ...(await captureOf('$2.00')), now: clock };
      await alerts.record(changed, [repeat2]);
      // The same capture compared again (its process died before removing what it owed): not a second count.
      expect(await alerts.record(changed, [repeat2]), 'counted once: no alert under repeat 2').to.deep.equal([]);
      clock += 3_600_000;
      const again = { ...(await captureOf('$2.00', 1)), now: clock };
      expect(await alerts.record(again, [repeat2]), 'the second differing capture alerts').to.have.length(1);
      // The first capture, compared late: the baseline is newer, nothing happens.
      expect(await alerts.record(base, [repeat2])).to.deep.equal([]);
      const row = await db('change_readings').where({ config_id: 'cfg1', step_index: 2 }).first('value');
      expect(JSON.parse(row.value)).to.deep.include({ image: again.imageName, streak: 0 });
    });

    it('gives up a comparison that fails every time, after a few attempts', async () => {
      clock += 3_600_000;
      const dying = process();
      const left = await recorded(dying, '$3.00');
      // Its image cannot be read as one (a corrupt file): each attempt fails.
      await store.put(left.capture.imageName, Buffer.from('not an image'), 'image/png');
      for (let i = 1; i <= MAX_PENDING_ATTEMPTS + 1; i++) {
        clock += 31_000;
        const p = process();
        p.resume(false);
        await p.stopResuming();
        await p.idle();
        const rows = await pending();
        if (i <= MAX_PENDING_ATTEMPTS)
          expect(
            rows.map((r) => Number(r.attempts)),
            `attempt ${i}`,
          ).to.deep.equal([i]);
        else expect(rows, 'given up').to.have.length(0);
      }
    });
  });
});
