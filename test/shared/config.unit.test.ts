import { expect } from 'chai';
import dns from 'node:dns';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, loadMcpStdioConfig } from '../../services/shared/config';

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
    const c = loadConfig({
      DATABASE_URL: 'mysql://root@127.0.0.1:3306/test',
      REDIS_URL: 'redis://127.0.0.1:6379',
      TRANSPORTER: 'nats://127.0.0.1:4222',
      SERVICES: 'api,billing',
    });
    expect(c.database).to.deep.equal({ client: 'mysql2', url: 'mysql://root@127.0.0.1:3306/test' });
    expect(c.services).to.deep.equal(['api', 'billing']);
    expect(c.migrateOnStart).to.equal(false);
    expect(Object.isFrozen(c)).to.equal(true);
  });

  it('runs the egress gateway by default on 127.0.0.1; on every interface it is reached by host name unless EGRESS_GATEWAY_HOST says', () => {
    expect(loadConfig({}).capture.gateway).to.deep.equal({
      bindHost: '127.0.0.1',
      advertisedHost: '127.0.0.1',
      idleTimeoutMs: 30_000,
      connectTimeoutMs: 10_000,
    });
    expect(loadConfig({ EGRESS_CONNECT_TIMEOUT_MS: '2500' }).capture.gateway?.connectTimeoutMs).to.equal(2500);
    expect(() => loadConfig({ EGRESS_CONNECT_TIMEOUT_MS: 'soon' })).to.throw(/EGRESS_CONNECT_TIMEOUT_MS/);
    expect(loadConfig({ EGRESS_GATEWAY: 'off' }).capture.gateway).to.equal(null);
    expect(loadConfig({ EGRESS_GATEWAY_BIND: '0.0.0.0' }).capture.gateway?.advertisedHost).to.equal(os.hostname());
    expect(loadConfig({ EGRESS_GATEWAY_BIND: '0.0.0.0', EGRESS_GATEWAY_HOST: 'capture-1' }).capture.gateway?.advertisedHost).to.equal('capture-1');
    const c = loadConfig({ EGRESS_DNS_SERVERS: '127.0.0.1:5353, 10.0.0.2', EGRESS_ALLOW_ADDRESSES: '10.1.2.3,10.2.0.0/16,fd00::/8' });
    expect(c.capture.dnsServers).to.deep.equal(['127.0.0.1:5353', '10.0.0.2']);
    expect(c.capture.allowAddresses).to.deep.equal(['10.1.2.3', '10.2.0.0/16', 'fd00::/8']);
    expect(() => loadConfig({ EGRESS_ALLOW_ADDRESSES: 'intranet.local' })).to.throw(/EGRESS_ALLOW_ADDRESSES: "intranet.local" is not an IP address/);
    expect(() => loadConfig({ EGRESS_ALLOW_ADDRESSES: '10.0.0.0/33' })).to.throw(/EGRESS_ALLOW_ADDRESSES/);
  });

  it('starts the headless shell in embedded mode, and leaves the browser to each Grid node unless CHROME_BIN says otherwise', () => {
    expect(loadConfig({}).capture.chromeBin).to.equal('/usr/bin/chromium-headless-shell');
    expect(loadConfig({ SELENIUM_URL: 'http://hub:4444' }).capture.chromeBin).to.equal(null);
    expect(loadConfig({ SELENIUM_URL: 'http://hub:4444', CHROME_BIN: '/opt/chrome/chrome' }).capture.chromeBin).to.equal('/opt/chrome/chrome');
    expect(loadConfig({ CHROME_BIN: process.execPath }).capture.chromeBin).to.equal(process.execPath);
  });

  describe('CHROME_BIN and CHROMEDRIVER_BIN, when set for browsers this process starts', () => {
    let dir: string;
    before(() => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'config-bins-'));
      fs.writeFileSync(path.join(dir, 'not-executable'), '#!/bin/sh\n', { mode: 0o644 });
    });
    after(() => fs.rmSync(dir, { recursive: true, force: true }));

    for (const name of ['CHROME_BIN', 'CHROMEDRIVER_BIN'] as const) {
      it(`stops with a message naming ${name} when the file is missing, a folder or not executable`, () => {
        expect(() => loadConfig({ [name]: '/nonexistent/chrome' })).to.throw(new RegExp(`^${name}: there is no \\w+ at "/nonexistent/chrome"`));
        expect(() => loadConfig({ [name]: dir })).to.throw(`${name}: "${dir}" is not a file`);
        // Without an execute bit, not even root may run it.
        expect(() => loadConfig({ [name]: path.join(dir, 'not-executable') })).to.throw(`${name}: "${path.join(dir, 'not-executable')}" is not executable`);
        expect(loadConfig({ [name]: process.execPath }).capture).to.include(
          name === 'CHROME_BIN' ? { chromeBin: process.execPath } : { chromedriverBin: process.execPath },
        );
      });
    }

    it('leaves the defaults and paths used elsewhere unchecked: unset, on a Grid, or in a process without capture', () => {
      expect(loadConfig({}).capture.chromedriverBin).to.equal('/usr/bin/chromedriver');
      expect(
        loadConfig({ SELENIUM_URL: 'http://hub:4444', CHROME_BIN: '/opt/chrome/chrome', CHROMEDRIVER_BIN: '/nonexistent/chromedriver' }).capture.chromeBin,
      ).to.equal('/opt/chrome/chrome');
      expect(loadConfig({ SERVICES: 'api,billing', CHROME_BIN: '/nonexistent/chrome' }).capture.chromeBin).to.equal('/nonexistent/chrome');
    });
  });

  it('refuses a TRUST_PROXY entry that is not an address, a CIDR within its family, or a named range, and a hop count', () => {
    expect(loadConfig({}).trustProxy).to.equal('loopback,linklocal,uniquelocal');
    expect(loadConfig({ TRUST_PROXY: 'true' }).trustProxy).to.equal(true);
    expect(loadConfig({ TRUST_PROXY: 'false' }).trustProxy).to.equal(false);
    expect(loadConfig({ TRUST_PROXY: 'loopback, 10.0.0.0/8,203.0.113.7,fd00::/8,::1,2001:db8::/128' }).trustProxy).to.equal(
      'loopback,10.0.0.0/8,203.0.113.7,fd00::/8,::1,2001:db8::/128',
    );
    for (const bad of ['cafe', 'dead:beef:cafe', '10.0.0.0/99', '10.0.0.0/33', '10.0.0.0/0', 'fd00::/129', '10.0.0.1/8/8', '999.1.1.1', 'proxy.internal']) {
      expect(() => loadConfig({ TRUST_PROXY: bad }), bad).to.throw(`TRUST_PROXY: "${bad}" is not an IP address, a CIDR`);
    }
    expect(() => loadConfig({ TRUST_PROXY: '1' })).to.throw('TRUST_PROXY: "1" is a number, and hop counts are not supported');
    expect(() => loadConfig({ TRUST_PROXY: 'loopback,2' })).to.throw("hop counts are not supported; list the proxies' addresses");
  });

  it('listens (HOST, EGRESS_GATEWAY_BIND) on an IP address or localhost, and stops naming the variable otherwise', () => {
    expect(loadConfig({}).host).to.equal('0.0.0.0');
    for (const host of ['127.0.0.1', '::', '::1', 'localhost']) {
      expect(loadConfig({ HOST: host }).host).to.equal(host);
      expect(loadConfig({ EGRESS_GATEWAY_BIND: host }).capture.gateway?.bindHost).to.equal(host);
    }
    for (const bad of ['not_a_host', '999.1.1.1', 'example.com', '[::1]']) {
      expect(() => loadConfig({ HOST: bad }), bad).to.throw(
        `HOST must be an IP address to listen on (such as 0.0.0.0, 127.0.0.1 or ::) or localhost, got "${bad}"`,
      );
      expect(() => loadConfig({ EGRESS_GATEWAY_BIND: bad }), bad).to.throw(`EGRESS_GATEWAY_BIND must be an IP address to listen on`);
    }
    // Off, the gateway's bind address is not read.
    expect(loadConfig({ EGRESS_GATEWAY: 'off', EGRESS_GATEWAY_BIND: '999.1.1.1' }).capture.gateway).to.equal(null);
  });

  it("takes EGRESS_DNS_SERVERS as IP addresses with or without a port, as the resolver's setServers does, and refuses names", () => {
    const good = ['10.0.0.2', '10.0.0.2:5353', 'fd00::53', '[fd00::53]', '[fd00::53]:53', '127.0.0.1:65535'];
    const servers = loadConfig({ EGRESS_DNS_SERVERS: good.join(', ') }).capture.dnsServers;
    expect(servers).to.deep.equal(good);
    expect(() => new dns.Resolver().setServers(servers)).not.to.throw();
    for (const bad of [
      'localhost',
      'dns.internal:53',
      '999.1.1.1',
      '10.0.0.2:0',
      '10.0.0.2:65536',
      '10.0.0.2:',
      'fd00::53:99999',
      '[10.0.0.2]:53',
      '[fd00::53]:0',
    ]) {
      expect(() => loadConfig({ EGRESS_DNS_SERVERS: `10.0.0.2,${bad}` }), bad).to.throw(
        `EGRESS_DNS_SERVERS: "${bad}" is not an IP address, with or without a port`,
      );
    }
  });

  it('takes TRANSPORTER as one or several nats:// addresses, and stops naming it otherwise (without quoting a password)', () => {
    expect(loadConfig({ TRANSPORTER: 'nats://127.0.0.1:4222' }).transporter).to.equal('nats://127.0.0.1:4222');
    expect(loadConfig({ TRANSPORTER: 'nats://user:pw@nats-1:4222,nats://user:pw@nats-2:4222' }).transporter).to.equal(
      'nats://user:pw@nats-1:4222,nats://user:pw@nats-2:4222',
    );
    for (const bad of ['bogus', 'nast://127.0.0.1:4222', 'redis://127.0.0.1:6379', 'NATS', 'nats://', 'nats://127.0.0.1:4222,tcp://x']) {
      expect(() => loadConfig({ TRANSPORTER: bad }), bad).to.throw('TRANSPORTER must be a NATS address, nats://host:port (several separated by commas)');
    }
    expect(() => loadConfig({ TRANSPORTER: 'nast://app:S3cretPw@nats:4222' }))
      .to.throw('"nast://[REDACTED]@nats:4222"')
      .that.satisfies((e: Error) => !e.message.includes('S3cretPw'));
  });

  it("leaves the AI providers at their SDKs' public endpoints and AI calls at 60 s unless told otherwise", () => {
    const c = loadConfig({});
    expect(c.ai).to.deep.equal({ baseUrls: { anthropic: null, openai: null, openrouter: null }, timeoutMs: 60_000, imageTimeoutMs: 20_000, service: null });
    const set = loadConfig({
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9001/',
      OPENAI_BASE_URL: 'http://127.0.0.1:9002/v1',
      OPENROUTER_BASE_URL: 'https://or.example/api/v1',
      AI_TIMEOUT_MS: '5000',
    });
    expect(set.ai.baseUrls).to.deep.equal({ anthropic: 'http://127.0.0.1:9001', openai: 'http://127.0.0.1:9002/v1', openrouter: 'https://or.example/api/v1' });
    expect(set.ai.timeoutMs).to.equal(5000);
  });

  it("reads the service's own AI backend, falling back to the provider's base URL", () => {
    const c = loadConfig({
      SERVICE_AI_PROVIDER: 'anthropic',
      SERVICE_AI_API_KEY: 'sk-ant-op',
      SERVICE_AI_MODEL: 'claude-haiku-4-5',
      ANTHROPIC_BASE_URL: 'http://127.0.0.1:9001',
    });
    expect(c.ai.service).to.deep.equal({ provider: 'anthropic', baseUrl: 'http://127.0.0.1:9001', apiKey: 'sk-ant-op', model: 'claude-haiku-4-5' });
    const local = loadConfig({ SERVICE_AI_PROVIDER: 'openai-compatible', SERVICE_AI_BASE_URL: 'http://127.0.0.1:11434/v1', SERVICE_AI_MODEL: 'llava' });
    expect(local.ai.service).to.deep.equal({ provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:11434/v1', apiKey: null, model: 'llava' });
  });

  for (const [env, fragment] of [
    [{ SERVICE_AI_PROVIDER: 'gemini' }, 'SERVICE_AI_PROVIDER must be one of anthropic, openai, openrouter, openai-compatible'],
    [{ SERVICE_AI_PROVIDER: 'openai', SERVICE_AI_MODEL: 'gpt-4o' }, 'SERVICE_AI_PROVIDER=openai needs SERVICE_AI_API_KEY'],
    [{ SERVICE_AI_PROVIDER: 'openai-compatible', SERVICE_AI_MODEL: 'llava' }, 'needs SERVICE_AI_BASE_URL'],
    [{ SERVICE_AI_PROVIDER: 'openrouter', SERVICE_AI_API_KEY: 'sk-or-secret-value' }, 'SERVICE_AI_MODEL is required'],
    [{ SERVICE_AI_MODEL: 'gpt-4o' }, 'SERVICE_AI_MODEL is set but SERVICE_AI_PROVIDER is not'],
    [{ SERVICE_AI_PROVIDER: 'openai', SERVICE_AI_API_KEY: 'k', SERVICE_AI_MODEL: 'm', SERVICE_AI_BASE_URL: 'ftp://x' }, 'SERVICE_AI_BASE_URL must start with'],
  ] as const) {
    it(`refuses a half-configured service AI backend: ${fragment}`, () => {
      expect(() => loadConfig(env)).to.throw(fragment);
    });
  }

  it('leaves /metrics open unless METRICS_TOKEN is set', () => {
    expect(loadConfig({}).metricsToken).to.equal(null);
    expect(loadConfig({ METRICS_TOKEN: 'a-long-enough-token' }).metricsToken).to.equal('a-long-enough-token');
  });

  it('never quotes SERVICE_AI_API_KEY in a configuration error', () => {
    expect(() => loadConfig({ SERVICE_AI_PROVIDER: 'openrouter', SERVICE_AI_API_KEY: 'sk-or-secret-value' }))
      .to.throw()
      .that.satisfies((e: Error) => !e.message.includes('sk-or-secret-value'));
  });

  for (const [name, value, secret, shown] of [
    ['DATABASE_URL', 'mysql://app:p#ss@127.0.0.1:3306/snap', 'p#ss', 'mysql://[REDACTED]@127.0.0.1:3306/snap'],
    ['REDIS_URL', 'http://:RedisPw123@127.0.0.1:6379', 'RedisPw123', 'http://[REDACTED]@127.0.0.1:6379'],
    ['SELENIUM_URL', 'grid:pa ss@hub:4444', 'pa ss', '[REDACTED]@hub:4444'],
    ['STORAGE_URL', 's3://key:Secr3t@bucket/prefix', 'Secr3t', 's3://[REDACTED]@bucket/prefix'],
  ] as const) {
    it(`quotes an invalid ${name} without the user and password in it`, () => {
      expect(() => loadConfig({ DATA_DIR: '/tmp/x', [name]: value }))
        .to.throw(shown)
        .that.satisfies((e: Error) => !e.message.includes(secret));
    });
  }

  it("quotes an invalid REAL_LOCATIONS_GATEWAY (a provider's user:password@host:port) without its password", () => {
    expect(() =>
      loadConfig({
        REAL_LOCATIONS_PROVIDER: 'brightdata',
        REAL_LOCATIONS_GATEWAY: 'brd-customer-x:GwPw9876@brd.superproxy.io:22225x',
        REAL_LOCATIONS_USERNAME: 'brd-customer-x',
        REAL_LOCATIONS_PASSWORD: 'GwPw9876',
      }),
    )
      .to.throw('REAL_LOCATIONS_GATEWAY must be host:port')
      .that.satisfies((e: Error) => !e.message.includes('GwPw9876'));
  });

  for (const [name, value, fragment] of [
    ['AI_TIMEOUT_MS', '10', 'AI_TIMEOUT_MS must be between 1000 and 600000'],
    ['OPENAI_BASE_URL', 'api.openai.com', 'OPENAI_BASE_URL must be a URL'],
    ['PORT', 'abc', 'PORT must be an integer'],
    ['SERVICES', 'api,printer', 'unknown service "printer"'],
    ['DATABASE_URL', 'postgres://x', 'DATABASE_URL must start with'],
    ['SECRETS_KEY', 'short', 'SECRETS_KEY must be 64 hex'],
    ['ALLOW_PRIVATE_NETWORKS', 'maybe', 'ALLOW_PRIVATE_NETWORKS must be true or false'],
    ['METRICS_TOKEN', 'short', 'METRICS_TOKEN must be 16 to 256 printable characters'],
    ['METRICS_TOKEN', 'has a space in the middle', 'METRICS_TOKEN must be 16 to 256 printable characters'],
  ] as const) {
    it(`stops with a message naming ${name} when it is invalid`, () => {
      expect(() => loadConfig({ [name]: value })).to.throw(fragment);
    });
  }

  it("reads the stdio MCP server's own settings: the service's URL (npm start's by default) and the key, never quoting it", () => {
    expect(loadMcpStdioConfig({ SNAPSERVICE_API_KEY: ' sk_abc ' })).to.deep.equal({ url: 'http://localhost:3000', key: 'sk_abc', logFormat: 'json' });
    expect(loadMcpStdioConfig({ SNAPSERVICE_API_KEY: 'sk_abc', SNAPSERVICE_URL: 'https://snap.example/', LOG_FORMAT: 'text' })).to.include({
      url: 'https://snap.example',
      logFormat: 'text',
    });
    expect(() => loadMcpStdioConfig({})).to.throw('SNAPSERVICE_API_KEY is required');
    expect(() => loadMcpStdioConfig({ SNAPSERVICE_API_KEY: 'sk_abc', SNAPSERVICE_URL: 'localhost:3000' })).to.throw(
      'SNAPSERVICE_URL must start with http:// or https://',
    );
    expect(() => loadMcpStdioConfig({ SNAPSERVICE_API_KEY: 'sk_two words' }))
      .to.throw('SNAPSERVICE_API_KEY must be the API key alone')
      .that.satisfies((e: Error) => !e.message.includes('two words'));
  });
});
