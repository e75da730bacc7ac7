/**
 * CaptureAnalysis with its collaborators stubbed (sinon): the checks' order, what the
 * provider is asked, the AI object of an analysis that ran or failed, and images scaled into
 * the providers' limits.
 */
import { expect } from 'chai';
import sharp from 'sharp';
import sinon from 'sinon';
import { CaptureAnalysis, IMAGE_LIMITS, fitImage } from '../../services/ai/analysis';
import { AiFailure, type AiClient } from '../../services/ai/providers';
import { serviceError } from '../../services/shared/errors';
import type { SnapOptions } from '../../services/shared/screenshot-options';

const png = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 30, b: 30 } } })
    .png()
    .toBuffer();

function setup(opts: { service?: boolean } = {}) {
  const client = {
    analyze: sinon.stub().resolves({ text: 'A red page.', structured: null, model: 'm-2026' }),
    verifyKey: sinon.stub(),
    listModels: sinon.stub(),
  };
  const own = { resolve: sinon.stub().resolves({ client: client as unknown as AiClient, model: 'gpt-4o' }) };
  const store = { get: sinon.stub() };
  const logError = sinon.stub();
  const analysis = new CaptureAnalysis({
    own,
    service: opts.service === false ? null : { client: client as unknown as AiClient, model: 'operator-model' },
    store,
    logError,
  });
  return { analysis, client, own, store, logError };
}

const options = (o: Partial<SnapOptions> = {}): SnapOptions => ({ url: 'https://example.test/', analyze_image_with_ai: true, ...o });
const image = { name: 'a.png', contentType: 'image/png' };

describe('CaptureAnalysis (collaborators stubbed)', () => {
  describe('check', () => {
    it('answers 503 ai_service_not_configured for the service without a backend, before looking at the fields', async () => {
      const { analysis } = setup({ service: false });
      const err = await analysis.check('acc', options({ ai_prompt_mode: 'structured' })).catch((e) => e);
      expect(err.type).to.equal('ai_service_not_configured');
      expect(err.code).to.equal(503);
    });

    it("resolves an own provider's key and model first, then checks the fields", async () => {
      const { analysis, own } = setup();
      own.resolve.rejects(serviceError('ai_provider_not_configured', 'no key'));
      const err = await analysis.check('acc', options({ ai_provider: 'openai', ai_model: 'gpt-4o', ai_prompt_mode: 'structured' })).catch((e) => e);
      expect(err.type).to.equal('ai_provider_not_configured');
      expect(own.resolve.calledOnceWithExactly('acc', 'openai', 'gpt-4o')).to.equal(true);
      own.resolve.resolves({ client: {}, model: 'gpt-4o' });
      const fields = await analysis.check('acc', options({ ai_provider: 'openai', ai_prompt_mode: 'structured' })).catch((e) => e);
      expect(fields.type).to.equal('invalid_ai_structured_fields');
      expect(await analysis.check('acc', options({ ai_provider: 'openai' }))).to.deep.equal({ provider: 'openai', model: 'gpt-4o' });
      expect(await analysis.check('acc', options())).to.deep.equal({ provider: 'service', model: null });
    });
  });

  describe('analyze', () => {
    it('sends the stored image, the prompt and the model, and records the answer', async () => {
      const { analysis, client, store } = setup();
      const data = await png(64, 48);
      store.get.resolves({ data, contentType: 'image/png' });
      const ai = await analysis.analyze('acc', options({ ai_prompt: 'Which colour?' }), image);
      expect(store.get.calledOnceWithExactly('a.png')).to.equal(true);
      const sent = client.analyze.firstCall.args[0];
      expect(sent).to.deep.include({ model: 'operator-model', mode: 'simple', prompt: 'Which colour?' });
      expect(sent.images).to.have.length(1);
      expect(sent.images[0].contentType).to.equal('image/png');
      expect(sent.images[0].data.equals(data)).to.equal(true);
      expect(ai).to.deep.equal({
        ai_analyzed: true,
        ai_prompt: 'Which colour?',
        ai_response: 'A red page.',
        ai_provider: 'service',
        ai_model: null,
        ai_prompt_mode: 'simple',
        ai_structured_response: null,
      });
    });

    it('records a provider failure as ai_error, and one of ours generically (logged)', async () => {
      const { analysis, client, store, logError } = setup();
      store.get.resolves({ data: await png(8, 8), contentType: 'image/png' });
      client.analyze.rejects(new AiFailure('ai_timeout', 'OpenAI did not answer within 2 s.'));
      const slow = await analysis.analyze('acc', options({ ai_provider: 'openai', ai_model: 'gpt-4o' }), image);
      expect(slow).to.deep.include({ ai_analyzed: false, ai_provider: 'openai', ai_model: 'gpt-4o', ai_response: '' });
      expect(slow.ai_error).to.deep.equal({ error_code: 'ai_timeout', note: 'OpenAI did not answer within 2 s.' });
      expect(logError.called).to.equal(false);
      store.get.resolves(null);
      const lost = await analysis.analyze('acc', options(), image);
      expect(lost.ai_error?.error_code).to.equal('internal_error');
      expect(logError.calledOnce).to.equal(true);
    });
  });

  describe('fitImage', () => {
    it('leaves an image within the limits as it is', async () => {
      const data = await png(1280, 800);
      const fitted = await fitImage(data, 'image/png');
      expect(fitted.data).to.equal(data);
      expect(fitted.contentType).to.equal('image/png');
    });

    it('scales a page taller than the limit into it, as JPEG', async () => {
      const fitted = await fitImage(await png(1280, 16_000), 'image/png');
      const m = await sharp(fitted.data).metadata();
      expect(fitted.contentType).to.equal('image/jpeg');
      expect(m.format).to.equal('jpeg');
      expect(m.height).to.equal(IMAGE_LIMITS.side);
      expect(m.width).to.equal(Math.round((1280 * IMAGE_LIMITS.side) / 16_000));
      expect(fitted.data.length).to.be.at.most(IMAGE_LIMITS.bytes);
    });
  });
});
