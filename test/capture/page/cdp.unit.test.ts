/**
 * CdpConnection reading data answers (screenshots, PDFs) from the socket's bytes, against a
 * WebSocket server on loopback that answers as Chromium does: the bytes must be the base64's,
 * the fast path must be taken for Chromium's shape, and anything else must still be parsed
 * as JSON, never answered wrongly.
 */
import { expect } from 'chai';
import sinon from 'sinon';
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { type WebSocket, WebSocketServer } from 'ws';
import { CdpConnection, CdpError, decodeBase64Bytes } from '../../../services/capture/page/cdp';

type Answer = (msg: { id: number; method: string; sessionId?: string }) => string;

describe('CdpConnection data answers', () => {
  let server: WebSocketServer;
  let answer: Answer;
  let cdp: CdpConnection;

  beforeEach(async () => {
    server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise((resolve) => server.once('listening', resolve));
    server.on('connection', (ws) => ws.on('message', (data) => ws.send(answer(JSON.parse(data.toString())))));
    cdp = await CdpConnection.open(`ws://127.0.0.1:${(server.address() as AddressInfo).port}/devtools/browser/x`);
  });

  afterEach(async () => {
    sinon.restore();
    cdp.close();
    await new Promise((resolve) => server.close(resolve));
  });

  const image = crypto.randomBytes(300_000);

  it('takes a socket that is closing for closed: a command fails as the connection closed, at once', async () => {
    // What the socket of a browser whose node was killed is for a moment: closing, its close event not yet come.
    (cdp as unknown as { ws: WebSocket }).ws.close();
    const failed = await cdp.send('Target.setAutoAttach', { autoAttach: true }).then(
      () => null,
      (err: Error) => err,
    );
    expect(failed).to.be.instanceOf(CdpError);
    expect(failed?.message).to.match(/connection closed/);
    expect(cdp.closed, 'the browser is taken as lost').to.equal(true);
  });

  it('takes a failed write for closed, though the socket still reads as open: the command and every waiting one fail as the connection closed', async () => {
    // A browser killed between captures: its socket's next write fails (EPIPE) before ws has seen the peer go and while it still reads as open.
    const ws = (cdp as unknown as { ws: WebSocket & { _socket: { write: (...a: unknown[]) => boolean } } }).ws;
    for (const client of server.clients) client.removeAllListeners('message');
    const waiting = cdp.send('Browser.getVersion').then(
      () => null,
      (err: Error) => err,
    );
    await new Promise((r) => setTimeout(r, 50));
    sinon.stub(ws._socket, 'write').callsFake((...args: unknown[]) => {
      const done = args.find((a) => typeof a === 'function') as ((err: Error) => void) | undefined;
      process.nextTick(() => done?.(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' })));
      return false;
    });
    const failed = await cdp.send('Page.navigate', { url: 'http://example.test/' }).then(
      () => null,
      (err: Error) => err,
    );
    expect(failed).to.be.instanceOf(CdpError);
    expect(failed?.message).to.match(/^Page\.navigate: CDP connection closed/);
    expect(cdp.closed, 'the browser is taken as lost').to.equal(true);
    expect((await waiting)?.message).to.match(/^Browser\.getVersion: CDP connection closed/);
  });

  it('reads a screenshot in Chromium’s shape from its bytes, session id and all', async () => {
    answer = (m) => `{"id":${m.id},"result":{"data":"${image.toString('base64')}"},"sessionId":"${m.sessionId}"}`;
    const data = await cdp.sendForData('Page.captureScreenshot', { format: 'png' }, 'S1');
    expect(data.equals(image)).to.equal(true);
    expect(cdp.dataAnswersFromBytes).to.equal(1);
  });

  it('decodes every padding and length exactly', async () => {
    // Across the decoder's slices of 65 536 characters (49 152 bytes) too, up to a long page's picture.
    for (const length of [0, 1, 2, 3, 4, 5, 20_000, 20_001, 20_002, 49_151, 49_152, 49_153, 98_305, 2_400_002]) {
      const bytes = crypto.randomBytes(length);
      const text = Buffer.from(bytes.toString('base64'));
      expect(decodeBase64Bytes(text, 0, text.length)?.equals(bytes), `length ${length}`).to.equal(true);
    }
    // Not plain base64: a character outside the alphabet, an escape, a length not a multiple of 4.
    for (const text of ['AB*D', 'QUJ\\/A==', 'QUJDRA=', 'QU"D']) {
      expect(decodeBase64Bytes(Buffer.from(text), 0, text.length), text).to.equal(null);
    }
    // A character outside the alphabet in any slice of a long text, at either end of a slice or inside one.
    const long = Buffer.from(crypto.randomBytes(200_000).toString('base64'));
    for (const at of [0, 65_535, 65_536, 100_000, 131_072, long.length - 1]) {
      const bad = Buffer.from(long);
      bad[at] = 0x2a;
      expect(decodeBase64Bytes(bad, 0, bad.length), `* at ${at}`).to.equal(null);
    }
  });

  it('parses any other shape as JSON and still answers the decoded data', async () => {
    const b64 = image.toString('base64');
    const shapes: Answer[] = [
      // Fields in another order, and an escaped slash: the bytes are not plain base64.
      (m) => `{"result":{"data":"${b64}"},"id":${m.id}}`,
      (m) => `{"id":${m.id},"result":{"data":"${b64.replace(/\//g, '\\/')}"}}`,
      // More in the result than the data.
      (m) => `{"id":${m.id},"result":{"data":"${b64}","extra":1}}`,
    ];
    for (const shape of shapes) {
      answer = shape;
      expect((await cdp.sendForData('Page.captureScreenshot')).equals(image)).to.equal(true);
    }
    expect(cdp.dataAnswersFromBytes).to.equal(0);
  });

  it('leaves a large answer to plain send as JSON, and fails a data command answered with an error', async () => {
    answer = (m) => `{"id":${m.id},"result":{"data":"${image.toString('base64')}"}}`;
    const plain = await cdp.send<{ data: string }>('Page.captureScreenshot');
    expect(plain.data).to.equal(image.toString('base64'));
    answer = (m) => `{"id":${m.id},"error":{"code":-32000,"message":"Unable to capture screenshot"}}`;
    const err = await cdp.sendForData('Page.captureScreenshot').catch((e: Error) => e);
    expect(err).to.be.instanceOf(CdpError);
    expect((err as CdpError).message).to.equal('Page.captureScreenshot: Unable to capture screenshot');
    expect(cdp.dataAnswersFromBytes).to.equal(0);
  });
});
