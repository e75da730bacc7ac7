/**
 * Shared test setup: quiet logs; the DNS server the test systems' egress gateways ask
 * (test-dns.ts); the shared Selenium Grid stopped when the run ends; every answer a test's
 * system sends checked against its schema (answer-check.ts): a test whose answers carry a field
 * their schema does not name fails.
 */
import { installAnswerCheck, takeViolations } from './answer-check';
import { TEST_DEFAULTS } from './backends';
import { stopSharedGrid } from './grid';
import { startTestDns, stopTestDns } from './test-dns';

process.env.LOG_LEVEL ??= 'warn';
installAnswerCheck();
const failedAnswers: string[] = [];

export const mochaHooks = {
  async beforeAll() {
    TEST_DEFAULTS.EGRESS_DNS_SERVERS = await startTestDns();
  },
  afterEach(this: Mocha.Context) {
    for (const v of takeViolations()) failedAnswers.push(`${this.currentTest?.fullTitle() ?? '(a test)'}: ${v}`);
  },
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopSharedGrid();
    await stopTestDns();
    // Once, at the end, so that the run goes on: every test whose answers did not meet their schemas, and how.
    if (failedAnswers.length) throw new Error(`Answers that do not meet their schemas:\n${failedAnswers.join('\n')}`);
  },
};
