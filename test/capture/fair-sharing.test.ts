/**
 * Fair sharing on real browsers (embedded mode, the shared Grid, two browsers), with small
 * limits so it runs fast: one account's burst is held to its plan (429 past it) while another
 * account's captures go on as if alone; a scheduled round of another account runs beside an
 * account capturing interactively without taking its browser; a capture's time budget counts
 * from its browser, not from its wait.
 */
import { expect } from 'chai';
import { call } from '../../services/shared/contracts';
import { startCaptureSystem } from '../support/capture-helpers';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { type HttpAnswer, qs, request } from '../support/http';
import { scrape } from '../support/prometheus';
import type { RunningSystem } from '../support/system';
import { until } from '../support/wait';

/** The /slow fixture answers after this long: a capture of it holds its browser at least that long. */
const SLOW_MS = 2_500;

describe('fair sharing of the browsers between accounts', function () {
  this.timeout(180_000);
  let fx: FixtureServer;
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  /** The scheduler's clock: its rounds run when the test says. */
  let clock = Date.now();

  before(async () => {
    fx = await startFixtures();
    // Two browsers, a small wait queue, and a budget shorter than two /slow captures one after the other.
    const started = await startCaptureSystem(
      { ALLOW_PRIVATE_NETWORKS: 'true', CAPTURE_SESSIONS: '2', CAPTURE_QUEUE_MAX: '4', CAPTURE_TIMEOUT_MS: '4000' },
      { scheduler: { now: () => clock, autoTick: false } },
    );
    sys = started.sys;
    cleanup = started.cleanup;
  });
  after(async () => {
    await cleanup?.();
    await fx?.stop();
  });

  /** An account on a plan of its own: `max_concurrent` captures at once, `max_queued` more waiting. */
  async function accountOn(plan: string, maxConcurrent: number, maxQueued: number): Promise<{ account_id: string; access_token: string }> {
    await call(sys.broker, 'billing.upsertPlan', { name: plan, paid: true, screenshot_limit: 10_000, max_concurrent: maxConcurrent, max_queued: maxQueued });
    return sys.account(plan);
  }

  const snap = (token: string, params: Record<string, string | number | boolean>) =>
    request(sys.base, 'GET', `/snap?${qs({ access_token: token, wait: 0, ttl: 0, ...params })}`);
  const used = async (token: string) =>
    (await request<{ results: { screenshot_current_month_usage: number } }>(sys.base, 'GET', `/account_limits?access_token=${token}`)).body.results
      .screenshot_current_month_usage;

  /** B's captures one at a time while `busy()` says A is still at it (at least `min`): each answer with its time. */
  async function oneAtATime(token: string, busy: () => boolean, min: number): Promise<Array<{ status: number; ms: number }>> {
    const answers: Array<{ status: number; ms: number }> = [];
    while (answers.length < min || busy()) {
      const t0 = performance.now();
      const r = await snap(token, { url: `${fx.origin}/plain?b=${answers.length}` });
      answers.push({ status: r.status, ms: performance.now() - t0 });
    }
    return answers;
  }

  it("holds one account's burst to its plan (429 with Retry-After past it, never 503) while another account captures as if alone", async () => {
    const a = await accountOn('burst', 1, 2);
    const b = await accountOn('steady', 1, 2);
    const before = await scrape(sys.base);
    // A sends ten captures of a slow page at once: one runs, two wait, seven are refused.
    let aDone = false;
    const burst = Promise.all(Array.from({ length: 10 }, (_, i) => snap(a.access_token, { url: `${fx.origin}/slow?a=${i}` }))).finally(() => {
      aDone = true;
    });
    await new Promise((r) => setTimeout(r, 300));
    // B, meanwhile, one capture at a time, for as long as A's burst lasts.
    const bAnswers = await oneAtATime(b.access_token, () => !aDone, 3);
    const aAnswers: HttpAnswer[] = await burst;

    expect(
      bAnswers.map((x) => x.status),
      "B's answers",
    ).to.deep.equal(bAnswers.map(() => 200));
    // None of B's waited behind A's captures, each of which holds a browser for SLOW_MS.
    expect(Math.max(...bAnswers.map((x) => x.ms)), "B's slowest capture (ms)").to.be.below(SLOW_MS);

    const done = aAnswers.filter((r) => r.status === 200);
    const refused = aAnswers.filter((r) => r.status === 429);
    expect(
      aAnswers.map((r) => r.status).filter((s) => s !== 200 && s !== 429),
      "A's answers other than 200 and 429",
    ).to.deep.equal([]);
    // The third waited for two /slow captures before it, longer than CAPTURE_TIMEOUT_MS, and
    // still had its whole budget: the wait does not count against it.
    expect(done, "A's captures done (one running, two waiting)").to.have.length(3);
    expect(refused).to.have.length(7);
    for (const r of refused) {
      expect(r.body).to.deep.include({ success: false, error_code: 'concurrency_limit_reached' });
      expect(r.body.note)
        .to.contain('already has 3 captures running or waiting for a browser')
        .and.contain('max_concurrent 1 running and max_queued 2 waiting');
      expect(Number(r.headers.get('retry-after'))).to.be.at.least(1);
    }
    // Refusals cost nothing; each capture done costs one screenshot.
    expect(await used(a.access_token)).to.equal(3);
    expect(await used(b.access_token)).to.equal(bAnswers.length);

    // /metrics: the wait for a browser and the browser's time apart, per priority class.
    const after = await scrape(sys.base);
    const delta = (name: string) => (after.value(name, { kind: 'snap' }) ?? 0) - (before.value(name, { kind: 'snap' }) ?? 0);
    expect(delta('snap_capture_browser_seconds_count')).to.equal(3 + bAnswers.length);
    expect(delta('snap_capture_queue_wait_seconds_count')).to.equal(3 + bAnswers.length);
    // A's second and third waited about one and two /slow captures.
    expect(delta('snap_capture_queue_wait_seconds_sum')).to.be.at.least((3 * SLOW_MS) / 1000 - 0.5);
    const refusedCount = (m: typeof after) =>
      m.value('snap_captures_total', { kind: 'snap', outcome: 'failure', error_code: 'concurrency_limit_reached' }) ?? 0;
    expect(refusedCount(after) - refusedCount(before)).to.equal(7);
  });

  it("runs a scheduled round of many configurations beside an account capturing interactively, without taking that account's browser", async () => {
    const s = await accountOn('rounds', 1, 0);
    const i = await accountOn('interactive', 1, 2);
    const configs: string[] = [];
    for (let n = 0; n < 5; n++) {
      const options = { url: `${fx.origin}/slow?round=${n}`, wait: 0, scheduled_screenshot: true, scheduled_every: 1, scheduled_interval: 'minutes' as const };
      const v = await call(sys.broker, 'scheduler.create', { accountId: s.account_id, input: { given: options, options }, jobId: `seed-${n}` });
      configs.push(v.ids.screenshot_config_id);
    }
    clock += 61_000;
    const started = await sys.scheduler!.tick();
    expect(started.map((x) => x.configId).sort()).to.deep.equal([...configs].sort());
    const jobIds = started.map((x) => x.jobId);
    const jobState = async () => Promise.all(jobIds.map((id) => call(sys.broker, 'capture.jobStatus', { accountId: s.account_id, jobId: id })));
    let roundOver = false;
    const round = until(
      'the scheduled round to finish',
      async () => (await jobState()).every((j) => j.status === 'completed' || j.status === 'failed'),
      60_000,
      200,
    ).finally(() => {
      roundOver = true;
    });
    const answers = await oneAtATime(i.access_token, () => !roundOver, 3);
    await round;
    expect((await jobState()).map((j) => j.status)).to.deep.equal(jobIds.map(() => 'completed'));
    expect(answers.map((x) => x.status)).to.deep.equal(answers.map(() => 200));
    // The round ran on one browser at a time (its plan's one), the other stayed free for I.
    expect(Math.max(...answers.map((x) => x.ms)), "the interactive account's slowest capture (ms)").to.be.below(SLOW_MS);
    expect(answers.length, 'interactive captures during the round').to.be.at.least(5);
    expect(await used(s.access_token)).to.equal(5);
    const m = await scrape(sys.base);
    expect(m.value('snap_capture_queue_wait_seconds_count', { kind: 'scheduled' })).to.equal(5);
    expect(m.value('snap_capture_browser_seconds_count', { kind: 'scheduled' })).to.equal(5);
  });
});
