/**
 * A local browser's profile (browser-slot.ts, launchSession): ChromeDriver makes one in the
 * system's temporary folder (org.chromium.Chromium.scoped_dir.*) that neither it nor the browser
 * removes, about 1 MB left by every browser started, replaced or stopped. The service removes it
 * when the browser quits. A real ChromeDriver and Chromium.
 */
import fs from 'node:fs';
import os from 'node:os';
import { expect } from 'chai';
import { launchSession, profileFolderOf } from '../../../services/capture/browsers/browser-slot';

const { DEFAULT_CHROME_BIN, DEFAULT_CHROMEDRIVER_BIN } = require('../../../../scripts/ensure-system-deps.js') as {
  DEFAULT_CHROME_BIN: string;
  DEFAULT_CHROMEDRIVER_BIN: string;
};

describe("a local browser's profile folder", function () {
  this.timeout(60_000);

  it('is removed when the browser quits', async () => {
    const slot = await launchSession({ seleniumUrl: null, chromeBin: DEFAULT_CHROME_BIN, chromedriverBin: DEFAULT_CHROMEDRIVER_BIN, extraArgs: [] }, 1);
    let profile: string;
    try {
      const capabilities = await slot.driver.getCapabilities();
      profile = (capabilities.get('chrome') as { userDataDir: string }).userDataDir;
      expect(profile).to.equal(slot.profileFolder);
      expect(profile.startsWith(`${os.tmpdir()}/org.chromium.Chromium.scoped_dir.`), profile).to.equal(true);
      expect(fs.existsSync(profile)).to.equal(true);
    } finally {
      await slot.quit();
    }
    expect(fs.existsSync(profile), profile).to.equal(false);
  });

  it('removes only a folder ChromeDriver made in the temporary folder, never a profile the operator gave', () => {
    const caps = (userDataDir: unknown) => ({ get: (name: string) => (name === 'chrome' ? { userDataDir } : undefined) });
    expect(profileFolderOf(caps(`${os.tmpdir()}/org.chromium.Chromium.scoped_dir.Ab12Cd`))).to.equal(`${os.tmpdir()}/org.chromium.Chromium.scoped_dir.Ab12Cd`);
    expect(profileFolderOf(caps('/home/ops/chrome-profile'))).to.equal(null);
    expect(profileFolderOf(caps(`${os.tmpdir()}/my-profile`))).to.equal(null);
    expect(profileFolderOf(caps(`${os.tmpdir()}/nested/org.chromium.Chromium.scoped_dir.Ab12Cd`))).to.equal(null);
    expect(profileFolderOf(caps(undefined))).to.equal(null);
  });
});
