/** Where the key that seals stored secrets comes from, in each running mode. */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '../../services/shared/config';
import { GENERATED_KEY_FILE, SecretBox, generatedSecretsKey } from '../../services/shared/secrets';
import { tempDir } from '../support/backends';
import { errorOf } from '../support/errors';

describe('SecretBox', () => {
  let dir: string;
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('seals with SECRETS_KEY when it is set, and writes no key file', () => {
    const box = new SecretBox(loadConfig({ DATA_DIR: dir, SECRETS_KEY: 'cd'.repeat(32) }));
    const sealed = box.seal('sk-ant-secret');
    expect(sealed).not.to.contain('sk-ant-secret');
    expect(new SecretBox(loadConfig({ DATA_DIR: dir, SECRETS_KEY: 'cd'.repeat(32) })).open(sealed)).to.equal('sk-ant-secret');
    expect(fs.existsSync(path.join(dir, GENERATED_KEY_FILE))).to.equal(false);
  });

  it('in embedded mode without SECRETS_KEY, generates one key into DATA_DIR (0600) on first use and keeps it', () => {
    const config = loadConfig({ DATA_DIR: dir });
    const sealed = new SecretBox(config).seal('sk-or-secret');
    const file = path.join(dir, GENERATED_KEY_FILE);
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    expect(fs.readFileSync(file, 'utf8').trim()).to.match(/^[0-9a-f]{64}$/);
    // A later process (a restart) opens what an earlier one sealed.
    expect(new SecretBox(config).open(sealed)).to.equal('sk-or-secret');
    expect(fs.readdirSync(dir)).to.deep.equal([GENERATED_KEY_FILE]);
  });

  it('gives every caller on one DATA_DIR the same generated key', () => {
    expect(generatedSecretsKey(dir)).to.equal(generatedSecretsKey(dir));
  });

  it('refuses a key file that does not hold a key, naming it', () => {
    fs.writeFileSync(path.join(dir, GENERATED_KEY_FILE), 'garbage\n');
    expect(() => generatedSecretsKey(dir)).to.throw(GENERATED_KEY_FILE);
  });

  it('in the full stack without SECRETS_KEY, refuses to seal or open with 503 secrets_not_configured', () => {
    const box = new SecretBox(loadConfig({ DATA_DIR: dir, DATABASE_URL: 'mysql://root@127.0.0.1:3306/test' }));
    expect(box.configured).to.equal(false);
    const err = errorOf(() => box.seal('sk-secret'));
    expect(err).to.include({ type: 'secrets_not_configured', code: 503 });
    expect(err.message).to.contain('SECRETS_KEY');
    expect(errorOf(() => box.open('v1:a:b:c')).type).to.equal('secrets_not_configured');
  });

  it('a secret sealed under another key answers 412 secret_unreadable, saying what it is and how to store it again', () => {
    const sealed = new SecretBox(loadConfig({ DATA_DIR: dir, SECRETS_KEY: 'cd'.repeat(32) })).seal('proxy-password');
    const other = new SecretBox(loadConfig({ DATA_DIR: dir, SECRETS_KEY: 'ef'.repeat(32) }));
    const err = errorOf(() => other.open(sealed, 'The password stored for proxy 3', 'store the proxy again with PUT /proxies'));
    expect(err).to.include({ type: 'secret_unreadable', code: 412 });
    expect(err.message).to.equal(
      'The password stored for proxy 3 can no longer be read: it was sealed under another SECRETS_KEY than the server runs with now. ' +
        'Store the proxy again with PUT /proxies (or ask the operator to restore the key it was stored under).',
    );
    expect(errorOf(() => other.open('not-sealed')).type).to.equal('secret_unreadable');
  });
});
