/** The operator CLI's webhook-secret commands, against the same embedded database the server uses. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { backendConfig } from '../support/backends';
import { request } from '../support/http';
import { runScript } from '../support/processes';
import { runSystem } from '../support/system';

describe('admin CLI: webhook-secret show and rotate', function () {
  this.timeout(60_000);

  it('shows the secret GET /webhook_secret shows, and rotates it', async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing,notifier' });
    try {
      const env = { ...b.env, LOG_LEVEL: 'warn' };
      const account = JSON.parse(runScript('bin/admin.js', ['accounts', 'create', '--plan', 'free', '--json'], env)) as {
        account_id: string;
        access_token: string;
      };
      const shown = JSON.parse(runScript('bin/admin.js', ['webhook-secret', 'show', account.account_id, '--json'], env)) as { secret: string };
      expect(shown.secret).to.match(/^whsec_/);
      const rotated = JSON.parse(runScript('bin/admin.js', ['webhook-secret', 'rotate', account.account_id, '--json'], env)) as {
        secret: string;
        previous_valid_until: string;
      };
      expect(rotated.secret)
        .to.match(/^whsec_/)
        .and.not.equal(shown.secret);
      expect(Date.parse(rotated.previous_valid_until) - Date.now()).to.be.closeTo(24 * 3_600_000, 60_000);
      const sys = await runSystem(b.config);
      try {
        const r = await request(sys.base, 'GET', '/webhook_secret', { headers: { authorization: `Bearer ${account.access_token}` } });
        expect(r.body).to.deep.equal({ success: true, secret: rotated.secret });
      } finally {
        await sys.stop();
      }
      const unknown = spawnSync(process.execPath, [path.resolve(__dirname, '..', '..', 'bin', 'admin.js'), 'webhook-secret', 'show', 'acct_nobody'], {
        env: { ...process.env, ...env },
        encoding: 'utf8',
      });
      expect(unknown.status).to.equal(2);
      expect(unknown.stderr).to.match(/No account "acct_nobody"/);
    } finally {
      await b.cleanup();
    }
  });
});
