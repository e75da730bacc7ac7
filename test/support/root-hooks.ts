/**
 * Shared test setup: quiet logs; the DNS server the test systems' egress gateways ask
 * (test-dns.ts); the shared Selenium Grid stopped when the run ends.
 */
import { TEST_DEFAULTS } from './backends';
import { stopSharedGrid } from './grid';
import { startTestDns, stopTestDns } from './test-dns';

process.env.LOG_LEVEL ??= 'warn';

export const mochaHooks = {
  async beforeAll() {
    TEST_DEFAULTS.EGRESS_DNS_SERVERS = await startTestDns();
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopSharedGrid();
    await stopTestDns();
  },
};
