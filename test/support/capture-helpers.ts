/** What the capture tests share: a system on the real Grid, image probes and answer checks. */
import { expect } from 'chai';
import sharp from 'sharp';
import { backendConfig } from './backends';
import { sharedGrid } from './grid';
import { type HttpAnswer, request } from './http';
import { type RunningSystem, runSystem } from './system';

/** Every service a capture needs, in one process (embedded SQLite, the shared Grid). */
export const CAPTURE_SERVICES = 'api,billing,capture,scheduler,ai,proxy';

/**
 * Starts the system on the shared Grid with an account on a plan big enough for a test
 * run; `env` adds or overrides settings (ALLOW_PRIVATE_NETWORKS, CHROME_EXTRA_ARGS, ...).
 */
export async function startCaptureSystem(env: Record<string, string>): Promise<{ sys: RunningSystem; token: string; cleanup(): Promise<void> }> {
  const grid = await sharedGrid();
  const b = await backendConfig('sqlite', { SERVICES: CAPTURE_SERVICES, SELENIUM_URL: grid.url, ...env });
  const sys = await runSystem(b.config);
  await sys.broker.call('billing.upsertPlan', { name: 'big', paid: true, screenshot_limit: 100_000 });
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

/** The error envelope with its status and code; the note contains each fragment. */
export function expectEnvelope(r: HttpAnswer, status: number, code: string, ...fragments: string[]): void {
  expect(r.status, r.raw.toString().slice(0, 400)).to.equal(status);
  expect(r.body).to.include({ success: false, error_code: code });
  for (const f of fragments) expect(String(r.body.note)).to.contain(f);
}

/** Screenshots the account used this month, as /account_limits reports them. */
export async function screenshotsUsed(sys: RunningSystem, key: string): Promise<number> {
  const r = await request<{ results: { screenshot_current_month_usage: number } }>(sys.base, 'GET', `/account_limits?access_token=${key}`);
  return r.body.results.screenshot_current_month_usage;
}
