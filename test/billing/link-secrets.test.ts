/**
 * link_signing_secrets on a migrated SQLite database, with a controllable clock: a secret is
 * made on first use and kept sealed, verification needs no secret made, and a rotation keeps
 * the old secret verifying for 24 hours (as the webhook secret's), or not at all when revoked.
 */
import { expect } from 'chai';
import type { Knex } from 'knex';
import { LinkSecrets } from '../../services/billing/link-secrets';
import { linkSignature } from '../../services/billing/public/signed-links';
import { SecretBox } from '../../services/shared/secrets';
import { migratedSqlite } from '../support/sqlite';

describe('link signing secrets', () => {
  let db: Knex;
  let drop: () => Promise<void>;
  let secrets: LinkSecrets;
  const clock = { now: Date.UTC(2026, 10, 28, 12) };
  const Q = 'account=acct_1&url=https%3A%2F%2Fexample.com';

  before(async () => {
    const m = await migratedSqlite();
    db = m.db;
    drop = m.drop;
    const box = new SecretBox({ secretsKey: 'ab'.repeat(32), dataDir: m.dir, database: { client: 'better-sqlite3', filename: ':memory:' } });
    secrets = new LinkSecrets(db, box, () => clock.now);
  });
  after(async () => drop());

  it('makes one lsk_ secret per account on first use, stores it sealed only, and answers the same one after', async () => {
    const secret = await secrets.current('acct_1');
    expect(secret).to.match(/^lsk_/);
    expect(await secrets.current('acct_1')).to.equal(secret);
    expect(await secrets.current('acct_2')).not.to.equal(secret);
    const rows = await db('link_signing_secrets');
    expect(JSON.stringify(rows)).not.to.contain(secret);
  });

  it('verifies a signature made with the current secret and refuses another', async () => {
    const secret = await secrets.current('acct_1');
    expect(await secrets.sign('acct_1', Q)).to.equal(linkSignature(secret, Q));
    expect(await secrets.verify('acct_1', Q, linkSignature(secret, Q))).to.equal(true);
    expect(await secrets.verify('acct_1', `${Q}&x=1`, linkSignature(secret, Q))).to.equal(false);
    expect(await secrets.verify('acct_1', Q, linkSignature('lsk_guess', Q))).to.equal(false);
  });

  it('refuses every signature of an account that has no secret, and makes none for it', async () => {
    expect(await secrets.verify('acct_none', Q, linkSignature('', Q))).to.equal(false);
    expect(await db('link_signing_secrets').where({ account_id: 'acct_none' })).to.have.length(0);
  });

  it('keeps the previous secret verifying for 24 hours after a rotation, then refuses it', async () => {
    const old = linkSignature(await secrets.current('acct_1'), Q);
    const rotated = await secrets.rotate('acct_1', false);
    expect(rotated.previous_valid_until).to.equal(new Date(clock.now + 24 * 3600_000).toISOString());
    const fresh = linkSignature(rotated.secret, Q);
    expect(fresh).not.to.equal(old);
    expect(await secrets.verify('acct_1', Q, old), 'old, within the overlap').to.equal(true);
    expect(await secrets.verify('acct_1', Q, fresh)).to.equal(true);
    clock.now += 24 * 3600_000 + 1;
    expect(await secrets.verify('acct_1', Q, old), 'old, after the overlap').to.equal(false);
    expect(await secrets.verify('acct_1', Q, fresh)).to.equal(true);
  });

  it('keeps each old secret verifying until its own time: a second rotation within the day does not cut the first short', async () => {
    const first = linkSignature(await secrets.current('acct_3'), Q);
    const second = linkSignature((await secrets.rotate('acct_3', false)).secret, Q);
    clock.now += 12 * 3600_000;
    const third = linkSignature((await secrets.rotate('acct_3', false)).secret, Q);
    expect(await secrets.verify('acct_3', Q, first), 'the first secret, 12 h into its overlap').to.equal(true);
    expect(await secrets.verify('acct_3', Q, second)).to.equal(true);
    clock.now += 12 * 3600_000 + 1;
    expect(await secrets.verify('acct_3', Q, first), 'the first secret, past its own 24 h').to.equal(false);
    expect(await secrets.verify('acct_3', Q, second), 'the second secret, 12 h into its own').to.equal(true);
    expect(await secrets.verify('acct_3', Q, third)).to.equal(true);
    // A revoking rotation ends every earlier secret at once.
    const fourth = linkSignature((await secrets.rotate('acct_3', true)).secret, Q);
    for (const old of [second, third]) expect(await secrets.verify('acct_3', Q, old)).to.equal(false);
    expect(await secrets.verify('acct_3', Q, fourth)).to.equal(true);
  });

  it('a revoking rotation that races an ordinary one still ends the old secret (each is written over the row it read, or read again)', async () => {
    for (let i = 0; i < 5; i++) {
      const old = linkSignature(await secrets.current('acct_race'), Q);
      const [, revoked] = await Promise.all([secrets.rotate('acct_race', false), secrets.rotate('acct_race', true)]);
      expect(revoked.previous_valid_until).to.equal(null);
      expect(await secrets.verify('acct_race', Q, old), `round ${i + 1}: the secret before both`).to.equal(false);
      expect(await secrets.verify('acct_race', Q, linkSignature(await secrets.current('acct_race'), Q))).to.equal(true);
    }
  });

  it('refuses the previous secret at once when the rotation revokes it', async () => {
    const old = linkSignature(await secrets.current('acct_2'), Q);
    const rotated = await secrets.rotate('acct_2', true);
    expect(rotated.previous_valid_until).to.equal(null);
    expect(await secrets.verify('acct_2', Q, old)).to.equal(false);
    expect(await secrets.verify('acct_2', Q, linkSignature(rotated.secret, Q))).to.equal(true);
  });

  it('a secret sealed under another SECRETS_KEY answers 412 secret_unreadable saying how to make a new one; a rotation makes one, the old left out', async () => {
    await secrets.current('acct_key_changed');
    const dir = (await migratedSqlite()).dir;
    const otherKey = new LinkSecrets(
      db,
      new SecretBox({ secretsKey: 'cd'.repeat(32), dataDir: dir, database: { client: 'better-sqlite3', filename: ':memory:' } }),
      () => clock.now,
    );
    const err = await otherKey.current('acct_key_changed').then(
      () => null,
      (e: { type: string; code: number; message: string }) => e,
    );
    expect(err).to.include({ type: 'secret_unreadable', code: 412 });
    expect(err?.message).to.contain("The account's link signing secret can no longer be read").and.contain('POST /signing_secret/rotate');
    // The rotation opens nothing old; the new secret works, and the old one (unreadable) is not among those that verify.
    const rotated = await otherKey.rotate('acct_key_changed', false);
    expect(await otherKey.current('acct_key_changed')).to.equal(rotated.secret);
    expect(await otherKey.verify('acct_key_changed', Q, linkSignature(rotated.secret, Q))).to.equal(true);
  });
});
