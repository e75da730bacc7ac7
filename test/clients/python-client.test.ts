/**
 * The official Python client (screenshots_pagepixels 1.0.4, client.py), replayed: it is on
 * PyPI only, which this machine cannot reach, so each method's request is sent here as
 * `requests` puts it on the wire (docs/clients.md): `Authorization: Bearer <key>` and no
 * access_token; GET options through urlencode (spaces as `+`, booleans as `True`/`False`);
 * POST and PATCH a JSON body (json.dumps' separators); DELETE with no body. The answer is
 * read as the client does: raise_for_status, then `.json()` on every answer but a /snap
 * without the key `json`, whose bytes are returned.
 */
import { expect } from 'chai';
import { imageSize } from '../support/capture-helpers';
import { type ClientWorld, clientWorld, send } from './harness';

/** Python's urlencode(doseq=True) of a dict: quote_plus of str() of each value (True, False, None dropped). */
function urlencode(options: Record<string, string | number | boolean>): string {
  const quote = (s: string) =>
    encodeURIComponent(s)
      .replace(/%20/g, '+')
      .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return Object.entries(options)
    .map(([k, v]) => `${quote(k)}=${quote(typeof v === 'boolean' ? (v ? 'True' : 'False') : String(v))}`)
    .join('&');
}

/** json.dumps with its default separators (", " and ": "). */
const dumps = (v: unknown): string =>
  JSON.stringify(v, null, 1).replace(/\n\s*/g, ' ').replace(/\[ /g, '[').replace(/ \]/g, ']').replace(/\{ /g, '{').replace(/ \}/g, '}');

describe('client replay: the official Python client', function () {
  this.timeout(120_000);
  const w: ClientWorld = clientWorld();
  const base = { accept: '*/*', 'user-agent': 'python-requests/2.32.3', 'accept-encoding': 'gzip, deflate', connection: 'keep-alive' };
  const headers = (json = false): Record<string, string> => ({
    ...base,
    authorization: `Bearer ${w.key}`,
    ...(json ? { 'content-type': 'application/json' } : {}),
  });
  /** _get: raise_for_status, then the bytes of a /snap without the key json, else .json(). */
  const getJson = async (path: string, options: Record<string, string | number | boolean> = {}) => {
    const q = urlencode(options);
    const r = await send(w.base, 'GET', q ? `${path}?${q}` : path, headers());
    expect(r.status, r.raw.toString().slice(0, 300)).to.be.below(400);
    return r;
  };
  const withBody = async (method: 'POST' | 'PATCH', path: string, options: Record<string, unknown>) => {
    const r = await send(w.base, method, path, headers(true), dumps(options));
    expect(r.status, r.raw.toString().slice(0, 300)).to.be.below(400);
    return r;
  };

  let configId = '';
  let jobId = '';

  it('snap(options) with json=True: the record (booleans True/False, an empty selectors, the README values)', async () => {
    const r = await getJson('/snap', { url: `${w.site.origin}/page?py=1`, json: true, fullpage: false, wait: 0, selectors: '', ttl: 0 });
    expect(r.body).to.include({ success: true });
    expect(r.body).to.include.keys('direct_link', 'job_id');
  });

  it('snap(options) without json: the image bytes', async () => {
    const r = await getJson('/snap', { url: `${w.site.origin}/page?py=2`, page_width: 800, page_height: 600, wait: 0, ttl: 0 });
    expect(r.headers.get('content-type')).to.equal('image/jpeg');
    expect(await imageSize(r.raw)).to.deep.equal([800, 600]);
  });

  it('snap with headers, cookies and actions passed as json.dumps text (the only form a GET dict keeps)', async () => {
    const r = await getJson('/snap', {
      url: `${w.site.origin}/page?py=3`,
      json: true,
      wait: 0,
      ttl: 0,
      headers: dumps({ 'X-Py': 'one two' }),
      cookies: dumps([{ key: 'py_session', value: 'abc' }]),
      multi_step_actions: dumps([{ type: 'click', selector: '#login' }]),
    });
    expect(r.body.success).to.equal(true);
    const seen = w.seenAt('/page').find((s) => s.query === 'py=3');
    expect(seen?.headers).to.include({ 'x-py': 'one two', cookie: 'py_session=abc' });
  });

  it('create_screenshot_config: POST a JSON body (the README example, scheduled_every 1)', async () => {
    const r = await withBody('POST', '/screenshot_configs', {
      url: `${w.site.origin}/page?py=config`,
      scheduled_screenshot: true,
      scheduled_every: 1,
      scheduled_interval: 'days',
      wait: 0,
      multi_step_actions: [{ type: 'wait', value: '100' }],
    });
    expect(r.body).to.have.all.keys('success', 'screenshot_configuration_id', 'embed_url', 'job_id');
    configId = String(r.body.screenshot_configuration_id);
    jobId = String(r.body.job_id);
  });

  it('job_status(job_id) until completed', async () => {
    const r = await w.finished(jobId);
    expect(r.body).to.include({ success: true, status: 'completed', job_id: jobId });
  });

  it('get_screenshot_config(id) and screenshot_configs(options) with paging', async () => {
    const one = await getJson(`/screenshot_configs/${configId}`);
    expect(one.body.config).to.include({ url: `${w.site.origin}/page?py=config`, scheduled_every: 1 });
    const list = await getJson('/screenshot_configs', { page: 1, limit: 10, order: 'ASC', after: 1_700_000_000 });
    expect((list.body.screenshot_configurations as unknown[]).length).to.be.at.least(1);
  });

  it("update_screenshot_config(id, {'scheduled_every': 2}), the README's example: no url, the stored one kept", async () => {
    const r = await withBody('PATCH', `/screenshot_configs/${configId}`, { scheduled_every: 2 });
    expect(r.body.config).to.include({ url: `${w.site.origin}/page?py=config`, scheduled_every: 2 });
  });

  it('capture_screenshot(id): POST {}; screenshot_config_screenshots, screenshots and both change-notification lists', async () => {
    const r = await withBody('POST', `/screenshot_configs/${configId}/capture`, {});
    expect(r.body).to.have.all.keys('success', 'job_id', 'embed_url');
    await w.finished(String(r.body.job_id));
    const shots = await getJson(`/screenshot_configs/${configId}/screenshots`, { limit: 10 });
    expect(shots.body.screenshots).to.have.length(2);
    const all = await getJson('/screenshots', { limit: 1 });
    expect(all.body.screenshots).to.have.length(1);
    const mine = await getJson(`/screenshot_configs/${configId}/change_notifications`, {});
    expect(mine.body).to.deep.include({ success: true, change_notifications: [] });
    const every = await getJson('/change_notifications', { before: Date.now() });
    expect(every.body.success).to.equal(true);
  });

  it('delete_screenshot_config(id): DELETE with no body, answered JSON (the client calls .json() on it)', async () => {
    const r = await send(w.base, 'DELETE', `/screenshot_configs/${configId}`, { ...headers(), 'content-length': '0' });
    expect(r.status).to.equal(200);
    expect(r.body).to.include({ success: true, deleted: true });
  });
});
