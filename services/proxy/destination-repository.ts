/** The storage_destinations table (owned by the proxy service), every query scoped by account. */
import type { Knex } from 'knex';
import type { DestinationFields, DestinationRow } from './storage-destinations';

export class DestinationRepository {
  constructor(private readonly db: Knex) {}

  list(accountId: string): Promise<DestinationRow[]> {
    return this.db('storage_destinations').where({ account_id: accountId }).orderBy('id');
  }

  /** By name, or by id when `nameOrId` is only digits (names never are). */
  async find(accountId: string, nameOrId: string): Promise<DestinationRow | null> {
    const where = /^\d{1,9}$/.test(nameOrId) ? { account_id: accountId, id: Number(nameOrId) } : { account_id: accountId, name: nameOrId };
    return ((await this.db('storage_destinations').where(where).first()) as DestinationRow | undefined) ?? null;
  }

  async insert(accountId: string, f: Omit<DestinationFields, 'secret'> & { secret_encrypted: string; last_test_ms: number }): Promise<number> {
    const { secret_encrypted, last_test_ms, ...fields } = f;
    const [id] = await this.db('storage_destinations').insert({
      account_id: accountId,
      ...fields,
      secret_encrypted,
      verified: true,
      last_test_ms,
      last_error: null,
    });
    return Number(id);
  }

  async recordTest(accountId: string, id: number, t: { verified: boolean; last_test_ms: number | null; last_error: string | null }): Promise<void> {
    await this.db('storage_destinations').where({ account_id: accountId, id }).update(t);
  }

  async remove(accountId: string, id: number): Promise<boolean> {
    return (await this.db('storage_destinations').where({ account_id: accountId, id }).delete()) > 0;
  }
}
