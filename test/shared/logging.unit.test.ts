/**
 * The log writer (services/shared/logging.ts): the secret shapes it redacts in texts and in
 * fields, the record it makes of a logger call, and, on a real broker, that every line is
 * one redacted JSON object carrying the ids of the work it is about.
 */
import { expect } from 'chai';
import { ServiceBroker } from 'moleculer';
import { brokerOptions } from '../../moleculer.config';
import { LineLogger, REDACTED, formatLine, logRecord, redact, redactText, withLogContext, withOnlyLogContext } from '../../services/shared/logging';
import { loadConfig } from '../../services/shared/config';

describe('log redaction and JSON lines (shared/logging)', () => {
  describe('redactText', () => {
    const cases: [string, string, string][] = [
      ['credentials in a proxy URL', 'connect to http://bob:hunter2pass@10.0.0.5:3128 failed', 'hunter2pass'],
      ['a username alone in a URL', 'upstream socks5://residential-user-42@gw.example:7000', 'residential-user-42'],
      ["a password with ' in a proxy URL (encodeURIComponent leaves it)", "via http://alice:Tr0ub4dor'%263@203.0.113.7:8080", "Tr0ub4dor'%263"],
      ['credentials in a URL-encoded URL', 'url=http%3A%2F%2Fbob%3Ahunter2pass%40site.test%2F', 'hunter2pass'],
      ['access_token in a query string', 'GET /snap?url=x&access_token=sk_live0123456789abcdefXYZ&full_page=true', 'sk_live0123456789abcdefXYZ'],
      ['access_token URL-encoded inside a parameter', 'url=https%3A%2F%2Fa.test%2F%3Faccess_token%3Dplainsecretvalue99', 'plainsecretvalue99'],
      ['token= in a query string', 'https://a.test/page?token=abcDEF123ghi&x=1', 'abcDEF123ghi'],
      ['a password field in JSON inside a message', 'body {"username":"me","password":"Pa55-w0rd!"} rejected', 'Pa55-w0rd!'],
      ['an api_key: value pair', "options { api_key: 'abc123def456' }", 'abc123def456'],
      ['a Bearer token', 'header Authorization: Bearer opaque.token-value_123', 'opaque.token-value_123'],
      ['a Basic credential', 'Proxy-Authorization: Basic Ym9iOmh1bnRlcjI=', 'Ym9iOmh1bnRlcjI='],
      ['a webhook signing secret', 'signed with whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
      [
        'an OpenAI key quoted in a provider error',
        'Incorrect API key provided: sk-proj-AbCdEf0123456789. You can find your API key',
        'sk-proj-AbCdEf0123456789',
      ],
      ['an Anthropic key', 'key sk-ant-api03-abcdefghijklmnop_qrstuv-wxyz', 'sk-ant-api03-abcdefghijklmnop_qrstuv-wxyz'],
      ['an OpenRouter key', 'sk-or-v1-0123456789abcdef0123456789abcdef', 'sk-or-v1-0123456789abcdef0123456789abcdef'],
      ['one of our API keys', 'authenticate sk_Zt3-k9_vQ2mLx8PpR1sW4yB7nC0dE6fG', 'sk_Zt3-k9_vQ2mLx8PpR1sW4yB7nC0dE6fG'],
    ];
    for (const [what, text, secret] of cases) {
      it(`redacts ${what}`, () => {
        const out = redactText(text);
        expect(out).not.to.contain(secret);
        expect(out).to.contain(REDACTED);
      });
    }

    it('leaves texts without secrets as they are', () => {
      for (const text of [
        'GET /snap 200',
        'capture recorded',
        'http://fixture.localhost:4000/page.html?full_page=true',
        'The access_token is unknown or was revoked; use the key shown when the account was created or last rotated.',
        'job abc123 failed: page_load_failed',
        'key_hint sk-o…3f9a',
      ]) {
        expect(redactText(text)).to.equal(text);
      }
    });
  });

  describe('redact (fields)', () => {
    it('redacts the values of secret fields, whatever their case or separator, and nested values beneath them', () => {
      const out = redact({
        access_token: 'a1',
        Authorization: 'Bearer a2',
        'proxy-authorization': 'Basic a3',
        apiKey: 'a4',
        api_key: 'a5',
        'x-api-key': 'a6',
        key: 'a7',
        password: 'a8',
        proxyPassword: 'a9',
        secret: 'a10',
        token: 'a11',
        secrets: ['a12', 'a13'],
        headers: { cookie: 'a14', accept: 'text/html' },
        credentials: { user: 'a15', pass: 'a16' },
      }) as Record<string, unknown>;
      const text = JSON.stringify(out);
      for (let i = 1; i <= 16; i++) expect(text).not.to.match(new RegExp(`"a${i}"`));
      expect((out.headers as Record<string, unknown>).accept).to.equal('text/html');
    });

    it('keeps flags, hints, ids and counts that only sound alike', () => {
      const fields = { has_password: true, key_hint: 'sk-o…3f9a', job_id: 'j1', input_tokens: 120, max_tokens: 50, keywords: 'x', monkey: 'y' };
      expect(redact(fields)).to.deep.equal(fields);
    });

    it('redacts secret shapes inside other strings, errors (message and stack) and arrays', () => {
      const err = new Error('proxy http://me:topsecret1@127.0.0.1:9 refused');
      const out = JSON.stringify(redact({ err, list: ['Bearer abcdefgh123'], note: 'whsec_abcdef123456' }));
      expect(out).not.to.contain('topsecret1');
      expect(out).not.to.contain('abcdefgh123');
      expect(out).not.to.contain('whsec_abcdef123456');
      expect(out).to.contain('refused');
    });

    it('survives circular structures', () => {
      const a: Record<string, unknown> = { name: 'a' };
      a.self = a;
      expect(redact(a)).to.deep.equal({ name: 'a', self: '[Circular]' });
    });
  });

  describe('logRecord and formatLine', () => {
    const bindings = { nodeID: 'node-1', ns: '', mod: 'capture' };

    it('makes one record: time, level, node, module, msg, the ambient ids, the call fields, the error', () => {
      const err = Object.assign(new Error('boom at http://u:p4ssw0rd@h.test/'), { code: 500, type: 'internal_error' });
      const record = withLogContext({ request_id: 'req_1' }, () =>
        withLogContext({ job_id: 'job_1' }, () =>
          logRecord('error', [{ ms: 12, password: 'p4ssw0rd' }, 'capture', 'failed', err], bindings, undefined, new Date(0)),
        ),
      );
      expect(record).to.include({
        time: '1970-01-01T00:00:00.000Z',
        level: 'error',
        node: 'node-1',
        module: 'capture',
        msg: 'capture failed',
        request_id: 'req_1',
        job_id: 'job_1',
        ms: 12,
        password: REDACTED,
      });
      expect(record).not.to.have.property('ns');
      expect(record.err).to.include({ name: 'Error', code: 500, type: 'internal_error' });
      expect(JSON.stringify(record)).not.to.contain('p4ssw0rd');
    });

    it("puts objects after the message in data (Moleculer's own lines), redacted", () => {
      const record = logRecord(
        'debug',
        ['Call action locally.', { action: 'billing.authenticate', params: { token: 'sk_abcdefghijklmnopqrst' } }],
        bindings,
        {},
      );
      expect(record.msg).to.equal('Call action locally.');
      expect(record.data).to.deep.equal({ action: 'billing.authenticate', params: { token: REDACTED } });
    });

    it('withOnlyLogContext drops the ids around it', () => {
      const record = withLogContext({ request_id: 'req_1' }, () => withOnlyLogContext({ job_id: 'job_2' }, () => logRecord('info', ['x'], bindings)));
      expect(record).to.include({ job_id: 'job_2' });
      expect(record).not.to.have.property('request_id');
    });

    it('writes JSON as one line, and text as a readable line', () => {
      const record = logRecord('info', [{ status: 200 }, 'GET /snap 200'], bindings, { request_id: 'req_9' }, new Date(0));
      const json = formatLine(record, 'json');
      expect(json).not.to.contain('\n');
      expect(JSON.parse(json)).to.deep.equal(record);
      expect(formatLine(record, 'text')).to.equal('[1970-01-01T00:00:00.000Z] INFO  node-1/CAPTURE: GET /snap 200 request_id=req_9 status=200');
    });

    it('writes a text line of no node (before there is one) with its module only, never "undefined"', () => {
      const record = logRecord('fatal', ['Configuration error: PORT must be a number'], { mod: 'serve' }, {}, new Date(0));
      expect(formatLine(record, 'text')).to.equal('[1970-01-01T00:00:00.000Z] FATAL SERVE: Configuration error: PORT must be a number');
    });
  });

  describe('on a real broker', () => {
    let lines: string[];
    let broker: ServiceBroker;
    const seen: { requestID?: string | null; metaRequestId?: unknown }[] = [];

    before(async () => {
      lines = [];
      const config = loadConfig({ LOG_LEVEL: 'info', NODE_ID: 'log-test' });
      broker = new ServiceBroker({ ...brokerOptions(config, { write: (l: string) => lines.push(l) }) });
      broker.createService({
        name: 'probe',
        actions: {
          async echo(ctx) {
            seen.push({ requestID: ctx.requestID, metaRequestId: (ctx.meta as Record<string, unknown>).requestId });
            this.logger.info({ upstream: 'http://user:proxy-pw-123@127.0.0.1:1/' }, 'echo', ctx.params);
            return 'ok';
          },
          async debugOnly() {
            this.logger.debug('not written at info');
            return 'ok';
          },
        },
      });
      await broker.start();
    });
    after(() => broker.stop());

    it('uses LineLogger as the broker logger', () => {
      expect(brokerOptions(loadConfig({})).logger).to.be.instanceOf(LineLogger);
    });

    it('writes every line as one redacted JSON object with node and module, and honours the level', async () => {
      lines.length = 0;
      await broker.call('probe.echo', { access_token: 'sk_paramSecret0123456789' });
      await broker.call('probe.debugOnly');
      expect(lines).to.have.length(1);
      const line = lines[0] ?? '';
      expect(line.endsWith('\n')).to.equal(true);
      const record = JSON.parse(line);
      expect(record).to.include({ level: 'info', node: 'log-test', module: 'probe', msg: 'echo' });
      expect(line).not.to.contain('proxy-pw-123');
      expect(line).not.to.contain('sk_paramSecret0123456789');
    });

    it('passes the request id of the work a call is made under into the Moleculer context', async () => {
      lines.length = 0;
      seen.length = 0;
      await withLogContext({ request_id: 'req_from_http' }, () => broker.call('probe.echo', {}));
      expect(seen[0]).to.deep.equal({ requestID: 'req_from_http', metaRequestId: 'req_from_http' });
      expect(JSON.parse(lines[0] ?? '')).to.include({ request_id: 'req_from_http' });
    });

    it('logs an action called with a request id (as from another node) under that id', async () => {
      lines.length = 0;
      await broker.call('probe.echo', {}, { meta: { requestId: 'req_from_elsewhere' } });
      expect(JSON.parse(lines[0] ?? '')).to.include({ request_id: 'req_from_elsewhere' });
    });
  });
});
