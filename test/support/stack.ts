/**
 * The full stack as separate processes (ops/stack.ts) for the end-to-end suites: this
 * machine's MariaDB and Redis unless told otherwise, the test DNS server for the gateways,
 * logs in a temp dir (printed when a test fails, removed otherwise).
 */
import fs from 'node:fs';
import { STACK_DEFAULTS, Stack, type StackOptions } from '../../ops/stack';
import { MYSQL_ADMIN_URL, NATS_URL, REDIS_URL, TEST_DEFAULTS, tempDir } from './backends';

/**
 * `options.env.SNAP_TEST_MARK`, when given, marks the Grid too: the Grid's Java processes are
 * started from this process's environment (grid/grid.js), and its ChromeDrivers and browsers
 * from theirs, so the marker is in this process's environment while the stack starts. Then
 * every process of the stack carries it, and a leftover browser is found by it.
 */
export async function startTestStack(options: Partial<StackOptions> = {}): Promise<Stack> {
  const dir = tempDir('snapstack-');
  const admin = new URL(MYSQL_ADMIN_URL);
  admin.pathname = '/';
  const mark = options.env?.SNAP_TEST_MARK;
  if (mark) process.env.SNAP_TEST_MARK = mark;
  try {
    return await Stack.start({
      ...STACK_DEFAULTS,
      dir,
      port: 0,
      mysqlUrl: admin.toString(),
      redisUrl: REDIS_URL,
      natsUrl: NATS_URL,
      log: () => undefined,
      ...options,
      env: { ...TEST_DEFAULTS, LOG_LEVEL: 'info', ...(options.env ?? {}) },
    });
  } finally {
    if (mark) delete process.env.SNAP_TEST_MARK;
  }
}

/** Stops the stack and removes its directory (kept, and named, when `keep`). */
export async function stopTestStack(stack: Stack | undefined, keep = false): Promise<void> {
  if (!stack) return;
  await stack.stop();
  if (keep) console.log(`stack logs kept in ${stack.options.dir}/logs`);
  else fs.rmSync(stack.options.dir, { recursive: true, force: true });
}
