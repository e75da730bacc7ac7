/**
 * Route options that cannot be carried out (a location not in the catalogue, an own proxy
 * not stored) are refused after the plan gates and before any credit or capture, on snaps
 * and on configurations: never accepted and ignored.
 */
import { expect } from 'chai';
import { call } from '../../services/shared/contracts';
import { backendConfig } from '../support/backends';
import { screenshotsUsed } from '../support/capture-helpers';
import { expectEnvelope } from '../support/errors';
import { qs, request } from '../support/http';
import { type RunningSystem, runSystem } from '../support/system';

describe('route options that cannot be carried out are refused, not ignored', () => {
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  let key: string;

  before(async () => {
    const b = await backendConfig('sqlite', { SERVICES: 'api,billing,ai,proxy,scheduler' });
    cleanup = b.cleanup;
    sys = await runSystem(b.config);
    key = (await sys.account('paid', { byo_proxy: 1, byo_ai: 1 })).access_token;
  });
  after(async () => {
    await sys.stop();
    await cleanup();
  });

  const snap = (params: Record<string, string | number | boolean>) =>
    request(sys.base, 'GET', `/snap?${qs({ access_token: key, url: 'https://example.com', ...params })}`);
  const create = (params: Record<string, unknown>) =>
    request(sys.base, 'POST', '/screenshot_configs', { headers: { authorization: `Bearer ${key}` }, json: { url: 'https://example.com', ...params } });

  it('a real_location on a server without that location answers 400 invalid_parameter naming it', async () => {
    expectEnvelope(await snap({ real_location: 'Berlin' }), 400, 'invalid_parameter', 'real_location');
    expectEnvelope(await create({ real_location: 'Berlin' }), 400, 'invalid_parameter', 'real_location');
  });

  it('a custom_proxy_id that is not stored answers 412 custom_proxy_not_found', async () => {
    expectEnvelope(await snap({ custom_proxy_id: 3 }), 412, 'custom_proxy_not_found', 'custom_proxy_id');
    expectEnvelope(await create({ custom_proxy_id: 3 }), 412, 'custom_proxy_not_found', 'custom_proxy_id');
    expect(await screenshotsUsed(sys, key)).to.equal(0);
  });

  it('the same on PATCH of a configuration (after it is found: an unknown one is 404 first)', async () => {
    const { accountId } = await call(sys.broker, 'billing.authenticate', { token: key });
    const url = 'https://example.com';
    const stored = await call(sys.broker, 'scheduler.create', { accountId, input: { given: { url }, options: { url } }, jobId: 'job1' });
    const patch = (id: string, json: Record<string, unknown>) =>
      request(sys.base, 'PATCH', `/screenshot_configs/${id}`, { headers: { authorization: `Bearer ${key}` }, json: { url, ...json } });
    const id = stored.ids.screenshot_config_id;
    expectEnvelope(await patch(id, { real_location: 'Berlin' }), 400, 'invalid_parameter', 'real_location');
    expectEnvelope(await patch(id, { custom_proxy_id: 3 }), 412, 'custom_proxy_not_found', 'custom_proxy_id');
    expectEnvelope(await patch('nope', { real_location: 'Berlin' }), 404, 'not_found', 'nope');
    expect((await call(sys.broker, 'scheduler.get', { accountId, id })).options).to.deep.equal({ url });
  });
});
