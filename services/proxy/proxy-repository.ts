/** The proxies table (owned by the proxy service), every query scoped by account. */
import type { Knex } from 'knex';
import type { ProxyRow } from './own-proxies';

export interface ProxyWrite {
  protocol: string;
  host: string;
  port: number;
  username: string | null;
  /** undefined: keep the stored one. */
  password_encrypted?: string | null;
}

export interface TestOutcome {
  verified: boolean;
  exit_ip: string | null;
  last_test_ms: number | null;
  last_error: string | null;
}

export class ProxyRepository {
  constructor(private readonly db: Knex) {}

  list(accountId: string): Promise<ProxyRow[]> {
    return this.db('proxies').where({ account_id: accountId }).orderBy('id');
  }

  async find(accountId: string, id: number): Promise<ProxyRow | null> {
    return ((await this.db('proxies').where({ account_id: accountId, id }).first()) as ProxyRow | undefined) ?? null;
  }

  async insert(accountId: string, w: ProxyWrite): Promise<number> {
    const [id] = await this.db('proxies').insert({ account_id: accountId, ...w, password_encrypted: w.password_encrypted ?? null, verified: false });
    return Number(id);
  }

  /** An edit makes the proxy untested: unverified, and what the last test saw (of the proxy it was) forgotten until it is tested again. */
  async update(accountId: string, id: number, w: ProxyWrite): Promise<void> {
    const untested = { verified: false, exit_ip: null, last_test_ms: null, last_error: null, verified_at: null };
    const fields: Record<string, unknown> = { protocol: w.protocol, host: w.host, port: w.port, username: w.username, ...untested };
    if (w.password_encrypted !== undefined) fields.password_encrypted = w.password_encrypted;
    await this.db('proxies').where({ account_id: accountId, id }).update(fields);
  }

  async recordTest(accountId: string, id: number, t: TestOutcome): Promise<void> {
    await this.db('proxies')
      .where({ account_id: accountId, id })
      .update({ ...t, verified_at: t.verified ? this.db.fn.now() : null });
  }

  async remove(accountId: string, id: number): Promise<boolean> {
    return (await this.db('proxies').where({ account_id: accountId, id }).delete()) > 0;
  }
}
