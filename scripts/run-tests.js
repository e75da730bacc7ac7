#!/usr/bin/env node
/**
 * `npm test` after setup: lint, then every mocha test. The last line printed is mocha's
 * totals as "N passed, N failed" (see test/support/totals-reporter.ts).
 */
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const lint = spawnSync(process.execPath, [path.join(root, 'node_modules', '@biomejs', 'biome', 'bin', 'biome'), 'lint', '.'], {
  cwd: root,
  stdio: 'inherit',
});
if (lint.status !== 0) {
  console.error('Lint failed; fix the findings above (npm run lint).');
  console.log('0 passed, 1 failed');
  process.exit(1);
}
const mocha = spawnSync(process.execPath, [path.join(root, 'node_modules', 'mocha', 'bin', 'mocha.js'), ...process.argv.slice(2)], {
  cwd: root,
  stdio: 'inherit',
});
process.exit(mocha.status ?? 1);
