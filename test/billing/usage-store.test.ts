import { expect } from 'chai';
import Redis from 'ioredis';
import { RESERVATION_TTL_SECONDS, RedisUsageStore } from '../../services/billing/usage-store';
import { REDIS_URL, quietLog, uniqueName } from '../support/backends';
import { behavesAsAUsageStore, limits, reservation } from './usage-store-behaviour';

behavesAsAUsageStore('Redis', () => {
  const prefix = `${uniqueName('t')}:`;
  return { store: new RedisUsageStore(REDIS_URL, prefix, quietLog), prefix };
});

describe('Redis usage counters', () => {
  it('are keyed by account and UTC month and expire after the month', async () => {
    const prefix = `${uniqueName('t')}:`;
    const store = new RedisUsageStore(REDIS_URL, prefix, quietLog);
    const redis = new Redis(REDIS_URL);
    try {
      const expiresAt = new Date(Date.now() + 10 * 24 * 3600_000);
      await store.reserve(reservation('acct1', { screenshots: 1 }), limits, expiresAt);
      const key = `${prefix}usage:{acct1}:2026-11`;
      expect(await redis.hget(key, 'screenshots')).to.equal('1');
      const ttl = await redis.ttl(key);
      expect(ttl).to.be.within(10 * 24 * 3600 - 5, 10 * 24 * 3600);
      // A job's reservation outlives its month's counter (kept until the 8th of the next month:
      // at most 39 days), so a job that waited long is settled against it, not reserved again.
      await store.reserve({ ...reservation('acct1', { screenshots: 1 }), id: 'job:waits' }, limits, expiresAt);
      const held = await redis.ttl(`${prefix}resv:{acct1}:job:waits`);
      expect(held).to.be.within(RESERVATION_TTL_SECONDS - 5, RESERVATION_TTL_SECONDS);
      expect(RESERVATION_TTL_SECONDS).to.be.greaterThan(39 * 24 * 3600);
    } finally {
      redis.disconnect();
      await store.close();
    }
  });
});
