#!/usr/bin/env node
'use strict';
/**
 * grid.js — start/stop a local Selenium Grid 4.20 (Debian Chromium + chromedriver) from Node.
 *
 *   const { startGrid } = require('./grid/grid');
 *   const grid = await startGrid({ mode: 'standalone', maxSessions: 2, port: 0, log: console.log });
 *   // grid.url === 'http://127.0.0.1:<port>'  → new Builder().usingServer(grid.url)...
 *   await grid.restartHub();                    // hub mode: the hub SIGKILLed and started again (tests)
 *   await grid.stop();                          // idempotent
 *
 *   node grid/grid.js start [--mode standalone|hub] [--nodes N] [--max-sessions M] [--port P]
 *                           [--session-timeout S] [--host H]
 *   node grid/grid.js node-config [--max-sessions M]     # print the rendered node TOML
 *
 * Every Java process is started in its own process group; stop() signals the whole group
 * (java + chromedriver + chromium), waits for it to be gone and SIGKILLs stragglers.
 * Children are also killed when this process exits ('exit' event) and, through a tiny
 * watchdog process, even when it dies abruptly (SIGKILL, crash, unhandled signal).
 * Java logs go to files in a temp dir (printed on failure), never to our stdout.
 *
 * Only Node's standard library is used, so this runs before/without a TypeScript build.
 */

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const net = require('node:net');
const { spawn } = require('node:child_process');
const { ensureSystemDeps, DEFAULT_CHROME_BIN, DEFAULT_CHROMEDRIVER_BIN } = require('../scripts/ensure-system-deps');
const { waitReady } = require('./wait-ready');

const CONFIG_DIR = path.join(__dirname, 'config');
const GRID_TOML = path.join(CONFIG_DIR, 'grid.toml');
const NODE_TOML = path.join(CONFIG_DIR, 'node-chromium.toml');

/** Chromium flags without which Chromium hangs on a closed network (shared with the capture service). */
const CHROME_ARGS = require('./config/chrome-args.json');

const DEFAULTS = {
  chromeBin: DEFAULT_CHROME_BIN,
  chromedriverBin: DEFAULT_CHROMEDRIVER_BIN,
  maxSessions: 2,
  sessionTimeout: 60,
  host: '127.0.0.1',
};

// ------------------------------------------------------------------------------------------------
// Node TOML
// ------------------------------------------------------------------------------------------------

const tomlStr = (s) => JSON.stringify(String(s)); // TOML basic strings accept JSON escapes
const tomlLiteral = (s) => {
  if (s.includes("'") || s.includes('\n')) return tomlStr(s);
  return `'${s}'`;
};

