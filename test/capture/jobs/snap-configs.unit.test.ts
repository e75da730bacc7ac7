/** KeptSnapConfigs with the scheduler stubbed and a clock of the test's: what is kept, for how long, and what a deletion forgets. */
import { expect } from 'chai';
import sinon from 'sinon';
import { KeptSnapConfigs } from '../../../services/capture/jobs/snap-configs';

const page = (url: string, extra: Record<string, unknown> = {}) => ({ url, ...extra });

describe('KeptSnapConfigs (scheduler stubbed, fake clock)', () => {
  let clock: number;
  const now = () => clock;
  beforeEach(() => {
    clock = 1_000_000;
  });
  const scheduler = () => {
    let n = 0;
    return { snapConfig: sinon.stub().callsFake(async () => ({ id: `cfg${++n}` })), noteJob: sinon.stub() };
  };

  it('asks the scheduler once per account, page and capture options, and again once the time is up', async () => {
    const s = scheduler();
    const kept = new KeptSnapConfigs(s, 5000, now);
    expect(await kept.snapConfig('a1', page('https://a.test/'))).to.deep.equal({ id: 'cfg1', noted: false });
    clock += 4999;
    expect(await kept.snapConfig('a1', page('https://a.test/'))).to.deep.equal({ id: 'cfg1', noted: false });
    expect(s.snapConfig.callCount).to.equal(1);
    // Another account, another page, or an option that changes the capture: another configuration.
    await kept.snapConfig('a2', page('https://a.test/'));
    await kept.snapConfig('a1', page('https://b.test/'));
    await kept.snapConfig('a1', page('https://a.test/', { fullpage: true }));
    expect(s.snapConfig.callCount).to.equal(4);
    clock += 1;
    await kept.snapConfig('a1', page('https://a.test/'));
    expect(s.snapConfig.callCount).to.equal(5);
  });

  it('asks every time when its time is 0 (SNAP_CONFIG_CACHE_MS=0), and passes the last job on', async () => {
    const s = scheduler();
    const kept = new KeptSnapConfigs(s, 0, now);
    await kept.snapConfig('a1', page('https://a.test/'));
    await kept.snapConfig('a1', page('https://a.test/'));
    expect(s.snapConfig.callCount).to.equal(2);
    kept.noteJob('cfg1', 'j1');
    expect(s.noteJob.calledOnceWith('cfg1', 'j1')).to.equal(true);
  });

  it('forgets a configuration being deleted at once, and does not keep a lookup the deletion overtook', async () => {
    const s = scheduler();
    const kept = new KeptSnapConfigs(s, 60_000, now);
    expect(await kept.snapConfig('a1', page('https://a.test/'))).to.deep.equal({ id: 'cfg1', noted: false });
    kept.forget('cfg1');
    expect(await kept.snapConfig('a1', page('https://a.test/'))).to.deep.equal({ id: 'cfg2', noted: false });
    // A lookup under way while cfg2 is deleted answers what it found, but is not kept.
    let finish!: (v: { id: string }) => void;
    s.snapConfig.onCall(2).returns(new Promise((r) => (finish = r)));
    clock += 60_000;
    const pending = kept.snapConfig('a1', page('https://a.test/'));
    kept.forget('cfg2');
    finish({ id: 'cfg2' });
    expect(await pending).to.deep.equal({ id: 'cfg2', noted: false });
    expect(await kept.snapConfig('a1', page('https://a.test/'))).to.deep.equal({ id: 'cfg3', noted: false });
  });

  it("has the snap's job noted by the scheduler with the same call when it asks, and says so; a configuration kept notes nothing", async () => {
    const s = scheduler();
    const kept = new KeptSnapConfigs(s, 60_000, now);
    expect(await kept.snapConfig('a1', page('https://a.test/'), 'j1')).to.deep.equal({ id: 'cfg1', noted: true });
    expect(s.snapConfig.firstCall.args).to.deep.equal(['a1', page('https://a.test/'), 'j1']);
    expect(await kept.snapConfig('a1', page('https://a.test/'), 'j2')).to.deep.equal({ id: 'cfg1', noted: false });
    expect(s.snapConfig.callCount).to.equal(1);
    const asking = new KeptSnapConfigs(s, 0, now);
    expect(await asking.snapConfig('a1', page('https://a.test/'), 'j3')).to.deep.equal({ id: 'cfg2', noted: true });
    expect(s.snapConfig.lastCall.args[2]).to.equal('j3');
  });

  it('holds at most its number of configurations', async () => {
    const kept = new KeptSnapConfigs(scheduler(), 60_000, now, 2);
    for (const u of ['https://a.test/', 'https://b.test/', 'https://c.test/']) await kept.snapConfig('a1', page(u));
    expect(kept.size).to.equal(2);
  });
});
