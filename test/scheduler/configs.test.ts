/**
 * Screenshot configurations, jobs, the archive and embed URLs end to end (embedded mode on
 * the real Grid), with the scheduler driven by a controllable clock.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import knex, { type Knex } from 'knex';
import sharp from 'sharp';
import sinon from 'sinon';
import { call } from '../../services/shared/contracts';
import { knexConfig } from '../../services/shared/database';
import { INLINE_DOCUMENT_URL, captureKey } from '../../services/shared/screenshot-options';
import { backendConfig } from '../support/backends';
import { CAPTURE_SERVICES } from '../support/capture-helpers';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { sharedGrid } from '../support/grid';
import { jobFinished, qs, request } from '../support/http';
import { type RunningSystem, runSystem } from '../support/system';

type Body = Record<string, unknown>;

describe('screenshot configurations, jobs, archive and embed', function () {
  this.timeout(120_000);
  let fx: FixtureServer;
  let sys: RunningSystem;
  let db: Knex;
  let cleanup: () => Promise<void>;
  let token: string;
  let clock = Date.now();
  let dataDir: string;

  const api = (method: string, p: string, json?: Body, key = token) =>
    request<Body>(sys.base, method, p, { headers: { authorization: `Bearer ${key}` }, ...(json ? { json } : {}) });
  const tick = () => sys.scheduler!.tick();
  const finished = (jobId: string, key = token) => jobFinished(sys.base, key, jobId);
  const create = async (options: Body, key = token) => {
    const r = await api('POST', '/screenshot_configs', { wait: 0, ...options }, key);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body as { screenshot_configuration_id: string; embed_url: string; job_id: string };
  };

  before(async () => {
    const grid = await sharedGrid();
    fx = await startFixtures();
    const b = await backendConfig('sqlite', { SERVICES: CAPTURE_SERVICES, SELENIUM_URL: grid.url, ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '2' });
    cleanup = b.cleanup;
    dataDir = b.config.dataDir;
    sys = await runSystem(b.config, { scheduler: { now: () => clock, autoTick: false } });
    db = knex(knexConfig(b.config.database));
    token = (await sys.account('paid')).access_token;
  });
  // A stub left by a test that failed before its own restore would change every later test's calls.
  afterEach(() => sinon.restore());
  after(async () => {
    await db?.destroy();
    await sys?.stop();
    await fx?.stop();
    await cleanup?.();
  });

  it('creates a configuration: exactly {success, screenshot_configuration_id, embed_url, job_id}, and the job completes', async () => {
    const r = await api('POST', '/screenshot_configs', { url: `${fx.origin}/plain`, wait: '0', page_width: 640, page_height: 480, custom_title: 'Plain' });
    expect(r.body).to.have.all.keys('success', 'screenshot_configuration_id', 'embed_url', 'job_id');
    const { screenshot_configuration_id: id, embed_url, job_id } = r.body as Record<string, string>;
    expect(embed_url).to.equal(`${sys.config.appUrl}/embed/${id}`);
    const done = await finished(job_id!);
    expect(done.body).to.have.all.keys('success', 'status', 'job_id', 'screenshot');
    expect(done.body.screenshot).to.have.all.keys('direct_link', 'direct_thumbnail_link', 'taken_at_timestamp', 'job_id');
    const shot = done.body.screenshot as { taken_at_timestamp: number; direct_link: string };
    expect(shot.taken_at_timestamp)
      .to.be.a('number')
      .and.to.be.closeTo(Date.now() / 1000, 120);
    const image = await sharp(Buffer.from(await (await fetch(shot.direct_link)).arrayBuffer())).metadata();
    expect([image.width, image.height]).to.deep.equal([640, 480]);

    const got = await api('GET', `/screenshot_configs/${id}`);
    expect(got.body).to.have.all.keys('success', 'config', 'ids', 'created_at');
    expect(got.body.config).to.deep.equal({ url: `${fx.origin}/plain`, wait: '0', page_width: 640, page_height: 480, custom_title: 'Plain' });
    expect(got.body.ids).to.deep.equal({ last_job_id: job_id, screenshot_config_id: id, embed_url });
    expect(got.body.created_at)
      .to.be.a('string')
      .and.match(/^\d{13}$/);
  });

  it('reports a failed job with its error code and refunds its credit', async () => {
    const { access_token } = await sys.account('free');
    const { job_id } = await create({ url: 'http://127.0.0.1:9/dead' }, access_token);
    const r = await finished(job_id, access_token);
    expect(r.status).to.equal(422);
    expect(r.body).to.deep.include({ success: false, status: 'failed', error_code: 'page_load_failed' });
    const limits = await api('GET', '/account_limits', undefined, access_token);
    expect((limits.body.results as Body).screenshot_current_month_usage).to.equal(0);
  });

  it('shows the placeholder at the embed URL until the first capture, then the latest image', async () => {
    const withOwn = await create({ url: `${fx.origin}/very-slow`, placeholder_url: 'https://example.com/placeholder.png' });
    const redirected = await fetch(withOwn.embed_url, { redirect: 'manual' });
    expect(redirected.status).to.equal(302);
    expect(redirected.headers.get('location')).to.equal('https://example.com/placeholder.png');
    // The 302 is declared, with its Location.
    const doc = (await fetch(`${sys.base}/openapi.json`).then((r) => r.json())) as { paths: Record<string, { get: { responses: Record<string, Body> } }> };
    expect(doc.paths['/embed/{id}']!.get.responses['302']).to.deep.include({ headers: { Location: { schema: { type: 'string', format: 'uri' } } } });

    const plain = await create({ url: `${fx.origin}/very-slow`, image_format: 'png', page_width: 300, page_height: 200 });
    const before = await fetch(plain.embed_url);
    expect(before.status).to.equal(200);
    expect(before.headers.get('cache-control')).to.equal('no-cache');
    const placeholder = await sharp(Buffer.from(await before.arrayBuffer())).metadata();
    expect([placeholder.width, placeholder.height]).to.deep.equal([800, 500]);

    await finished(plain.job_id);
    const after = await fetch(plain.embed_url);
    expect(after.headers.get('content-type')).to.equal('image/png');
    const latest = await sharp(Buffer.from(await after.arrayBuffer())).metadata();
    expect([latest.width, latest.height]).to.deep.equal([300, 200]);
    expect((await fetch(`${sys.config.appUrl}/embed/unknownid123`)).status).to.equal(404);
  });

  it('PATCH turns a scheduled configuration one-time and back; new options apply to the next capture', async () => {
    const c = await create({ url: `${fx.origin}/plain`, scheduled_screenshot: true, scheduled_every: 1, scheduled_interval: 'hours' });
    const row = () => db('screenshot_configs').where({ id: c.screenshot_configuration_id }).first();
    expect(Boolean((await row()).scheduled)).to.equal(true);

    const oneTime = await api('PATCH', `/screenshot_configs/${c.screenshot_configuration_id}`, {
      url: `${fx.origin}/plain`,
      page_width: 500,
      page_height: 400,
    });
    expect(oneTime.body).to.have.all.keys('success', 'config');
    // Its schedule's fields stay, and the answer says it is no longer scheduled.
    expect(oneTime.body.config).to.include({ page_width: 500, scheduled_interval: 'hours', scheduled_screenshot: false });
    expect((await api('GET', `/screenshot_configs/${c.screenshot_configuration_id}`)).body.config).to.include({ scheduled_screenshot: false });
    expect(Boolean((await row()).scheduled)).to.equal(false);

    const back = await api('PATCH', `/screenshot_configs/${c.screenshot_configuration_id}`, { url: `${fx.origin}/plain`, scheduled_screenshot: 'true' });
    expect(back.body.config).to.include({ scheduled_screenshot: 'true', page_width: 500 });
    expect(Boolean((await row()).scheduled)).to.equal(true);

    // Without url the stored one is kept (the MCP server and the Python client leave it out).
    const withoutUrl = await api('PATCH', `/screenshot_configs/${c.screenshot_configuration_id}`, { wait: 10, scheduled_screenshot: true });
    expect(withoutUrl.status).to.equal(200);
    expect(withoutUrl.body.config).to.include({ url: `${fx.origin}/plain`, wait: 10, page_width: 500 });
    expect((await row()).url).to.equal(`${fx.origin}/plain`);
    // A PATCH that carries nothing to change is refused, saying so.
    const empty = await api('PATCH', `/screenshot_configs/${c.screenshot_configuration_id}`, {});
    expect([empty.status, empty.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
    expect(empty.body.note).to.contain('No parameter to change arrived');
    // One sent empty (to remove it): said that a PATCH removes nothing.
    const emptied = await api('PATCH', `/screenshot_configs/${c.screenshot_configuration_id}`, { selectors: null });
    expect([emptied.status, emptied.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
    expect(emptied.body.note).to.contain('selectors: an empty value (null or "") changes nothing: a PATCH adds and changes options and removes none');

    await finished(c.job_id);
    const nextRun = (await row()).next_run_at_ms;
    const now = await api('POST', `/screenshot_configs/${c.screenshot_configuration_id}/capture`);
    expect(now.body).to.have.all.keys('success', 'job_id', 'embed_url');
    expect(now.body.embed_url).to.equal(c.embed_url);
    const shot = (await finished(String(now.body.job_id))).body.screenshot as { direct_link: string };
    const meta = await sharp(Buffer.from(await (await fetch(shot.direct_link)).arrayBuffer())).metadata();
    expect([meta.width, meta.height]).to.deep.equal([500, 400]);
    // Capture now does not disturb the schedule.
    expect((await row()).next_run_at_ms).to.equal(nextRun);
    expect((await row()).last_job_id).to.equal(now.body.job_id);
  });

  it('checks a PATCH as the configuration it makes (stored options, the changes over them): what would fail every capture is 400 naming the option, nothing changed', async () => {
    const url = `${fx.origin}/plain`;
    const jpeg = await create({ url });
    const config = async (id: string) => (await api('GET', `/screenshot_configs/${id}`)).body.config;
    const stored = await config(jpeg.screenshot_configuration_id);
    for (const [body, says] of [
      [{ url, pdf_margin: '1cm' }, 'pdf_margin: shapes a PDF only'],
      [{ optimize_for_speed: false }, 'optimize_for_speed: changes how a PNG is encoded only'],
      [{ url, hover_on_selected: true }, 'hover_on_selected: requires selectors'],
      [{ fail_if_selector_present: 'div[' }, 'fail_if_selector_present: "div[" is not a valid CSS selector'],
      [{ wait_for: 'div[' }, 'wait_for: "div[" is not a valid CSS selector'],
      [{ selectors: '#box >' }, 'selectors: "#box >" is not a valid CSS selector (nothing follows the combinator ">")'],
      [{ hide_selectors: ['#a', '##b'] }, 'hide_selectors: "##b" is not a valid CSS selector'],
    ] as Array<[Body, string]>) {
      const r = await api('PATCH', `/screenshot_configs/${jpeg.screenshot_configuration_id}`, body);
      expect([r.status, r.body.error_code], JSON.stringify(r.body)).to.deep.equal([400, 'invalid_parameter']);
      expect(String(r.body.note)).to.contain(says);
    }
    expect(await config(jpeg.screenshot_configuration_id)).to.deep.equal(stored);
    // What the stored options complete is taken: PDF options once the format is PDF, hover_on_selected on stored selectors.
    const toPdf = await api('PATCH', `/screenshot_configs/${jpeg.screenshot_configuration_id}`, { image_format: 'pdf', pdf_margin: '1cm' });
    expect(toPdf.status, JSON.stringify(toPdf.body)).to.equal(200);
    const back = await api('PATCH', `/screenshot_configs/${jpeg.screenshot_configuration_id}`, { image_format: 'png' });
    expect([back.status, back.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
    expect(String(back.body.note)).to.contain('pdf_margin: shapes a PDF only');
    const box = await create({ url, selectors: '#box' });
    const hover = await api('PATCH', `/screenshot_configs/${box.screenshot_configuration_id}`, { url, hover_on_selected: true });
    expect(hover.status, JSON.stringify(hover.body)).to.equal(200);
    expect(hover.body.config).to.include({ selectors: '#box', hover_on_selected: true });
    // A new configuration's selectors are checked as a snap's, before anything is stored or charged.
    const bad = await api('POST', '/screenshot_configs', { url, fail_if_selector_present: 'div[' });
    expect([bad.status, bad.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
    expect(String(bad.body.note)).to.contain('fail_if_selector_present: "div[" is not a valid CSS selector');
    await finished(jpeg.job_id);
    await finished(box.job_id);
  });

  /**
   * Runs `before` once, just before the first call of `action` that the system's broker makes
   * (the api's calls go through it): what another request does in between, placed exactly there.
   */
  function beforeCall(action: string, meanwhile: () => Promise<unknown>): sinon.SinonStub {
    const original = sys.broker.call.bind(sys.broker);
    let done = false;
    return sinon.stub(sys.broker, 'call').callsFake((async (name: string, ...rest: unknown[]) => {
      if (name === action && !done) {
        done = true;
        await meanwhile();
      }
      return (original as (...a: unknown[]) => unknown)(name, ...rest);
    }) as never);
  }
  const usage = async () => ((await api('GET', '/account_limits')).body.results as Body).screenshot_current_month_usage as number;

  it('a PATCH stored while another was being checked is checked again over it: two changes each fine alone are not stored together', async () => {
    const url = `${fx.origin}/plain?patch-race`;
    const c = await create({ url });
    await finished(c.job_id);
    // Another PATCH (image_format=pdf) is stored between this one's check (selectors on a JPEG: fine) and its update.
    const other = beforeCall('scheduler.update', async () => {
      other.restore();
      const r = await api('PATCH', `/screenshot_configs/${c.screenshot_configuration_id}`, { image_format: 'pdf' });
      expect(r.status, JSON.stringify(r.body)).to.equal(200);
    });
    const r = await api('PATCH', `/screenshot_configs/${c.screenshot_configuration_id}`, { selectors: '#box' });
    sinon.restore();
    expect([r.status, r.body.error_code], JSON.stringify(r.body)).to.deep.equal([400, 'invalid_parameter']);
    expect(String(r.body.note)).to.contain('selectors: a PDF prints the page');
    const stored = (await api('GET', `/screenshot_configs/${c.screenshot_configuration_id}`)).body.config as Body;
    expect(stored).to.include({ image_format: 'pdf' });
    expect(stored).to.not.have.property('selectors');
  });

  it('a PATCH whose configuration other changes keep changing while it is checked answers 409 configuration_changed after three rounds, nothing of it stored', async () => {
    const url = `${fx.origin}/plain?patch-busy`;
    const c = await create({ url });
    await finished(c.job_id);
    const id = c.screenshot_configuration_id;
    // Before each of this PATCH's updates, another change is stored (as a busy script's PATCHes would be).
    const original = sys.broker.call.bind(sys.broker);
    let round = 0;
    sinon.stub(sys.broker, 'call').callsFake((async (name: string, ...rest: unknown[]) => {
      if (name === 'scheduler.update' && (rest[0] as { checked?: unknown }).checked !== undefined && round < 10) {
        round++;
        await db('screenshot_configs')
          .where({ id })
          .update({ capture_options: JSON.stringify({ url, wait: round }) });
      }
      return (original as (...a: unknown[]) => unknown)(name, ...rest);
    }) as never);
    const r = await api('PATCH', `/screenshot_configs/${id}`, { page_width: 900 });
    sinon.restore();
    expect([r.status, r.body.error_code], JSON.stringify(r.body)).to.deep.equal([409, 'configuration_changed']);
    expect(String(r.body.note)).to.contain('changed by another request while this change was checked; send it again');
    expect(round).to.equal(3);
    const row = await db('screenshot_configs').where({ id }).first('capture_options');
    expect(JSON.parse(row.capture_options as string)).to.deep.equal({ url, wait: 3 });
  });

  it('a capture-now started while its configuration is deleted leaves no job, screenshot or charge behind', async () => {
    const rows = async (configId: string) => [
      Number((await db('jobs').where({ config_id: configId }).count({ n: '*' }))[0]!.n),
      Number((await db('screenshots').where({ config_id: configId }).count({ n: '*' }))[0]!.n),
    ];
    // 1. The whole delete lands between capture-now's reading of the configuration and its job's start: answered 404.
    const first = await create({ url: `${fx.origin}/plain?capture-delete-1` });
    await finished(first.job_id);
    const id1 = first.screenshot_configuration_id;
    let deleted: Body = {};
    beforeCall('capture.enqueue', async () => {
      deleted = (await api('DELETE', `/screenshot_configs/${id1}`)).body;
    });
    const before1 = await usage();
    const late = await api('POST', `/screenshot_configs/${id1}/capture`);
    sinon.restore();
    expect(deleted.deleted).to.equal(true);
    expect([late.status, late.body.error_code], JSON.stringify(late.body)).to.deep.equal([404, 'not_found']);
    expect(await rows(id1)).to.deep.equal([0, 0]);
    expect(await usage()).to.equal(before1);
    // 2. A capture-now started in full between the delete's sweep of the jobs and the row's end: swept by the delete.
    const second = await create({ url: `${fx.origin}/plain?capture-delete-2` });
    await finished(second.job_id);
    const id2 = second.screenshot_configuration_id;
    let started: Body = {};
    beforeCall('scheduler.remove', async () => {
      started = (await api('POST', `/screenshot_configs/${id2}/capture`)).body;
    });
    const removed = await api('DELETE', `/screenshot_configs/${id2}`);
    sinon.restore();
    expect(started.job_id, JSON.stringify(started)).to.be.a('string');
    expect(removed.body.deleted, JSON.stringify(removed.body)).to.equal(true);
    expect(await rows(id2)).to.deep.equal([0, 0]);
    expect((await api('GET', `/jobs/${String(started.job_id)}`)).status).to.equal(404);
  });

  it('geolocation: a PATCH completing stored coordinates is taken, one leaving a coordinate alone is refused; a stored half position fails its capture, never read as 0', async () => {
    const url = `${fx.origin}/plain`;
    const placed = await create({ url, latitude: 48.85, longitude: 2.35 });
    const accuracy = await api('PATCH', `/screenshot_configs/${placed.screenshot_configuration_id}`, { accuracy: 20 });
    expect(accuracy.status, JSON.stringify(accuracy.body)).to.equal(200);
    const plain = await create({ url });
    for (const [body, says] of [
      [{ accuracy: 20 }, 'accuracy: is the accuracy of an emulated position'],
      [{ latitude: 10 }, 'longitude: latitude needs it'],
    ] as Array<[Body, string]>) {
      const r = await api('PATCH', `/screenshot_configs/${plain.screenshot_configuration_id}`, body);
      expect([r.status, r.body.error_code], JSON.stringify(r.body)).to.deep.equal([400, 'invalid_parameter']);
      expect(String(r.body.note)).to.contain(says);
    }
    await finished(placed.job_id);
    await finished(plain.job_id);
    // A configuration stored with half a position (before it was refused) fails its capture saying so.
    await db('screenshot_configs')
      .where({ id: plain.screenshot_configuration_id })
      .update({ capture_options: JSON.stringify({ url, wait: 0, latitude: 10 }) });
    const now = await api('POST', `/screenshot_configs/${plain.screenshot_configuration_id}/capture`);
    const failed = await finished(String(now.body.job_id));
    expect([failed.status, failed.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
    expect(String(failed.body.note)).to.contain('longitude: latitude needs it');
  });

  it('runs a schedule every minute on the clock, and once after downtime, not once per missed slot', async () => {
    clock = Date.now();
    const c = await create({ url: `${fx.origin}/plain`, scheduled_screenshot: 'true', scheduled_every: '1', scheduled_interval: 'minutes' });
    await finished(c.job_id);
    const mine = (started: Array<{ configId: string; jobId: string }>) => started.filter((s) => s.configId === c.screenshot_configuration_id);
    clock += 30_000;
    expect(mine(await tick())).to.have.length(0);
    clock += 31_000;
    const first = mine(await tick());
    expect(first).to.have.length(1);
    expect(mine(await tick())).to.have.length(0);
    expect((await finished(first[0]!.jobId)).body.status).to.equal('completed');
    clock += 10 * 60_000;
    const afterDowntime = mine(await tick());
    expect(afterDowntime).to.have.length(1);
    expect(mine(await tick())).to.have.length(0);
    await finished(afterDowntime[0]!.jobId);
    const list = await api('GET', `/screenshot_configs/${c.screenshot_configuration_id}/screenshots`);
    expect((list.body.screenshots as unknown[]).length).to.equal(3);
  });

  it('hands over, once, the job of a slot whose scheduler died between claiming it and handing it to capture', async () => {
    clock = Date.now();
    const schedule = { url: `${fx.origin}/plain`, scheduled_screenshot: 'true', scheduled_every: '2', scheduled_interval: 'minutes' };
    const lost = await create(schedule);
    const handed = await create(schedule);
    await finished(lost.job_id);
    await finished(handed.job_id);
    // What a scheduler leaves when it dies after its claim committed: the slot moved on and its
    // job marked pending; for `lost` before the hand-over, for `handed` just after it.
    await db('screenshot_configs')
      .where({ id: lost.screenshot_configuration_id })
      .update({ next_run_at_ms: clock + 120_000, pending_job_id: 'lostjob00001', job_pending_since_ms: clock });
    await db('screenshot_configs')
      .where({ id: handed.screenshot_configuration_id })
      .update({ next_run_at_ms: clock + 120_000, pending_job_id: handed.job_id, job_pending_since_ms: clock });
    const mine = (started: Array<{ configId: string; jobId: string }>) =>
      started
        .filter((s) => [lost.screenshot_configuration_id, handed.screenshot_configuration_id].includes(s.configId))
        .map((s) => s.jobId)
        .sort();
    clock += 30_000; // a hand-over may still be under way
    expect(mine(await tick())).to.deep.equal([]);
    clock += 31_000;
    expect(mine(await tick())).to.deep.equal([handed.job_id, 'lostjob00001'].sort());
    expect(mine(await tick())).to.deep.equal([]);
    expect((await finished('lostjob00001')).body.status).to.equal('completed');
    const jobs = await db('jobs').whereIn('config_id', [lost.screenshot_configuration_id, handed.screenshot_configuration_id]).select('id');
    expect(jobs.map((j) => j.id).sort()).to.deep.equal([lost.job_id, handed.job_id, 'lostjob00001'].sort());
    const marks = await db('screenshot_configs').whereIn('id', [lost.screenshot_configuration_id, handed.screenshot_configuration_id]).select('pending_job_id');
    expect(marks.map((m) => m.pending_job_id)).to.deep.equal([null, null]);
  });

  it('pages lists: limit 1 to 1000, after/before in seconds or milliseconds, ASC/DESC, has_more', async () => {
    const { access_token } = await sys.account('paid');
    const c = await create({ url: `${fx.origin}/plain?paging` }, access_token);
    await finished(c.job_id, access_token);
    for (let i = 0; i < 2; i++) {
      const now = await api('POST', `/screenshot_configs/${c.screenshot_configuration_id}/capture`, undefined, access_token);
      await finished(String(now.body.job_id), access_token);
    }
    const list = (params: Record<string, string | number>) =>
      api('GET', `/screenshot_configs/${c.screenshot_configuration_id}/screenshots?${qs(params)}`, undefined, access_token);
    const all = (await list({})).body.screenshots as Array<{ taken_at_timestamp: number; job_id: string }>;
    expect(all).to.have.length(3);
    expect(all[0]!.taken_at_timestamp).to.be.at.least(all[2]!.taken_at_timestamp);
    const asc = (await list({ order: 'ASC' })).body.screenshots as typeof all;
    expect(asc.map((s) => s.job_id)).to.deep.equal([...all].reverse().map((s) => s.job_id));
    const page1 = await list({ limit: 2, order: 'ASC' });
    expect(page1.body.has_more).to.equal(true);
    const page2 = await list({ limit: 2, page: 2, order: 'ASC' });
    expect(page2.body.has_more).to.equal(false);
    expect((page2.body.screenshots as typeof all).map((s) => s.job_id)).to.deep.equal([asc[2]!.job_id]);

    const records = (await api('GET', `/screenshots?${qs({ order: 'ASC' })}`, undefined, access_token)).body.screenshots as Array<{
      taken_at_timestamp: string;
    }>;
    const firstMs = Number(records[0]!.taken_at_timestamp);
    const lastMs = Number(records[2]!.taken_at_timestamp);
    const afterMs = await api('GET', `/screenshots?${qs({ after: firstMs })}`, undefined, access_token);
    expect((afterMs.body.screenshots as unknown[]).length).to.equal(2);
    const beforeSeconds = await api('GET', `/screenshots?${qs({ before_date: Math.ceil(lastMs / 1000) + 1 })}`, undefined, access_token);
    expect((beforeSeconds.body.screenshots as unknown[]).length).to.equal(3);
    const beforeMs = await api('GET', `/screenshots?${qs({ before: lastMs })}`, undefined, access_token);
    expect((beforeMs.body.screenshots as unknown[]).length).to.equal(2);
    expect(await api('GET', `/screenshots?${qs({ after: Math.floor(lastMs / 1000) + 5 })}`, undefined, access_token)).to.have.nested.property(
      'body.screenshots',
    ).that.is.empty;

    for (const bad of [{ limit: 0 }, { limit: 1001 }, { page: 0 }, { order: 'sideways' }, { after: 'yesterday' }] as Array<Record<string, string | number>>) {
      const r = await api('GET', `/screenshots?${qs(bad)}`, undefined, access_token);
      expect([r.status, r.body.error_code], JSON.stringify(bad)).to.deep.equal([400, 'invalid_parameter']);
    }
    const configs = await api('GET', `/screenshot_configs?${qs({ limit: 1 })}`, undefined, access_token);
    expect(configs.body).to.have.all.keys('success', 'screenshot_configurations', 'has_more');
    expect((configs.body.screenshot_configurations as Array<Body>)[0]).to.have.all.keys('config', 'ids', 'created_at');
  });

  it('deletes a configuration with its screenshots and their stored files', async () => {
    const c = await create({ url: `${fx.origin}/plain?delete` });
    const shot = (await finished(c.job_id)).body.screenshot as { direct_link: string; direct_thumbnail_link: string };
    const files = [shot.direct_link, shot.direct_thumbnail_link].map((l) => l.split('/').pop() as string);
    // The thumbnail is made when first asked for.
    expect((await fetch(shot.direct_thumbnail_link)).status).to.equal(200);
    for (const f of files) expect(fs.existsSync(path.join(dataDir, 'files', f))).to.equal(true);
    const r = await api('DELETE', `/screenshot_configs/${c.screenshot_configuration_id}`);
    expect(r.body).to.have.all.keys('success', 'deleted', 'screenshot_configuration');
    expect(r.body.deleted).to.equal(true);
    expect((r.body.screenshot_configuration as Body).config).to.deep.include({ url: `${fx.origin}/plain?delete` });
    for (const f of files) expect(fs.existsSync(path.join(dataDir, 'files', f))).to.equal(false);
    expect((await fetch(shot.direct_link)).status).to.equal(404);
    // Nor is it made again: its screenshot is gone.
    expect((await fetch(shot.direct_thumbnail_link)).status).to.equal(404);
    for (const f of files) expect(fs.existsSync(path.join(dataDir, 'files', f))).to.equal(false);
    expect(await db('screenshots').where({ config_id: c.screenshot_configuration_id }).count({ n: '*' })).to.deep.equal([{ n: 0 }]);
    expect((await api('GET', `/screenshot_configs/${c.screenshot_configuration_id}`)).status).to.equal(404);
    expect((await api('GET', `/jobs/${c.job_id}`)).status).to.equal(404);
    // Removals side by side (each reads the row before either deletes it): one removes it, the other answers 404.
    const { account_id: accountId } = await sys.account('paid');
    const twice = await call(sys.broker, 'scheduler.create', {
      accountId,
      input: { given: { url: 'https://example.com/' }, options: { url: 'https://example.com/' } },
      jobId: 'jobtwice0001',
    });
    const id = twice.ids.screenshot_config_id;
    const removals = await Promise.allSettled([0, 1].map(() => call(sys.broker, 'scheduler.remove', { accountId, id })));
    expect(removals.map((r) => (r.status === 'fulfilled' ? 'removed' : (r.reason as { type: string }).type)).sort()).to.deep.equal(['not_found', 'removed']);
  });

  it("notes the job given with a snap's configuration lookup, on the configuration it creates and on the one it finds", async () => {
    const { account_id: accountId } = await sys.account('paid');
    const options = { url: `${fx.origin}/plain?noted` };
    const lookup = (jobId?: string) =>
      call(sys.broker, 'scheduler.snapConfig', { accountId, options, snapKey: captureKey(options), ...(jobId ? { jobId } : {}) });
    const lastJob = async (id: string) => (await call(sys.broker, 'scheduler.get', { accountId, id })).ids.last_job_id;
    const created = await lookup('jobnoted0001');
    expect(await lastJob(created.id)).to.equal('jobnoted0001');
    expect((await lookup('jobnoted0002')).id).to.equal(created.id);
    expect(await lastJob(created.id)).to.equal('jobnoted0002');
    // Without a job, the lookup notes nothing.
    await lookup();
    expect(await lastJob(created.id)).to.equal('jobnoted0002');
  });

  it("makes one configuration for lookups of a snap's new page at once, each answered with it", async () => {
    const { account_id: accountId } = await sys.account('paid');
    const options = { url: `${fx.origin}/plain?at-once` };
    const snapKey = captureKey(options);
    const answers = await Promise.all(
      ['jobatonce001', 'jobatonce002', undefined, 'jobatonce003'].map((jobId) =>
        call(sys.broker, 'scheduler.snapConfig', { accountId, options, snapKey, ...(jobId ? { jobId } : {}) }),
      ),
    );
    expect(new Set(answers.map((a) => a.id)).size, JSON.stringify(answers)).to.equal(1);
    const { configs } = await call(sys.broker, 'scheduler.list', { accountId, paging: { page: 1, limit: 10, afterMs: null, beforeMs: null, order: 'DESC' } });
    expect(configs.map((c) => c.ids.screenshot_config_id)).to.deep.equal([answers[0]!.id]);
  });

  it("shows a snap's configuration without the options about the snap's answer (json, ttl), so it can be sent back as read", async () => {
    const options = { url: `${fx.origin}/plain?read-back`, json: true, ttl: 0, wait: 0, page_width: 640 };
    const account = await sys.account('paid');
    const { id } = await call(sys.broker, 'scheduler.snapConfig', { accountId: account.account_id, options, snapKey: captureKey(options) });
    const read = (await api('GET', `/screenshot_configs/${id}`, undefined, account.access_token)).body.config as Body;
    expect(read).to.deep.equal({ url: options.url, wait: 0, page_width: 640 });
    const back = await api('PATCH', `/screenshot_configs/${id}`, { ...read, page_width: 800 }, account.access_token);
    expect(back.status, JSON.stringify(back.body)).to.equal(200);
  });

  it('keeps a /snap_html document once, in the options its captures run with, and shows it there; a row stored with it twice reads the same', async () => {
    const account = await sys.account('paid');
    const document = (text: string) => `<!doctype html><p>${text}</p><!--${'x'.repeat(10_000)}-->`;
    const snapOf = async (html: string) => {
      const options = { html_content: html, json: true, ttl: 0, wait: 0, url: INLINE_DOCUMENT_URL };
      const { id } = await call(sys.broker, 'scheduler.snapConfig', { accountId: account.account_id, options, snapKey: captureKey(options) });
      return id;
    };
    const stored = async (id: string) => (await db('screenshot_configs').where({ id }).first('options', 'capture_options')) as Record<string, string>;
    const read = async (id: string) => (await api('GET', `/screenshot_configs/${id}`, undefined, account.access_token)).body.config as Body;
    const runWith = async (id: string) => (await call(sys.broker, 'scheduler.get', { accountId: account.account_id, id })).options as Body;

    const html = document('kept once');
    const id = await snapOf(html);
    const row = await stored(id);
    expect(row.options).to.not.contain('kept once');
    expect(JSON.parse(row.capture_options!).html_content).to.equal(html);
    expect(await read(id)).to.deep.equal({ html_content: html, wait: 0, url: INLINE_DOCUMENT_URL });
    expect((await runWith(id)).html_content).to.equal(html);
    // A PATCH keeps it once, and answers it.
    const patched = await api('PATCH', `/screenshot_configs/${id}`, { wait: 1 }, account.access_token);
    expect(patched.status, JSON.stringify(patched.body)).to.equal(200);
    expect(patched.body.config).to.deep.equal({ html_content: html, wait: 1, url: INLINE_DOCUMENT_URL });
    expect((await stored(id)).options).to.not.contain('kept once');
    expect(await read(id)).to.deep.equal({ html_content: html, wait: 1, url: INLINE_DOCUMENT_URL });
    expect(await runWith(id)).to.include({ html_content: html, wait: 1 });

    // A row as the release before wrote it: the document in the options shown too.
    const before = document('stored twice');
    const old = await snapOf(before);
    const oldCapture = JSON.parse((await stored(old)).capture_options!) as Body;
    await db('screenshot_configs')
      .where({ id: old })
      .update({ options: JSON.stringify({ html_content: before, wait: 0, url: INLINE_DOCUMENT_URL }) });
    expect(await read(old)).to.deep.equal({ html_content: before, wait: 0, url: INLINE_DOCUMENT_URL });
    expect(await runWith(old)).to.deep.equal(oldCapture);
    const oldPatched = await api('PATCH', `/screenshot_configs/${old}`, { page_width: 640 }, account.access_token);
    expect(oldPatched.status, JSON.stringify(oldPatched.body)).to.equal(200);
    expect(oldPatched.body.config).to.deep.equal({ html_content: before, wait: 0, url: INLINE_DOCUMENT_URL, page_width: 640 });
    expect(await runWith(old)).to.include({ html_content: before, page_width: 640 });
  });

  it("answers 404 for another account's configuration and job", async () => {
    const c = await create({ url: `${fx.origin}/plain?mine` });
    const other = (await sys.account('paid')).access_token;
    for (const [method, p] of [
      ['GET', `/screenshot_configs/${c.screenshot_configuration_id}`],
      ['POST', `/screenshot_configs/${c.screenshot_configuration_id}/capture`],
      ['GET', `/screenshot_configs/${c.screenshot_configuration_id}/screenshots`],
      ['DELETE', `/screenshot_configs/${c.screenshot_configuration_id}`],
      ['GET', `/jobs/${c.job_id}`],
    ] as const) {
      const r = await api(method, p, undefined, other);
      expect([r.status, r.body.error_code], `${method} ${p}`).to.deep.equal([404, 'not_found']);
    }
    const patch = await api('PATCH', `/screenshot_configs/${c.screenshot_configuration_id}`, { url: `${fx.origin}/x` }, other);
    expect(patch.status).to.equal(404);
    expect((await api('GET', `/screenshot_configs/${c.screenshot_configuration_id}`)).status).to.equal(200);
  });

  it('runs multi_step_actions on configurations too: validated on create, a failing step fails the job with action_failed', async () => {
    const invalid = await api('POST', '/screenshot_configs', { url: `${fx.origin}/plain`, multi_step_actions: [{ type: 'click' }] });
    expect([invalid.status, invalid.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
    expect(String(invalid.body.note)).to.contain('multi_step_actions[0] (click)');
    const { access_token } = await sys.account('paid');
    const c = await create(
      {
        url: `${fx.origin}/plain`,
        multi_step_actions: [
          { type: 'css', value: 'h1 { color: red }' },
          { type: 'click', selector: '#nothing-here' },
        ],
      },
      access_token,
    );
    const r = await finished(c.job_id, access_token);
    expect(r.status).to.equal(422);
    expect(r.body).to.deep.include({ status: 'failed', error_code: 'action_failed' });
    expect(String(r.body.note)).to.contain('multi_step_actions[1] (click)');
    const limits = await api('GET', '/account_limits', undefined, access_token);
    expect((limits.body.results as Body).screenshot_current_month_usage).to.equal(0);
  });

  it('refuses a schedule without an interval and a configuration past the monthly limit, leaving nothing behind', async () => {
    const noInterval = await api('POST', '/screenshot_configs', { url: `${fx.origin}/plain`, scheduled_screenshot: true });
    expect([noInterval.status, noInterval.body.error_code]).to.deep.equal([400, 'invalid_parameter']);
    // A schedule named without scheduled_screenshot=true would be stored and never run.
    const before = (await api('GET', '/screenshot_configs')).body.screenshot_configurations as unknown[];
    for (const unused of [
      { scheduled_every: 5 },
      { scheduled_interval: 'hours' },
      { scheduled_screenshot: false, scheduled_every: 2, scheduled_interval: 'days' },
    ]) {
      const r = await api('POST', '/screenshot_configs', { url: `${fx.origin}/plain`, ...unused });
      expect([r.status, r.body.error_code], JSON.stringify(unused)).to.deep.equal([400, 'invalid_parameter']);
      expect(String(r.body.note)).to.contain('only take effect with scheduled_screenshot=true');
    }
    expect((await api('GET', '/screenshot_configs')).body.screenshot_configurations).to.have.length(before.length);
    await sys.broker.call('billing.upsertPlan', { name: 'none', paid: false, screenshot_limit: 0 });
    const { access_token } = await sys.account('none');
    const refused = await api('POST', '/screenshot_configs', { url: `${fx.origin}/plain` }, access_token);
    expect([refused.status, refused.body.error_code]).to.deep.equal([402, 'screenshot_limit_reached']);
    const list = await api('GET', '/screenshot_configs', undefined, access_token);
    expect(list.body.screenshot_configurations).to.deep.equal([]);
  });
});
