/**
 * stack.json is rewritten every second while other commands read it: a reader in another
 * process, reading as fast as it can while the file is rewritten, never finds it cut short.
 * It holds the run's SECRETS_KEY and DATABASE_URL: only its owner may read it.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { writeStateFile } from '../../ops/state-file';

describe('the stack state file', function () {
  this.timeout(20_000);

  it('is never read half-written while it is rewritten', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'state-file-'));
    const file = path.join(dir, 'stack.json');
    const state = { services: Array.from({ length: 400 }, (_, i) => ({ name: `service-${i}`, pid: 10_000 + i, port: 20_000 + i })) };
    writeStateFile(file, state);
    const reader = spawn(
      process.execPath,
      [
        '-e',
        `const fs = require('fs'); let reads = 0, bad = 0; const end = Date.now() + 1500;
         while (Date.now() < end) { reads++; try { JSON.parse(fs.readFileSync(${JSON.stringify(file)}, 'utf8')); } catch { bad++; } }
         process.stdout.write(JSON.stringify({ reads, bad }));`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    reader.stdout.on('data', (d) => (out += d));
    const done = new Promise((r) => reader.once('exit', r));
    let writes = 0;
    while (reader.exitCode === null) {
      writeStateFile(file, { ...state, writes: ++writes });
      await new Promise((r) => setImmediate(r));
    }
    await done;
    const { reads, bad } = JSON.parse(out) as { reads: number; bad: number };
    fs.rmSync(dir, { recursive: true, force: true });
    expect(reads, 'reads made').to.be.greaterThan(1000);
    expect(writes, 'writes made').to.be.greaterThan(100);
    expect(bad, `of ${reads} reads during ${writes} writes`).to.equal(0);
  });

  it('is readable and writable by its owner only (0600), also where it replaces a file anyone could read', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'state-file-'));
    const file = path.join(dir, 'stack.json');
    const umask = process.umask(0o022);
    try {
      fs.writeFileSync(file, '{}', { mode: 0o644 });
      writeStateFile(file, { env: { SECRETS_KEY: 'k' } });
      expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
      writeStateFile(file, { env: { SECRETS_KEY: 'k2' } });
      expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
      expect(fs.readdirSync(dir)).to.deep.equal(['stack.json']);
    } finally {
      process.umask(umask);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
