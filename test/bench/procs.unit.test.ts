import { type ChildProcess, spawn } from 'node:child_process';
import { expect } from 'chai';
import { browserProcessKind, treesUseByKind } from '../../bench/procs';

/** In a child: exit once the test's process is gone (its end of stdin closes), whatever stopped it. */
const UNTIL_PARENT_GONE = "process.stdin.on('end', () => process.exit()).resume();";

/** A process that lives until killed or orphaned, whose command line carries `args` (as a Chromium child's carries its --type). */
function idleProcess(args: string[]): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['-e', UNTIL_PARENT_GONE, '--', ...args], { stdio: ['pipe', 'ignore', 'ignore'] });
  return new Promise((resolve, reject) => {
    child.once('spawn', () => resolve(child));
    child.once('error', reject);
  });
}

describe('bench/procs: the kind of a browser tree process', () => {
  if (process.platform !== 'linux') return;
  const started: ChildProcess[] = [];
  after(() => {
    for (const c of started) c.kill('SIGKILL');
  });

  it("names each process by Chromium's --type, and counts a tree's CPU by kind", async () => {
    const cases: Array<[string[], string]> = [
      [['--type=renderer', '--renderer-client-id=5'], 'renderers'],
      [['--type=zygote'], 'renderers'],
      [['--type=gpu-process'], 'gpu'],
      [['--type=utility', '--utility-sub-type=network.mojom.NetworkService'], 'network'],
      [['--type=utility', '--utility-sub-type=storage.mojom.StorageService'], 'other'],
      [['--headless', '--remote-debugging-port=0'], 'browser'],
    ];
    for (const [args, kind] of cases) {
      const child = await idleProcess(args);
      started.push(child);
      expect(browserProcessKind(child.pid!), args.join(' ')).to.equal(kind);
    }
    expect(browserProcessKind(2 ** 22 + 12345), 'a process that is gone').to.equal('other');

    // A renderer-like child that uses 300 ms of CPU (however long a busy machine makes that take), then idles: its tree's CPU lands on its kind.
    const burn =
      'const s = process.cpuUsage(); for (;;) { const u = process.cpuUsage(s); if (u.user + u.system >= 300000) break; } process.stdout.write("done"); ' +
      UNTIL_PARENT_GONE;
    const busy = spawn(process.execPath, ['-e', burn, '--', '--type=renderer'], { stdio: ['pipe', 'pipe', 'ignore'] });
    started.push(busy);
    await new Promise((resolve) => busy.stdout!.once('data', resolve));
    const use = treesUseByKind([busy.pid!]);
    expect(use.renderers).to.be.at.least(250);
    expect(use.browser + use.gpu + use.network + use.other).to.equal(0);
  });
});
