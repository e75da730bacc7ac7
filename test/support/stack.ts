/**
 * The full stack as separate processes (ops/stack.ts) for the end-to-end suites: this
 * machine's MariaDB and Redis unless told otherwise, the test DNS server for the gateways,
 * logs in a temp dir (printed when a test fails, removed otherwise).
 */
import fs from 'node:fs';
import { STACK_DEFAULTS, Stack, type StackOptions } from '../../ops/stack';
import { MYSQL_ADMIN_URL, NATS_URL, REDIS_URL, TEST_DEFAULTS, tempDir } from './backends';

export async function startTestStack(options: Partial<StackOptions> = {}): Promise<Stack> {
  const dir = tempDir('snapstack-');
  const admin = new URL(MYSQL_ADMIN_URL);
  admin.pathname = '/';
  return Stack.start({
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
}

/** Stops the stack and removes its directory (kept, and named, when `keep`). */
export async function stopTestStack(stack: Stack | undefined, keep = false): Promise<void> {
  if (!stack) return;
  await stack.stop();
  if (keep) console.log(`stack logs kept in ${stack.options.dir}/logs`);
  else fs.rmSync(stack.options.dir, { recursive: true, force: true });
}
