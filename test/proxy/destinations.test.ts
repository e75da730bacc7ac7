/**
 * The storage destinations' rules around the network: an S3 endpoint is an address a user
 * chose, so its host passes the egress policy before anything connects (a name the test DNS
 * server maps to loopback, and a loopback literal, are refused; the local server behind
 * them sees no request), and the secret is stored sealed (the table never holds it in the
 * clear). Against a migrated SQLite database and a counting HTTP server on loopback.
 */
import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { DestinationRepository } from '../../services/proxy/destination-repository';
import { StorageDestinations } from '../../services/proxy/destinations';
import { EgressPolicy, resolverLookup } from '../../services/shared/egress';
import { SecretBox } from '../../services/shared/secrets';
import { tempDir } from '../support/backends';
import { type DnsServer, startDnsServer } from '../support/dns-server';
import { migratedSqlite } from '../support/sqlite';

/** The service error a call throws. */
async function errorOfAsync(fn: () => Promise<unknown>): Promise<{ type: string; message: string }> {
  try {
    await fn();
  } catch (err) {
    return err as { type: string; message: string };
  }
  throw new Error('expected an error');
}

describe('storage destinations: the egress policy before connecting, the secret sealed', function () {
  this.timeout(30_000);
  let dns: DnsServer;
  let server: http.Server;
  let port = 0;
  let hits = 0;
  let db: Awaited<ReturnType<typeof migratedSqlite>>;
  const secrets = new SecretBox({ secretsKey: 'a'.repeat(64), dataDir: tempDir(), database: { client: 'better-sqlite3' } as never });

  before(async () => {
    dns = await startDnsServer((name, type) => (name === 'bucket.internal.test' && type === 'A' ? ['127.0.0.1'] : null));
    server = http.createServer((_req, res) => {
      hits++;
      res.statusCode = 200;
      res.end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
    db = await migratedSqlite();
  });
  after(async () => {
    await dns.stop();
    await new Promise<void>((r) => server.close(() => r()));
    await db.drop();
  });

  const destinations = (allowPrivateNetworks: boolean) =>
    new StorageDestinations({
      repository: new DestinationRepository(db.db),
      secrets,
      policy: new EgressPolicy(allowPrivateNetworks, resolverLookup([dns.address])),
      files: { get: async () => null },
      gcsApiEndpoint: null,
      timeoutMs: 2_000,
    });
  const input = (endpoint: string) => ({
    name: 'internal',
    type: 's3' as const,
    endpoint,
    bucket: 'shots',
    access_key_id: 'AKIAEXAMPLE',
    secret_access_key: 'sealed-secret-value',
  });

  it('refuses an endpoint whose name resolves to a loopback address, and a loopback literal, before connecting', async () => {
    const byName = await errorOfAsync(() => destinations(false).create({ accountId: 'acct_a', input: input(`http://bucket.internal.test:${port}`) }));
    expect(byName.type).to.equal('invalid_storage_destination');
    expect(byName.message).to.include('bucket.internal.test').and.include('127.0.0.1').and.include('refused');
    const literal = await errorOfAsync(() => destinations(false).create({ accountId: 'acct_a', input: input(`http://127.0.0.1:${port}`) }));
    expect(literal.type).to.equal('invalid_storage_destination');
    expect(hits, 'nothing reached the server').to.equal(0);
    expect(dns.questions).to.include('A bucket.internal.test');
    expect(await db.db('storage_destinations').count({ n: '*' }).first()).to.deep.equal({ n: 0 });
  });

  it('a name that does not resolve is storage_unreachable; nothing stored', async () => {
    const err = await errorOfAsync(() => destinations(false).create({ accountId: 'acct_a', input: input('https://nowhere.invalid') }));
    expect(err.type).to.equal('storage_unreachable');
    expect(err.message).to.include('nowhere.invalid');
  });

  it('stores the secret sealed: the row holds no clear text, and the record neither', async () => {
    // With private networks allowed (as in local use), the local server answers the test's PUT and DELETE.
    const created = await destinations(true).create({ accountId: 'acct_a', input: input(`http://127.0.0.1:${port}`) });
    expect(hits).to.equal(2);
    expect(JSON.stringify(created)).to.not.include('sealed-secret-value');
    const row = await db.db('storage_destinations').where({ name: 'internal' }).first();
    expect(JSON.stringify(row)).to.not.include('sealed-secret-value');
    expect(secrets.open(row.secret_encrypted as string)).to.equal('sealed-secret-value');
    // Another account does not see it.
    expect((await errorOfAsync(() => destinations(true).get('acct_b', 'internal'))).type).to.equal('not_found');
  });

  it('removes a destination once: removals side by side answer it removed once and 404 to the rest', async () => {
    const created = await destinations(true).create({ accountId: 'acct_c', input: { ...input(`http://127.0.0.1:${port}`), name: 'twice' } });
    expect(created.destination.name).to.equal('twice');
    // Each reads the row before either deletes it (one connection: the reads are queued first).
    const answers = await Promise.allSettled([0, 1, 2].map(() => destinations(true).remove('acct_c', 'twice')));
    expect(answers.filter((a) => a.status === 'fulfilled').map((a) => (a as PromiseFulfilledResult<unknown>).value)).to.deep.equal([
      { removed: true, name: 'twice' },
    ]);
    expect(answers.filter((a) => a.status === 'rejected').map((a) => ((a as PromiseRejectedResult).reason as { type: string }).type)).to.deep.equal([
      'not_found',
      'not_found',
    ]);
  });
});
