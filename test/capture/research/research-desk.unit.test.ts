/**
 * ResearchDesk with its repository stubbed: a request's ids are given before it is written and
 * announced after; an id the account does not hold answers 404 not_found, for its status and
 * its report alike. The tables themselves are in research-jobs.test.ts.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { REPORT_PART_BYTES, ResearchDesk } from '../../../services/capture/research/research-desk';
import type { ResearchInput } from '../../../services/shared/contracts';

describe('ResearchDesk (repository stubbed)', () => {
  it('names the request and each domain job before writing them, and announces the request once written', async () => {
    const order: string[] = [];
    const repo = {
      create: sinon.stub().callsFake(async (r: { id: string }) => {
        order.push('written');
        return { job_id: r.id };
      }),
      status: sinon.stub(),
      report: sinon.stub(),
    };
    const queued = sinon.stub().callsFake(() => void order.push('announced'));
    const input = { accountId: 'acc', domains: [{ domain: 'a.test' }, { domain: 'b.test' }] } as unknown as ResearchInput;
    const status = await new ResearchDesk(repo, queued).create(input);
    const written = repo.create.firstCall.args[0] as { id: string; domains: { jobId: string }[] };
    expect(written.id).to.be.a('string').with.length.greaterThan(8);
    expect(new Set(written.domains.map((d) => d.jobId)).size).to.equal(2);
    expect(status).to.deep.equal({ job_id: written.id });
    expect(order).to.deep.equal(['written', 'announced']);
    expect(queued.calledOnceWith(written.id)).to.equal(true);
  });

  it("answers an unknown or another account's id 404 not_found, and reads reports in bounded parts", async () => {
    const repo = { create: sinon.stub(), status: sinon.stub().resolves(null), report: sinon.stub().resolves(null) };
    const desk = new ResearchDesk(repo, sinon.stub());
    for (const err of [await desk.status('acc', 'r1').catch((e: unknown) => e), await desk.report('acc', 'r1', 0).catch((e: unknown) => e)]) {
      expect(err).to.include({ type: 'not_found' });
      expect((err as Error).message).to.contain('"r1"');
    }
    repo.report.resolves({ part: 1 });
    expect(await desk.report('acc', 'r1', 3)).to.deep.equal({ part: 1 });
    expect(repo.report.lastCall.args).to.deep.equal(['acc', 'r1', 3, REPORT_PART_BYTES]);
  });
});
