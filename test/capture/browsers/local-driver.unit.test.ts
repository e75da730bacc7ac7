/**
 * The local ChromeDriver's browser, tied to it (local-driver.ts): the parent-death signal is set
 * on the browser itself, so a one-line launcher script (Debian's /usr/bin/chromium-headless-shell)
 * is read through to the binary it runs, and anything else is taken as the browser; the script
 * ChromeDriver is given runs it under setpriv. What the tie does to real processes (a group
 * SIGTERM mid-capture, a SIGKILL, a ChromeDriver killed) is in test/system/shutdown.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { browserItself, canTieToProcess, removeFoldersOfEndedProcesses, tiedBrowserBinary } from '../../../services/capture/browsers/local-driver';
import { tempDir } from '../../support/backends';

describe('the local browser tied to its ChromeDriver', () => {
  const dir = tempDir('local-driver-');
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    const at = path.join(dir, name);
    fs.writeFileSync(at, text, { mode: 0o755 });
    return at;
  };
  const binary = file('browser', '\x7fELF not really a browser');

  it('reads a one-line launcher script through to the binary it runs, with or without exec', () => {
    expect(browserItself(file('debian.sh', `#!/bin/sh -e\n\n${binary} "$@"\n`))).to.equal(binary);
    expect(browserItself(file('exec.sh', `#!/bin/sh\n# a launcher\nexec ${binary} "$@"\n`))).to.equal(binary);
  });

  it('takes anything else as the browser: a binary, a launcher that does more, one naming a file that is not there, a missing file', () => {
    expect(browserItself(binary)).to.equal(binary);
    const busy = file('busy.sh', `#!/bin/sh\nexport CHROMIUM_FLAGS=--foo\n${binary} "$@"\n`);
    expect(browserItself(busy)).to.equal(busy);
    const gone = file('gone.sh', `#!/bin/sh\n${path.join(dir, 'nothing-here')} "$@"\n`);
    expect(browserItself(gone)).to.equal(gone);
    expect(browserItself(path.join(dir, 'absent'))).to.equal(path.join(dir, 'absent'));
  });

  it('gives ChromeDriver a script that runs the browser itself under setpriv with the parent-death signal', function () {
    if (!canTieToProcess()) this.skip();
    const script = tiedBrowserBinary(file('launcher.sh', `#!/bin/sh\n${binary} "$@"\n`));
    expect(fs.statSync(script).mode & 0o111, 'executable').to.not.equal(0);
    // In a folder only this user may enter, not at a name another user could take first in the shared temporary folder.
    const folder = fs.statSync(path.dirname(script));
    expect(folder.mode & 0o777, 'the folder is private').to.equal(0o700);
    expect(folder.uid).to.equal(process.getuid?.());
    expect(path.dirname(script)).to.not.equal(os.tmpdir());
    expect(fs.readFileSync(script, 'utf8')).to.contain(`exec /usr/bin/setpriv --pdeathsig KILL -- '${binary}' "$@"`);
    expect(tiedBrowserBinary(file('launcher.sh', `#!/bin/sh\n${binary} "$@"\n`)), 'the same script for the same browser').to.equal(script);
  });

  it("removes the launcher folders a killed process left (its process has ended), never a running process's or anything else", () => {
    const tmp = tempDir('launcher-folders-');
    try {
      // The id of a process that has ended.
      const ended = spawnSync(process.execPath, ['-e', '']).pid as number;
      const make = (name: string) => {
        fs.mkdirSync(path.join(tmp, name));
        fs.writeFileSync(path.join(tmp, name, 'browser-0123456789abcdef.sh'), '#!/bin/sh\n');
      };
      // This process's pid namespace, as the folders are named by it.
      const ns = /\[(\d+)\]/.exec(fs.readlinkSync('/proc/self/ns/pid'))?.[1] as string;
      const kept = [
        `snapservice-browser-${ns}-${process.pid}-XyZ789`,
        `snapservice-browser-${ns}-1-init00`,
        // Another pid namespace's (a container sharing /tmp): whether its process ended is not known here.
        `snapservice-browser-1${ns}-${ended}-AbC123`,
        'snapservice-browser-Qw3rty',
        `other-${ns}-${ended}-AbC123`,
      ];
      for (const name of [...kept, `snapservice-browser-${ns}-${ended}-AbC123`]) make(name);
      expect(removeFoldersOfEndedProcesses(tmp)).to.deep.equal([`snapservice-browser-${ns}-${ended}-AbC123`]);
      expect(fs.readdirSync(tmp).sort()).to.deep.equal(kept.sort());
      // Where the namespace cannot be read, nothing is swept.
      expect(removeFoldersOfEndedProcesses(tmp, '0')).to.deep.equal([]);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });
});
