#!/usr/bin/env node
/**
 * Runs before `npm start`, `npm test` and `npm run bench`, so a fresh clone needs no other
 * step: installs npm dependencies when they are missing or older than package-lock.json,
 * installs Chromium, ChromeDriver and the Selenium jar when they are missing (see
 * scripts/ensure-system-deps.js), and builds the TypeScript (incrementally).
 * Plain Node.js: it must run before anything is installed.
 */
'use strict';
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const log = (msg) => process.stderr.write(`[setup] ${msg}\n`);

function run(cmd, args, what) {
  const res = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'], env: process.env });
  if (res.status !== 0) {
    log(`${what} failed (exit ${res.status ?? res.signal}).`);
    process.exit(res.status || 1);
  }
}

function mtime(file) {
  try {
    return fs.statSync(file).mtimeMs;
  } catch {
    return -1;
  }
}

function ensureNodeModules() {
  const installed = path.join(root, 'node_modules', '.package-lock.json');
  const lock = path.join(root, 'package-lock.json');
  const pkg = path.join(root, 'package.json');
  if (mtime(installed) >= Math.max(mtime(lock), mtime(pkg))) return;
  log('installing npm dependencies ...');
  run('npm', ['install', '--no-audit', '--no-fund', '--loglevel=error'], 'npm install');
  // npm may leave the marker older than package.json when nothing changed.
  const now = new Date();
  if (fs.existsSync(installed)) fs.utimesSync(installed, now, now);
}

async function main() {
  ensureNodeModules();
  const { ensureSystemDeps } = require('./ensure-system-deps');
  await ensureSystemDeps({ log });
  // `npm test` also needs its own tools (pretest passes --test).
  if (process.argv.includes('--test')) await require('./ensure-system-deps').ensureTestTools({ log });
  run(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], 'TypeScript build');
}

main().catch((err) => {
  log(err?.message ? err.message : String(err));
  process.exit(1);
});
