import { expect } from 'chai';
import { MemoryUsageStore } from '../../services/billing/usage-store';
import { behavesAsAUsageStore, limits, reservation } from './usage-store-behaviour';

behavesAsAUsageStore('in-process', () => ({ store: new MemoryUsageStore(), prefix: '' }));

describe('in-process usage store: rate windows', () => {
  it('drops windows that ended once there are many (one per key or sign-in address seen)', async () => {
    const store = new MemoryUsageStore();
    const rates = (store as unknown as { rates: Map<string, unknown> }).rates;
    const then = new Date('2026-11-30T10:00:00Z');
    for (let i = 0; i < 10_000; i++) await store.hitRate(`console-signin:203.0.113.${i}`, 10, 60, then);
    expect(rates.size).to.equal(10_000);
    await store.hitRate('acct-now', 10, 60, new Date(then.getTime() + 120_000));
    expect([...rates.keys()]).to.deep.equal(['acct-now']);
  });
});

describe('in-process usage store: a job that waits long', () => {
  it("keeps a job's reservation past a day and a month's counter: its worker's reservation is the same one, settled once", async () => {
    let now = Date.parse('2026-11-01T00:00:00Z');
    const store = new MemoryUsageStore(() => now);
    const job = { ...reservation('waits', { screenshots: 1 }), id: 'job:queued-long' };
    const counter = new Date('2026-12-08T00:00:00Z');
    expect(await store.reserve(job, limits, counter)).to.deep.equal({ ok: true });
    // Its worker reserves it again when it runs, 36 days on (the counter is still kept).
    now += 36 * 24 * 3600_000;
    expect(await store.reserve(job, limits, counter)).to.deep.equal({ ok: true });
    expect((await store.usage('waits', '2026-11')).screenshots, 'counted once').to.equal(1);
    expect(await store.refund(job), 'a failed capture gives it back').to.equal(true);
    expect((await store.usage('waits', '2026-11')).screenshots).to.equal(0);
    await store.close();
  });
});
