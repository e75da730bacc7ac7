/**
 * Visual change steps end to end (embedded mode on the real Grid, the scheduler on a
 * controllable clock): fixture pages whose price, banner, carousel, clock and layout the test
 * changes between scheduled captures. The alert fires for the real change only, after
 * `repeat` differing captures, with its box where the price is; a carousel and a clock under
 * ignore_selectors, a small animation and a one-off banner never alert; a region (selector)
 * is compared wherever a layout shift moved it. The webhook body verifies with the Standard
 * Webhooks library and carries the before, after and diff links; the diff image is red where
 * the price changed; the history endpoint and the change notification lists show it; bad
 * options are a 400 naming what to fix. A full page that grew between captures is compared over
 * the common area (growth alone never alerts; an alert reports the sizes), and a configuration
 * whose format changes (PNG, then JPEG, then WebP) compares its captures without a false alert
 * from the encoders' noise.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import sharp from 'sharp';
import { Webhook } from 'standardwebhooks';
import { acquireDatabase, releaseDatabase } from '../../../services/shared/database';
import { backendConfig } from '../../support/backends';
import { CAPTURE_SERVICES } from '../../support/capture-helpers';
import { sharedGrid } from '../../support/grid';
import { jobFinished, request } from '../../support/http';
import { type LocalServer, serveLocally } from '../../support/local-server';
import { type RunningSystem, runSystem } from '../../support/system';
import { type Receiver, startReceiver } from '../receivers';

type Body = Record<string, unknown>;
interface Box {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** Where the fixture page draws its price (CSS pixels; the viewport's scale is 1). */
const PRICE_BOX: Box = { x: 420, y: 260, width: 300, height: 80 };
/** And its spinner (an endless CSS animation). */
const SPIN_BOX: Box = { x: 700, y: 500, width: 12, height: 12 };

