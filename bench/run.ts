/**
 * What every bench script shares: the shape of its captures (viewport, format, quality, and
 * the /snap parameters that ask for them), stopping everything it started on SIGINT/SIGTERM,
 * and writing its report to its results file on a full run only.
 */
import fs from 'node:fs';
import path from 'node:path';

export const VIEWPORT = { width: 1280, height: 800 };
export const FORMAT = 'jpeg';
export const QUALITY = 80;

/** A positive integer from the environment variable `name`, or `fallback` when it is unset. */
export function envPositiveInt(name: string, fallback: number): number {
  const raw = process.env[name]?.trim();
  if (!raw) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`${name} must be a positive integer, got "${raw}"`);
  return Number(raw);
}

/** The members of `all` an environment list names (all of them when it is unset). */
export function envSubset<T extends string | number>(name: string, all: readonly T[]): T[] {
  const raw = process.env[name]?.trim();
  if (!raw) return [...all];
  const names = raw.split(',').map((p) => p.trim());
  const unknown = names.filter((n) => !all.some((a) => String(a) === n));
  if (unknown.length) throw new Error(`${name} takes some of ${all.join(',')}, got "${raw}"`);
  return all.filter((a) => names.includes(String(a)));
}

/** A bench's /snap query: the page at `url`, fresh (wait 0, ttl 0), in the bench's shape, with `extra` options. */
export function snapQuery(accessToken: string, url: string, extra: Record<string, string> = {}): URLSearchParams {
  return new URLSearchParams({
    access_token: accessToken,
    url,
    wait: '0',
    ttl: '0',
    page_width: String(VIEWPORT.width),
    page_height: String(VIEWPORT.height),
    image_format: FORMAT,
    quality: String(QUALITY),
    ...extra,
  });
}

/**
 * On SIGINT or SIGTERM: `abort` (optional), then `cleanup`, then exit 130. Returns the
 * function that removes the handlers (call it once the script cleaned up by itself).
 */
export function stopOnSignals(cleanup: () => Promise<void>, progress: (msg: string) => void, abort?: () => void): () => void {
  const onSignal = (signal: NodeJS.Signals) => {
    progress(`${signal}: stopping everything`);
    abort?.();
    void cleanup().then(() => process.exit(130));
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  return () => {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  };
}

/** Prints the report; a full run also writes it to `file` (a reduced one leaves the file as it was). */
export function publishResults(file: string, text: string, fullRun: boolean, progress: (msg: string) => void): void {
  process.stdout.write(`${text}\n`);
  const shown = path.relative(process.cwd(), file) || file;
  if (fullRun) {
    fs.writeFileSync(file, `${text}\n`);
    progress(`written to ${shown}`);
  } else {
    progress(`a reduced run: ${shown} left as it was`);
  }
}
