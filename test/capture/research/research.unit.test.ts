/**
 * ResearchRunner with its collaborators stubbed (the reading engine, storage, the ai service,
 * the repository): which pages it reads, what it records, who pays, and what sends a domain
 * back to the queue. The whole path (real browsers, the AI stand-in) is in
 * test/ai/domain-research.test.ts.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import { ResearchRunner } from '../../../services/capture/research/research';
import type { DomainWork } from '../../../services/capture/research/research-jobs';
import { serviceError } from '../../../services/shared/errors';

const job = { id: 'd1', accountId: 'acc', configId: 'r1', leaseToken: 't' };
const work: DomainWork = {
  jobId: 'd1',
  researchId: 'r1',
  accountId: 'acc',
  domain: 'alpha.example',
  url: 'https://alpha.example/',
  notes: null,
  structures: [{ data_type: 'string', data_field_name: 'ceo', data_field_prompt_description: 'The chief executive' }],
  aiOptions: {},
};

/** A page the engine answers with, read. */
const read = (url: string, status = 200, links: string[] = []) => ({
  image: Buffer.from('jpeg'),
  contentType: 'image/jpeg',
  reading: { url, status, title: url, text: `text of ${url}`, links: links.map((href) => ({ href, text: '' })) },
});

function setup() {
  const repo = { work: sinon.stub().resolves(work), finish: sinon.stub().resolves({ recorded: true, ended: null }) };
  const engine = { capture: sinon.stub() };
  const store = { put: sinon.stub().resolves(), delete: sinon.stub().resolves() };
  const analyst = {
    check: sinon.stub().resolves({}),
    extract: sinon.stub().resolves({ ok: true, data: { ceo: 'Ada' }, sources: { ceo: 'https://alpha.example/about' } }),
  };
  const log = { info: sinon.stub(), warn: sinon.stub(), error: sinon.stub() };
  const runner = new ResearchRunner({ repo, engine: engine as never, store, analyst, delivery: () => '{}', ended: sinon.stub(), log });
  return { runner, repo, engine, store, analyst, log };
}

describe('ResearchRunner (collaborators stubbed)', () => {
  it('reads the home page and the linked pages picked for the fields, leaving out one that cannot be read, and charges the domain', async () => {
    const t = setup();
    t.engine.capture
      .onFirstCall()
      .resolves(read('https://alpha.example/', 200, ['https://alpha.example/about', 'https://alpha.example/team', 'https://alpha.example/blog/x/y/z']));
    t.engine.capture.withArgs(sinon.match({ url: 'https://alpha.example/about' })).resolves(read('https://alpha.example/about'));
    t.engine.capture.withArgs(sinon.match({ url: 'https://alpha.example/team' })).resolves(read('https://alpha.example/team', 404));
    expect(await t.runner.run(job)).to.deep.equal({ charged: true });
    expect(t.engine.capture.getCalls().map((c) => c.args[0].url)).to.deep.equal([
      'https://alpha.example/',
      'https://alpha.example/about',
      'https://alpha.example/team',
    ]);
    const pages = t.analyst.extract.firstCall.args[1] as Array<{ url: string; text: string }>;
    expect(pages.map((p) => p.url)).to.deep.equal(['https://alpha.example/', 'https://alpha.example/about']);
    expect(pages[1]?.text).to.equal('text of https://alpha.example/about');
    const record = t.repo.finish.firstCall.args[1];
    expect(record).to.deep.include({ status: 'completed', data: { ceo: 'Ada' } });
    expect(record.pages.map((p: { url: string }) => p.url)).to.deep.equal(['https://alpha.example/', 'https://alpha.example/about']);
    // The error page was never stored.
    expect(t.store.put.callCount).to.equal(2);
  });

  it('charges a domain whose site failed it, and refunds one the provider failed', async () => {
    const site = setup();
    site.engine.capture.rejects(serviceError('page_load_failed', 'refused'));
    expect(await site.runner.run(job)).to.deep.equal({ charged: true });
    expect(site.repo.finish.firstCall.args[1]).to.deep.include({ status: 'failed', error: { error_code: 'page_load_failed', note: 'refused' } });
    const provider = setup();
    provider.engine.capture.resolves(read('https://alpha.example/'));
    provider.analyst.extract.resolves({ ok: false, error: { error_code: 'ai_rate_limited', note: 'slow down' } });
    expect(await provider.runner.run(job)).to.deep.equal({ charged: false });
    expect(provider.repo.finish.firstCall.args[1]).to.deep.include({ status: 'failed', error: { error_code: 'ai_rate_limited', note: 'slow down' } });
    const key = setup();
    key.analyst.check.rejects(serviceError('ai_provider_not_configured', 'no key'));
    expect(await key.runner.run(job)).to.deep.equal({ charged: false });
    expect(key.engine.capture.called).to.equal(false);
  });

  it('sends the domain back to the queue when no browser came free (nothing recorded, its pages removed)', async () => {
    const t = setup();
    t.engine.capture.onFirstCall().resolves(read('https://alpha.example/', 200, ['https://alpha.example/about']));
    t.engine.capture.onSecondCall().rejects(serviceError('capacity_exhausted', 'busy'));
    const err = await t.runner.run(job).catch((e) => e);
    expect(err.type).to.equal('capacity_exhausted');
    expect(t.repo.finish.called).to.equal(false);
    expect(t.store.delete.callCount).to.equal(1);
  });

  it('removes its pages and leaves the credit alone when the lease was lost', async () => {
    const t = setup();
    t.engine.capture.resolves(read('https://alpha.example/'));
    t.repo.finish.resolves({ recorded: false, ended: null });
    expect(await t.runner.run(job)).to.equal(null);
    expect(t.store.delete.callCount).to.equal(1);
  });

  it('logs an error of ours, shows the domain a generic note, and refunds it', async () => {
    const t = setup();
    t.engine.capture.rejects(new TypeError('x is undefined'));
    expect(await t.runner.run(job)).to.deep.equal({ charged: false });
    expect(t.repo.finish.firstCall.args[1].error.error_code).to.equal('internal_error');
    expect(t.repo.finish.firstCall.args[1].error.note).not.to.contain('undefined');
    expect(t.log.error.calledOnce).to.equal(true);
  });
});
