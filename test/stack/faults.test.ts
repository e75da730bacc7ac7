/**
 * Faults an operator meets, each on the full stack as separate processes (ops/stack.ts):
 * a capture instance, a Grid node, a scheduler and the notifier killed (SIGKILL), NATS and
 * Redis restarted (servers this suite starts on ports of its own; the machine's are never
 * touched). After each: no job lost, none run twice, none charged twice, the month's usage
 * exact, every delivery arrived (the same webhook-id on a repeat). The stack's supervisor
 * starts a killed service process again, as systemd or Kubernetes would.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import knex, { type Knex } from 'knex';
import type { Stack } from '../../ops/stack';
import { type Receiver, startReceiver } from '../notifier/receivers';
import { freePort, tempDir, uniqueName } from '../support/backends';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { sessionsOfNode } from '../support/grid';
import { request } from '../support/http';
import { processesLeft, processesMarked, runScript } from '../support/processes';
import { OwnServer, ownRedis } from '../support/own-server';
import { startTestStack, stopTestStack } from '../support/stack';
import { sleep, until } from '../support/wait';

describe('the full stack survives faults (separate processes)', function () {
  this.timeout(240_000);
  const mark = uniqueName('m');
  let nats: OwnServer;
  let redis: OwnServer;
  let redisDir: string;
  let fx: FixtureServer;
  let receiver: Receiver;
  let stack: Stack | undefined;
  let db: Knex;
  let token: string;
  let accountId: string;
  let failed = false;

  before(async function () {
    this.timeout(240_000);
    const natsPort = await freePort();
    nats = new OwnServer('nats-server', ['nats-server', '-a', '127.0.0.1', '-p', String(natsPort)], natsPort);
    redisDir = tempDir('snapredis-');
    // Redis holds the month's usage counters: it must keep them across a restart (AOF).
    redis = await ownRedis(redisDir);
    await Promise.all([nats.start(), redis.start()]);
    fx = await startFixtures();
    // The first attempt of each delivery hangs when the notifier test says so; others answer 200.
    receiver = await startReceiver(() => ({ status: 200 }));
    stack = await startTestStack({
      natsUrl: `nats://127.0.0.1:${natsPort}`,
      redisUrl: `redis://127.0.0.1:${redis.port}`,
      env: {
        ALLOW_PRIVATE_NETWORKS: 'true',
        CAPTURE_JOB_LEASE_MS: '4000',
        SCHEDULER_TICK_SECONDS: '1',
        WEBHOOK_POLL_MS: '250',
        WEBHOOK_TIMEOUT_MS: '3000',
        SNAP_TEST_MARK: mark,
      },
    });
    db = knex({ client: 'mysql2', connection: stack.databaseUrl, pool: { min: 0, max: 2 } });
    // Four captures at once (the tests below keep every browser of the stack busy).
    runScript('bin/admin.js', ['plans', 'set', 'paid', '--concurrency', '4', '--queue', '16'], stack.serviceEnv());
    const created = JSON.parse(runScript('bin/admin.js', ['accounts', 'create', '--plan', 'paid', '--json'], stack.serviceEnv())) as {
      account_id: string;
      access_token: string;
    };
    token = created.access_token;
    accountId = created.account_id;
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') failed = true;
  });

  after(async function () {
    this.timeout(120_000);
    await db?.destroy();
    await stopTestStack(stack, failed);
    await Promise.all([nats?.stop(), redis?.stop(), fx?.stop(), receiver?.stop()]);
    fs.rmSync(redisDir, { recursive: true, force: true });
  });

  /**
   * Creates a configuration whose first capture starts now (a queued job); returns its job id.
   * Like any client it retries a 503: until the registry drops a node that died (its
   * heartbeat timeout, 10 s), a request balanced to it answers 503 capacity_exhausted.
   */
  async function queueCapture(page: string, extra: Record<string, unknown> = {}): Promise<string> {
    const json = { access_token: token, url: `${fx.origin}${page}?n=${uniqueName('')}`, wait: 0, webhook_url: `${receiver.origin}/hook`, ...extra };
    for (let attempt = 1; ; attempt++) {
      const res = await request<Record<string, string>>(stack!.url, 'POST', '/screenshot_configs', { json });
      if (res.status === 503 && attempt < 10) {
        expect(res.body.error_code).to.equal('capacity_exhausted');
        await sleep(2_000);
        continue;
      }
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return res.body.job_id as string;
    }
  }

  const jobsOf = (ids: string[]) => db('jobs').whereIn('id', ids).select('id', 'status', 'attempts', 'error_code', 'note');

  /**
   * The ledger after a fault: every job of the account completed, each with exactly one
   * screenshot; the month's usage equals the screenshots taken; every delivery delivered and
   * received, each webhook-id at least once.
   */
  async function expectLedgerExact(): Promise<void> {
    await until(
      'every job to finish',
      async () => {
        const open = await db('jobs').where({ account_id: accountId }).whereNotIn('status', ['completed', 'failed']).count({ n: '*' });
        return Number(open[0]?.n) === 0;
      },
      90_000,
    );
    const jobs = await db('jobs').where({ account_id: accountId }).select('id', 'status', 'error_code', 'note');
    expect(
      jobs.filter((j) => j.status !== 'completed'),
      'jobs not completed',
    ).to.deep.equal([]);
    const perJob = await db('screenshots').where({ account_id: accountId }).groupBy('job_id').select('job_id').count({ n: '*' });
    expect(
      perJob.filter((r) => Number(r.n) !== 1),
      'jobs with more than one screenshot',
    ).to.deep.equal([]);
    expect(perJob.map((r) => String((r as { job_id: string }).job_id)).sort()).to.deep.equal(jobs.map((j) => j.id).sort());
    // Right after a fault a service can still be rediscovering the others: the api answers
    // 503 with Retry-After then (documented), and a client asks again, as this does.
    let limits = await request<{ results: Record<string, number> }>(stack!.url, 'GET', `/account_limits?access_token=${token}`);
    await until(
      '/account_limits to answer',
      async () => {
        if (limits.status !== 503) return true;
        limits = await request<{ results: Record<string, number> }>(stack!.url, 'GET', `/account_limits?access_token=${token}`);
        return limits.status !== 503;
      },
      30_000,
    );
    expect(limits.body.results?.screenshot_current_month_usage, JSON.stringify(limits.body)).to.equal(jobs.length);
    await until(
      'every delivery to be delivered',
      async () => {
        const open = await db('webhook_deliveries').where({ account_id: accountId }).whereNot({ status: 'delivered' }).count({ n: '*' });
        return Number(open[0]?.n) === 0;
      },
      90_000,
    );
    const deliveries = await db('webhook_deliveries').where({ account_id: accountId }).select('id', 'job_id');
    expect(deliveries.map((d) => d.job_id).sort(), 'one capture delivery per job').to.deep.equal(jobs.map((j) => j.id).sort());
    const seen = new Set(receiver.received.map((r) => String(r.headers['webhook-id'])));
    expect(
      deliveries.filter((d) => !seen.has(d.id)).map((d) => d.id),
      'deliveries never received',
    ).to.deep.equal([]);
  }

  /**
   * Waits until every job was taken by a capture instance and at least one is still running
   * (the fault then meets a capture in flight). Whether both /slow captures are running at
   * the same moment depends on which browsers are free, and is not what these tests are about.
   */
  async function capturesInFlight(ids: string[]): Promise<void> {
    await until('the captures to be running', async () => {
      const jobs = await jobsOf(ids);
      return jobs.every((j) => j.status !== 'queued') && jobs.some((j) => j.status === 'running');
    }).catch(async (err) => {
      throw new Error(`${(err as Error).message}: ${JSON.stringify(await jobsOf(ids))}`);
    });
  }

  it('a capture instance killed mid-capture: its jobs are finished once by the other, charged once, and its Grid sessions ended', async () => {
    // Two instances with two browsers each: four slow captures keep every browser busy.
    const ids = await Promise.all([1, 2, 3, 4].map(() => queueCapture('/very-slow')));
    await until('all four captures to be running', async () => (await jobsOf(ids)).every((j) => j.status === 'running'));
    const generation = stack!.instance('capture-1').generation;
    const deadNode = `capture-1-${stack!.runId}-${generation}`;
    const gridUrl = stack!.gridUrl;
    expect(gridUrl, 'the stack runs its own Grid').to.be.a('string');
    expect((await sessionsOfNode(gridUrl!, deadNode)).length, `the Grid sessions of ${deadNode}`).to.equal(stack!.options.sessionsPerCapture);
    stack!.kill('capture-1', 'SIGKILL');
    // A process killed with SIGKILL cannot end its Grid sessions: the other instance ends them once
    // the dead one has been gone from the transporter for 10 s (after 10 to 20 s without
    // heartbeats), where the Grid would keep them, and their slots, for its session timeout
    // (60 s on the stack's nodes).
    const sessionsEnded = until(
      `the Grid sessions of ${deadNode} to be ended`,
      async () => (await sessionsOfNode(gridUrl!, deadNode)).length === 0,
      50_000,
      500,
    );
    sessionsEnded.catch(() => undefined); // awaited below
    await expectLedgerExact();
    const jobs = await jobsOf(ids);
    expect(
      jobs.filter((j) => Number(j.attempts) === 2),
      'the killed instance held two of them',
    ).to.have.length(2);
    await stack!.restarted('capture-1', generation);
    // Until the api drops the dead node (heartbeat timeout), requests balanced to it wait and
    // answer 503; let that pass so the next test starts on a settled cluster.
    await until(
      'the api to drop the dead node',
      async () => fs.readFileSync(stack!.instance('api').logFile, 'utf8').includes(`'${deadNode}' disconnected`),
      30_000,
    );
    await sessionsEnded;
    const survivorLog = fs.readFileSync(stack!.instance('capture-2').logFile, 'utf8');
    expect(survivorLog, 'the instance left says it ended them').to.contain(`Ended 2 of the 2 Grid session(s) of capture instance ${deadNode}/`);
  });

  it('a Grid node killed mid-capture: the captures on it are taken again on the other node', async () => {
    const logs = () => ['capture-1', 'capture-2'].map((n) => fs.readFileSync(stack!.instance(n).logFile, 'utf8')).join('');
    const goneBefore = logs().split('is gone').length;
    const ids = await Promise.all([1, 2, 3, 4].map(() => queueCapture('/very-slow')));
    // The Grid spreads the four browsers over both nodes; wait for them to be loading pages.
    await until('the captures to be running', async () => (await jobsOf(ids)).filter((j) => j.status === 'running').length >= 2).catch(async (err) => {
      throw new Error(`${err.message}: ${JSON.stringify(await jobsOf(ids))}`);
    });
    await sleep(1_000);
    const node1 = stack!.gridPids[1]!;
    process.kill(-node1, 'SIGKILL'); // the node's Java, its ChromeDrivers and browsers
    await expectLedgerExact();
    // The capture instances saw their browsers on that node go, and replaced them.
    expect(logs().split('is gone').length, 'a browser on the killed node was in use').to.be.greaterThan(goneBefore);
  });

  it('a scheduler killed while configurations fall due: each fires exactly once', async () => {
    const configs: string[] = [];
    for (let i = 0; i < 12; i++) {
      const res = await request<Record<string, string>>(stack!.url, 'POST', '/screenshot_configs', {
        json: {
          access_token: token,
          url: `${fx.origin}/plain?sched=${i}`,
          wait: 0,
          webhook_url: `${receiver.origin}/hook`,
          scheduled_screenshot: true,
          scheduled_every: 2,
          scheduled_interval: 'minutes',
        },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      configs.push(res.body.screenshot_configuration_id as string);
    }
    await expectLedgerExact();
    // All twelve fall due at once (their next slot moved to now), and one scheduler dies.
    const generation = stack!.instance('scheduler-1').generation;
    await db('screenshot_configs').whereIn('id', configs).update({ next_run_at_ms: Date.now() });
    stack!.kill('scheduler-1', 'SIGKILL');
    await until(
      'every configuration to have its second job',
      async () => {
        const rows = await db('jobs').whereIn('config_id', configs).groupBy('config_id').select('config_id').count({ n: '*' });
        return rows.length === configs.length && rows.every((r) => Number(r.n) >= 2);
      },
      90_000,
    );
    await sleep(3_000); // a double firing would show within a few ticks
    const rows = await db('jobs').whereIn('config_id', configs).groupBy('config_id').select('config_id').count({ n: '*' });
    expect(
      rows.filter((r) => Number(r.n) !== 2),
      'configurations not fired exactly once',
    ).to.deep.equal([]);
    const next = await db('screenshot_configs').whereIn('id', configs).select('next_run_at_ms');
    for (const r of next) expect(Number(r.next_run_at_ms)).to.be.greaterThan(Date.now());
    await expectLedgerExact();
    await stack!.restarted('scheduler-1', generation);
  });

  it('the notifier killed mid-delivery: the delivery arrives after its restart, with the same webhook-id', async () => {
    const before = receiver.received.length;
    // The next request the receiver gets hangs: the notifier is killed while it waits.
    receiver.script = (n) => (n === before ? 'hang' : { status: 200 });
    const generation = stack!.instance('notifier').generation;
    const jobId = await queueCapture('/plain');
    await until('the delivery attempt to reach the receiver', async () => receiver.received.length > before);
    stack!.kill('notifier', 'SIGKILL');
    const webhookId = String(receiver.received[before]!.headers['webhook-id']);
    await until('the delivery to be made again', async () => receiver.received.slice(before + 1).some((r) => r.headers['webhook-id'] === webhookId));
    const delivery = await db('webhook_deliveries').where({ job_id: jobId }).first();
    expect(delivery.id).to.equal(webhookId);
    await expectLedgerExact();
    await stack!.restarted('notifier', generation);
  });

  it('NATS restarted under load: captures in flight finish once, new ones work', async () => {
    const ids = await Promise.all([1, 2].map(() => queueCapture('/slow')));
    await capturesInFlight(ids);
    await nats.restart(2_000);
    await queueCapture('/plain');
    await expectLedgerExact();
  });

  it('Redis restarted under load: usage stays exact, captures in flight finish once', async () => {
    const ids = await Promise.all([1, 2].map(() => queueCapture('/slow')));
    await capturesInFlight(ids);
    await redis.restart(2_000);
    await queueCapture('/plain');
    await expectLedgerExact();
  });

  it('stops leaving no service process, Grid process, ChromeDriver or browser behind', async () => {
    const pids = stack!.pids();
    // The marker is on the Grid's own processes too: ChromeDrivers and browsers are counted.
    const comms = processesMarked('SNAP_TEST_MARK', mark).flatMap((pid) => {
      try {
        return [fs.readFileSync(`/proc/${pid}/comm`, 'utf8').trim()];
      } catch {
        return []; // ended meanwhile
      }
    });
    expect(comms.filter((c) => c === 'chromedriver').length, 'ChromeDrivers running before the stop').to.be.greaterThan(0);
    expect(comms.filter((c) => c.startsWith('chromium')).length, 'browsers running before the stop').to.be.greaterThan(0);
    await stack!.stop();
    const left = await processesLeft(mark, pids, 10_000);
    expect(left).to.deep.equal([]);
    const logs = path.join(stack!.options.dir, 'logs');
    expect(fs.readdirSync(logs).length).to.be.greaterThan(5);
  });
});
