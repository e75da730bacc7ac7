'use strict';
// Tests are compiled with the rest of the code (npm test builds first) and run from dist/.
module.exports = {
  spec: process.env.TEST_SPEC ? process.env.TEST_SPEC.split(',') : ['dist/test/**/*.test.js'],
  require: ['dist/test/support/root-hooks.js'],
  reporter: 'dist/test/support/totals-reporter.js',
  timeout: 30000,
  exit: true,
};
