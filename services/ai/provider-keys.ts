/**
 * ai's table ai_providers: one row per account and provider holding the sealed key (never
 * the key itself; SecretBox seals it before it gets here), its hint, the defaults, and what
 * the last verification found. Only the ai service uses this module.
 */
import type { Knex } from 'knex';
import type { OwnAiProvider, Upstream } from '../shared/contracts';
import { dateOf } from '../shared/database';

/** A row as this module hands it out (dates as Date, booleans as booleans on both databases). */
export interface ProviderKeyRow {
  provider: OwnAiProvider;
  keySealed: string | null;
  keyHint: string | null;
  defaultModel: string | null;
  defaultUpstream: Upstream | null;
  verified: boolean;
  verifiedAt: Date | null;
  modelsCount: number | null;
  lastError: string | null;
}

/** Everything a PUT writes: it replaces the whole row. */
export type StoredKey = Omit<ProviderKeyRow, 'provider'>;

function fromRow(r: Record<string, unknown>): ProviderKeyRow {
  return {
    provider: r.provider as OwnAiProvider,
    keySealed: (r.key_encrypted as string | null) ?? null,
    keyHint: (r.key_hint as string | null) ?? null,
    defaultModel: (r.default_model as string | null) ?? null,
    defaultUpstream: (r.default_upstream as Upstream | null) ?? null,
    verified: Boolean(r.verified),
    verifiedAt: dateOf(r.verified_at),
    modelsCount: r.models_count === null || r.models_count === undefined ? null : Number(r.models_count),
    lastError: (r.last_error as string | null) ?? null,
  };
}

export class ProviderKeyRepository {
  constructor(private readonly db: Knex) {}

  async list(accountId: string): Promise<ProviderKeyRow[]> {
    return (await this.db('ai_providers').where({ account_id: accountId }).orderBy('provider')).map(fromRow);
  }

  async get(accountId: string, provider: OwnAiProvider): Promise<ProviderKeyRow | null> {
    const row = await this.db('ai_providers').where({ account_id: accountId, provider }).first();
    return row ? fromRow(row) : null;
  }

  async verifiedProviders(accountId: string): Promise<OwnAiProvider[]> {
    const rows = await this.db('ai_providers').where({ account_id: accountId, verified: true }).orderBy('provider').select('provider');
    return rows.map((r) => r.provider as OwnAiProvider);
  }

  /** Writes the account's row for `provider` whole (insert or replace). */
  async put(accountId: string, provider: OwnAiProvider, key: StoredKey): Promise<ProviderKeyRow> {
    const row = {
      account_id: accountId,
      provider,
      key_encrypted: key.keySealed,
      key_hint: key.keyHint,
      default_model: key.defaultModel,
      default_upstream: key.defaultUpstream,
      verified: key.verified,
      verified_at: key.verifiedAt,
      models_count: key.modelsCount,
      last_error: key.lastError,
    };
    const { account_id: _a, provider: _p, ...update } = row;
    await this.db('ai_providers').insert(row).onConflict(['account_id', 'provider']).merge(Object.keys(update));
    // Read back: the answer shows what is stored (MySQL keeps verified_at to the second).
    return (await this.get(accountId, provider)) as ProviderKeyRow;
  }

  /** Whether a row was there to remove. */
  async remove(accountId: string, provider: OwnAiProvider): Promise<boolean> {
    return (await this.db('ai_providers').where({ account_id: accountId, provider }).delete()) > 0;
  }
}
