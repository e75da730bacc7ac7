import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { backendConfig, uniqueName } from '../support/backends';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { processesLeft, processesMarked, runScript, startServeProcess } from '../support/processes';
import { until } from '../support/wait';

/** A process's group id (its /proc stat's fifth field). */
function groupOf(pid: number): number | null {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
  } catch {
    return null;
  }
}

/** Whatever a failed test left behind: every process carrying its mark, SIGKILLed. */
function killMarked(mark: string): void {
  for (const pid of processesMarked('SNAP_TEST_MARK', mark)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Gone meanwhile.
    }
  }
}

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

  it('lets a running capture finish when SIGTERM reaches its whole process group: its ChromeDrivers and browsers are in a group of their own', async () => {
    // A page that answers after 3 s: the capture is under way when the signal comes.
    const slow = http.createServer((_req, res) => setTimeout(() => res.end('<h1>slow</h1>'), 3_000));
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    const mark = uniqueName('m');
    const b = await backendConfig('sqlite', { CAPTURE_SESSIONS: '1', SNAP_TEST_MARK: mark, ALLOW_PRIVATE_NETWORKS: 'true' });
    try {
      const proc = await startServeProcess(b.env, /Screenshot service ready/, { group: true });
      const { access_token } = JSON.parse(runScript('bin/admin.js', ['accounts', 'create', '--plan', 'paid', '--json'], b.env)) as { access_token: string };
      const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/`;
      const answer = fetch(`http://127.0.0.1:${b.env.PORT}/snap?access_token=${access_token}&ttl=0&url=${encodeURIComponent(url)}`);
      await new Promise((r) => setTimeout(r, 1_000));
      await proc.stop();
      const r = await answer;
      expect(r.status, await r.clone().text()).to.equal(200);
      expect(r.headers.get('content-type')).to.equal('image/jpeg');
      expect(proc.child.exitCode, proc.output()).to.equal(0);
      expect(await processesLeft(mark, [], 10_000)).to.deep.equal([]);
    } finally {
      killMarked(mark);
      slow.closeAllConnections();
      slow.close();
      await b.cleanup();
    }
  });

  it('leaves no ChromeDriver or browser behind when it is SIGKILLed, nor a browser when its ChromeDriver is', async () => {
    const mark = uniqueName('m');
    const b = await backendConfig('sqlite', { CAPTURE_SESSIONS: '2', SNAP_TEST_MARK: mark });
    try {
      const proc = await startServeProcess(b.env, /Screenshot service ready/);
      const drivers = processesMarked('SNAP_TEST_MARK', mark).filter((pid) => /chromedriver/.test(fs.readFileSync(`/proc/${pid}/cmdline`, 'latin1')));
      expect(drivers).to.have.length(2);
      // A ChromeDriver killed: the browser it started goes with it (its group is the ChromeDriver's).
      const [driver] = drivers as [number];
      const inGroup = () => processesMarked('SNAP_TEST_MARK', mark).filter((pid) => groupOf(pid) === driver);
      expect(inGroup().length, 'the ChromeDriver and its browser').to.be.greaterThan(1);
      process.kill(driver, 'SIGKILL');
      await until('the browser to end with its ChromeDriver', async () => inGroup().length === 0, 5_000);
      proc.child.kill('SIGKILL');
      expect(await processesLeft(mark, [], 5_000)).to.deep.equal([]);
    } finally {
      killMarked(mark);
      await b.cleanup();
    }
  });

  for (const [when, signal] of [
    ['on SIGHUP (its terminal closed)', 'SIGHUP'],
    ['on SIGTERM while it starts (stopped once started)', 'SIGTERM'],
  ] as const) {
    it(`stops cleanly ${when}, its browsers quit`, async () => {
      const mark = uniqueName('m');
      const b = await backendConfig('sqlite', { CAPTURE_SESSIONS: '2', SNAP_TEST_MARK: mark });
      try {
        const starting = signal === 'SIGTERM';
        const proc = await startServeProcess(b.env, starting ? /starting|Starting|"msg"/ : /Screenshot service ready/);
        if (starting) await until('a browser to be launching', async () => processesMarked('SNAP_TEST_MARK', mark).length > 1, 20_000);
        const exited = new Promise((r) => proc.child.once('exit', r));
        proc.child.kill(signal);
        await exited;
        expect(proc.child.exitCode, proc.output()).to.equal(0);
        expect(proc.output()).to.contain('ServiceBroker is stopped');
        expect(await processesLeft(mark, [], 10_000)).to.deep.equal([]);
      } finally {
        killMarked(mark);
        await b.cleanup();
      }
    });
  }

  it('with PORT=0 listens on a free port, and the links it writes name that port', async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing,ai,proxy' });
    try {
      const proc = await startServeProcess({ ...b.env, PORT: '0' }, /Screenshot service ready/);
      try {
        const base = /ready on (http:\/\/localhost:(\d+))/.exec(proc.output());
        expect(base?.[2], proc.output()).to.match(/^[1-9]\d*$/);
        const doc = (await (await fetch(`${base?.[1]}/openapi.json`)).json()) as { servers: Array<{ url: string }> };
        expect(doc.servers[0]?.url).to.equal(base?.[1]);
      } finally {
        await proc.stop();
      }
    } finally {
      await b.cleanup();
    }
  });

  it('ignores a signal that comes again while it stops (Ctrl-C under npm start delivers SIGINT twice)', async () => {
    const mark = uniqueName('m');
    const b = await backendConfig('sqlite', { CAPTURE_SESSIONS: '2', SNAP_TEST_MARK: mark });
    try {
      const proc = await startServeProcess(b.env, /Screenshot service ready/);
      const exited = new Promise((r) => proc.child.once('exit', r));
      proc.child.kill('SIGINT');
      await new Promise((r) => setTimeout(r, 100));
      proc.child.kill('SIGINT');
      await exited;
      expect(proc.child.exitCode, proc.output()).to.equal(0);
      expect(await processesLeft(mark, [], 10_000)).to.deep.equal([]);
    } finally {
      killMarked(mark);
      await b.cleanup();
    }
  });

  it('quits every browser and ChromeDriver it started before it exits after an uncaught exception', async () => {
    const mark = uniqueName('m');
    const b = await backendConfig('sqlite', { CAPTURE_SESSIONS: '2', SNAP_TEST_MARK: mark });
    try {
      const proc = await startServeProcess(b.env, /Screenshot service ready/, {
        nodeArgs: ['-r', path.join(__dirname, '..', 'support', 'crash-on-signal.js')],
      });
      expect(processesMarked('SNAP_TEST_MARK', mark).filter((p) => p !== proc.child.pid).length, 'chromedriver and chromium processes').to.be.greaterThan(2);
      const exited = new Promise((r) => proc.child.once('exit', r));
      proc.child.kill('SIGUSR2');
      await exited;
      expect(proc.child.exitCode, proc.output()).to.equal(1);
      expect(proc.output()).to.match(/"level":"fatal".*uncaught exception; stopping and exiting/);
      expect(proc.output()).to.contain('thrown on purpose by the test');
      expect(await processesLeft(mark, [], 10_000)).to.deep.equal([]);
    } finally {
      await b.cleanup();
    }
  });

  it('with STOP_ON_STDIN_END, stops itself and its browsers when the supervisor holding its stdin is SIGKILLed', async () => {
    const mark = uniqueName('m');
    const b = await backendConfig('sqlite', { CAPTURE_SESSIONS: '2', SNAP_TEST_MARK: mark, STOP_ON_STDIN_END: 'true', LOG_LEVEL: 'info' });
    // A supervisor as ops/stack.ts is one: the service's stdin is a pipe from it.
    const supervisor = spawn(
      process.execPath,
      [
        '-e',
        `const c = require('child_process').spawn(process.execPath, [${JSON.stringify(path.join(__dirname, '..', '..', 'bin', 'serve.js'))}], { stdio: ` +
          `['pipe', 'inherit', 'inherit'] }); setInterval(() => {}, 1000);`,
      ],
      { env: { ...process.env, ...b.env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    supervisor.stdout?.on('data', (d) => (out += d));
    supervisor.stderr?.on('data', (d) => (out += d));
    try {
      await until('the service to be ready', async () => /Screenshot service ready/.test(out), 30_000);
      const service = processesMarked('SNAP_TEST_MARK', mark).filter((pid) => pid !== supervisor.pid);
      expect(service.length, 'the service, its ChromeDriver and browsers').to.be.greaterThan(2);
      supervisor.kill('SIGKILL');
      expect(await processesLeft(mark, [], 20_000), out).to.deep.equal([]);
    } finally {
      supervisor.kill('SIGKILL');
      killMarked(mark);
      await b.cleanup();
    }
  });

  /** `npm start` as a person or a supervisor runs it (its own process group), and how to stop it. */
  for (const [how, stop] of [
    ['SIGTERM to the `npm start` process itself (npm hands it on)', (npm: ChildProcess) => npm.kill('SIGTERM')],
    [
      'Ctrl-C (SIGINT to the whole group: the service gets it from the terminal and again from npm)',
      (npm: ChildProcess) => process.kill(-(npm.pid as number), 'SIGINT'),
    ],
  ] as const) {
    it(`stops cleanly under \`npm start\` on ${how}`, async function () {
      // npm runs the script in a shell; the script execs node, so what npm hands on reaches the service.
      this.timeout(90_000);
      const mark = uniqueName('m');
      const b = await backendConfig('sqlite', { CAPTURE_SESSIONS: '2', SNAP_TEST_MARK: mark, LOG_LEVEL: 'info' });
      const npm = spawn('npm', ['start', '--silent'], {
        cwd: path.join(__dirname, '..', '..', '..'),
        env: { ...process.env, ...b.env },
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let out = '';
      npm.stdout?.on('data', (d) => (out += d));
      npm.stderr?.on('data', (d) => (out += d));
      try {
        await until('the service to be ready', async () => /Screenshot service ready/.test(out), 60_000);
        expect(processesMarked('SNAP_TEST_MARK', mark).filter((pid) => pid !== npm.pid).length, 'the service, its ChromeDriver and browsers').to.be.greaterThan(
          2,
        );
        stop(npm);
        // Stopped by its own shutdown (the browsers quit, the broker stopped), not cut short by a signal.
        await until('the service to stop cleanly', async () => out.includes('ServiceBroker is stopped'), 20_000).catch(() => undefined);
        expect(await processesLeft(mark, [], 15_000), out).to.deep.equal([]);
        expect(out).to.contain('ServiceBroker is stopped');
      } finally {
        killMarked(mark);
        await b.cleanup();
      }
    });
  }
});
