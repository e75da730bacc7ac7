/**
 * grid/config/node-chromium.toml is the one Node configuration: the node image runs it as it
 * is and grid.js writes it with a Grid's own values, so the two browsers cannot drift apart.
 */
import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { gridModule } from '../support/grid';

const ROOT = path.resolve(__dirname, '..', '..', '..');

describe('the Selenium node configuration (grid/config/node-chromium.toml)', () => {
  const file = fs.readFileSync(path.join(ROOT, 'grid', 'config', 'node-chromium.toml'), 'utf8');

  it("holds grid.js's defaults, chrome-args.json's flags included: rendered with them it is the file itself", () => {
    expect(gridModule.renderNodeToml()).to.equal(file);
  });

  it("takes a Grid's own values in place of the file's, at node and driver level, and changes nothing else", () => {
    const rendered = gridModule.renderNodeToml({
      host: '0.0.0.0',
      maxSessions: 5,
      sessionTimeout: 90,
      chromeBin: '/opt/c',
      chromedriverBin: '/opt/d',
      chromeArgs: ['--x'],
    });
    const lines = file.split('\n');
    const changed = rendered.split('\n').filter((line, i) => line !== lines[i]);
    expect(rendered.split('\n')).to.have.length(lines.length);
    expect(changed).to.deep.equal([
      'host = "0.0.0.0"',
      'max-sessions = 5',
      'session-timeout = 90',
      'webdriver-executable = "/opt/d"',
      'max-sessions = 5',
      `stereotype = '{"browserName": "chrome", "platformName": "linux", "goog:chromeOptions": {"binary": "/opt/c", "args": ["--x"]}}'`,
    ]);
  });
});
