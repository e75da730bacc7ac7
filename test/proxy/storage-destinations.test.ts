/**
 * Storage destinations (store_to) end to end, embedded mode on the real Grid: destinations
 * stored against a local S3-compatible server speaking the real protocol (s3rver) and the
 * GCS stand-in, each tested by writing and deleting an object; bad credentials, a missing
 * bucket and a closed port refused with what failed; secrets never answered or logged;
 * another account's destination is 404 and not usable; /snap?store_to uploads the capture,
 * read back with the AWS SDK and compared byte for byte with the archived image, its ETag
 * the record's, its key the template's; a configuration's capture uploads (GCS) and its
 * signed webhook body carries where; an unknown destination is 400 and nothing is charged.
 */
import net from 'node:net';
import { expect } from 'chai';
import { GetObjectCommand, HeadObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { Webhook } from 'standardwebhooks';
import { backendConfig, freePort } from '../support/backends';
import { CAPTURE_SERVICES, screenshotsUsed } from '../support/capture-helpers';
import { expectEnvelope } from '../support/errors';
import { type FakeGcs, startFakeGcs } from '../support/fake-gcs-server';
import { type FixtureServer, startFixtures } from '../support/fixtures';
import { sharedGrid } from '../support/grid';
import { jobFinished, qs, request } from '../support/http';
import { S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, type S3Server, startS3Server } from '../support/s3-server';
import { type RunningSystem, runSystem } from '../support/system';
import { type Receiver, startReceiver } from '../notifier/receivers';

type Body = Record<string, unknown>;

const GCS_KEY = JSON.stringify({
  type: 'service_account',
  project_id: 'snap-test',
  client_email: 'uploader@snap-test.iam.gserviceaccount.com',
  private_key: '-----BEGIN PRIVATE KEY-----\nGCS-PRIVATE-KEY-NEVER-SHOWN\n-----END PRIVATE KEY-----\n',
});

describe('storage destinations (store_to): S3-compatible and GCS buckets of the account', function () {
  this.timeout(120_000);
  let fx: FixtureServer;
  let s3: S3Server;
  let gcs: FakeGcs;
  let receiver: Receiver;
  let sys: RunningSystem;
  let cleanup: () => Promise<void>;
  let token = '';
  let other = '';
  const logLines: string[] = [];
  let clock = Date.now();

  before(async () => {
    const grid = await sharedGrid();
    fx = await startFixtures();
    s3 = await startS3Server(['shots', 'archive']);
    gcs = await startFakeGcs();
    receiver = await startReceiver();
    const b = await backendConfig('sqlite', {
      SERVICES: CAPTURE_SERVICES,
      SELENIUM_URL: grid.url,
      ALLOW_PRIVATE_NETWORKS: 'true',
      CAPTURE_SESSIONS: '1',
      WEBHOOK_POLL_MS: '200',
      // With a user and password (an emulator behind Basic authentication): no location shows them.
      GCS_API_ENDPOINT: gcs.endpoint.replace('http://', 'http://emu:EmuPw42@'),
      LOG_LEVEL: 'debug',
    });
    cleanup = b.cleanup;
    sys = await runSystem(b.config, { scheduler: { now: () => clock, autoTick: false }, logStream: { write: (line: string) => logLines.push(line) } });
    token = (await sys.account('paid')).access_token;
    other = (await sys.account('paid')).access_token;
  });
  after(async () => {
    await sys?.stop();
    await receiver?.stop();
    await gcs?.stop();
    await s3?.stop();
    await fx?.stop();
    await cleanup?.();
  });

  const api = (method: string, p: string, json?: Body, as = token) =>
    request<Body>(sys.base, method, p, { headers: { authorization: `Bearer ${as}` }, ...(json ? { json } : {}) });
  const s3Destination = (over: Body = {}) => ({
    name: 'my-s3',
    type: 's3',
    endpoint: s3.endpoint,
    region: 'us-east-1',
    bucket: 'shots',
    access_key_id: S3_ACCESS_KEY_ID,
    secret_access_key: S3_SECRET_ACCESS_KEY,
    ...over,
  });
  const objectsIn = async (bucket: string) => ((await s3.client.send(new ListObjectsV2Command({ Bucket: bucket }))).Contents ?? []).map((o) => o.Key as string);

  it('stores an S3-compatible destination once a test object was written and deleted; never answers its secret', async () => {
    const r = await api('POST', '/storage_destinations', s3Destination({ secret_access_key: S3_SECRET_ACCESS_KEY }));
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    const d = r.body.storage_destination as Body;
    expect(d).to.include({
      name: 'my-s3',
      type: 's3',
      endpoint: s3.endpoint,
      region: 'us-east-1',
      bucket: 'shots',
      access_key_id: 'S3RVER',
      has_secret: true,
      verified: true,
    });
    expect(d).to.not.have.property('secret_access_key');
    expect((r.body.result as Body).key).to.match(/^\.snapservice-test\/[A-Za-z0-9]+\.txt$/);
    // Written, then deleted: the bucket holds nothing.
    expect(await objectsIn('shots')).to.deep.equal([]);
    const byName = await api('GET', '/storage_destinations/my-s3');
    const byId = await api('GET', `/storage_destinations/${d.id}`);
    expect(byName.body.storage_destination).to.deep.equal(byId.body.storage_destination);
    const again = await api('POST', '/storage_destinations/my-s3/test');
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    expect((again.body.storage_destination as Body).verified).to.equal(true);
    const list = await api('GET', '/storage_destinations');
    expect((list.body.storage_destinations as Body[]).map((x) => x.name)).to.deep.equal(['my-s3']);
    // The same name twice is refused.
    expectEnvelope(await api('POST', '/storage_destinations', s3Destination()), 400, 'invalid_storage_destination', 'already has');
  });

  it('refuses bad credentials, a missing bucket and an unreachable endpoint, naming what failed; stores none of them', async () => {
    const wrongKey = await api(
      'POST',
      '/storage_destinations',
      s3Destination({ name: 'bad-key', access_key_id: 'NOT-A-KEY', secret_access_key: 'wrong-secret-123' }),
    );
    expectEnvelope(wrongKey, 400, 'storage_auth_failed', 'InvalidAccessKeyId', 'credentials');
    expect(JSON.stringify(wrongKey.body)).to.not.include('wrong-secret-123');
    expectEnvelope(
      await api('POST', '/storage_destinations', s3Destination({ name: 'no-bucket', bucket: 'missing-bucket' })),
      400,
      'storage_bucket_not_found',
      'NoSuchBucket',
    );
    const closed = await freePort();
    expectEnvelope(
      await api('POST', '/storage_destinations', s3Destination({ name: 'closed', endpoint: `http://127.0.0.1:${closed}` })),
      400,
      'storage_unreachable',
      'ECONNREFUSED',
    );
    // An endpoint that takes the connection and never answers: refused as unreachable at the storage bound (20 s), not a broker timeout's 503.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      expectEnvelope(
        await api(
          'POST',
          '/storage_destinations',
          s3Destination({ name: 'silent', endpoint: `http://127.0.0.1:${(silent.address() as net.AddressInfo).port}` }),
        ),
        400,
        'storage_unreachable',
      );
    } finally {
      silent.close();
    }
    expectEnvelope(
      await api('POST', '/storage_destinations', s3Destination({ name: 'with-path', endpoint: `${s3.endpoint}/shots` })),
      400,
      'invalid_storage_destination',
      'endpoint',
    );
    expectEnvelope(
      await api('POST', '/storage_destinations', { name: 'g', type: 'gcs', bucket: 'gbucket', credentials: '{"nope":1}' }),
      400,
      'invalid_storage_destination',
      'client_email',
    );
    const names = ((await api('GET', '/storage_destinations')).body.storage_destinations as Body[]).map((x) => x.name);
    expect(names).to.deep.equal(['my-s3']);
  });

  it('stores a GCS destination (the service account key sealed; its e-mail shown, never the key)', async () => {
    const r = await api('POST', '/storage_destinations', { name: 'my-gcs', type: 'gcs', bucket: 'gcs-shots', credentials: GCS_KEY });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body.storage_destination).to.include({
      name: 'my-gcs',
      type: 'gcs',
      bucket: 'gcs-shots',
      client_email: 'uploader@snap-test.iam.gserviceaccount.com',
      verified: true,
    });
    expect(JSON.stringify(r.body)).to.not.include('GCS-PRIVATE-KEY');
    // The test object went to the bucket and was deleted again.
    expect(gcs.requests.some((q) => q.method === 'POST' && q.url.includes('/b/gcs-shots/o'))).to.equal(true);
    expect(gcs.requests.some((q) => q.method === 'DELETE' && q.url.includes('/b/gcs-shots/o/'))).to.equal(true);
    expect([...gcs.objects.keys()].filter((k) => k.startsWith('gcs-shots/'))).to.deep.equal([]);
    expect(JSON.stringify((await api('GET', '/storage_destinations')).body)).to.not.include('GCS-PRIVATE-KEY');
  });

  it("another account's destination answers 404 and cannot be stored to (400, nothing charged)", async () => {
    expectEnvelope(await api('GET', '/storage_destinations/my-s3', undefined, other), 404, 'not_found');
    expectEnvelope(await api('POST', '/storage_destinations/my-s3/test', undefined, other), 404, 'not_found');
    expectEnvelope(await api('DELETE', '/storage_destinations/my-s3', undefined, other), 404, 'not_found');
    expect((await api('GET', '/storage_destinations', undefined, other)).body.storage_destinations).to.deep.equal([]);
    const snap = await request(sys.base, 'GET', `/snap?${qs({ access_token: other, url: `${fx.origin}/plain`, store_to: 'my-s3' })}`);
    expectEnvelope(snap, 400, 'storage_destination_not_found', 'my-s3', 'GET /storage_destinations');
    expect(await screenshotsUsed(sys, other)).to.equal(0);
  });

  it('refuses an unknown destination, an unknown placeholder and store_key alone with 400 before anything is spent', async () => {
    const base = { access_token: token, url: `${fx.origin}/plain`, ttl: 0 };
    const before = await screenshotsUsed(sys, token);
    expectEnvelope(await request(sys.base, 'GET', `/snap?${qs({ ...base, store_to: 'nope' })}`), 400, 'storage_destination_not_found', '"nope"');
    expectEnvelope(
      await request(sys.base, 'GET', `/snap?${qs({ ...base, store_to: 'my-s3', store_key: '{id}-{color}.{ext}' })}`),
      400,
      'invalid_parameter',
      '{color}',
    );
    expectEnvelope(await request(sys.base, 'GET', `/snap?${qs({ ...base, store_key: '{id}.{ext}' })}`), 400, 'invalid_parameter', 'requires store_to');
    expectEnvelope(await api('POST', '/screenshot_configs', { url: `${fx.origin}/plain`, store_to: 'nope' }), 400, 'storage_destination_not_found');
    expect(await screenshotsUsed(sys, token)).to.equal(before);
  });

  it('/snap?store_to uploads the capture under the key template: the bytes read back with the AWS SDK are the archived image, the ETag the record says', async () => {
    const r = await request<Body>(
      sys.base,
      'GET',
      `/snap?${qs({ access_token: token, url: `${fx.origin}/plain`, ttl: 0, wait: 0, page_width: 400, page_height: 300, image_format: 'png', json: true, store_to: 'my-s3', store_key: 'shots/{config_id}/{date}/{id}.{ext}' })}`,
    );
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    const stored = r.body.stored_to as { destination: string; bucket: string; key: string; location: string; etag: string };
    const id = /\/([A-Za-z0-9]+)\.png$/.exec(r.body.direct_link as string)?.[1];
    const date = new Date(Number(r.body.taken_at_timestamp)).toISOString().slice(0, 10);
    expect(stored).to.deep.equal({
      destination: 'my-s3',
      bucket: 'shots',
      key: `shots/${r.body.screenshot_configuration_id}/${date}/${id}.png`,
      location: `${s3.endpoint}/shots/shots/${r.body.screenshot_configuration_id}/${date}/${id}.png`,
      etag: stored.etag,
    });
    const object = await s3.client.send(new GetObjectCommand({ Bucket: 'shots', Key: stored.key }));
    const uploaded = Buffer.from(await object.Body!.transformToByteArray());
    const archived = Buffer.from(await (await fetch(r.body.direct_link as string)).arrayBuffer());
    expect(uploaded.subarray(0, 8).toString('hex')).to.equal('89504e470d0a1a0a');
    expect(uploaded.equals(archived), 'the uploaded object is the archived image').to.equal(true);
    expect(object.ContentType).to.equal('image/png');
    const head = await s3.client.send(new HeadObjectCommand({ Bucket: 'shots', Key: stored.key }));
    expect(stored.etag).to.match(/^[0-9a-f]{32}$/);
    expect(head.ETag?.replace(/"/g, '')).to.equal(stored.etag);
    // The account-wide list shows it too.
    const list = await api('GET', '/screenshots');
    expect((list.body.screenshots as Body[])[0]?.stored_to).to.deep.equal(stored);
  });

  it('reuses a capture within ttl only while store_to names the same destination: one deleted and made again for another bucket captures and uploads anew', async () => {
    const params = {
      access_token: token,
      url: `${fx.origin}/plain?moving`,
      ttl: 600,
      wait: 0,
      page_width: 400,
      page_height: 300,
      json: true,
      store_to: 'moving',
    };
    const snapTo = () => request<Body>(sys.base, 'GET', `/snap?${qs(params)}`);
    expect((await api('POST', '/storage_destinations', s3Destination({ name: 'moving', bucket: 'shots' }))).status).to.equal(200);
    const first = await snapTo();
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    const again = await snapTo();
    expect(again.headers.get('x-cache')).to.equal('HIT');
    expect(again.body.stored_to).to.deep.equal(first.body.stored_to);
    expect((await api('DELETE', '/storage_destinations/moving')).status).to.equal(200);
    expect((await api('POST', '/storage_destinations', s3Destination({ name: 'moving', bucket: 'archive' }))).status).to.equal(200);
    const moved = await snapTo();
    expect(moved.status, JSON.stringify(moved.body)).to.equal(200);
    expect(moved.headers.get('x-cache'), 'the name now points to another bucket: captured anew').to.equal('MISS');
    const stored = moved.body.stored_to as { bucket: string; key: string };
    expect(stored.bucket).to.equal('archive');
    expect(await objectsIn('archive')).to.include(stored.key);
    expect((await snapTo()).body.id, 'reused again, under what it points to now').to.equal(moved.body.id);
    expect((await api('DELETE', '/storage_destinations/moving')).status).to.equal(200);
  });

  it("a configuration's captures upload (GCS) and its signed webhook body carries the location and ETag", async () => {
    const created = await api('POST', '/screenshot_configs', {
      url: `${fx.origin}/plain`,
      wait: 0,
      page_width: 400,
      page_height: 300,
      webhook_url: `${receiver.origin}/captures`,
      store_to: 'my-gcs',
      store_key: 'configs/{config_id}/{job_id}.{ext}',
      scheduled_screenshot: true,
      scheduled_every: 1,
      scheduled_interval: 'hours',
    });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const configId = created.body.screenshot_configuration_id as string;
    const jobId = created.body.job_id as string;
    const done = await jobFinished(sys.base, token, jobId);
    expect(done.body.status, JSON.stringify(done.body)).to.equal('completed');
    for (let i = 0; i < 100 && receiver.received.length < 1; i++) await new Promise((res) => setTimeout(res, 100));
    expect(receiver.received).to.have.length(1);
    const got = receiver.received[0]!;
    const secret = (await api('GET', '/webhook_secret')).body.secret as string;
    const body = new Webhook(secret).verify(got.body, got.headers as Record<string, string>) as Body;
    const key = `configs/${configId}/${jobId}.jpeg`;
    const object = gcs.objects.get(`gcs-shots/${key}`);
    expect(object, 'the capture is in the GCS bucket').to.not.equal(undefined);
    expect(body.stored_to).to.deep.equal({
      destination: 'my-gcs',
      bucket: 'gcs-shots',
      key,
      location: `${gcs.endpoint}/gcs-shots/${key}`,
      etag: (body.stored_to as Body).etag,
    });
    expect((body.stored_to as Body).etag)
      .to.be.a('string')
      .and.not.equal('');
    const archived = Buffer.from(await (await fetch(body.direct_link as string)).arrayBuffer());
    expect(object!.data.equals(archived), 'the uploaded object is the archived image').to.equal(true);
    expect(object!.contentType).to.equal('image/jpeg');

    // A scheduled capture of it uploads too, under its own job id.
    clock += 2 * 3_600_000;
    const scheduled = (await sys.scheduler!.tick()).find((x) => x.configId === configId);
    expect(scheduled, 'the configuration was due').to.not.equal(undefined);
    expect((await jobFinished(sys.base, token, scheduled!.jobId)).body.status).to.equal('completed');
    for (let i = 0; i < 100 && receiver.received.length < 2; i++) await new Promise((res) => setTimeout(res, 100));
    const second = new Webhook(secret).verify(receiver.received[1]!.body, receiver.received[1]!.headers as Record<string, string>) as Body;
    const secondKey = `configs/${configId}/${scheduled!.jobId}.jpeg`;
    expect((second.stored_to as Body).key).to.equal(secondKey);
    expect(gcs.objects.has(`gcs-shots/${secondKey}`)).to.equal(true);
  });

  it('an upload that fails fails the capture with storage_upload_failed, not charged; DELETE then makes store_to unknown', async () => {
    // A destination whose bucket is gone after it was stored.
    expect((await api('POST', '/storage_destinations', s3Destination({ name: 'archive', bucket: 'archive' }))).status).to.equal(200);
    await s3.stop();
    const before = await screenshotsUsed(sys, token);
    const r = await request(sys.base, 'GET', `/snap?${qs({ access_token: token, url: `${fx.origin}/plain`, ttl: 0, wait: 0, store_to: 'archive' })}`);
    expectEnvelope(r, 502, 'storage_upload_failed', 'archive', 'not charged');
    expect(await screenshotsUsed(sys, token)).to.equal(before);
    expect((await api('DELETE', '/storage_destinations/archive')).status).to.equal(200);
    expectEnvelope(await api('GET', '/storage_destinations/archive'), 404, 'not_found');
    expectEnvelope(
      await request(sys.base, 'GET', `/snap?${qs({ access_token: token, url: `${fx.origin}/plain`, store_to: 'archive' })}`),
      400,
      'storage_destination_not_found',
    );
  });

  it('the OpenAPI document carries the options (snap and configurations) and the endpoints', async () => {
    const doc = (await request<Body>(sys.base, 'GET', '/openapi.json')).body as { paths: Record<string, Record<string, Body>> };
    const snapParams = (doc.paths['/snap']!.get!.parameters as Array<{ name: string }>).map((x) => x.name);
    expect(snapParams).to.include.members(['store_to', 'store_key']);
    expect(JSON.stringify(doc.paths['/screenshot_configs']!.post)).to.include('store_to').and.include('store_key');
    expect(doc.paths['/storage_destinations']).to.have.keys('get', 'post');
    expect(doc.paths['/storage_destinations/{name_or_id}']).to.have.keys('get', 'delete');
    expect(doc.paths['/storage_destinations/{name_or_id}/test']).to.have.keys('post');
  });

  it('never wrote a secret to the log', () => {
    const log = logLines.join('');
    expect(log).to.include('capture uploaded to store_to');
    for (const secret of ['wrong-secret-123', 'GCS-PRIVATE-KEY-NEVER-SHOWN']) expect(log).to.not.include(secret);
  });
});
