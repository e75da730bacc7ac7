import fs from 'node:fs';
import { expect } from 'chai';
import { backendConfig } from '../support/backends';
import { startServeProcess } from '../support/processes';

/** Every process descended from pid (children, grandchildren, ...), read from /proc. */
function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parentOf.set(Number(entry), ppid);
    } catch {
      // The process ended while we looked.
    }
  }
  const found: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parentOf) {
      if (parent === p) {
        found.push(child);
        walk(child);
      }
    }
  };
  walk(pid);
  return found;
}

/** Alive and not a zombie waiting to be reaped. */
function isRunning(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

describe('npm start process lifecycle', function () {
  this.timeout(60_000);

  it('quits every browser and ChromeDriver it started when it gets SIGTERM', async () => {
    const b = await backendConfig('sqlite', { CAPTURE_SESSIONS: '2' });
    try {
      const proc = await startServeProcess(b.env, /Screenshot service ready/);
      const pid = proc.child.pid as number;
      const started = descendants(pid);
      expect(started.length, 'chromedriver and chromium processes').to.be.greaterThan(2);
      await proc.stop();
      // Browsers exit shortly after their driver session is deleted; give them a moment.
      let alive = started;
      for (let i = 0; i < 50 && alive.length; i++) {
        await new Promise((r) => setTimeout(r, 200));
        alive = started.filter(isRunning);
      }
      expect(alive).to.deep.equal([]);
    } finally {
      await b.cleanup();
    }
  });
});
