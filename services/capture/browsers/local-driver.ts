/**
 * The embedded default's own ChromeDriver and browser (no Grid), started so that they go with
 * this process and only with it:
 *
 * - **Apart from this process's signals.** ChromeDriver starts in a session and process group
 *   of its own (util-linux's `setsid`), and its browser in its group. A signal sent to this
 *   process's group (Ctrl-C in a terminal, `npm start` handing it on, a supervisor or systemd's
 *   `KillMode=control-group` signalling the group) reaches this process alone, which stops as
 *   it does on any SIGTERM (running captures finish, then the browsers are quit), instead of
 *   reaching the browsers too and cutting the captures they run.
 * - **Ended with it, however it ends.** ChromeDriver gets SIGKILL when this process dies and its
 *   browser when ChromeDriver dies (Linux's parent-death signal, set by util-linux's `setpriv`
 *   before each is executed): a SIGKILL, a crash, or a ChromeDriver killed under a capture
 *   leaves no browser behind.
 *
 * The browser is started through a small script (written once per binary, in a folder of this
 * process's own that only its user may enter, removed when it exits) because ChromeDriver runs
 * the binary it is given with its own flags. Not a fixed name in the shared temporary folder:
 * another user could put a script of theirs there first, which the service would then run.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import chrome from 'selenium-webdriver/chrome';

const SETSID = '/usr/bin/setsid';
const SETPRIV = '/usr/bin/setpriv';

/** Whether this machine can start the driver apart and tied (Linux with util-linux); elsewhere it is started as selenium-webdriver starts it. */
export function canTieToProcess(): boolean {
  return process.platform === 'linux' && fs.existsSync(SETSID) && fs.existsSync(SETPRIV);
}

/** ChromeDriver's service: in a process group of its own, killed when this process ends. */
export function localDriverService(chromedriverBin: string): chrome.ServiceBuilder {
  if (!canTieToProcess()) return new chrome.ServiceBuilder(chromedriverBin);
  // selenium-webdriver appends --port=N to these arguments: `setsid -- setpriv … -- chromedriver --port=N`.
  return new chrome.ServiceBuilder(SETSID).addArguments('--', SETPRIV, '--pdeathsig', 'KILL', '--', chromedriverBin);
}

/**
 * The binary a launcher script runs, when `bin` is one of the plain kind Debian installs
 * (`/usr/bin/chromium-headless-shell`: a shell script whose last line runs the binary with "$@",
 * as a child): the parent-death signal must be set on the browser itself, not on a shell that
 * forks it. Any other file is taken as the browser.
 */
export function browserItself(bin: string): string {
  let text: string;
  try {
    if (fs.statSync(bin).size > 4096) return bin;
    text = fs.readFileSync(bin, 'latin1');
  } catch {
    return bin;
  }
  if (!text.startsWith('#!')) return bin;
  const lines = text.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'));
  const runs = lines.length === 1 ? /^\s*(?:exec\s+)?(\/[^\s"'$;&|]+)\s+"\$@"\s*$/.exec(lines[0] as string) : null;
  return runs && fs.existsSync(runs[1] as string) ? (runs[1] as string) : bin;
}

/** The browser binary ChromeDriver is to run: `chromeBin`, through a script that has it killed when ChromeDriver ends. */
export function tiedBrowserBinary(chromeBin: string): string {
  if (!canTieToProcess()) return chromeBin;
  const script = `#!/bin/sh\n# Written by the screenshot service (services/capture/browsers/local-driver.ts).\nexec ${SETPRIV} --pdeathsig KILL -- ${shellQuoted(browserItself(chromeBin))} "$@"\n`;
  const digest = crypto.createHash('sha256').update(script).digest('hex').slice(0, 16);
  const dir = ownFolder();
  const file = path.join(dir, `browser-${digest}.sh`);
  if (!fs.existsSync(file)) {
    // Made again if something removed it under us (a tmp cleaner).
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(file, script, { mode: 0o700 });
  }
  return file;
}

let folder: string | null = null;

/**
 * The launcher scripts' folders: `snapservice-browser-<pid namespace>-<pid of the process that
 * made it>-<random>`. Whether a process has ended is only known within its pid namespace (a
 * container sharing /tmp with another sees other process ids), so only folders of this one's are swept.
 */
const FOLDER_PREFIX = 'snapservice-browser-';
const FOLDER_OF = /^snapservice-browser-(\d+)-(\d+)-[A-Za-z0-9]+$/;

/** This process's pid namespace (the inode of /proc/self/ns/pid), or '0' where it cannot be read: then no folder is swept. */
function pidNamespace(): string {
  try {
    return /\[(\d+)\]/.exec(fs.readlinkSync('/proc/self/ns/pid'))?.[1] ?? '0';
  } catch {
    return '0';
  }
}

/**
 * This process's own folder for the launcher scripts (mkdtemp: mode 0700), removed when it
 * exits; those a process killed before it could remove its own left (SIGKILL) are removed first.
 */
function ownFolder(): string {
  if (folder === null) {
    removeFoldersOfEndedProcesses(os.tmpdir());
    const made = fs.mkdtempSync(path.join(os.tmpdir(), `${FOLDER_PREFIX}${pidNamespace()}-${process.pid}-`));
    process.once('exit', () => fs.rmSync(made, { recursive: true, force: true }));
    folder = made;
  }
  return folder;
}

/** Removes the launcher folders in `dir` of this user and pid namespace whose process has ended; answers their names. */
export function removeFoldersOfEndedProcesses(dir: string, namespace = pidNamespace()): string[] {
  const removed: string[] = [];
  if (namespace === '0') return removed;
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    const [, ns, id] = FOLDER_OF.exec(name) ?? [];
    const pid = Number(id ?? Number.NaN);
    if (ns !== namespace || !Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid || alive(pid)) continue;
    const at = path.join(dir, name);
    try {
      if (fs.lstatSync(at).uid !== process.getuid?.()) continue;
      fs.rmSync(at, { recursive: true, force: true });
      removed.push(name);
    } catch {
      // Gone already (another process swept it), or not ours to remove.
    }
  }
  return removed;
}

/** Whether a process with this id runs (one of another user's answers EPERM: it runs). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function shellQuoted(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