describe('visual change alerts', function () {
  this.timeout(300_000);
  let site: LocalServer;
  let sys: RunningSystem;
  let hooks: Receiver;
  let slack: Receiver;
  let grown: Receiver;
  let formats: Receiver;
  let resumed: Receiver;
  let cleanup: () => Promise<void>;
  let token: string;
  let clock = Date.now();
  let loads = 0;
  const state = { price: '$10.00', banner: '', shift: 0, paragraphs: 30, longPrice: '$10.00', stillPrice: '$10.00', leftPrice: '$10.00' };

  const api = (method: string, p: string, json?: Body) =>
    request<Body>(sys.base, method, p, { headers: { authorization: `Bearer ${token}` }, ...(json ? { json } : {}) });

  /** One scheduled capture of every configuration, finished, compared, and what was due sent. */
  async function scheduledCaptures(configs: string[]): Promise<void> {
    clock += 2 * 3_600_000;
    const started = (await sys.scheduler!.tick()).filter((s) => configs.includes(s.configId));
    expect(started, 'the configurations were due').to.have.length(configs.length);
    for (const s of started) {
      const done = await jobFinished(sys.base, token, s.jobId);
      expect(done.body.status, JSON.stringify(done.body)).to.equal('completed');
    }
    await sys.capture!.visualIdle();
    await sys.notifier!.pump();
  }

  before(async () => {
    const grid = await sharedGrid();
    site = await serveLocally((req, res) => {
      if (req.url === '/long' || req.url === '/still' || req.url === '/left') {
        // Still pages (nothing moves): /long grows by its paragraphs, /still has a gradient and a photo-like area (encoder noise).
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
        const long = req.url === '/long';
        let paragraphs = '';
        for (let i = 0; i < (long ? state.paragraphs : 8); i++)
          paragraphs += `<p style="margin:0;height:40px;font-size:18px">Paragraph ${i}: lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>`;
        res.end(`<!DOCTYPE html><html><head><style>
          body { margin: 0; font-family: sans-serif; background: #fff; }
          #top { height: 260px; position: relative; background: linear-gradient(90deg, #1d3557, #a8dadc 60%, #f1faee); }
          #price { position: absolute; left: ${PRICE_BOX.x}px; top: 120px; width: ${PRICE_BOX.width}px; height: ${PRICE_BOX.height}px; font-size: 56px; background: #f4f4f4; }
          #dots { height: 120px; background: radial-gradient(circle at 30% 40%, #e63946 0 20px, transparent 21px), repeating-linear-gradient(45deg, #ddd 0 6px, #fff 6px 12px); }
        </style></head><body>
          <div id="top"><div id="price">${long ? state.longPrice : req.url === '/still' ? state.stillPrice : state.leftPrice}</div></div>
          <div id="dots"></div>
          ${paragraphs}
        </body></html>`);
        return;
      }
      loads++;
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      const hue = (loads * 67) % 360;
      res.end(`<!DOCTYPE html><html><head><style>
        body { margin: 0; font-family: sans-serif; background: #fff; }
        #banner { height: 60px; background: #c33; color: #fff; font-size: 32px; }
        #carousel { position: absolute; left: 20px; top: 380px; width: 360px; height: 160px; background: hsl(${hue}, 70%, 50%); color: #fff; font-size: 40px; }
        #clock { position: absolute; left: 20px; top: 20px; font-size: 28px; }
        #price { position: absolute; left: ${PRICE_BOX.x}px; top: ${PRICE_BOX.y + state.shift}px; width: ${PRICE_BOX.width}px; height: ${PRICE_BOX.height}px; font-size: 56px; background: #f4f4f4; }
        #spin { position: absolute; left: ${SPIN_BOX.x}px; top: ${SPIN_BOX.y}px; width: ${SPIN_BOX.width}px; height: ${SPIN_BOX.height}px; background: #333; animation: spin 0.7s linear infinite; }
        @keyframes spin { to { transform: rotate(360deg); } }
      </style></head><body>
        ${state.banner ? `<div id="banner">${state.banner}</div>` : ''}
        <div id="clock"></div><script>const c = document.getElementById('clock'); const t = () => (c.textContent = new Date().toISOString()); t(); setInterval(t, 50);</script>
        <h1 style="position:absolute;left:20px;top:${120 + state.shift}px;margin:0">Shop</h1>
        <div id="price">${state.price}</div>
        <div id="carousel">Slide ${loads}</div>
        <div id="spin"></div>
      </body></html>`);
    });
    hooks = await startReceiver();
    slack = await startReceiver(() => ({ status: 200, body: 'ok' }));
    grown = await startReceiver();
    formats = await startReceiver();
    resumed = await startReceiver();
    const b = await backendConfig('sqlite', { SERVICES: CAPTURE_SERVICES, SELENIUM_URL: grid.url, ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '1' });
    cleanup = b.cleanup;
    sys = await runSystem(b.config, overrides);
    token = (await sys.account('paid')).access_token;
  });
  after(async () => {
    await sys?.stop();
    await Promise.all([hooks?.stop(), slack?.stop(), grown?.stop(), formats?.stop(), resumed?.stop(), site?.stop()]);
    await cleanup?.();
  });

  const overrides = { scheduler: { now: () => clock, autoTick: false }, notifier: { autoPoll: false } };

  const configOf = (step: Body, extra: Body = {}) => ({
    url: `${site.origin}/`,
    wait: 300,
    page_width: 800,
    page_height: 600,
    custom_title: 'Shop watch',
    scheduled_screenshot: true,
    scheduled_every: 1,
    scheduled_interval: 'hours',
    multi_step_actions: [{ type: 'change', mode: 'visual', ...step }],
    ...extra,
  });

  it('refuses bad visual options with a 400 naming what to fix', async () => {
    const bad: Array<[Body, string]> = [
      [{ threshold: 0 }, '"threshold" must be the percentage'],
      [{ threshold: 101 }, '"threshold" must be the percentage'],
      [{ threshold: 'x' }, 'threshold'],
      [{ tolerance: 2 }, '"tolerance" must be'],
      [{ repeat: 0 }, '"repeat" must be'],
      [{ repeat: 1.5 }, 'repeat'],
      [{ ignore_selectors: [] }, 'ignore_selectors'],
      [{ mode: 'pixels' }, 'mode'],
    ];
    for (const [step, note] of bad) {
      const r = await api('POST', '/screenshot_configs', configOf({ send_to: 'webhook', url: `${hooks.origin}/a`, ...step }));
      expect(r.status, JSON.stringify(step)).to.equal(400);
      expect(r.body).to.include({ success: false, error_code: 'invalid_parameter' });
      expect(String(r.body.note), JSON.stringify(step)).to.contain(note);
    }
    const textStep = await api('POST', '/screenshot_configs', {
      ...configOf({}),
      multi_step_actions: [{ type: 'change', selector: '#price', send_to: 'webhook', url: `${hooks.origin}/a`, threshold: 5 }],
    });
    expect(textStep.status).to.equal(400);
    expect(String(textStep.body.note)).to.contain('"threshold" applies to a visual change step only');
    const pdf = await api('POST', '/screenshot_configs', configOf({ send_to: 'webhook', url: `${hooks.origin}/a` }, { image_format: 'pdf' }));
    expect(pdf.status).to.equal(400);
    expect(String(pdf.body.note)).to.contain('image_format=pdf');
  });

  it('alerts for the real change only, after repeat captures, with its box, links and diff image', async () => {
    const page = await api(
      'POST',
      '/screenshot_configs',
      configOf({ send_to: 'webhook', url: `${hooks.origin}/alerts`, threshold: 0.05, repeat: 2, ignore_selectors: ['#carousel', '#clock'] }),
    );
    expect(page.status, JSON.stringify(page.body)).to.equal(200);
    const pageId = page.body.screenshot_configuration_id as string;
    const region = await api(
      'POST',
      '/screenshot_configs',
      configOf({ selector: '#price', send_to: 'slack', url: `${slack.origin}/services/T0/B0/x`, threshold: 1 }),
    );
    expect(region.status, JSON.stringify(region.body)).to.equal(200);
    const regionId = region.body.screenshot_configuration_id as string;
    for (const created of [page, region]) await jobFinished(sys.base, token, created.body.job_id as string);
    await sys.capture!.visualIdle();
    await sys.notifier!.pump();
    const both = [pageId, regionId];

    // The carousel turns, the clock ticks, the spinner spins: nothing alerts, capture after capture.
    for (let i = 0; i < 6; i++) await scheduledCaptures(both);
    expect(hooks.received, 'no change, no alert').to.have.length(0);
    expect(slack.received).to.have.length(0);

    // A banner on one load only: a flaky load, under repeat 2 (the region's price only moved).
    state.banner = 'Flash sale';
    state.shift = 60;
    await scheduledCaptures(both);
    state.banner = '';
    state.shift = 0;
    await scheduledCaptures(both);
    expect(hooks.received, 'one differing capture does not alert under repeat 2').to.have.length(0);
    expect(slack.received, 'a region moved by a layout shift is the same region').to.have.length(0);

    // The price changes: the region alerts at once (repeat 1), the page on its second differing capture.
    state.price = '$249.99';
    await scheduledCaptures(both);
    expect(hooks.received).to.have.length(0);
    expect(slack.received).to.have.length(1);
    await scheduledCaptures(both);
    expect(hooks.received).to.have.length(1);
    for (let i = 0; i < 2; i++) await scheduledCaptures(both);
    expect(hooks.received, 'the new price is the baseline now').to.have.length(1);
    expect(slack.received).to.have.length(1);

    const delivered = hooks.received[0]!;
    const body = JSON.parse(delivered.body) as Body & { visual: Body & { boxes: Box[] }; config: Body };
    const secret = (await api('GET', '/webhook_secret')).body.secret as string;
    const realNow = Date.now;
    Date.now = () => Number(delivered.headers['webhook-timestamp']) * 1000;
    try {
      expect(new Webhook(secret).verify(delivered.body, delivered.headers as Record<string, string>)).to.deep.equal(body);
    } finally {
      Date.now = realNow;
    }
    expect(body.screenshot_configuration_id).to.equal(pageId);
    expect(body.config).to.deep.include({ type: 'change', mode: 'visual', threshold: 0.05, repeat: 2, ignore_selectors: ['#carousel', '#clock'] });
    const v = body.visual;
    expect(v).to.include({ size_changed: false, captures: 2 });
    expect(v.changed_percent).to.be.greaterThan(0.05).and.below(5);
    expect(body.previous_value).to.equal(v.before_url);
    expect(body.retrieved_value).to.equal(v.after_url);
    // The largest box is the price's, inside its element; any other is the spinner's few pixels
    // (an animation under the threshold, which alone never alerts).
    const inSpinner = (b: Box) => b.x >= SPIN_BOX.x - 4 && b.y >= SPIN_BOX.y - 4 && b.x + b.width <= SPIN_BOX.x + 20 && b.y + b.height <= SPIN_BOX.y + 20;
    expect(v.boxes.slice(1).every(inSpinner), JSON.stringify(v.boxes)).to.equal(true);
    const box = v.boxes[0]!;
    expect(box.x).to.be.at.least(PRICE_BOX.x);
    expect(box.y).to.be.at.least(PRICE_BOX.y);
    expect(box.x + box.width).to.be.at.most(PRICE_BOX.x + PRICE_BOX.width);
    expect(box.y + box.height).to.be.at.most(PRICE_BOX.y + PRICE_BOX.height);

    // The three images: the diff is red inside the box only.
    for (const link of [v.before_url, v.after_url, v.diff_url]) expect((await fetch(String(link))).status, String(link)).to.equal(200);
    const diffPng = Buffer.from(await (await fetch(String(v.diff_url))).arrayBuffer());
    // VISUAL_DIFF_EXAMPLE=<dir>: keeps this alert's images and body (docs/api.md's example is one such run).
    const keep = process.env.VISUAL_DIFF_EXAMPLE;
    if (keep) {
      fs.mkdirSync(keep, { recursive: true });
      fs.writeFileSync(path.join(keep, 'visual-change-diff.png'), diffPng);
      fs.writeFileSync(path.join(keep, 'visual-change-before.png'), Buffer.from(await (await fetch(String(v.before_url))).arrayBuffer()));
      fs.writeFileSync(path.join(keep, 'visual-change-after.png'), Buffer.from(await (await fetch(String(v.after_url))).arrayBuffer()));
      fs.writeFileSync(path.join(keep, 'visual-change-alert.json'), JSON.stringify(body, null, 2));
    }
    const diff = await sharp(diffPng).raw().toBuffer({ resolveWithObject: true });
    expect(diff.info).to.include({ width: 800, height: 600 });
    let inside = 0;
    let outside = 0;
    for (let y = 0; y < diff.info.height; y++) {
      for (let x = 0; x < diff.info.width; x++) {
        const i = (y * diff.info.width + x) * diff.info.channels;
        if (diff.data[i] !== 255 || diff.data[i + 1] !== 0 || diff.data[i + 2] !== 0) continue;
        if (x >= box.x && x < box.x + box.width && y >= box.y && y < box.y + box.height) inside++;
        else if (!inSpinner({ x, y, width: 1, height: 1 })) outside++;
      }
    }
    expect(inside).to.be.greaterThan(0.9 * Number(v.changed_pixels));
    expect(outside).to.equal(0);

    // Slack: the region's alert, with its links.
    const message = JSON.parse(slack.received[0]!.body) as { text: string; blocks: unknown[] };
    expect(message.text).to.contain('Visual change detected').and.contain('#price');
    expect(JSON.stringify(message.blocks)).to.contain('|Diff>');

    // The history and the lists.
    const history = await api('GET', `/screenshot_configs/${pageId}/changes`);
    expect(history.status).to.equal(200);
    expect(history.body).to.have.all.keys('success', 'changes', 'has_more');
    const changes = history.body.changes as Body[];
    expect(changes).to.have.length(1);
    expect(changes[0]).to.deep.equal(body);
    const sent = Number(body.sent_at);
    expect((await api('GET', `/screenshot_configs/${pageId}/changes?before=${sent}`)).body.changes).to.have.length(0);
    expect((await api('GET', `/screenshot_configs/${pageId}/changes?after=${sent - 1}`)).body.changes).to.have.length(1);
    expect((await api('GET', '/screenshot_configs/nope/changes')).status).to.equal(404);
    const listed = (await api('GET', `/screenshot_configs/${regionId}/change_notifications`)).body.change_notifications as Body[];
    expect(listed).to.have.length(1);
    expect(listed[0]).to.have.property('visual').that.includes.keys('diff_url', 'boxes', 'changed_percent');

    // Deleting the configuration removes its alerts and their diff images.
    expect((await api('DELETE', `/screenshot_configs/${pageId}`)).status).to.equal(200);
    expect((await fetch(String(v.diff_url))).status).to.equal(404);
    expect((await api('GET', '/change_notifications')).body.change_notifications).to.have.length(1);
  });

  it('compares a full page that grew over the common area: growth alone never alerts, an alert reports the sizes', async () => {
    state.paragraphs = 30;
    state.longPrice = '$10.00';
    const created = await api(
      'POST',
      '/screenshot_configs',
      configOf({ send_to: 'webhook', url: `${grown.origin}/grew`, threshold: 0.01 }, { url: `${site.origin}/long`, fullpage: true }),
    );
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const id = created.body.screenshot_configuration_id as string;
    await jobFinished(sys.base, token, created.body.job_id as string);
    await sys.capture!.visualIdle();
    // The page grows twice, by more than the threshold's share of it (the added part is new, not changed).
    for (const paragraphs of [60, 90]) {
      state.paragraphs = paragraphs;
      await scheduledCaptures([id]);
    }
    expect(grown.received, 'growth alone does not alert').to.have.length(0);

    // It grows and its price changes: one alert, over the common area, with both sizes.
    state.paragraphs = 120;
    state.longPrice = '$249.99';
    await scheduledCaptures([id]);
    expect(grown.received).to.have.length(1);
    const body = JSON.parse(grown.received[0]!.body) as Body & { visual: Body & { boxes: Box[]; before_size: Box; after_size: Box } };
    const v = body.visual;
    expect(v.size_changed).to.equal(true);
    expect(v.before_size.width).to.equal(800);
    expect(v.after_size.width).to.equal(800);
    // 260 + 120 px above the paragraphs, 40 px each.
    expect(v.before_size.height).to.equal(380 + 90 * 40);
    expect(v.after_size.height).to.equal(380 + 120 * 40);
    expect(v.compared_pixels, 'the common area').to.equal(800 * v.before_size.height);
    expect(v.changed_percent).to.be.greaterThan(0.01).and.below(2);
    expect(v.boxes, JSON.stringify(v.boxes)).to.have.length(1);
    const box = v.boxes[0]!;
    expect(box.x).to.be.at.least(PRICE_BOX.x);
    expect(box.y).to.be.at.least(120);
    expect(box.x + box.width).to.be.at.most(PRICE_BOX.x + PRICE_BOX.width);
    expect(box.y + box.height).to.be.at.most(120 + PRICE_BOX.height);
    // The diff image is the common area.
    const diff = await sharp(Buffer.from(await (await fetch(String(v.diff_url))).arrayBuffer())).metadata();
    expect([diff.width, diff.height]).to.deep.equal([800, v.before_size.height]);
  });

  it('compares captures of different formats: PNG, then JPEG, then WebP, without a false alert from their noise', async () => {
    state.stillPrice = '$10.00';
    const schedule = { scheduled_screenshot: true, scheduled_every: 1, scheduled_interval: 'hours' };
    // The default tolerance; a threshold well under what encoder noise would reach if it counted.
    const created = await api(
      'POST',
      '/screenshot_configs',
      configOf({ send_to: 'webhook', url: `${formats.origin}/formats`, threshold: 0.1 }, { url: `${site.origin}/still`, image_format: 'png' }),
    );
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const id = created.body.screenshot_configuration_id as string;
    await jobFinished(sys.base, token, created.body.job_id as string);
    await sys.capture!.visualIdle();
    for (const format of ['jpeg', 'webp', 'png', 'jpeg']) {
      const patched = await api('PATCH', `/screenshot_configs/${id}`, { image_format: format, ...schedule });
      expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
      await scheduledCaptures([id]);
      expect(formats.received, `no alert after the capture turned ${format}`).to.have.length(0);
    }
    // A real change, in JPEG: one alert, compared with the JPEG before it (each unchanged capture became the baseline).
    state.stillPrice = '$249.99';
    await scheduledCaptures([id]);
    expect(formats.received).to.have.length(1);
    const body = JSON.parse(formats.received[0]!.body) as Body & { visual: Body & { boxes: Box[] } };
    expect(String(body.visual.before_url)).to.match(/\.jpe?g$/);
    expect(String(body.visual.after_url)).to.match(/\.jpe?g$/);
    const box = body.visual.boxes[0]!;
    expect(box.x).to.be.at.least(PRICE_BOX.x - 2);
    expect(box.x + box.width).to.be.at.most(PRICE_BOX.x + PRICE_BOX.width + 2);
  });

  it('completes a comparison its capture process left behind: a fresh capture service compares it when it starts', async () => {
    state.leftPrice = '$10.00';
    const step = { send_to: 'webhook', url: `${resumed.origin}/left`, threshold: 0.1 };
    const created = await api('POST', '/screenshot_configs', configOf(step, { url: `${site.origin}/left` }));
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const id = created.body.screenshot_configuration_id as string;
    await jobFinished(sys.base, token, created.body.job_id as string);
    await sys.capture!.visualIdle();
    // The price changes and a capture is recorded, but its comparison never runs: the capture
    // is taken without the step, and the comparison it owed is left as a capture process that
    // stopped right after recording it leaves it (its row, its lease run out).
    const schedule = { scheduled_screenshot: true, scheduled_every: 1, scheduled_interval: 'hours' };
    expect((await api('PATCH', `/screenshot_configs/${id}`, { multi_step_actions: [{ type: 'wait', value: '10' }], ...schedule })).status).to.equal(200);
    state.leftPrice = '$249.99';
    // Every configuration of this file is due: all of the tick's captures finish before the stop (it would wait for them).
    clock += 2 * 3_600_000;
    const started = await sys.scheduler!.tick();
    expect(started.map((s) => s.configId)).to.include(id);
    for (const s of started) await jobFinished(sys.base, token, s.jobId);
    const db = acquireDatabase(sys.config.database);
    let shots: Array<{ image_name: string; job_id: string; account_id: string; created_at_ms: number | string }>;
    try {
      // And those of earlier ticks that other tests did not wait for.
      for (let i = 0; i < 600 && (await db('jobs').whereIn('status', ['queued', 'running']).first('id')); i++) await new Promise((r) => setTimeout(r, 100));
      await sys.capture!.visualIdle();
      expect(resumed.received).to.have.length(0);
      await sys.stop();
      shots = await db('screenshots').where({ config_id: id }).orderBy('created_at_ms', 'desc').select('image_name', 'job_id', 'account_id', 'created_at_ms');
      const last = shots[0]!;
      const readings = [
        {
          index: 0,
          selector: '',
          text: '',
          send_to: 'webhook',
          url: step.url,
          visual: { threshold: 0.1, tolerance: 0.1, repeat: 1, ignore_selectors: [], region: null, masks: [], frameWidth: 800 },
        },
      ];
      await db('visual_pending').insert({
        id: 'left-behind-1',
        account_id: last.account_id,
        config_id: id,
        job_id: last.job_id,
        image_name: last.image_name,
        title: 'Shop watch',
        readings: JSON.stringify(readings),
        captured_at_ms: last.created_at_ms,
        attempts: 0,
        lease_token: 'held-by-the-dead',
        lease_until_ms: Date.now() - 1,
      });
    } finally {
      await releaseDatabase(sys.config.database);
    }

    // A fresh capture service (the whole system again, on the same database and store).
    sys = await runSystem(sys.config, overrides);
    await sys.capture!.visualIdle();
    await sys.notifier!.pump();
    expect(resumed.received, 'the comparison left behind ran and alerted').to.have.length(1);
    const body = JSON.parse(resumed.received[0]!.body) as Body & { visual: Body & { boxes: Box[] } };
    expect(body.screenshot_configuration_id).to.equal(id);
    expect(String(body.visual.after_url)).to.contain(shots[0]!.image_name);
    expect(String(body.visual.before_url)).to.contain(shots[1]!.image_name);
    const box = body.visual.boxes[0]!;
    expect(box.x).to.be.at.least(PRICE_BOX.x);
    expect(box.x + box.width).to.be.at.most(PRICE_BOX.x + PRICE_BOX.width);
    const check = acquireDatabase(sys.config.database);
    try {
      expect(await check('visual_pending').select('id'), 'nothing is owed any more').to.have.length(0);
    } finally {
      await releaseDatabase(sys.config.database);
    }
  });
});
