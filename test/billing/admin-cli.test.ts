/** The operator CLI's plan commands: a plan's concurrency limits, set and shown. */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import { backendConfig } from '../support/backends';
import { runScript } from '../support/processes';

describe('admin CLI: plans set and plans list', function () {
  this.timeout(60_000);

  it('sets how many captures a plan runs at once and has waiting, changing only the fields given', async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'billing' });
    try {
      const env = { ...b.env, LOG_LEVEL: 'warn' };
      const set = JSON.parse(runScript('bin/admin.js', ['plans', 'set', 'paid', '--concurrency', '4', '--queue', '16', '--json'], env));
      expect(set).to.deep.equal({ name: 'paid', paid: true, screenshot_limit: 10000, max_concurrent: 4, max_queued: 16 });
      const listed = runScript('bin/admin.js', ['plans', 'list'], env);
      expect(listed).to.contain('paid  paid  10000 screenshots/month  4 at once, 16 waiting');
      expect(listed).to.contain('free  free  25 screenshots/month  1 at once, 2 waiting');
      const bad = spawnSync(process.execPath, [path.resolve(__dirname, '..', '..', 'bin', 'admin.js'), 'plans', 'set', 'paid', '--concurrency', 'many'], {
        env: { ...process.env, ...env },
        encoding: 'utf8',
      });
      expect(bad.status).to.equal(2);
      expect(bad.stderr).to.contain('--concurrency must be a whole number, got "many"');
      const zero = spawnSync(process.execPath, [path.resolve(__dirname, '..', '..', 'bin', 'admin.js'), 'plans', 'set', 'paid', '--concurrency', '0'], {
        env: { ...process.env, ...env },
        encoding: 'utf8',
      });
      expect(zero.status).to.equal(2);
      expect(zero.stderr).to.contain('max_concurrent must be a whole number from 1 to 10000.');
      const huge = spawnSync(
        process.execPath,
        [path.resolve(__dirname, '..', '..', 'bin', 'admin.js'), 'plans', 'set', 'paid', '--screenshots', '99999999999999999999'],
        {
          env: { ...process.env, ...env },
          encoding: 'utf8',
        },
      );
      expect(huge.status).to.equal(2);
      expect(huge.stderr).to.contain('--screenshots is too large: at most 9007199254740991, got 99999999999999999999');
    } finally {
      await b.cleanup();
    }
  });

  it('refuses a flag its command does not take, a word too many and a missing --plan, before doing anything; --help answers 0', async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'billing' });
    try {
      const env = { ...process.env, ...b.env, LOG_LEVEL: 'warn' };
      const admin = (...args: string[]) =>
        spawnSync(process.execPath, [path.resolve(__dirname, '..', '..', 'bin', 'admin.js'), ...args], { env, encoding: 'utf8' });
      for (const [args, says] of [
        [['accounts', 'create', '--plna', 'paid', '--json'], 'accounts create takes no --plna; its options: --plan, --addons, --json'],
        [['accounts', 'create', '--json'], '--plan is required'],
        [['plans', 'set', 'pro', '--screnshots', '5'], 'plans set takes no --screnshots'],
        [['keys', 'rotate', 'acct1', 'acct2'], 'keys rotate: unexpected "acct2"'],
        [[], 'No command given.'],
      ] as Array<[string[], string]>) {
        const r = admin(...args);
        expect([r.status, r.stdout], args.join(' ')).to.deep.equal([2, '']);
        expect(r.stderr, args.join(' ')).to.contain(says).and.contain('Usage: npm run --silent admin');
      }
      // Nothing was done: no account made, no plan "pro".
      expect(JSON.parse(admin('accounts', 'list', '--json').stdout)).to.deep.equal([]);
      expect(admin('plans', 'list').stdout).to.not.contain('pro');
      const help = admin('--help');
      expect(help.status).to.equal(0);
      expect(help.stdout).to.contain('accounts create --plan <plan>');
    } finally {
      await b.cleanup();
    }
  });

  it('stops on a configuration error without quoting the password in a URL', () => {
    const bad = spawnSync(process.execPath, [path.resolve(__dirname, '..', '..', 'bin', 'admin.js'), 'plans', 'list'], {
      env: { ...process.env, REDIS_URL: 'http://:RedisPw123@127.0.0.1:6379' },
      encoding: 'utf8',
    });
    expect(bad.status).to.equal(2);
    expect(bad.stderr).to.contain('Configuration error: REDIS_URL must start with redis:// or rediss://');
    expect(bad.stderr).not.to.contain('RedisPw123');
  });
});
