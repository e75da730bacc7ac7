/**
 * proxy: owns proxies (accounts' own proxies, passwords sealed with SecretBox) and the
 * real-location catalogue (a provider preset and/or REAL_LOCATIONS_FILE, read at start: a
 * broken file or preset stops the service), and hands capture the route of one capture
 * (proxy.route: the upstream with its credentials, used by capture's egress gateway only).
 * Wiring only: what the actions do is in proxies.ts; the catalogue's rules live in
 * locations.ts (names in places.ts, providers' syntax in presets.ts), own proxies' rules in
 * own-proxies.ts, their table in proxy-repository.ts, the connection test in proxy-check.ts.
 * It also owns accounts' storage destinations (store_to: their own buckets, secrets sealed
 * the same way) and uploads captures' files to them (destinations.ts).
 */
import type { Config } from '../shared/config';
import { defineService, ServiceDatabase } from '../shared/define-service';
import { egressPolicyFor } from '../shared/egress';
import { SecretBox } from '../shared/secrets';
import type { ServiceUnit } from '../shared/service-unit';
import { createFileStore, type FileStore } from '../shared/storage';
import { DestinationRepository } from './destination-repository';
import { StorageDestinations } from './destinations';
import { loadCatalogue } from './locations';
import { Proxies } from './proxies';
import { ProxyRepository } from './proxy-repository';

export function proxyService(deps: { config: Readonly<Config> }): ServiceUnit {
  const { config } = deps;
  const database = new ServiceDatabase(config.database);
  const secrets = new SecretBox(config);
  const policy = egressPolicyFor(config);
  let proxies: Proxies;
  let destinations: StorageDestinations;
  let files: FileStore;
  // A storage destination's test and a capture's upload: bounded, with room for the rest.
  const storageMs = 20_000;
  const storingMs = storageMs + 15_000;
  // Actions that connect through a proxy: the test's own bound plus room for the rest.
  const testingMs = config.proxyTest.timeoutMs + 15_000;

  const schema = defineService('proxy', {
    database,
    actions: {
      summaries: (ctx) => proxies.summaries(ctx.params.accountId),
      realLocations: async () => proxies.realLocations(),
      checkRoute: (ctx) => proxies.checkRoute(ctx.params),
      route: (ctx) => proxies.route(ctx.params),
      testLocation: { handler: (ctx) => proxies.testLocation(ctx.params.name), timeout: testingMs },
      put: { handler: (ctx) => proxies.put(ctx.params), timeout: testingMs },
      list: (ctx) => proxies.list(ctx.params.accountId),
      test: { handler: (ctx) => proxies.testStored(ctx.params), timeout: testingMs },
      remove: (ctx) => proxies.remove(ctx.params.accountId, ctx.params.id),
      createDestination: { handler: (ctx) => destinations.create(ctx.params), timeout: storingMs },
      listDestinations: (ctx) => destinations.list(ctx.params.accountId),
      getDestination: (ctx) => destinations.get(ctx.params.accountId, ctx.params.nameOrId),
      testDestination: { handler: (ctx) => destinations.test(ctx.params), timeout: storingMs },
      removeDestination: (ctx) => destinations.remove(ctx.params.accountId, ctx.params.nameOrId),
      checkDestination: (ctx) => destinations.check(ctx.params.accountId, ctx.params.name),
      storeFile: { handler: (ctx) => destinations.storeFile(ctx.params), timeout: storingMs },
    },
    created() {
      // The catalogue first: a broken file or preset stops the service before anything is opened.
      const catalogue = loadCatalogue(config.realLocations);
      proxies = new Proxies({ catalogue, repository: new ProxyRepository(database.knex), secrets, policy, test: config.proxyTest });
      files = createFileStore(config);
      destinations = new StorageDestinations({
        repository: new DestinationRepository(database.knex),
        secrets,
        policy,
        files,
        gcsApiEndpoint: config.gcsApiEndpoint ?? null,
        timeoutMs: storageMs,
      });
    },
    async stopped() {
      await files?.close();
    },
  });
  return { schema, handle: {} };
}
