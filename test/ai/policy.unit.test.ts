/** The own-provider rules without a network or a database: records, model choice, error mapping, the model cache. */
import { expect } from 'chai';
import { ModelCache, modelListKey } from '../../services/ai/model-cache';
import { chooseModel, httpErrorOf, providerRecord, providerRecords } from '../../services/ai/policy';
import type { ProviderKeyRow } from '../../services/ai/provider-keys';
import { AI_FAILURES, AiFailure } from '../../services/ai/providers';
import type { ModelRecord } from '../../services/shared/contracts';
import { ERROR_STATUS } from '../../services/shared/errors';
import { errorOf } from '../support/errors';

const row = (over: Partial<ProviderKeyRow> = {}): ProviderKeyRow => ({
  provider: 'anthropic',
  keySealed: 'v1:iv:tag:body',
  keyHint: 'sk-a…cdef',
  defaultModel: null,
  defaultUpstream: null,
  verified: true,
  verifiedAt: new Date('2026-11-21T10:00:00Z'),
  modelsCount: 2,
  lastError: null,
  ...over,
});

const model = (id: string, disabled = false): ModelRecord => ({ id, name: id, context_length: 0, structured_outputs: true, disabled, source: 'test' });

describe('own-provider policy', () => {
  describe('providerRecord', () => {
    it('shows a provider without a stored key as provider, label and verified only', () => {
      expect(providerRecord('openai', null)).to.deep.equal({ provider: 'openai', label: 'OpenAI', verified: false });
      expect(providerRecord('openai', row({ provider: 'openai', keySealed: null, verified: false }))).to.deep.equal({
        provider: 'openai',
        label: 'OpenAI',
        verified: false,
      });
    });

    it('shows a stored key by its hint only, with what its verification found', () => {
      expect(providerRecord('anthropic', row({ defaultModel: 'claude-sonnet-5-5' }))).to.deep.equal({
        provider: 'anthropic',
        label: 'Anthropic',
        verified: true,
        key_hint: 'sk-a…cdef',
        default_model: 'claude-sonnet-5-5',
        verified_at: '2026-11-21T10:00:00.000Z',
        models_count: 2,
        last_error: null,
      });
    });

    it("gives default_upstream to OpenRouter alone, 'auto' when none was chosen", () => {
      expect(providerRecord('openrouter', row({ provider: 'openrouter' })).default_upstream).to.equal('auto');
      expect(providerRecord('openrouter', row({ provider: 'openrouter', defaultUpstream: 'google' })).default_upstream).to.equal('google');
      expect(providerRecord('openai', row({ provider: 'openai', defaultUpstream: 'google' }))).not.to.have.property('default_upstream');
    });

    it('shows a rejected key unverified, with the reason and without verified_at or models_count', () => {
      const r = providerRecord(
        'openai',
        row({ provider: 'openai', verified: false, verifiedAt: null, modelsCount: null, lastError: 'OpenAI rejected the API key' }),
      );
      expect(r).to.deep.equal({ provider: 'openai', label: 'OpenAI', verified: false, key_hint: 'sk-a…cdef', last_error: 'OpenAI rejected the API key' });
    });

    it('always lists the three providers in order', () => {
      expect(providerRecords([row({ provider: 'openrouter' })]).map((r) => [r.provider, r.verified])).to.deep.equal([
        ['anthropic', false],
        ['openai', false],
        ['openrouter', true],
      ]);
    });
  });

  describe('chooseModel', () => {
    const models = [model('newest'), model('older'), model('hidden', true)];
    it('takes the model named when it is compatible and available', () => {
      expect(chooseModel('openai', 'older', models)).to.equal('older');
    });
    it('refuses a model outside the list, or one the key cannot use, naming the usable ones', () => {
      const unknown = errorOf(() => chooseModel('openai', 'gpt-3.5-turbo', models));
      expect(unknown).to.include({ type: 'ai_model_not_supported' });
      expect(unknown.message).to.contain('newest, older').and.not.contain('hidden');
      expect(errorOf(() => chooseModel('openai', 'hidden', models)).message).to.contain('not available to the stored key');
    });
    it("falls back to Anthropic's newest model; OpenAI and OpenRouter need one named", () => {
      expect(chooseModel('anthropic', undefined, models)).to.equal('newest');
      expect(errorOf(() => chooseModel('openai', undefined, models)).type).to.equal('ai_model_required');
      expect(errorOf(() => chooseModel('openrouter', null, models)).type).to.equal('ai_model_required');
      expect(errorOf(() => chooseModel('anthropic', undefined, [])).type).to.equal('ai_model_required');
    });
  });

  describe('httpErrorOf', () => {
    const expected = {
      ai_provider_key_rejected: 'ai_provider_key_rejected',
      ai_provider_unavailable: 'ai_provider_unavailable',
      ai_timeout: 'ai_provider_unavailable',
      ai_rate_limited: 'ai_provider_unavailable',
      ai_provider_billing: 'ai_provider_error',
      ai_request_rejected: 'ai_provider_error',
      ai_response_invalid: 'ai_provider_error',
    } as const;
    for (const code of AI_FAILURES) {
      it(`answers ${code} as ${ERROR_STATUS[expected[code]]} ${expected[code]}, with the failure's note`, () => {
        const err = httpErrorOf(new AiFailure(code, `note of ${code}`));
        expect(err).to.include({ type: expected[code], code: ERROR_STATUS[expected[code]], message: `note of ${code}` });
      });
    }
  });
});

describe('ModelCache', () => {
  let now = new Date('2026-11-21T10:00:00Z');
  const later = (ms: number) => {
    now = new Date(now.getTime() + ms);
  };
  const counting = () => {
    let calls = 0;
    return { fetch: async () => [model(`m${++calls}`)], calls: () => calls };
  };

  it('serves a list for ten minutes, then asks again', async () => {
    const cache = new ModelCache(() => now);
    const f = counting();
    const first = await cache.get('k', f.fetch);
    later(9 * 60_000 + 59_000);
    expect(await cache.get('k', f.fetch)).to.equal(first);
    later(1000);
    const refreshed = await cache.get('k', f.fetch);
    expect(f.calls()).to.equal(2);
    expect(refreshed.models[0].id).to.equal('m2');
    expect(refreshed.fetchedAt).to.deep.equal(now);
  });

  it('shares one fetch between concurrent misses, and keeps no failure', async () => {
    const cache = new ModelCache(() => now);
    const f = counting();
    await Promise.all([cache.get('a', f.fetch), cache.get('a', f.fetch), cache.get('a', f.fetch)]);
    expect(f.calls()).to.equal(1);
    let failures = 0;
    const failing = async () => {
      failures++;
      throw new Error('down');
    };
    await cache.get('b', failing).catch(() => undefined);
    await cache.get('b', failing).catch(() => undefined);
    expect(failures).to.equal(2);
  });

  it('keys a list by provider, key and upstream, holding the key only as a hash', () => {
    const key = modelListKey('openai', 'sk-proj-secret', undefined);
    expect(key).not.to.contain('sk-proj-secret');
    expect(key).not.to.equal(modelListKey('openai', 'sk-proj-other', undefined));
    expect(modelListKey('openrouter', undefined, 'meta')).not.to.equal(modelListKey('openrouter', undefined, 'google'));
  });
});
