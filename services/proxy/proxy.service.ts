/**
 * proxy: owns proxies (accounts' own proxies, passwords encrypted) and the real-location
 * catalogue. Storing and testing proxies arrive with the proxy issue; for now it lists an
 * account's proxies for /account_limits.
 */
import type { ServiceSchema } from 'moleculer';
import type { Knex } from 'knex';
import type { Config } from '../shared/config';
import type { Handler } from '../shared/contracts';
import { acquireDatabase, releaseDatabase } from '../shared/database';

export function proxyService(deps: { config: Readonly<Config> }): ServiceSchema {
  let db: Knex;
  const summaries: Handler<'proxy.summaries'> = async (ctx) => {
    const rows = await db('proxies').where({ account_id: ctx.params.accountId }).orderBy('id').select('id', 'host', 'port', 'verified');
    return rows.map((r) => ({ id: Number(r.id), label: `${r.host}:${r.port}`, verified: Boolean(r.verified) }));
  };
  return {
    name: 'proxy',
    actions: { summaries: { handler: summaries } },
    created() {
      db = acquireDatabase(deps.config.database);
    },
    async stopped() {
      await releaseDatabase(deps.config.database);
    },
  };
}
