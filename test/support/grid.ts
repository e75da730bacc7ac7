/**
 * One real Selenium Grid (standalone: hub and one Chrome node, Debian Chromium) shared by
 * every test that needs browsers, started on first use by grid/grid.js and stopped when
 * the run ends (root hook).
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';

export interface Grid {
  url: string;
  /** Process group leaders: the hub (or the standalone server), then node 1, node 2, ... */
  pids: number[];
  stop(): Promise<void>;
  /** Hub mode: SIGKILLs the hub and starts it again on the same ports; resolves once its nodes have registered again. */
  restartHub(): Promise<void>;
}

export const gridModule = require(path.resolve(__dirname, '..', '..', '..', 'grid', 'grid.js')) as {
  startGrid(opts: { mode: 'standalone' | 'hub'; nodes?: number; maxSessions: number; port: number; sessionTimeout?: number }): Promise<Grid>;
  renderNodeToml(o?: {
    chromeBin?: string;
    chromedriverBin?: string;
    maxSessions?: number;
    sessionTimeout?: number;
    host?: string;
    chromeArgs?: string[];
  }): string;
};

let shared: Promise<Grid> | null = null;

/** Sessions the shared Grid offers; test systems together must not hold more. */
export const GRID_SESSIONS = 5;

export function sharedGrid(): Promise<Grid> {
  shared ??= gridModule.startGrid({ mode: 'standalone', maxSessions: GRID_SESSIONS, port: 0, sessionTimeout: 120 });
  return shared;
}

/**
 * Ends every session on the Grid that started at or after `since`. A test calls it once its
 * own systems have stopped: what is left then was held by a process it killed, and the Grid
 * would keep it, and its slot, until its session timeout, leaving the next test short of
 * browsers. Each session's browser is killed first, as the capture service closes its own
 * over CDP before it ends the session: ChromeDriver's quit leaves Debian's headless shell
 * running and ends the session only about 20 s later.
 */
export async function endSessionsStartedSince(grid: Grid, since: Date): Promise<void> {
  const left = (await gridSessions(grid.url)).filter((session) => new Date(session.start) >= since);
  for (const session of left) {
    const dir = session.capabilities.chrome?.userDataDir;
    if (!dir) continue;
    try {
      killBrowser(dir);
    } catch {
      // Gone already.
    }
  }
  await Promise.all(left.map((session) => fetch(`${grid.url}/session/${session.sessionId}`, { method: 'DELETE' })));
}

/** A live session on the Grid, as its /status reports it (ChromeDriver names the browser's user-data directory; a capture instance, itself). */
export interface GridSession {
  sessionId: string;
  start: string;
  capabilities: { chrome?: { userDataDir?: string }; 'pagepixels:owner'?: string };
}

/** The Grid's live sessions that the capture instance with this Moleculer node id started (its SESSION_OWNER_CAPABILITY). */
export async function sessionsOfNode(gridUrl: string, nodeID: string): Promise<GridSession[]> {
  return (await gridSessions(gridUrl)).filter((session) => session.capabilities['pagepixels:owner']?.startsWith(`${nodeID}/`));
}

/** The Grid's live sessions, from its /status. */
export async function gridSessions(gridUrl: string): Promise<GridSession[]> {
  const status = (await (await fetch(`${gridUrl}/status`)).json()) as {
    value: { nodes: Array<{ slots: Array<{ session: GridSession | null }> }> };
  };
  return status.value.nodes.flatMap((n) => n.slots.flatMap((s) => (s.session ? [s.session] : [])));
}

/** The user-data directories of the Grid's live sessions' browsers. */
export async function gridBrowserDirs(gridUrl: string): Promise<string[]> {
  return (await gridSessions(gridUrl)).flatMap((session) => session.capabilities.chrome?.userDataDir ?? []);
}

/** SIGKILLs a browser (and its renderers) as a crash or the kernel's OOM killer would; throws when none was running. */
export function killBrowser(userDataDir: string): void {
  execFileSync('pkill', ['-KILL', '-f', '--', browserPattern(userDataDir)]);
}

/** Whether a process of the browser with this user-data directory (it or one of its renderers) is running. */
export function browserRunning(userDataDir: string): boolean {
  try {
    execFileSync('pgrep', ['-f', '--', browserPattern(userDataDir)]);
    return true;
  } catch {
    return false;
  }
}

/** pkill's and pgrep's pattern is an extended regular expression: the folder taken literally, and whole. */
function browserPattern(userDataDir: string): string {
  const literal = userDataDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return `--user-data-dir=${literal}( |$)`;
}

export async function stopSharedGrid(): Promise<void> {
  if (!shared) return;
  const grid = await shared.catch(() => null);
  shared = null;
  await grid?.stop();
}
