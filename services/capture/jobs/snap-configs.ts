/**
 * The snap configurations this capture instance was told, kept for a short time
 * (SNAP_CONFIG_CACHE_MS; issue 46): a snap of a page and options the account snapped
 * moments ago is recorded under the same configuration without asking the scheduler (a
 * call, and a read of screenshot_configs) again. Keyed by the account and the capture key,
 * as the scheduler finds them.
 *
 * A configuration's screenshots and jobs are deleted through capture before the scheduler
 * removes it (the api's DELETE): the instance that deletes forgets it at once, and every
 * other capture instance hears of it by the broadcast 'capture.configDeleted'. A lookup that
 * began before a deletion is not kept when it ends after it.
 */
import { type SnapOptions, captureKey } from '../../shared/screenshot-options';
import type { SnapConfigs } from './snaps';

export class KeptSnapConfigs implements SnapConfigs {
  private readonly kept = new Map<string, { id: string; until: number }>();
  private generation = 0;

  constructor(
    private readonly scheduler: SnapConfigs,
    /** How long a configuration is kept (0: the scheduler is asked on every snap). */
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxEntries = 10_000,
  ) {}

  /** `noted`: the scheduler was asked, and noted `jobId` with it; a configuration kept here notes nothing. */
  async snapConfig(accountId: string, options: SnapOptions, jobId?: string): Promise<{ id: string; noted: boolean }> {
    const noted = jobId !== undefined;
    if (this.ttlMs <= 0) return { id: (await this.scheduler.snapConfig(accountId, options, jobId)).id, noted };
    const key = `${accountId}\u0000${captureKey(options)}`;
    const at = this.now();
    const kept = this.kept.get(key);
    if (kept && kept.until > at) return { id: kept.id, noted: false };
    if (kept) this.kept.delete(key);
    const generation = this.generation;
    const { id } = await this.scheduler.snapConfig(accountId, options, jobId);
    if (generation === this.generation) {
      if (this.kept.size >= this.maxEntries) {
        const oldest = this.kept.keys().next().value;
        if (oldest !== undefined) this.kept.delete(oldest);
      }
      this.kept.set(key, { id, until: at + this.ttlMs });
    }
    return { id, noted };
  }

  noteJob(configId: string, jobId: string): void {
    this.scheduler.noteJob(configId, jobId);
  }

  /** The configuration is being deleted: never answered from here again. */
  forget(configId: string): void {
    this.generation += 1;
    for (const [key, entry] of this.kept) if (entry.id === configId) this.kept.delete(key);
  }

  /** Configurations kept now (expired ones included until next asked for). */
  get size(): number {
    return this.kept.size;
  }
}
