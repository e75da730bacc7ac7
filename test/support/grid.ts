/**
 * One real Selenium Grid (standalone: hub and one Chrome node, Debian Chromium) shared by
 * every test that needs browsers, started on first use by grid/grid.js and stopped when
 * the run ends (root hook).
 */
import path from 'node:path';

export interface Grid {
  url: string;
  /** Process group leaders: the hub (or the standalone server), then node 1, node 2, ... */
  pids: number[];
  stop(): Promise<void>;
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
 * browsers.
 */
export async function endSessionsStartedSince(grid: Grid, since: Date): Promise<void> {
  const status = (await (await fetch(`${grid.url}/status`)).json()) as {
    value: { nodes: Array<{ slots: Array<{ session: { sessionId: string; start: string } | null }> }> };
  };
  const left = status.value.nodes.flatMap((n) => n.slots.flatMap((s) => (s.session && new Date(s.session.start) >= since ? [s.session.sessionId] : [])));
  await Promise.all(left.map((id) => fetch(`${grid.url}/session/${id}`, { method: 'DELETE' })));
}

export async function stopSharedGrid(): Promise<void> {
  if (!shared) return;
  const grid = await shared.catch(() => null);
  shared = null;
  await grid?.stop();
}
