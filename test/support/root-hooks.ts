/** Shared test setup: quiet logs, and the shared Selenium Grid stopped when the run ends. */
import { stopSharedGrid } from './grid';

process.env.LOG_LEVEL ??= 'warn';

export const mochaHooks = {
  async afterAll(this: Mocha.Context) {
    this.timeout(60_000);
    await stopSharedGrid();
  },
};
