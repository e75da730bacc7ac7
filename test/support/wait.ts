/** Waiting in tests: a pause, and polling until a condition holds (or failing with what was awaited). */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `check` every `everyMs` until it answers true; throws "timed out waiting for <what>" after `timeoutMs`. */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000, everyMs = 250): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    if (await check()) return;
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what}`);
}