/** JSON on one line with ", " and ": " separators (readable inside TOML). */
function oneLineJson(v) {
  if (Array.isArray(v)) return `[${v.map(oneLineJson).join(', ')}]`;
  if (v && typeof v === 'object') {
    return `{${Object.entries(v)
      .map(([k, x]) => `${JSON.stringify(k)}: ${oneLineJson(x)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(v);
}

/**
 * Render the Node TOML: grid/config/node-chromium.toml (the one text, which the node image
 * also uses as it is) with this Grid's values in place of the file's defaults. With the
 * defaults the result is the file itself.
 * @param {{chromeBin?: string, chromedriverBin?: string, maxSessions?: number, sessionTimeout?: number,
 *          host?: string, chromeArgs?: string[]}} [o]
 */
function renderNodeToml(o = {}) {
  const stereotype = {
    browserName: 'chrome',
    platformName: 'linux',
    'goog:chromeOptions': { binary: o.chromeBin || DEFAULTS.chromeBin, args: o.chromeArgs || CHROME_ARGS },
  };
  const values = {
    host: tomlStr(o.host || DEFAULTS.host),
    'max-sessions': String(o.maxSessions || DEFAULTS.maxSessions),
    'session-timeout': String(o.sessionTimeout || DEFAULTS.sessionTimeout),
    'webdriver-executable': tomlStr(o.chromedriverBin || DEFAULTS.chromedriverBin),
    stereotype: tomlLiteral(oneLineJson(stereotype)),
  };
  const seen = new Set();
  const text = fs.readFileSync(NODE_TOML, 'utf8').replace(/^([\w-]+) = .*$/gm, (line, key) => {
    if (!Object.hasOwn(values, key)) return line;
    seen.add(key);
    return `${key} = ${values[key]}`;
  });
  // A key renamed in the file would otherwise leave its default silently in every Grid.
  const missing = Object.keys(values).filter((k) => !seen.has(k));
  if (missing.length) throw new Error(`${NODE_TOML} has no ${missing.join(', ')} to set`);
  return text;
}

// ------------------------------------------------------------------------------------------------
// helpers
// ------------------------------------------------------------------------------------------------

function freePort(host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, host, () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

function portInUse(port, host = '127.0.0.1') {
  return new Promise((resolve) => {
    const sock = net.connect({ port, host });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
    sock.setTimeout(1000, () => {
      sock.destroy();
      resolve(false);
    });
  });
}

function readTail(file, lines = 30) {
  try {
    const st = fs.statSync(file);
    const len = Math.min(st.size, 64 * 1024);
    const fd = fs.openSync(file, 'r');
    const buf = Buffer.alloc(len);
    fs.readSync(fd, buf, 0, len, st.size - len);
    fs.closeSync(fd);
    return buf.toString('utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

function killGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
  } catch {
    /* already gone */
  }
}

// Watchdog: a detached Node process holding the read end of a pipe from us. When we die in any
// way (even SIGKILL), the pipe closes: it kills the process groups listed in `pidFile`
// (SIGTERM, then SIGKILL after 5 s) and removes the temp dir unless told to keep it.
const WATCHDOG_SRC = `
const fs = require('fs');
const [pidFile, dir, keep] = process.argv.slice(1);
let started = false;
const alive = (g) => { try { process.kill(-g, 0); return true; } catch (e) { return e.code === 'EPERM'; } };
function killAll() {
  if (started) return;
  started = true;
  let pgids = [];
  try { pgids = fs.readFileSync(pidFile, 'utf8').split(/\\s+/).filter(Boolean).map(Number); } catch {}
  for (const g of pgids) { try { process.kill(-g, 'SIGTERM'); } catch {} }
  const t0 = Date.now();
  const iv = setInterval(() => {
    const left = pgids.filter(alive);
    if (left.length && Date.now() - t0 < 5000) return;
    for (const g of left) { try { process.kill(-g, 'SIGKILL'); } catch {} }
    clearInterval(iv);
    setTimeout(() => {
      if (keep !== '1') { try { fs.rmSync(dir, { recursive: true, force: true }); } catch {} }
      process.exit(0);
    }, left.length ? 1000 : 100);
  }, 100);
}
process.stdin.on('data', () => {});
process.stdin.on('end', killAll);
process.stdin.on('error', killAll);
process.stdin.resume();
`;

// ------------------------------------------------------------------------------------------------
// startGrid
// ------------------------------------------------------------------------------------------------

/**
 * @param {object} [opts]
 * @param {'standalone'|'hub'} [opts.mode='standalone']
 * @param {number} [opts.nodes=1]            hub mode: number of Node processes
 * @param {number} [opts.maxSessions=2]      sessions per Node
 * @param {number} [opts.port=4444]          0 = pick a free port
 * @param {string} [opts.host='127.0.0.1']   address the Grid binds to and advertises
 * @param {number} [opts.sessionTimeout=60]  idle WebDriver session timeout (s)
 * @param {number} [opts.timeoutMs=90000]    how long to wait for readiness
 * @param {string[]} [opts.javaArgs]         JVM flags (default: $GRID_JAVA_OPTS or a 512 MB serial-GC heap)
 * @param {boolean} [opts.keepLogs=false]    keep the log dir after a clean stop()
 * @param {(msg: string) => void} [opts.log]
 * @returns {Promise<{url: string, logDir: string, mode: string, nodes: number, maxSessions: number,
 *                    pids: number[], stop: () => Promise<void>}>}
 */
async function startGrid(opts = {}) {
  const o = gridOptions(opts);
  const { mode, nodes, maxSessions, host, log } = o;

  const deps = await ensureSystemDeps({ log });
  const probeHost = host === '0.0.0.0' ? '127.0.0.1' : host;
  const gridPort = await choosePort(o.port, probeHost);
  const url = `http://${probeHost}:${gridPort}`;
  const dir = prepareLogDir(deps, o);
  const grid = new GridProcesses({ ...dir, deps, url, javaArgs: o.javaArgs, keepLogs: o.keepLogs, log });

  try {
    if (mode === 'standalone') launchStandalone(grid, { nodeToml: dir.nodeToml, host, gridPort });
    else await launchHub(grid, { nodeToml: dir.nodeToml, host, probeHost, gridPort, nodes, url });
    await waitUntilReady(grid, { url, mode, nodes, timeoutMs: o.timeoutMs, logDir: dir.logDir, log });
  } catch (err) {
    grid.failed = true;
    await grid.stop().catch(() => {});
    throw err;
  }

  return {
    url,
    logDir: dir.logDir,
    mode,
    nodes: mode === 'hub' ? nodes : 1,
    maxSessions,
    get pids() {
      return grid.procs.map((p) => p.child.pid);
    },
    stop: () => grid.stop(),
    restartHub: () => grid.restartHub({ url, nodes, timeoutMs: o.timeoutMs }),
  };
}

/** startGrid's options with their defaults, checked. */
function gridOptions(opts) {
  const {
    mode = 'standalone',
    nodes = 1,
    maxSessions = DEFAULTS.maxSessions,
    port = 4444,
    host = process.env.GRID_HOST || DEFAULTS.host,
    sessionTimeout = DEFAULTS.sessionTimeout,
    timeoutMs = 90000,
    javaArgs = process.env.GRID_JAVA_OPTS ? process.env.GRID_JAVA_OPTS.trim().split(/\s+/) : ['-Xms64m', '-Xmx512m', '-XX:+UseSerialGC'],
    keepLogs = false,
    log = () => {},
  } = opts;
  if (mode !== 'standalone' && mode !== 'hub') throw new Error(`startGrid: unknown mode ${mode}`);
  if (!(Number.isInteger(nodes) && nodes >= 1)) throw new Error(`startGrid: nodes must be >= 1`);
  if (!(Number.isInteger(maxSessions) && maxSessions >= 1)) throw new Error(`startGrid: maxSessions must be >= 1`);
  if (mode === 'standalone' && nodes !== 1) throw new Error('startGrid: standalone mode has exactly one node');
  return { mode, nodes, maxSessions, port, host, sessionTimeout, timeoutMs, javaArgs, keepLogs, log };
}

/** The Grid's port: a free one for 0, else the one asked for, refused when it is taken. */
async function choosePort(port, probeHost) {
  const gridPort = port === 0 ? await freePort(probeHost) : port;
  if (port !== 0 && (await portInUse(gridPort, probeHost))) {
    throw new Error(`startGrid: port ${gridPort} on ${probeHost} is already in use (another Grid running?)`);
  }
  return gridPort;
}

/** The Grid's temp dir: logs, the browsers' TMPDIR, the node's config and the pid file. */
function prepareLogDir(deps, { maxSessions, sessionTimeout, host }) {
  const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'selenium-grid-'));
  const browserTmp = path.join(logDir, 'tmp'); // Chromium profiles land here (TMPDIR) → removed on stop
  fs.mkdirSync(browserTmp);
  const nodeToml = path.join(logDir, 'node.toml');
  fs.writeFileSync(
    nodeToml,
    renderNodeToml({
      chromeBin: deps.chromeBin,
      chromedriverBin: deps.chromedriverBin,
      maxSessions,
      sessionTimeout,
      host,
    }),
  );
  const pidFile = path.join(logDir, 'pgids');
  return { logDir, browserTmp, nodeToml, pidFile };
}

/**
 * The Grid's java processes (each in its own process group), the watchdog that reaps them if
 * this process dies, and their stop.
 */
class GridProcesses {
  constructor({ logDir, browserTmp, pidFile, deps, url, javaArgs, keepLogs, log }) {
    Object.assign(this, { logDir, browserTmp, pidFile, deps, url, javaArgs, keepLogs, log });
    /** @type {{name: string, child: import('child_process').ChildProcess, logFile: string, exited: boolean, code: any}[]} */
    this.procs = [];
    this.stopping = null;
    this.failed = false; // keep the log dir for the operator when start-up failed

    // Watchdog (see above). Its stdin pipe must not keep our event loop alive.
    const watchdog = spawn(process.execPath, ['-e', WATCHDOG_SRC, pidFile, logDir, keepLogs ? '1' : '0'], {
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    watchdog.unref();
    watchdog.stdin.on('error', () => {});
    if (typeof watchdog.stdin.unref === 'function') watchdog.stdin.unref();
    this.watchdog = watchdog;

    // On a normal exit of this process kill everything at once; the watchdog (whose pipe closes
    // with us) then reaps stragglers and removes the temp dir.
    this.onExit = () => {
      for (const p of this.procs) if (!p.exited) killGroup(p.child.pid, 'SIGKILL');
    };
    process.on('exit', this.onExit);
  }

  writePidFile() {
    try {
      fs.writeFileSync(
        this.pidFile,
        this.procs
          .filter((p) => !p.exited)
          .map((p) => p.child.pid)
          .join('\n'),
      );
    } catch {
      /* log dir removed */
    }
  }

  launch(name, args) {
    const { deps, logDir } = this;
    const logFile = path.join(logDir, `${name}.log`);
    const fd = fs.openSync(logFile, 'a');
    const fullArgs = [...this.javaArgs, '-jar', deps.seleniumJar, ...args];
    fs.writeSync(fd, `# ${deps.javaBin} ${fullArgs.join(' ')}\n`);
    const child = spawn(deps.javaBin, fullArgs, {
      detached: true, // own process group: stop() signals java + chromedriver + chromium together
      stdio: ['ignore', fd, fd],
      env: { ...process.env, TMPDIR: this.browserTmp },
      cwd: logDir,
    });
    fs.closeSync(fd);
    child.unref();
    const rec = { name, args, child, logFile, exited: false, code: null };
    child.on('exit', (code, signal) => {
      rec.exited = true;
      rec.code = signal || code;
    });
    child.on('error', (err) => {
      rec.exited = true;
      rec.code = String(err);
    });
    this.procs.push(rec);
    this.writePidFile();
    this.log(`[grid] started ${name} (pid ${child.pid}), log: ${logFile}`);
    return rec;
  }

  stop() {
    if (this.stopping) return this.stopping;
    const { log } = this;
    this.stopping = (async () => {
      // Nodes first (they deregister), then the hub.
      const order = [...this.procs].reverse();
      for (const p of order) killGroup(p.child.pid, 'SIGTERM');
      const deadline = Date.now() + 10000;
      while (Date.now() < deadline && order.some((p) => groupAlive(p.child.pid))) await sleep(100);
      for (const p of order) {
        if (groupAlive(p.child.pid)) {
          log(`[grid] ${p.name} still alive after SIGTERM, sending SIGKILL`);
          killGroup(p.child.pid, 'SIGKILL');
        }
      }
      const deadline2 = Date.now() + 5000;
      while (Date.now() < deadline2 && order.some((p) => groupAlive(p.child.pid))) await sleep(50);
      process.removeListener('exit', this.onExit);
      try {
        this.watchdog.stdin.end();
        this.watchdog.kill('SIGKILL');
      } catch {
        /* ignore */
      }
      const leftover = order.filter((p) => groupAlive(p.child.pid));
      if (leftover.length) {
        log(`[grid] WARNING: process groups still alive after stop: ${leftover.map((p) => p.child.pid).join(', ')}`);
      }
      if (!this.keepLogs && !this.failed && !leftover.length) fs.rmSync(this.logDir, { recursive: true, force: true });
      else fs.rmSync(this.browserTmp, { recursive: true, force: true });
      log(`[grid] stopped ${this.url}`);
    })();
    return this.stopping;
  }

  /**
   * Hub mode: kills the hub (SIGKILL, as a crash or an evicted pod ends it) and starts it
   * again on the same ports; resolves once its nodes have registered with it again. The new
   * hub knows none of the sessions the old one had started.
   */
  async restartHub({ url, nodes, timeoutMs }) {
    const i = this.procs.findIndex((p) => p.name === 'hub');
    if (i < 0) throw new Error('restartHub: this Grid has no hub (standalone mode)');
    const old = this.procs[i];
    killGroup(old.child.pid, 'SIGKILL');
    const deadline = Date.now() + 10000;
    while (groupAlive(old.child.pid) && Date.now() < deadline) await sleep(50);
    this.procs.splice(i, 1);
    const hub = this.launch('hub', old.args);
    // launch() appends: the hub stays first (pids[0]), and stop() still ends it last.
    this.procs.splice(this.procs.indexOf(hub), 1);
    this.procs.splice(i, 0, hub);
    this.writePidFile();
    // Nodes, not readiness: a node whose slots the old hub's sessions still hold registers busy.
    await waitReady(url, { timeoutMs, minNodes: nodes, intervalMs: 200, nodesOnly: true, giveUp: () => hub.exited && `hub exited (${hub.code})` });
  }

  /** Stops what started and throws why, with the tail of each process's log. */
  async fail(why) {
    this.failed = true;
    await this.stop().catch(() => {});
    const tails = this.procs.map((p) => `--- ${p.name} (${p.logFile}) ---\n${readTail(p.logFile, 25)}`).join('\n');
    throw new Error(`Selenium Grid failed to start: ${why}\nLogs in ${this.logDir}\n${tails}`);
  }
}

/** What a process with browsers is started with: the Grid's and the node's config, its address. */
function nodeArgs(nodeToml, host, port) {
  return ['--config', GRID_TOML, '--config', nodeToml, '--host', host, '--port', String(port)];
}

/** One process, hub and node in one. */
function launchStandalone(grid, { nodeToml, host, gridPort }) {
  grid.launch('standalone', ['standalone', ...nodeArgs(nodeToml, host, gridPort)]);
}

/** A hub, then `nodes` Node processes that register with it over its event bus. */
async function launchHub(grid, { nodeToml, host, probeHost, gridPort, nodes, url }) {
  const pub = await freePort(probeHost);
  let sub = await freePort(probeHost);
  while (sub === pub) sub = await freePort(probeHost);
  const bindAddr = host === '0.0.0.0' ? '*' : host;
  grid.launch('hub', [
    'hub',
    '--config',
    GRID_TOML,
    '--host',
    host,
    '--port',
    String(gridPort),
    '--publish-events',
    `tcp://${bindAddr}:${pub}`,
    '--subscribe-events',
    `tcp://${bindAddr}:${sub}`,
  ]);
  const usedPorts = new Set([gridPort, pub, sub]);
  for (let i = 1; i <= nodes; i++) {
    let nodePort = await freePort(probeHost);
    while (usedPorts.has(nodePort)) nodePort = await freePort(probeHost);
    usedPorts.add(nodePort);
    grid.launch(`node-${i}`, [
      'node',
      ...nodeArgs(nodeToml, host, nodePort),
      '--publish-events',
      `tcp://${probeHost}:${pub}`,
      '--subscribe-events',
      `tcp://${probeHost}:${sub}`,
      '--grid-url',
      url,
    ]);
  }
}

/** Waits for /status to say ready with every node; a process that exits early fails the start. */
async function waitUntilReady(grid, { url, mode, nodes, timeoutMs, logDir, log }) {
  const started = Date.now();
  await waitReady(url, {
    timeoutMs,
    minNodes: mode === 'hub' ? nodes : 1,
    intervalMs: 200,
    giveUp: () => {
      const dead = grid.procs.find((p) => p.exited);
      return dead && `${dead.name} exited early (${dead.code})`;
    },
  }).catch((err) => grid.fail(err.message));
  log(`[grid] ${mode} ready at ${url} in ${Date.now() - started} ms (logs: ${logDir})`);
}

module.exports = { startGrid, renderNodeToml, CHROME_ARGS };

// ------------------------------------------------------------------------------------------------
// CLI
// ------------------------------------------------------------------------------------------------

function parseArgs(argv) {
  const out = { _: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (!a.startsWith('--')) {
      out._.push(a);
      continue;
    }
    const [k, inline] = a.slice(2).split('=', 2);
    const v = inline !== undefined ? inline : argv[++i];
    if (v === undefined) throw new Error(`missing value for --${k}`);
    out[k] = v;
  }
  return out;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const cmd = args._[0] || 'start';
  const int = (v, d) => (v === undefined ? d : Number.parseInt(v, 10));
  if (cmd === 'node-config') {
    process.stdout.write(
      renderNodeToml({
        maxSessions: int(args['max-sessions'], DEFAULTS.maxSessions),
        sessionTimeout: int(args['session-timeout'], DEFAULTS.sessionTimeout),
        chromeBin: process.env.CHROME_BIN,
        chromedriverBin: process.env.CHROMEDRIVER_BIN,
      }),
    );
    return;
  }
  if (cmd !== 'start') {
    console.error(
      'usage: node grid/grid.js start [--mode standalone|hub] [--nodes N] [--max-sessions M] [--port P]\n' +
        '                         [--session-timeout S] [--host H]\n' +
        '       node grid/grid.js node-config [--max-sessions M] [--session-timeout S]',
    );
    process.exitCode = 2;
    return;
  }
  const nodes = int(args.nodes, 1);
  const mode = args.mode || (nodes > 1 ? 'hub' : 'standalone');
  const grid = await startGrid({
    mode,
    nodes,
    maxSessions: int(args['max-sessions'], DEFAULTS.maxSessions),
    port: int(args.port, 4444),
    host: args.host,
    sessionTimeout: int(args['session-timeout'], DEFAULTS.sessionTimeout),
    keepLogs: true,
    log: (m) => console.error(m),
  });
  console.log(grid.url);
  console.error(`[grid] logs: ${grid.logDir} — Ctrl-C to stop`);
  let done = false;
  const shutdown = async (sig) => {
    if (done) return;
    done = true;
    console.error(`[grid] ${sig}: stopping`);
    await grid.stop();
    process.exit(0);
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGHUP', () => shutdown('SIGHUP'));
  // keep the event loop alive
  setInterval(() => {}, 1 << 30);
}

if (require.main === module) {
  main().catch((err) => {
    console.error(`[grid] ERROR: ${err.message}`);
    process.exit(1);
  });
}
