/**
 * The own proxy record (spec, "Own proxies"), never with its password: the schema the proxy
 * service publishes, with its type (ProxyRecord), and the forms PUT and test answer.
 */
import { type Static, Type } from '@sinclair/typebox';

export const PROXY_RECORD_SCHEMA = Type.Object({
  id: Type.Integer(),
  label: Type.String(),
  protocol: Type.String(),
  host: Type.String(),
  port: Type.Integer(),
  username: Type.Union([Type.String(), Type.Null()]),
  has_password: Type.Boolean(),
  verified: Type.Boolean(),
  exit_ip: Type.Union([Type.String(), Type.Null()]),
  last_test_ms: Type.Union([Type.Integer(), Type.Null()]),
  last_error: Type.Union([Type.String(), Type.Null()]),
});

/** This record in the kernel's table of records (shared/contracts.ts, PublishedRecords). */
declare global {
  interface PublishedRecords {
    proxyRecord: Static<typeof PROXY_RECORD_SCHEMA>;
  }
}

/** PUT /proxies answers the record with verified_at (null until a test passed) and display_url, the proxy URL with its password masked. */
export const STORED_PROXY_RECORD_SCHEMA = Type.Object({
  ...PROXY_RECORD_SCHEMA.properties,
  verified_at: Type.Union([Type.String({ format: 'date-time', description: 'When the last test passed, ISO 8601 UTC.' }), Type.Null()]),
  display_url: Type.String(),
});

/** A connection test's outcome: the exit IP seen and the time taken. */
export const PROXY_TEST_RESULT_SCHEMA = Type.Object({ exit_ip: Type.Union([Type.String(), Type.Null()]), ms: Type.Integer() });

/** POST /proxies/:id/test answers these fields of the record. */
export const TESTED_PROXY_SCHEMA = Type.Pick(PROXY_RECORD_SCHEMA, ['id', 'label', 'verified', 'exit_ip', 'last_test_ms']);
