/**
 * proxy: owns proxies (accounts' own proxies, passwords encrypted) and the real-location
 * catalogue (REAL_LOCATIONS_FILE, read at start: a broken file stops the service). Wiring
 * only: the catalogue's rules live in locations.ts. Storing and testing own proxies are
 * still to come; for now it lists an account's proxies for /account_limits.
 */
import type { Knex } from 'knex';
import type { ServiceSchema } from 'moleculer';
import type { Config } from '../shared/config';
import type { Handler } from '../shared/contracts';
import { acquireDatabase, releaseDatabase } from '../shared/database';
import { serviceError } from '../shared/errors';
import type { ServiceUnit } from '../shared/service-unit';
import { randomId } from '../shared/secrets';
import { type Catalogue, knownLocation, loadCatalogue, locationNames, routeOf } from './locations';

export function proxyService(deps: { config: Readonly<Config> }): ServiceUnit {
  let db: Knex;
  let catalogue: Catalogue;
  const checkRoute: Handler<'proxy.checkRoute'> = async (ctx) => {
    const { realLocation } = ctx.params;
    if (realLocation !== undefined && knownLocation(catalogue, realLocation) === null) {
      const where = catalogue.entries.size ? 'GET /real_locations lists the locations of this server' : 'this server has no real locations configured (GET /real_locations is empty)';
      throw serviceError('invalid_parameter', `real_location: "${realLocation}" is not a location of this server; ${where}.`);
    }
    return { ok: true as const };
  };
  /** The route of one capture; its upstream (with credentials) goes to capture's gateway only. */
  const route: Handler<'proxy.route'> = async (ctx) => {
    const { realLocation } = ctx.params;
    if (realLocation === undefined) return null;
    await checkRoute(ctx);
    const r = routeOf(catalogue, realLocation, randomId(12));
    if (!r) throw serviceError('invalid_parameter', `real_location: "${realLocation}" is not a location of this server; GET /real_locations lists them.`);
    return { upstream: r.upstream, location: knownLocation(catalogue, realLocation), customProxy: null };
  };
  const summaries: Handler<'proxy.summaries'> = async (ctx) => {
    const rows = await db('proxies').where({ account_id: ctx.params.accountId }).orderBy('id').select('id', 'host', 'port', 'verified');
    return rows.map((r) => ({ id: Number(r.id), label: `${r.host}:${r.port}`, verified: Boolean(r.verified) }));
  };
  const schema: ServiceSchema = {
    name: 'proxy',
    actions: {
      summaries: { handler: summaries },
      realLocations: { handler: (async () => locationNames(catalogue)) as Handler<'proxy.realLocations'> },
      checkRoute: { handler: checkRoute },
      route: { handler: route },
    },
    created() {
      catalogue = loadCatalogue(deps.config.realLocationsFile);
      db = acquireDatabase(deps.config.database);
    },
    async stopped() {
      await releaseDatabase(deps.config.database);
    },
  };
  return { schema, handle: {} };
}
