/**
 * Research domains on the job machinery: the real JobQueue and ResearchRepository on a SQLite
 * file, the real JobWorker, with the capture pipeline, the research runner and billing
 * stubbed, the pool and the account counts standing in as in worker.test.ts. Captures come
 * before research, research never takes every browser, a stream of captures cannot starve it
 * (the jobs queue's class guard), and a domain's credit follows how it ended. (Real browsers, the
 * AI stand-in and several processes are in test/ai/domain-research.test.ts and
 * test/system/jobs-cluster.test.ts.)
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import type { ServiceBroker } from 'moleculer';
import sinon from 'sinon';
import type { BrowserSlot } from '../../../services/capture/browsers/browser-slot';
import { ClassTurns, PASS_LIMIT } from '../../../services/capture/fairness/fair-queue';
import { type ClaimTurns, type ClaimedJob, JOB_KINDS, JobQueue } from '../../../services/capture/jobs/jobs';
import type { DomainOutcome } from '../../../services/capture/research/research';
import { ResearchRepository } from '../../../services/capture/research/research-jobs';
import { JobWorker } from '../../../services/capture/jobs/worker';
import type { Reservation } from '../../../services/shared/contracts';
import { serviceError } from '../../../services/shared/errors';
import { migratedSqlite } from '../../support/sqlite';
import { until } from '../../support/wait';

const fields = [{ data_type: 'string' as const, data_field_name: 'ceo', data_field_prompt_description: 'The chief executive' }];

describe('research domains on the jobs queue (SQLite, worker with stubbed work)', () => {
  let sqlite: Awaited<ReturnType<typeof migratedSqlite>>;
  let db: Knex;
  let queue: JobQueue;
  let research: ResearchRepository;
  let worker: JobWorker | null;
  let clock: number;
  /** The kinds of the jobs the worker started, in order ('c': a capture, 'r': a research domain). */
  let started: string[];
  /** Jobs running now, each finished by calling its resolver. */
  let running: Map<string, (outcome?: unknown) => void>;
  let billing: sinon.SinonStub;

  beforeEach(async () => {
    sqlite = await migratedSqlite();
    db = sqlite.db;
    clock = 1_000_000;
    queue = new JobQueue(db, 30_000, () => clock);
    research = new ResearchRepository(db, { cdnUrl: 'http://cdn' }, () => clock);
    started = [];
    running = new Map();
    worker = null;
    billing = sinon
      .stub()
      .callsFake(async (action: string, params: { reservationId?: string }) =>
        action === 'billing.reserveFor' ? ({ id: params.reservationId, accountId: 'acc', month: '2026-11', amounts: {} } as Reservation) : {},
      );
  });
  afterEach(async () => {
    worker?.stopClaiming();
    for (const done of running.values()) done(null);
    await worker?.idle();
    await sqlite.drop();
  });

  /** A worker whose jobs run until the test finishes them (or at once, with `instant`). */
  function startWorker(sessions: number, researchSessions: number, instant = false, outcome: DomainOutcome = { charged: true }): JobWorker {
    const hold = (kind: string, id: string) =>
      new Promise<unknown>((resolve) => {
        started.push(kind);
        if (instant) resolve(kind === 'r' ? outcome : null);
        else running.set(id, (v) => resolve(v ?? (kind === 'r' ? outcome : null)));
      }).finally(() => running.delete(id));
    const pipeline = { run: (job: { id: string }) => hold('c', job.id) as Promise<null> };
    const runner = { run: (job: { id: string }) => hold('r', job.id) as Promise<DomainOutcome>, fail: sinon.stub().resolves({ charged: false }) };
    const broker = { call: billing, emit: sinon.stub().resolves() } as unknown as ServiceBroker;
    const logger = { info: sinon.stub(), warn: sinon.stub(), error: sinon.stub() };
    const browsers = { acquire: sinon.stub().callsFake(async () => ({}) as BrowserSlot), giveBack: sinon.stub() };
    const tickets = {
      limitsFor: sinon.stub().resolves({ maxConcurrent: 10, maxQueued: 10 }),
      start: sinon.stub().resolves(true),
      finish: sinon.stub().resolves(),
      lastStarts: sinon.stub().resolves(new Map()),
    };
    worker = new JobWorker(
      { broker, queue, pipeline, logger, browsers, tickets, research: runner },
      { sessions, leaseMs: 30_000, pollMs: 60_000, researchSessions },
    );
    return worker;
  }

  /** Claim turns as a worker's, with every account free to start. */
  const turns = (): ClaimTurns => ({
    kinds: new ClassTurns(JOB_KINDS),
    lastStarts: async () => new Map(),
    starter: async () => async () => true,
    undo: async () => undefined,
  });

  const queueResearch = async (domains: number) => {
    clock += 1;
    return research.create({
      id: `r${clock}`,
      accountId: 'acc',
      name: null,
      notes: null,
      structures: fields,
      aiOptions: {},
      webhookUrl: null,
      domains: Array.from({ length: domains }, (_, i) => ({ jobId: `r${clock}d${i}`, domain: `site${i}.test`, url: `https://site${i}.test/` })),
    });
  };
  const queueCaptures = async (n: number) => {
    for (let i = 0; i < n; i++) {
      clock += 1;
      await queue.enqueue({ id: `c${clock}`, accountId: 'acc', configId: 'cfg', kind: 'config', options: { url: 'https://example.test/' } });
    }
  };
  const finishAll = () => {
    for (const done of running.values()) done();
  };

  it('claims a capture before research domains queued earlier', async () => {
    await queueResearch(2);
    await queueCaptures(1);
    const w = startWorker(1, 1);
    await w.pump();
    await until('the first job', async () => started.length === 1, 5_000, 10);
    expect(started).to.deep.equal(['c']);
    finishAll();
    await until('the next job', async () => started.length === 2, 5_000, 10);
    expect(started).to.deep.equal(['c', 'r']);
  });

  it('runs at most researchSessions domains at once, however many wait, leaving the other browsers to captures', async () => {
    await queueResearch(5);
    const w = startWorker(3, 1);
    await w.pump();
    await until('the first domain', async () => started.length === 1, 5_000, 10);
    expect(started).to.deep.equal(['r']);
    await queueCaptures(3);
    await w.pump();
    // The research slot is taken: the two other browsers go to captures, the third capture waits.
    await until('two captures', async () => started.length === 3, 5_000, 10);
    await new Promise((r) => setTimeout(r, 50));
    expect(started).to.deep.equal(['r', 'c', 'c']);
    expect(running.size).to.equal(3);
  });

  it(`lets a waiting research domain go first after ${PASS_LIMIT} captures in a row, so captures cannot starve it`, async () => {
    await queueCaptures(8);
    await queueResearch(1);
    const w = startWorker(1, 1, true);
    await w.pump();
    await until('every job to run', async () => started.length === 9, 5_000, 10);
    expect(started).to.deep.equal(['c', 'c', 'c', 'r', 'c', 'c', 'c', 'c', 'c']);
  });

  it('takes no research on a worker with researchSessions 0', async () => {
    await queueResearch(1);
    const w = startWorker(2, 0);
    await w.pump();
    expect(started).to.deep.equal([]);
  });

  describe('ResearchRepository', () => {
    const outcome = (i: number) => ({ status: 'completed' as const, data: { ceo: `CEO ${i}` }, sources: { ceo: `https://site${i}.test/about` }, pages: [] });

    it('ends the request with its last domain, once, writing its webhook delivery in the same transaction; a lost lease records nothing', async () => {
      const created = await research.create({
        id: 'req1',
        accountId: 'acc',
        name: 'n',
        notes: null,
        structures: fields,
        aiOptions: {},
        webhookUrl: 'https://hooks.example/done',
        domains: [0, 1, 2].map((i) => ({ jobId: `req1d${i}`, domain: `site${i}.test`, url: `https://site${i}.test/` })),
      });
      expect(created).to.deep.include({ status: 'queued', total_domains: 3, percent_complete: 0 });
      const claimed = [await queue.claim(turns(), ['research']), await queue.claim(turns(), ['research']), await queue.claim(turns(), ['research'])];
      expect(claimed.map((j) => j?.kind)).to.deep.equal(['research', 'research', 'research']);
      expect((await research.status('acc', 'req1'))?.status).to.equal('running');
      const body = (s: { job_id: string }) => JSON.stringify({ ended: s.job_id });
      const [a, b, c] = claimed as ClaimedJob[];
      expect(await research.finish({ ...a!, leaseToken: 'not-mine' }, outcome(0), body)).to.deep.equal({ recorded: false, ended: null });
      expect((await research.finish(a!, outcome(0), body)).ended).to.equal(null);
      expect((await research.finish(b!, { status: 'failed', error: { error_code: 'page_load_failed', note: 'down' }, pages: [] }, body)).ended).to.equal(null);
      // Finishing again (a second worker after a crash) changes nothing: its lease is gone.
      expect(await research.finish(a!, outcome(0), body)).to.deep.equal({ recorded: false, ended: null });
      const last = await research.finish(c!, outcome(2), body);
      expect(last.ended).to.deep.include({ job_id: 'req1', status: 'completed', completed_domains: 2, failed_domains: 1, percent_complete: 100 });
      const deliveries = await db('webhook_deliveries').select('kind', 'config_id', 'job_id', 'target_url', 'body');
      expect(deliveries).to.deep.equal([
        { kind: 'research', config_id: null, job_id: 'req1', target_url: 'https://hooks.example/done', body: '{"ended":"req1"}' },
      ]);
      expect((await db('jobs').where({ config_id: 'req1' }).select('status')).map((j) => j.status).sort()).to.deep.equal(['completed', 'completed', 'failed']);
      expect(await research.status('other-account', 'req1')).to.equal(null);
    });

    it('hands a report out in parts of a bounded size, in order, so no part grows with the request', async () => {
      await queueResearch(5);
      const id = `r${clock}`;
      const first = await research.report('acc', id, 0, 1);
      expect(first?.head?.structures).to.deep.equal(fields);
      const domains = [...(first?.results ?? [])];
      let next = first?.next ?? null;
      let parts = 1;
      while (next !== null) {
        const part = await research.report('acc', id, next, 1);
        expect(part?.head).to.equal(null);
        domains.push(...(part?.results ?? []));
        next = part?.next ?? null;
        parts++;
      }
      expect(parts).to.equal(5);
      expect(domains.map((d) => d.domain)).to.deep.equal(['site0.test', 'site1.test', 'site2.test', 'site3.test', 'site4.test']);
      const whole = await research.report('acc', id, 0, 1_000_000);
      expect([whole?.results.length, whole?.next]).to.deep.equal([5, null]);
      expect(await research.report('other', id, 0, 1_000_000)).to.equal(null);
    });
  });

  describe("a domain's credit", () => {
    const job = (): ClaimedJob => ({ id: 'r1d0', accountId: 'acc', configId: 'r1', kind: 'research', leaseToken: 't', attempts: 1, createdAtMs: 1 });
    const calls = () =>
      billing
        .getCalls()
        .map((c) => [
          c.args[0],
          (c.args[1] as { reservationId?: string; reservation?: Reservation }).reservationId ?? (c.args[1] as { reservation: Reservation }).reservation?.id,
        ]);

    it('is reserved under the domain job id and charged when the domain was researched or the site failed it', async () => {
      await startWorker(1, 1, true, { charged: true }).run(job());
      expect(calls()).to.deep.equal([
        ['billing.reserveFor', 'research:r1d0'],
        ['billing.commit', 'research:r1d0'],
      ]);
      expect(billing.firstCall.args[1]).to.deep.include({ amounts: { research_domains: 1 } });
    });

    it('is refunded when the failure was ours or the provider’s', async () => {
      await startWorker(1, 1, true, { charged: false }).run(job());
      expect(calls().map((c) => c[0])).to.deep.equal(['billing.reserveFor', 'billing.refund']);
    });

    it('is left pending for the instance that took the domain over when the lease was lost', async () => {
      await startWorker(1, 1, true, null).run(job());
      expect(calls().map((c) => c[0])).to.deep.equal(['billing.reserveFor']);
    });

    it('is released, none reserved, when the domain is given up after too many interruptions', async () => {
      // A reservation now would be refused: giving the domain up must not ask for one.
      billing.withArgs('billing.reserveFor').rejects(serviceError('domain_research_limit_reached', 'used up'));
      const w = startWorker(1, 1, true);
      await w.run({ ...job(), attempts: 4 });
      expect(started).to.deep.equal([]);
      expect(calls()).to.deep.equal([['billing.release', 'research:r1d0']]);
      const runner = (w as unknown as { research: { fail: sinon.SinonStub } }).research;
      expect(runner.fail.firstCall.args[1]).to.equal('internal_error');
    });

    it('fails the domain with domain_research_limit_reached when none is left this month', async () => {
      billing.withArgs('billing.reserveFor').rejects(serviceError('domain_research_limit_reached', 'used up'));
      const w = startWorker(1, 1, true);
      await w.run(job());
      expect(started).to.deep.equal([]);
      const runner = (w as unknown as { research: { fail: sinon.SinonStub } }).research;
      expect(runner.fail.firstCall.args.slice(1, 3)).to.deep.equal(['domain_research_limit_reached', 'used up']);
    });
  });
});
