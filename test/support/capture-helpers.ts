/** What the capture tests share: a system on the real Grid, image probes and usage checks. */
import sharp from 'sharp';
import { backendConfig } from './backends';
import { type FixtureServer, startFixtures } from './fixtures';
import { GRID_SESSIONS, sharedGrid } from './grid';
import { type HttpAnswer, qs, request } from './http';
import type { SystemOverrides } from '../../runtime/system';
import { type RunningSystem, runSystem } from './system';

/** Every service a capture needs, in one process (embedded SQLite, the shared Grid). */
export const CAPTURE_SERVICES = 'api,billing,capture,scheduler,ai,proxy,notifier';

/**
 * Starts the system on the shared Grid with an account on a plan big enough for a test
 * run; `env` adds or overrides settings (ALLOW_PRIVATE_NETWORKS, CHROME_EXTRA_ARGS, ...).
 */
export async function startCaptureSystem(
  env: Record<string, string>,
  overrides: SystemOverrides = {},
): Promise<{ sys: RunningSystem; token: string; cleanup(): Promise<void> }> {
  const grid = await sharedGrid();
  const b = await backendConfig('sqlite', { SERVICES: CAPTURE_SERVICES, SELENIUM_URL: grid.url, ...env });
  const sys = await runSystem(b.config, overrides);
  // As many captures at once as the shared Grid has browsers: a suite's captures are never held by their account's limits.
  await sys.broker.call('billing.upsertPlan', { name: 'big', paid: true, screenshot_limit: 100_000, max_concurrent: GRID_SESSIONS, max_queued: 16 });
  const token = (await sys.account('big')).access_token;
  return {
    sys,
    token,
    cleanup: async () => {
      await sys.stop();
      await b.cleanup();
    },
  };
}

export async function imageSize(image: Buffer): Promise<[number, number]> {
  const m = await sharp(image).metadata();
  return [m.width ?? 0, m.height ?? 0];
}

/** RGB of one pixel. */
export async function pixel(image: Buffer, x: number, y: number): Promise<[number, number, number]> {
  const { data, info } = await sharp(image).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const i = (y * info.width + x) * info.channels;
  return [data[i] ?? -1, data[i + 1] ?? -1, data[i + 2] ?? -1];
}

/** Decodes the image once, for looking at many of its pixels (RGB). */
export async function pixelsOf(image: Buffer): Promise<{ width: number; height: number; at(x: number, y: number): [number, number, number] }> {
  const { data, info } = await sharp(image, { limitInputPixels: false }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  return {
    width: info.width,
    height: info.height,
    at(x, y) {
      const i = (y * info.width + x) * info.channels;
      return [data[i] ?? -1, data[i + 1] ?? -1, data[i + 2] ?? -1];
    },
  };
}

/** Screenshots the account used this month, as /account_limits reports them. */
export async function screenshotsUsed(sys: RunningSystem, key: string): Promise<number> {
  const r = await request<{ results: { screenshot_current_month_usage: number } }>(sys.base, 'GET', `/account_limits?access_token=${key}`);
  return r.body.results.screenshot_current_month_usage;
}

/** The fixture pages and the capture system of one describe block, once its before hook ran. */
export interface SnapSuite {
  readonly fx: FixtureServer;
  readonly sys: RunningSystem;
  readonly token: string;
  /** GET /snap with wait=0 and ttl=0 unless params say otherwise; `key` defaults to the suite's account. */
  snap(params: Record<string, string | number | boolean>, key?: string): Promise<HttpAnswer>;
}

/**
 * Registers before/after hooks in the calling describe block: fixture pages (fixtures.ts)
 * and a capture system started with `env` and `overrides` (startCaptureSystem), both
 * stopped afterwards.
 * `env` may be a function of the fixture server, read when the hook runs (after the
 * block's earlier hooks).
 */
export function snapSuite(env: Record<string, string> | ((fx: FixtureServer) => Record<string, string>), overrides: SystemOverrides = {}): SnapSuite {
  let parts: { fx: FixtureServer; sys: RunningSystem; token: string } | null = null;
  let stop: Array<() => Promise<void>> = [];
  before(async () => {
    const fx = await startFixtures();
    stop.push(() => fx.stop());
    const { sys, token, cleanup } = await startCaptureSystem(typeof env === 'function' ? env(fx) : env, overrides);
    stop.unshift(cleanup);
    parts = { fx, sys, token };
  });
  after(async () => {
    for (const fn of stop) await fn();
    stop = [];
  });
  const started = () => {
    if (!parts) throw new Error('snapSuite: used before its before hook ran');
    return parts;
  };
  return {
    get fx() {
      return started().fx;
    },
    get sys() {
      return started().sys;
    },
    get token() {
      return started().token;
    },
    snap: (params, key) => request(started().sys.base, 'GET', `/snap?${qs({ access_token: key ?? started().token, wait: 0, ttl: 0, ...params })}`),
  };
}
