/**
 * The official npm client (`screenshots-pagepixels` 1.0.2, from the npm registry), unchanged.
 * It drops the port of its base URL (docs/clients.md), so it is pointed at
 * http://127.0.0.80 (port 80 of a loopback address) where this test forwards to the
 * system's port. What it cannot send right is answered as its user would then see it: its
 * create and update send `{}` whatever they are given, so the service answers 400 and the
 * client's promise rejects, rather than a 200 that would hide the lost change.
 */
import { expect } from 'chai';
import net from 'node:net';
import ScreenshotsPagepixels from 'screenshots-pagepixels';
import { call } from '../../services/shared/contracts';
import { type ClientWorld, clientWorld } from './harness';

const CLIENT_HOST = '127.0.0.80';

/** The message a promise rejects with (fails when it resolves). */
const rejection = (p: Promise<unknown>): Promise<string> =>
  p.then(
    (v) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(v)}`);
    },
    (err: Error) => err.message,
  );

/** Forwards port 80 of `host` to `port` on 127.0.0.1 (the client always connects to port 80). */
async function forwardPort80(host: string, port: number): Promise<net.Server> {
  const server = net.createServer((inbound) => {
    const outbound = net.connect(port, '127.0.0.1');
    inbound.pipe(outbound).pipe(inbound);
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) =>
      reject(new Error(`The npm client always connects to port 80; this test listens on ${host}:80 and could not (${err.message}).`)),
    );
    server.listen(80, host, resolve);
  });
  return server;
}

interface Client {
  apiBaseUrl: string;
  snap(o: Record<string, unknown>): Promise<unknown>;
  screenshotConfigs(o?: Record<string, unknown>): Promise<Record<string, unknown>>;
  createScreenshotConfig(o: Record<string, unknown>): Promise<Record<string, unknown>>;
  getScreenshotConfig(id: string): Promise<Record<string, unknown>>;
  updateScreenshotConfig(id: string, o: Record<string, unknown>): Promise<Record<string, unknown>>;
  deleteScreenshotConfig(id: string): Promise<Record<string, unknown>>;
  screenshotConfigScreenshots(id: string, o?: Record<string, unknown>): Promise<Record<string, unknown>>;
  screenshotConfigChangeNotifications(id: string, o?: Record<string, unknown>): Promise<Record<string, unknown>>;
  jobStatus(id: string): Promise<Record<string, unknown>>;
  captureScreenshot(id: string): Promise<Record<string, unknown>>;
  screenshots(o?: Record<string, unknown>): Promise<Record<string, unknown>>;
  changeNotifications(o?: Record<string, unknown>): Promise<Record<string, unknown>>;
}

describe('client: the official npm client, unchanged', function () {
  this.timeout(120_000);
  const w: ClientWorld = clientWorld();
  let forward: net.Server;
  let client: Client;
  let configId = '';

  before(async () => {
    forward = await forwardPort80(CLIENT_HOST, Number(new URL(w.base).port));
    client = new (ScreenshotsPagepixels as unknown as new (key: string) => Client)(w.key);
    client.apiBaseUrl = `http://${CLIENT_HOST}`;
    const url = `${w.site.origin}/page?npm=config`;
    configId = (await call(w.sys.broker, 'scheduler.create', { accountId: w.accountId, input: { given: { url }, options: { url } }, jobId: 'none' })).ids
      .screenshot_config_id;
  });
  after(async () => {
    await new Promise((r) => forward?.close(r));
  });

  it('snap({url, json: true}) resolves the record (the key arrives as access_token in its query)', async () => {
    const r = (await client.snap({ url: `${w.site.origin}/page?npm=1`, json: true, wait: 0, ttl: 0 })) as Record<string, unknown>;
    expect(r).to.include({ success: true });
    expect(r).to.include.keys('direct_link', 'job_id');
  });

  it('snap({url}) resolves the answer as text, as the client reads it', async () => {
    const r = await client.snap({ url: `${w.site.origin}/page?npm=2`, wait: 0, ttl: 0, image_format: 'png' });
    expect(r).to.be.a('string').that.contains('PNG');
  });

  it('createScreenshotConfig rejects: the client sends {} whatever it is given, and that is refused (url is required)', async () => {
    expect(await rejection(client.createScreenshotConfig({ url: `${w.site.origin}/page`, scheduled_screenshot: true }))).to.equal(
      'Request failed with status 400',
    );
  });

  it('updateScreenshotConfig rejects: its {} carries nothing to change', async () => {
    expect(await rejection(client.updateScreenshotConfig(configId, { wait: 500 }))).to.equal('Request failed with status 400');
    expect((await client.getScreenshotConfig(configId)).config).to.deep.equal({ url: `${w.site.origin}/page?npm=config` });
  });

  it('captureScreenshot, jobStatus, the lists (with and without options) and deleteScreenshotConfig', async () => {
    const started = await client.captureScreenshot(configId);
    expect(started).to.have.all.keys('success', 'job_id', 'embed_url');
    await w.finished(String(started.job_id));
    expect(await client.jobStatus(String(started.job_id))).to.include({ success: true, status: 'completed' });
    expect((await client.screenshotConfigs()).screenshot_configurations).to.be.an('array').that.is.not.empty;
    expect((await client.screenshotConfigs({ limit: 1 })).screenshot_configurations).to.have.length(1);
    expect((await client.screenshotConfigScreenshots(configId)).screenshots).to.have.length(1);
    expect((await client.screenshotConfigScreenshots(configId, { order: 'ASC' })).screenshots).to.have.length(1);
    expect(await client.screenshotConfigChangeNotifications(configId)).to.deep.include({ success: true, change_notifications: [] });
    expect((await client.screenshots({ limit: 2 })).screenshots).to.have.length(2);
    expect(await client.changeNotifications()).to.include({ success: true });
    // DELETE arrives with Content-Type: application/json and the body {}.
    expect(await client.deleteScreenshotConfig(configId)).to.include({ success: true, deleted: true });
  });
});
