/**
 * proxy: owns proxies (accounts' own proxies, passwords encrypted) and the real-location
 * catalogue. Storing and testing proxies arrive with the proxy issue; for now it lists an
 * account's proxies for /account_limits.
 */
import type { Knex } from 'knex';
import type { ServiceSchema } from 'moleculer';
import type { Config } from '../shared/config';
import type { Handler } from '../shared/contracts';
import { acquireDatabase, releaseDatabase } from '../shared/database';
import type { ServiceUnit } from '../shared/service-unit';

export function proxyService(deps: { config: Readonly<Config> }): ServiceUnit {
  let db: Knex;
  const summaries: Handler<'proxy.summaries'> = async (ctx) => {
    const rows = await db('proxies').where({ account_id: ctx.params.accountId }).orderBy('id').select('id', 'host', 'port', 'verified');
    return rows.map((r) => ({ id: Number(r.id), label: `${r.host}:${r.port}`, verified: Boolean(r.verified) }));
  };
  const schema: ServiceSchema = {
    name: 'proxy',
    actions: { summaries: { handler: summaries } },
    created() {
      db = acquireDatabase(deps.config.database);
    },
    async stopped() {
      await releaseDatabase(deps.config.database);
    },
  };
  return { schema, handle: {} };
}
