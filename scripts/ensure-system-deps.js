#!/usr/bin/env node
'use strict';
/**
 * ensure-system-deps.js — make sure the non-npm things the service needs exist:
 *
 *   - Chromium        (CHROME_BIN,       default /usr/bin/chromium-headless-shell)
 *                                                     Debian package `chromium-headless-shell`
 *                     (Chromium's headless shell: the same Blink, but no browser UI behind each
 *                     window, so a capture's fresh context costs far less; `chromium` comes along
 *                     with chromium-driver and can be chosen with CHROME_BIN=/usr/bin/chromium)
 *   - chromedriver    (CHROMEDRIVER_BIN, default /usr/bin/chromedriver)  Debian package `chromium-driver`
 *   - java (>= 11)    (JAVA_BIN,         default `java` on PATH)         Debian package `openjdk-17-jre-headless`
 *   - Selenium Grid 4 server jar (SELENIUM_JAR, default grid/vendor/selenium-server-4.20.0.jar),
 *     taken out of the npm package @nightwatch/selenium-server@4.20.0 with `npm pack` + `tar`
 *     (that package's own install script downloads from the internet, so it is never installed).
 *
 *   - Fonts for the world's scripts and colour emoji: the Debian packages of FONT_PACKAGES below
 *     (CJK, Korean, Indic, Thai, Arabic, Hebrew, ...; without them such text is drawn as empty boxes
 *     and emoji as outlines), then `fc-cache` so Chromium sees them.
 *
 * Optional extra: Debian package `webext-ublock-origin-chromium` is added to the same apt call when
 * the package index has it (its absence is tolerated).
 *
 * Fast path: when everything exists this does a handful of stat() calls and returns (a few ms).
 *
 * Usage:
 *   const { ensureSystemDeps } = require('./scripts/ensure-system-deps');
 *   const deps = await ensureSystemDeps({ log: console.log });
 *   // deps = { chromeBin, chromedriverBin, javaBin, seleniumJar, ublockDir|null, installed: [...] }
 *
 *   node scripts/ensure-system-deps.js        # prints a JSON summary, exit code 1 on failure
 *
 * Only Node's standard library is used, so it runs before `npm run build`.
 */

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');

const REPO_ROOT = path.resolve(__dirname, '..');
const SELENIUM_VERSION = '4.20.0';
const SELENIUM_NPM_PKG = `@nightwatch/selenium-server@${SELENIUM_VERSION}`;
const DEFAULT_CHROME_BIN = '/usr/bin/chromium-headless-shell';
const DEFAULT_CHROME_PKG = 'chromium-headless-shell';
const DEFAULT_CHROMEDRIVER_BIN = '/usr/bin/chromedriver';
const DEFAULT_SELENIUM_JAR = path.join(REPO_ROOT, 'grid', 'vendor', `selenium-server-${SELENIUM_VERSION}.jar`);
const GRID_GITIGNORE = path.join(REPO_ROOT, 'grid', '.gitignore');
const UBLOCK_PKG = 'webext-ublock-origin-chromium';
const UBLOCK_DIRS = ['/usr/share/chromium/extensions/ublock-origin', '/usr/share/webext/ublock-origin-chromium'];
const JAVA_PKG = 'openjdk-17-jre-headless';

/**
 * The fonts every browser that captures gets, as Debian bookworm packages: each with one file it
 * installs (the fast path stats it) and what it covers. This is the one list: grid/Dockerfile.node
 * and the table in docs/operations.md ("Fonts for every script") name the same packages
 * (test/ops/font-packages.unit.test.ts), and test/ops/fonts.test.ts checks that fontconfig finds
 * a font for each script. `patterns` are fontconfig patterns that each match a font once the package
 * is there, checked with `fc-list` only when its file is not where Debian puts it and apt cannot
 * install it (another distribution, fonts installed by hand).
 */
