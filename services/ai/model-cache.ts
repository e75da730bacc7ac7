/**
 * The model lists fetched from providers, kept ten minutes (the spec's refresh interval) per
 * provider, key and upstream, so listing models, checking a default model and a test call do
 * not each ask the provider. Keys are held only as hashes. Concurrent misses of one entry
 * share one fetch; a failed fetch is not kept. Each ai instance has its own cache: at worst
 * every instance asks once per ten minutes.
 */
import type { ModelRecord, OwnAiProvider, Upstream } from '../shared/contracts';
import { hashApiKey } from '../shared/secrets';

export const MODEL_LIST_TTL_MS = 10 * 60_000;

export interface CachedModels {
  models: ModelRecord[];
  fetchedAt: Date;
}

/** The cache entry of a list: the key is hashed, never kept. */
export function modelListKey(provider: OwnAiProvider, apiKey: string | undefined, upstream: Upstream | undefined): string {
  return [provider, apiKey ? hashApiKey(apiKey) : 'public', upstream ?? 'auto'].join('\n');
}

export class ModelCache {
  private readonly entries = new Map<string, CachedModels>();
  private readonly fetching = new Map<string, Promise<CachedModels>>();

  constructor(
    private readonly now: () => Date = () => new Date(),
    private readonly ttlMs = MODEL_LIST_TTL_MS,
  ) {}

  private fresh(entry: CachedModels | undefined): entry is CachedModels {
    return entry !== undefined && this.now().getTime() - entry.fetchedAt.getTime() < this.ttlMs;
  }

  /** The cached list under `key`, or the one `fetch` brings (then kept ttlMs). */
  async get(key: string, fetch: () => Promise<ModelRecord[]>): Promise<CachedModels> {
    const hit = this.entries.get(key);
    if (this.fresh(hit)) return hit;
    let pending = this.fetching.get(key);
    if (!pending) {
      pending = fetch()
        .then((models) => {
          const entry = { models, fetchedAt: this.now() };
          for (const [k, e] of this.entries) if (!this.fresh(e)) this.entries.delete(k);
          this.entries.set(key, entry);
          return entry;
        })
        .finally(() => this.fetching.delete(key));
      this.fetching.set(key, pending);
    }
    return pending;
  }
}
