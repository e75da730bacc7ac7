import { expect } from 'chai';
import { MemoryUsageStore } from '../../services/billing/usage-store';
import { behavesAsAUsageStore } from './usage-store-behaviour';

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