const FONT_PACKAGES = [
  {
    pkg: 'fontconfig',
    file: '/usr/bin/fc-cache',
    covers: 'no script: `fc-cache` and `fc-list`; builds the font cache Chromium reads at start',
    patterns: [],
  },
  {
    pkg: 'fonts-liberation',
    file: '/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf',
    covers: 'Latin, Greek, Cyrillic, with the metrics of Arial, Times New Roman and Courier New',
    patterns: [':lang=en', ':lang=el', ':lang=ru'],
  },
  {
    pkg: 'fonts-noto-core',
    file: '/usr/share/fonts/truetype/noto/NotoSansDevanagari-Regular.ttf',
    covers:
      'Devanagari (Hindi, Marathi, Nepali), Bengali, Tamil, Telugu, Gujarati, Gurmukhi, Kannada, Malayalam, Oriya, Sinhala, ' +
      'Thai, Lao, Khmer, Myanmar, Arabic, Urdu, Persian, Hebrew, Armenian, Georgian, Ethiopic, and most other living scripts',
    patterns: ['hi', 'bn', 'ta', 'te', 'gu', 'pa', 'kn', 'ml', 'th', 'ar', 'he'].map((lang) => `:lang=${lang}`),
  },
  {
    pkg: 'fonts-noto-cjk',
    file: '/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc',
    covers: 'Chinese (Simplified and Traditional), Japanese, Korean',
    patterns: [':lang=zh-cn', ':lang=zh-tw', ':lang=ja', ':lang=ko'],
  },
  {
    pkg: 'fonts-noto-color-emoji',
    file: '/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf',
    covers: 'emoji, in colour',
    patterns: [':charset=1f600:color=True'],
  },
];

function isExecutable(p) {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** Resolve a command name on PATH (absolute paths are checked as-is). */
function which(cmd) {
  if (cmd.includes('/')) return isExecutable(cmd) ? cmd : null;
  for (const dir of (process.env.PATH || '/usr/local/bin:/usr/bin:/bin').split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, cmd);
    if (isExecutable(p)) return p;
  }
  return null;
}

function jarLooksValid(p) {
  try {
    const st = fs.statSync(p);
    if (!st.isFile() || st.size < 1024 * 1024) return false;
    // The Selenium jar starts with a shell-script preamble, so look for the zip
    // end-of-central-directory record (PK\x05\x06) in the last bytes instead of a leading "PK".
    const fd = fs.openSync(p, 'r');
    try {
      const n = Math.min(st.size, 66000);
      const buf = Buffer.alloc(n);
      fs.readSync(fd, buf, 0, n, st.size - n);
      return buf.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06])) !== -1;
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return false;
  }
}

