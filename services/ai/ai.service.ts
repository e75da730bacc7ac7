/**
 * ai: owns ai_providers (accounts' own provider keys, encrypted) and the model cache.
 * Analysis and the provider endpoints arrive with the AI issue; for now it answers which
 * providers an account has verified, for /account_limits.
 */
import type { Knex } from 'knex';
import type { ServiceSchema } from 'moleculer';
import type { Config } from '../shared/config';
import type { Handler } from '../shared/contracts';
import { acquireDatabase, releaseDatabase } from '../shared/database';
import type { ServiceUnit } from '../shared/service-unit';

export function aiService(deps: { config: Readonly<Config> }): ServiceUnit {
  let db: Knex;
  const verifiedProviders: Handler<'ai.verifiedProviders'> = async (ctx) => {
    const rows = await db('ai_providers').where({ account_id: ctx.params.accountId, verified: true }).orderBy('provider').select('provider');
    return rows.map((r) => String(r.provider));
  };
  const schema: ServiceSchema = {
    name: 'ai',
    actions: { verifiedProviders: { handler: verifiedProviders } },
    created() {
      db = acquireDatabase(deps.config.database);
    },
    async stopped() {
      await releaseDatabase(deps.config.database);
    },
  };
  return { schema, handle: {} };
}
