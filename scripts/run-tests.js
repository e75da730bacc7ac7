#!/usr/bin/env node
/**
 * `npm test` after setup: lint and the formatter's check, then every mocha test. The last line printed is mocha's
 * totals as "N passed, N failed" (see test/support/totals-reporter.ts).
 */
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const biome = path.join(root, 'node_modules', '@biomejs', 'biome', 'bin', 'biome');
// The linter, then the formatter in check mode: a file not as `npm run format` writes it fails.
for (const step of ['lint', 'format']) {
  const run = spawnSync(process.execPath, [biome, step, '.'], { cwd: root, stdio: 'inherit' });
  if (run.status !== 0) {
    console.error(step === 'lint' ? 'Lint failed; fix the findings above (npm run lint).' : 'Some files are not formatted; run npm run format.');
    console.log('0 passed, 1 failed');
    process.exit(1);
  }
}
const mocha = spawnSync(process.execPath, [path.join(root, 'node_modules', 'mocha', 'bin', 'mocha.js'), ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(mocha.status ?? 1);
