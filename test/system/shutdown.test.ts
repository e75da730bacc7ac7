import { expect } from 'chai';
import { backendConfig, uniqueName } from '../support/backends';
import { processesLeft, processesMarked, startServeProcess } from '../support/processes';

describe('npm start process lifecycle', function () {
  this.timeout(60_000);

  // Browsers and ChromeDrivers inherit SNAP_TEST_MARK, so every one the service ever started
  // is counted, by process id, including any started while it was shutting down.
  for (const [how, group] of [
    ['SIGTERM to the service process', false],
    ['SIGTERM to its whole process group (as a process supervisor sends it)', true],
  ] as const) {
    it(`quits every browser and ChromeDriver it started on ${how}`, async () => {
      const mark = uniqueName('m');
      const b = await backendConfig('sqlite', { CAPTURE_SESSIONS: '2', SNAP_TEST_MARK: mark });
      try {
        const proc = await startServeProcess(b.env, /Screenshot service ready/, { group });
        const started = processesMarked('SNAP_TEST_MARK', mark).filter((p) => p !== proc.child.pid);
        expect(started.length, 'chromedriver and chromium processes').to.be.greaterThan(2);
        await proc.stop();
        expect(proc.child.exitCode, proc.output()).to.equal(0);
        expect(await processesLeft(mark, [], 10_000)).to.deep.equal([]);
      } finally {
        await b.cleanup();
      }
    });
  }
});