/** Run a command, collect output; resolves {code, out} (never rejects on non-zero exit). */
function run(cmd, args, { env, cwd, timeoutMs = 15 * 60 * 1000 } = {}) {
  return new Promise((resolve) => {
    let out = '';
    let child;
    try {
      child = spawn(cmd, args, { env: { ...process.env, ...env }, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (err) {
      resolve({ code: -1, out: String(err) });
      return;
    }
    const keep = (d) => {
      out += d.toString();
      if (out.length > 200000) out = out.slice(-100000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    const timer = setTimeout(() => {
      out += `\n[ensure-system-deps] ${cmd} timed out after ${timeoutMs} ms, killing it`;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (err) => {
      out += `\n${err}`;
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code === null ? -1 : code, signal, out });
    });
  });
}

function tail(text, n = 25) {
  return text.trim().split('\n').slice(-n).join('\n');
}

function aptUsable() {
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  return isRoot && which('apt-get') !== null;
}

async function aptCandidateExists(pkg) {
  const r = await run('apt-cache', ['policy', pkg], { timeoutMs: 60000 });
  if (r.code !== 0) return false;
  const m = /Candidate:\s*(\S+)/.exec(r.out);
  return Boolean(m && m[1] !== '(none)');
}

async function aptInstall(pkgs, log) {
  const env = { DEBIAN_FRONTEND: 'noninteractive' };
  const lockOpt = ['-o', 'DPkg::Lock::Timeout=300'];
  log(`[ensure-system-deps] apt-get update`);
  const upd = await run('apt-get', [...lockOpt, 'update'], { env });
  if (upd.code !== 0) {
    log(`[ensure-system-deps] apt-get update failed (exit ${upd.code}), trying install anyway:\n${tail(upd.out, 10)}`);
  }
  const wanted = [...pkgs];
  if (await aptCandidateExists(UBLOCK_PKG)) wanted.push(UBLOCK_PKG);
  else log(`[ensure-system-deps] optional package ${UBLOCK_PKG} not available, skipping it`);

  const install = (list) => run('apt-get', [...lockOpt, 'install', '-y', '--no-install-recommends', ...list], { env });
  log(`[ensure-system-deps] apt-get install -y --no-install-recommends ${wanted.join(' ')}`);
  let r = await install(wanted);
  let done = wanted;
  if (r.code !== 0 && wanted.includes(UBLOCK_PKG)) {
    log(`[ensure-system-deps] install with ${UBLOCK_PKG} failed, retrying without it`);
    r = await install(pkgs);
    done = pkgs;
  }
  if (r.code !== 0) {
    throw new Error(
      `apt-get install ${pkgs.join(' ')} failed (exit ${r.code}). ` +
        `Install them by hand: apt-get update && apt-get install -y ${pkgs.join(' ')}\n${tail(r.out)}`,
    );
  }
  return done;
}

/**
 * Whether fontconfig finds what a font package provides although its file is elsewhere (fc-list
 * prints one line per matching font, nothing when none matches).
 */
async function fontsFoundElsewhere(font) {
  if (font.pkg === 'fontconfig') return which('fc-cache') !== null && which('fc-list') !== null;
  if (!which('fc-list')) return false;
  for (const pattern of font.patterns) {
    const r = await run('fc-list', [pattern, 'family'], { timeoutMs: 60000 });
    if (r.code !== 0 || !r.out.trim()) return false;
  }
  return true;
}

/** Refresh fontconfig's cache after fonts were installed, so the next Chromium finds them at once. */
async function refreshFontCache(log) {
  if (!which('fc-cache')) {
    log('[ensure-system-deps] fc-cache not found: Chromium scans the font folders itself at each start');
    return;
  }
  const r = await run('fc-cache', [], { timeoutMs: 5 * 60 * 1000 });
  if (r.code !== 0) log(`[ensure-system-deps] fc-cache failed (exit ${r.code}), fonts are found without the cache:\n${tail(r.out, 10)}`);
}

async function fetchSeleniumJar(dest, log) {
  const npm = which('npm');
  if (!npm) throw new Error(`npm not found on PATH: cannot fetch ${SELENIUM_NPM_PKG} for ${dest}`);
  if (!which('tar')) throw new Error(`tar not found on PATH: cannot extract ${dest}`);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'selenium-jar-'));
  try {
    log(`[ensure-system-deps] npm pack ${SELENIUM_NPM_PKG} (≈34 MB)`);
    const pack = await run(npm, ['pack', SELENIUM_NPM_PKG, '--pack-destination', tmp, '--silent'], {
      cwd: tmp,
      timeoutMs: 10 * 60 * 1000,
    });
    const tgz = fs.readdirSync(tmp).find((f) => f.endsWith('.tgz'));
    if (pack.code !== 0 || !tgz) {
      throw new Error(`npm pack ${SELENIUM_NPM_PKG} failed (exit ${pack.code}):\n${tail(pack.out)}`);
    }
    const member = `package/lib/selenium-server-${SELENIUM_VERSION}.jar`;
    const x = await run('tar', ['-xzf', path.join(tmp, tgz), '-C', tmp, member], { timeoutMs: 5 * 60 * 1000 });
    const extracted = path.join(tmp, member);
    if (x.code !== 0 || !jarLooksValid(extracted)) {
      throw new Error(`could not extract ${member} from ${tgz} (tar exit ${x.code}):\n${tail(x.out)}`);
    }
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    // Copy next to the destination, then rename: atomic, and safe if two processes race here.
    const partial = `${dest}.${process.pid}.partial`;
    fs.copyFileSync(extracted, partial);
    fs.renameSync(partial, dest);
    log(`[ensure-system-deps] Selenium server jar ready: ${dest}`);
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

function ensureGridGitignore(jarPath) {
  // Only relevant when the jar lives in the repo's grid/vendor folder.
  if (path.dirname(path.resolve(jarPath)) !== path.join(REPO_ROOT, 'grid', 'vendor')) return;
  try {
    const cur = fs.existsSync(GRID_GITIGNORE) ? fs.readFileSync(GRID_GITIGNORE, 'utf8') : '';
    if (!/^\/?vendor\/?\s*$/m.test(cur)) {
      fs.mkdirSync(path.dirname(GRID_GITIGNORE), { recursive: true });
      fs.writeFileSync(GRID_GITIGNORE, `${cur}${cur && !cur.endsWith('\n') ? '\n' : ''}vendor/\n`);
    }
  } catch {
    /* read-only checkout: not fatal */
  }
}

/**
 * @param {{log?: (msg: string) => void}} [opts]
 * @returns {Promise<{chromeBin: string, chromedriverBin: string, javaBin: string, seleniumJar: string,
 *   ublockDir: string|null, installed: string[]}>}
 */
async function ensureSystemDeps({ log = () => {} } = {}) {
  const chromeBin = process.env.CHROME_BIN || DEFAULT_CHROME_BIN;
  const chromedriverBin = process.env.CHROMEDRIVER_BIN || DEFAULT_CHROMEDRIVER_BIN;
  const seleniumJar = path.resolve(process.env.SELENIUM_JAR || DEFAULT_SELENIUM_JAR);
  const javaCmd = process.env.JAVA_BIN || 'java';
  const installed = [];

  // --- Debian packages -------------------------------------------------------------------------
  const missing = []; // [{what, path, pkg, font?}]
  if (!isExecutable(chromeBin)) {
    missing.push({ what: 'Chromium', path: chromeBin, pkg: chromeBin === '/usr/bin/chromium' ? 'chromium' : DEFAULT_CHROME_PKG });
  }
  if (!isExecutable(chromedriverBin)) {
    missing.push({ what: 'chromedriver', path: chromedriverBin, pkg: 'chromium-driver' });
  }
  let javaBin = which(javaCmd);
  if (!javaBin) missing.push({ what: 'Java', path: javaCmd, pkg: JAVA_PKG });
  for (const font of FONT_PACKAGES) {
    if (fs.existsSync(font.file)) continue;
    // Elsewhere than Debian puts it, and apt cannot help: enough when fontconfig finds it all the same.
    if (!aptUsable() && (await fontsFoundElsewhere(font))) continue;
    missing.push({ what: font.pkg, path: font.file, pkg: font.pkg, font: true });
  }

  if (missing.length) {
    const pkgs = [...new Set(missing.map((m) => m.pkg))];
    const desc = missing.map((m) => `${m.what} (${m.path})`).join(', ');
    // apt only helps for the default locations; an override pointing elsewhere is the operator's job.
    const custom = missing.filter(
      (m) =>
        (m.what === 'Chromium' && m.path !== DEFAULT_CHROME_BIN && m.path !== '/usr/bin/chromium') ||
        (m.pkg === 'chromium-driver' && m.path !== DEFAULT_CHROMEDRIVER_BIN),
    );
    if (custom.length) {
      throw new Error(
        `Missing ${custom.map((m) => `${m.what} at ${m.path}`).join(', ')} (set by CHROME_BIN/CHROMEDRIVER_BIN). ` +
          `Fix the path, or unset the variable and install the Debian packages: apt-get install -y ${pkgs.join(' ')}`,
      );
    }
    if (!aptUsable()) {
      throw new Error(
        `Missing ${desc}. Install the Debian packages (as root): ` +
          `apt-get update && apt-get install -y --no-install-recommends ${pkgs.join(' ')}` +
          (missing.some((m) => !m.font) ? ` (optionally also ${UBLOCK_PKG}), or set CHROME_BIN / CHROMEDRIVER_BIN / JAVA_BIN.` : '.') +
          (missing.some((m) => m.font)
            ? ' Fonts installed some other way also do, once fontconfig finds a font for each script (docs/operations.md, "Fonts for every script").'
            : ''),
      );
    }
    log(`[ensure-system-deps] missing ${desc}; installing ${pkgs.join(' ')} with apt-get`);
    installed.push(...(await aptInstall(pkgs, log)));
    if (missing.some((m) => m.font)) await refreshFontCache(log);
    const still = missing.filter((m) => (m.pkg === JAVA_PKG ? !which(javaCmd) : m.font ? !fs.existsSync(m.path) : !isExecutable(m.path)));
    if (still.length) {
      throw new Error(
        `apt-get install finished but still missing: ${still.map((m) => `${m.what} (${m.path})`).join(', ')}. ` +
          `Install by hand: apt-get install -y ${pkgs.join(' ')}`,
      );
    }
    javaBin = which(javaCmd);
  }

  // --- Selenium Grid jar -----------------------------------------------------------------------
  ensureGridGitignore(seleniumJar);
  if (!jarLooksValid(seleniumJar)) {
    if (process.env.SELENIUM_JAR && path.resolve(process.env.SELENIUM_JAR) !== DEFAULT_SELENIUM_JAR) {
      log(`[ensure-system-deps] SELENIUM_JAR=${seleniumJar} missing, fetching it there`);
    }
    await fetchSeleniumJar(seleniumJar, log);
    installed.push(`${SELENIUM_NPM_PKG} (jar)`);
  }

  const ublockDir = UBLOCK_DIRS.find((d) => fs.existsSync(d)) || null;
  return { chromeBin, chromedriverBin, javaBin, seleniumJar, ublockDir, installed };
}

/**
 * What only `npm test` needs: promtool (Debian package `prometheus`), which unit-tests the
 * Kubernetes alert rules (test/deploy). kubectl, which renders the manifests, comes with the
 * machine image (Debian's kubectl is too old for their Kustomize); the test says so if absent.
 */
async function ensureTestTools({ log = () => {} } = {}) {
  if (which('promtool')) return [];
  if (!aptUsable()) throw new Error('promtool is missing: apt-get update && apt-get install -y --no-install-recommends prometheus (as root)');
  log('[ensure-system-deps] promtool missing; installing Debian package prometheus for it');
  const env = { DEBIAN_FRONTEND: 'noninteractive' };
  const lockOpt = ['-o', 'DPkg::Lock::Timeout=300'];
  await run('apt-get', [...lockOpt, 'update'], { env });
  const r = await run('apt-get', [...lockOpt, 'install', '-y', '--no-install-recommends', 'prometheus'], { env });
  if (r.code !== 0 || !which('promtool')) throw new Error(`apt-get install prometheus failed (exit ${r.code}):\n${tail(r.out)}`);
  return ['prometheus'];
}

module.exports = {
  ensureSystemDeps,
  ensureTestTools,
  SELENIUM_VERSION,
  DEFAULT_CHROME_BIN,
  DEFAULT_CHROMEDRIVER_BIN,
  DEFAULT_SELENIUM_JAR,
  FONT_PACKAGES,
};

if (require.main === module) {
  const t0 = Date.now();
  ensureSystemDeps({ log: (m) => console.error(m) }).then(
    (res) => {
      console.log(JSON.stringify({ ok: true, ms: Date.now() - t0, ...res }, null, 2));
    },
    (err) => {
      console.error(`[ensure-system-deps] ERROR: ${err.message}`);
      process.exitCode = 1;
    },
  );
}
