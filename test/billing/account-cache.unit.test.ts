/** AccountCache with its read stubbed and a clock of the test's: what is kept, for how long, and what a change clears. */
import { expect } from 'chai';
import sinon from 'sinon';
import { AccountCache } from '../../services/billing/account-cache';
import type { AccountContext } from '../../services/shared/contracts';

const plan = (name: string, screenshot_limit = 100) => ({ name, paid: name !== 'free', screenshot_limit, max_concurrent: 1, max_queued: 2 });
const account = (accountId: string, planName = 'free', addons = {}): AccountContext => ({ accountId, plan: plan(planName), addons });

describe('AccountCache (read stubbed, fake clock)', () => {
  let clock: number;
  const now = () => clock;
  beforeEach(() => {
    clock = 1_000_000;
  });

  it('reads a key once and answers it from memory until the time is up, then reads it again', async () => {
    const cache = new AccountCache(5000, now);
    const read = sinon.stub().resolves(account('a1'));
    expect(await cache.get('h1', read)).to.deep.equal(account('a1'));
    clock += 4999;
    expect(await cache.get('h1', read)).to.deep.equal(account('a1'));
    expect(read.callCount).to.equal(1);
    clock += 1;
    await cache.get('h1', read);
    expect(read.callCount).to.equal(2);
  });

  it('keeps no unknown or revoked key: it is read every time', async () => {
    const cache = new AccountCache(5000, now);
    const read = sinon.stub().resolves(null);
    expect(await cache.get('h1', read)).to.equal(null);
    expect(await cache.get('h1', read)).to.equal(null);
    expect(read.callCount).to.equal(2);
    expect(cache.size).to.equal(0);
  });

  it('keeps nothing when its time is 0 (ACCOUNT_CACHE_MS=0)', async () => {
    const cache = new AccountCache(0, now);
    const read = sinon.stub().resolves(account('a1'));
    await cache.get('h1', read);
    await cache.get('h1', read);
    expect(read.callCount).to.equal(2);
  });

  it("forgets every key of an account when its key, plan or add-ons change, and only that account's", async () => {
    const cache = new AccountCache(60_000, now);
    const reads = { h1: sinon.stub().resolves(account('a1')), h2: sinon.stub().resolves(account('a1')), h3: sinon.stub().resolves(account('a2')) };
    for (const [hash, read] of Object.entries(reads)) await cache.get(hash, read);
    cache.invalidate({ accountId: 'a1' });
    for (const [hash, read] of Object.entries(reads)) await cache.get(hash, read);
    expect([reads.h1.callCount, reads.h2.callCount, reads.h3.callCount]).to.deep.equal([2, 2, 1]);
  });

  it('forgets every account on a plan when the plan changes in the catalogue', async () => {
    const cache = new AccountCache(60_000, now);
    const onPro = sinon.stub().resolves(account('a1', 'pro'));
    const onFree = sinon.stub().resolves(account('a2', 'free'));
    await cache.get('h1', onPro);
    await cache.get('h2', onFree);
    cache.invalidate({ plan: 'pro' });
    await cache.get('h1', onPro);
    await cache.get('h2', onFree);
    expect([onPro.callCount, onFree.callCount]).to.deep.equal([2, 1]);
  });

  it('does not keep a read that a change overtook (it may hold what the change replaced)', async () => {
    const cache = new AccountCache(60_000, now);
    let finish!: (a: AccountContext) => void;
    const slow = sinon.stub().returns(new Promise<AccountContext>((r) => (finish = r)));
    const pending = cache.get('h1', slow);
    cache.invalidate({ accountId: 'a1' });
    finish(account('a1', 'free'));
    expect(await pending).to.deep.equal(account('a1', 'free'));
    const fresh = sinon.stub().resolves(account('a1', 'pro'));
    expect((await cache.get('h1', fresh))?.plan.name).to.equal('pro');
    expect(fresh.callCount).to.equal(1);
  });

  it('holds at most its number of entries, the oldest leaving first', async () => {
    const cache = new AccountCache(60_000, now, 2);
    const reads = ['h1', 'h2', 'h3'].map((h, i) => [h, sinon.stub().resolves(account(`a${i}`))] as const);
    for (const [hash, read] of reads) await cache.get(hash, read);
    expect(cache.size).to.equal(2);
    for (const [hash, read] of reads) await cache.get(hash, read);
    // h1 left when h3 came; reading it again pushed h2 out, and so on.
    expect(reads.map(([, read]) => read.callCount)).to.deep.equal([2, 2, 2]);
  });
});
