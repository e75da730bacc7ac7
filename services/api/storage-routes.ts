/**
 * The storage destination endpoints (docs/api.md, "Storage destinations"): an account's own
 * buckets that store_to uploads captures to. Store (tested first: an object is written and
 * deleted, and a destination that fails is refused, naming what failed), list, show, test
 * again and remove. The proxy service owns them. POST /storage_destinations is the only
 * endpoint that receives a destination's secret, and none returns one.
 */
import { Type } from '@sinclair/typebox';
import { STORAGE_DESTINATION_SCHEMA, STORAGE_TEST_RESULT_SCHEMA, STORAGE_TYPES } from '../proxy/public/storage-destination-record';
import { call } from '../shared/contracts';
import { textEnum } from '../shared/screenshot-options';
import { ok, type RouteContext, type RouteDef, route } from './http';
import { KEY_ONLY_PARAMS, objectParams, type ParamShape } from './request-schemas';

type ValuesOf<S> = S extends ParamShape<infer P> ? P : never;

const CREATE_PARAMS = objectParams(
  Type.Object(
    {
      name: Type.String({ minLength: 1, maxLength: 64, description: 'What store_to names: letters, digits, ".", "-", "_" (not only digits).' }),
      type: textEnum(STORAGE_TYPES, { description: 's3 (AWS S3 or any S3-compatible endpoint: R2, MinIO, B2, Wasabi, Spaces) or gcs.' }),
      bucket: Type.String({ minLength: 1, maxLength: 255, description: 'The bucket.' }),
      endpoint: Type.Optional(
        Type.String({ maxLength: 2048, description: 's3: the endpoint root, e.g. https://<account>.r2.cloudflarestorage.com; default AWS for region.' }),
      ),
      region: Type.Optional(Type.String({ maxLength: 64, description: 's3: default us-east-1 (R2: auto).' })),
      access_key_id: Type.Optional(Type.String({ maxLength: 255, description: 's3: the access key id.' })),
      secret_access_key: Type.Optional(Type.String({ maxLength: 1000, description: 's3: stored sealed, never returned.' })),
      credentials: Type.Optional(Type.String({ maxLength: 20_000, description: "gcs: the service account's JSON key; stored sealed, never returned." })),
    },
    { additionalProperties: false },
  ),
  {
    codes: {
      name: 'invalid_storage_destination',
      bucket: 'invalid_storage_destination',
      endpoint: 'invalid_storage_destination',
      region: 'invalid_storage_destination',
    },
    secret: 'secret_access_key',
  },
);

const nameOrIdOf = (ctx: RouteContext): string => ctx.path.name_or_id ?? '';

async function createDestination(ctx: RouteContext<ValuesOf<typeof CREATE_PARAMS>>) {
  const { destination, result } = await call(ctx.broker, 'proxy.createDestination', { accountId: ctx.account.accountId, input: ctx.params });
  return { success: true, storage_destination: destination, result };
}

async function listDestinations({ broker, account }: RouteContext) {
  return { success: true, storage_destinations: await call(broker, 'proxy.listDestinations', { accountId: account.accountId }) };
}

async function getDestination(ctx: RouteContext) {
  return {
    success: true,
    storage_destination: await call(ctx.broker, 'proxy.getDestination', { accountId: ctx.account.accountId, nameOrId: nameOrIdOf(ctx) }),
  };
}

async function testDestination(ctx: RouteContext) {
  const { destination, result } = await call(ctx.broker, 'proxy.testDestination', { accountId: ctx.account.accountId, nameOrId: nameOrIdOf(ctx) });
  return { success: true, storage_destination: destination, result };
}

async function removeDestination(ctx: RouteContext) {
  const { name } = await call(ctx.broker, 'proxy.removeDestination', { accountId: ctx.account.accountId, nameOrId: nameOrIdOf(ctx) });
  return {
    success: true,
    note: `Storage destination "${name}" was removed (objects already uploaded stay in the bucket). Captures and configurations with store_to=${name} now fail with storage_destination_not_found.`,
  };
}

const TEST_FAILURES = ['storage_auth_failed', 'storage_bucket_not_found', 'storage_unreachable'] as const;

export const STORAGE_ROUTES: RouteDef[] = [
  route({
    method: 'POST',
    url: '/storage_destinations',
    summary: 'Stores a storage destination (an S3-compatible or GCS bucket) once a test object is written and deleted there.',
    tag: 'storage',
    params: CREATE_PARAMS,
    response: ok({ storage_destination: STORAGE_DESTINATION_SCHEMA, result: STORAGE_TEST_RESULT_SCHEMA }),
    errors: ['invalid_parameter', 'invalid_storage_destination', ...TEST_FAILURES, 'secrets_not_configured'],
    handler: createDestination,
  }),
  route({
    method: 'GET',
    url: '/storage_destinations',
    summary: "The account's storage destinations (never their secrets).",
    tag: 'storage',
    params: KEY_ONLY_PARAMS,
    response: ok({ storage_destinations: Type.Array(STORAGE_DESTINATION_SCHEMA) }),
    errors: ['invalid_parameter'],
    handler: listDestinations,
  }),
  route({
    method: 'GET',
    url: '/storage_destinations/:name_or_id',
    summary: 'One storage destination, by name or id.',
    tag: 'storage',
    params: KEY_ONLY_PARAMS,
    response: ok({ storage_destination: STORAGE_DESTINATION_SCHEMA }),
    errors: ['not_found'],
    handler: getDestination,
  }),
  route({
    method: 'POST',
    url: '/storage_destinations/:name_or_id/test',
    summary: 'Tests a stored destination again (writes, then deletes, a small object).',
    tag: 'storage',
    params: KEY_ONLY_PARAMS,
    response: ok({ storage_destination: STORAGE_DESTINATION_SCHEMA, result: STORAGE_TEST_RESULT_SCHEMA }),
    errors: ['not_found', 'invalid_storage_destination', ...TEST_FAILURES, 'secret_unreadable'],
    handler: testDestination,
  }),
  route({
    method: 'DELETE',
    url: '/storage_destinations/:name_or_id',
    summary: 'Removes a storage destination.',
    tag: 'storage',
    params: KEY_ONLY_PARAMS,
    response: ok({ note: Type.String() }),
    errors: ['not_found'],
    handler: removeDestination,
  }),
];
