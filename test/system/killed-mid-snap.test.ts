/**
 * The embedded default (`node dist/bin/serve.js`, SQLite) killed with SIGKILL while a snap is
 * in flight, then started again on the same DATA_DIR: the snap's job, which the killed process
 * left running, ends failed (capacity_exhausted, saying the service stopped) once its lease
 * runs out, rather than reading "running" for ever (JobQueue.failLapsedSnaps).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import knex from 'knex';
import { SNAP_STOPPED_NOTE } from '../../services/capture/jobs/jobs';
import { knexConfig } from '../../services/shared/database';
import { backendConfig, uniqueName } from '../support/backends';
import { qs, request } from '../support/http';
import { processesLeft, processesMarked, runScript, startServeProcess } from '../support/processes';
import { sleep, until } from '../support/wait';

const LEASE_MS = 2_000;

describe('the embedded process killed mid-snap, started again on its data', function () {
  this.timeout(120_000);

  it('ends the snap job it left running as failed once its lease runs out, and /metrics counts it running no more', async () => {
    const mark = uniqueName('m');
    // A page that never answers: the snap waits on it until the process is killed.
    const asked: string[] = [];
    const silent = http.createServer((req) => void asked.push(req.url ?? ''));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as AddressInfo;
    const b = await backendConfig('sqlite', {
      ALLOW_PRIVATE_NETWORKS: 'true',
      CAPTURE_SESSIONS: '1',
      CAPTURE_JOB_LEASE_MS: String(LEASE_MS),
      SNAP_TEST_MARK: mark,
      METRICS_TOKEN: '',
    });
    let proc = await startServeProcess(b.env, /Screenshot service ready/);
    try {
      const { access_token } = JSON.parse(runScript('bin/admin.js', ['accounts', 'create', '--plan', 'paid', '--json'], b.env)) as { access_token: string };
      const base = `http://127.0.0.1:${b.env.PORT}`;
      let answered = '';
      void request(base, 'GET', `/snap?${qs({ access_token, ttl: 0, navigation_timeout: 30_000, url: `http://127.0.0.1:${port}/never` })}`).then(
        (r) => (answered = `${r.status} ${r.raw.toString().slice(0, 300)}`),
        () => undefined,
      );
      await until(
        'the browser asks for the page',
        async () => {
          if (answered) throw new Error(`the snap was answered: ${answered}`);
          return asked.length > 0;
        },
        30_000,
        50,
      );

      const db = knex(knexConfig(b.config.database));
      const [job] = await db('jobs').where({ kind: 'snap' }).select('id');
      await db.destroy();
      const status = () => request(base, 'GET', `/jobs/${job?.id}`, { headers: { authorization: `Bearer ${access_token}` } });
      // A snap that runs longer than its lease keeps it (renewed) through the sweeps of lapsed ones.
      await sleep(2.5 * LEASE_MS);
      expect((await status()).body).to.deep.include({ status: 'running' });

      proc.child.kill('SIGKILL');
      await new Promise((r) => proc.child.once('exit', r));
      // Its ChromeDrivers and browsers end with it (local-driver.ts): none carrying the test's mark is left.
      expect(await processesLeft(mark, [], 5_000)).to.deep.equal([]);

      proc = await startServeProcess(b.env, /Screenshot service ready/);
      await until('the job ends', async () => (await status()).body.status !== 'running', 5 * LEASE_MS, 200);
      expect((await status()).body).to.deep.include({ status: 'failed', error_code: 'capacity_exhausted', note: SNAP_STOPPED_NOTE });
      expect(proc.output()).to.match(/failed 1 snap job\(s\) left running by a process that stopped mid-capture/);
      const metrics = (await request(base, 'GET', '/metrics')).raw.toString();
      expect(metrics).to.match(/snap_jobs\{state="running",kind="snap"\} 0\b/);
    } finally {
      await proc.stop();
      for (const pid of processesMarked('SNAP_TEST_MARK', mark)) process.kill(pid, 'SIGKILL');
      silent.closeAllConnections();
      silent.close();
      await b.cleanup();
    }
  });
});
