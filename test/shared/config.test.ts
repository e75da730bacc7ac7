import { expect } from 'chai';
import { loadConfig } from '../../services/shared/config';

describe('config', () => {
  it('defaults to the embedded mode: SQLite, in-process counters, no transporter, port 3000', () => {
    const c = loadConfig({ DATA_DIR: '/tmp/x' });
    expect(c.database).to.deep.equal({ client: 'better-sqlite3', filename: '/tmp/x/snapservice.sqlite' });
    expect(c.redisUrl).to.equal(null);
    expect(c.transporter).to.equal(null);
    expect(c.port).to.equal(3000);
    expect(c.services).to.have.length(7);
    expect(c.migrateOnStart).to.equal(true);
    expect(c.cdnUrl).to.equal('http://localhost:3000/cdn');
  });

  it('selects the full stack from environment variables only', () => {
    const c = loadConfig({ DATABASE_URL: 'mysql://root@127.0.0.1:3306/test', REDIS_URL: 'redis://127.0.0.1:6379', TRANSPORTER: 'nats://127.0.0.1:4222', SERVICES: 'api,billing' });
    expect(c.database).to.deep.equal({ client: 'mysql2', url: 'mysql://root@127.0.0.1:3306/test' });
    expect(c.services).to.deep.equal(['api', 'billing']);
    expect(c.migrateOnStart).to.equal(false);
    expect(Object.isFrozen(c)).to.equal(true);
  });

  it('starts the headless shell in embedded mode, and leaves the browser to each Grid node unless CHROME_BIN says otherwise', () => {
    expect(loadConfig({}).capture.chromeBin).to.equal('/usr/bin/chromium-headless-shell');
    expect(loadConfig({ SELENIUM_URL: 'http://hub:4444' }).capture.chromeBin).to.equal(null);
    expect(loadConfig({ SELENIUM_URL: 'http://hub:4444', CHROME_BIN: '/opt/chrome/chrome' }).capture.chromeBin).to.equal('/opt/chrome/chrome');
    expect(loadConfig({ CHROME_BIN: '/usr/bin/chromium' }).capture.chromeBin).to.equal('/usr/bin/chromium');
  });

  for (const [name, value, fragment] of [
    ['PORT', 'abc', 'PORT must be an integer'],
    ['SERVICES', 'api,printer', 'unknown service "printer"'],
    ['DATABASE_URL', 'postgres://x', 'DATABASE_URL must start with'],
    ['SECRETS_KEY', 'short', 'SECRETS_KEY must be 64 hex'],
    ['ALLOW_PRIVATE_NETWORKS', 'maybe', 'ALLOW_PRIVATE_NETWORKS must be true or false'],
  ] as const) {
    it(`stops with a message naming ${name} when it is invalid`, () => {
      expect(() => loadConfig({ [name]: value })).to.throw(fragment);
    });
  }
});
