/**
 * What every provider client must do, proven against each provider's local stand-in with its
 * official SDK pointed at it: simple and structured analysis, several labelled images with a
 * task's own wording and schema, the largest structured input,
 * each failure code, key verification, and no key in any note.
 */
import { expect } from 'chai';
import sharp from 'sharp';
import { createAiClient } from '../../services/ai/providers';
import { AiFailure, type AiFailureCode, type ProviderName, type StructuredField } from '../../services/ai/providers/types';
import {
  answerForLargestFields,
  failureOf,
  type FakeProvider,
  largestFields,
  PNG_1X1,
  type Recorded,
  startFakeProvider,
  unreachableBaseUrl,
} from '../support/ai-providers';

const MODELS: Record<ProviderName, string> = { anthropic: 'claude-sonnet-5-5', openai: 'gpt-4o', openrouter: 'openai/gpt-4o' };

const fields: StructuredField[] = [
  { name: 'headline', type: 'string', description: 'The main heading' },
  { name: 'price', type: 'number' },
  { name: 'logged_in', type: 'boolean' },
  { name: 'page_kind', type: 'enum', options: ['home', 'product', 'article'] },
  { name: 'badges', type: 'multi', options: ['sale', 'new', 'popular'] },
];

/** The image and the texts a recorded analysis request carried, read from the provider's wire format. */
function sent(kind: ProviderName, r: Recorded): { image: Buffer; mediaType: string; text: string; system: string; schema?: Record<string, unknown> } {
  const body = r.body as Record<string, unknown>;
  const messages = body.messages as { role: string; content: unknown }[];
  const user = messages.find((m) => m.role === 'user')!.content as Record<string, unknown>[];
  const text = user.find((c) => c.type === 'text')?.text as string;
  if (kind === 'anthropic') {
    const source = user.find((c) => c.type === 'image')!.source as { type: string; media_type: string; data: string };
    expect(source.type).to.equal('base64');
    const format = (body.output_config as { format?: { type: string; schema: Record<string, unknown> } } | undefined)?.format;
    if (format) expect(format.type).to.equal('json_schema');
    return { image: Buffer.from(source.data, 'base64'), mediaType: source.media_type, text, system: String(body.system ?? ''), schema: format?.schema };
  }
  const url = (user.find((c) => c.type === 'image_url')!.image_url as { url: string }).url;
  const [, mediaType, data] = /^data:([^;]+);base64,(.*)$/.exec(url)!;
  const rf = body.response_format as { type: string; json_schema: { name: string; strict: boolean; schema: Record<string, unknown> } } | undefined;
  if (rf) expect(rf).to.include({ type: 'json_schema' }).and.to.have.nested.property('json_schema.strict', true);
  const system = messages.find((m) => m.role === 'system')?.content;
  return { image: Buffer.from(data, 'base64'), mediaType, text, system: String(system ?? ''), schema: rf?.json_schema.schema };
}

for (const kind of ['anthropic', 'openai', 'openrouter'] as const) {
  describe(`AI provider client: ${kind} (official SDK against a local ${kind} server)`, () => {
    let fake: FakeProvider;
    const client = (over: { apiKey?: string; baseUrl?: string; timeoutMs?: number; maxRetries?: number } = {}) =>
      createAiClient(kind, { apiKey: fake.key, baseUrl: fake.baseUrl, timeoutMs: 3000, ...over });
    const simple = { images: [{ data: PNG_1X1, contentType: 'image/png' as const }], mode: 'simple' as const, model: MODELS[kind] };
    const structured = { ...simple, mode: 'structured' as const, fields, instructions: 'The page is a shop.' };

    beforeEach(async () => {
      fake = await startFakeProvider(kind);
    });
    afterEach(async () => {
      await fake.stop();
    });

    it('simple mode: sends our image bytes and the prompt, returns the text and the model', async () => {
      fake.queue('analyze', { text: 'A shop front.' });
      const result = await client().analyze({ ...simple, prompt: 'What is on this page?' });
      expect(result).to.deep.equal({ text: 'A shop front.', structured: null, model: MODELS[kind] });
      const [req] = fake.of('analyze');
      expect(req.auth).to.equal('valid');
      const s = sent(kind, req);
      expect(s.image.equals(PNG_1X1)).to.equal(true);
      expect(s.mediaType).to.equal('image/png');
      expect(s.text).to.equal('What is on this page?');
      expect(s.schema).to.equal(undefined);
    });

    it("a task: sends every image after its label, in order, then the task's text, system and schema; its check decides the answer", async () => {
      const jpeg = await sharp({ create: { width: 3, height: 2, channels: 3, background: '#f00' } })
        .jpeg()
        .toBuffer();
      const task = {
        system: 'You answer prompts about images.',
        text: 'Prompt 1: which colour?',
        schema: { type: 'object', properties: { answer_1: { type: 'string' } }, required: ['answer_1'], additionalProperties: false },
        check: (a: unknown) => {
          if ((a as { answer_1?: unknown }).answer_1 !== 'red') throw new AiFailure('ai_response_invalid', 'not red');
          return a as Record<string, unknown>;
        },
      };
      const images = [
        { data: PNG_1X1, contentType: 'image/png' as const, label: 'Image 1 (a.png):' },
        { data: jpeg, contentType: 'image/jpeg' as const, label: 'Image 2 (b.jpeg):' },
      ];
      fake.queue('analyze', { structured: { answer_1: 'red' } }, { structured: { answer_1: 'blue' } });
      const result = await client().analyze({ ...simple, images, task });
      expect(result.structured).to.deep.equal({ answer_1: 'red' });
      expect((await failureOf(client().analyze({ ...simple, images, task }))).note).to.equal('not red');
      const body = fake.of('analyze')[0]!.body as Record<string, unknown>;
      const messages = body.messages as { role: string; content: Record<string, unknown>[] }[];
      const parts = messages
        .find((m) => m.role === 'user')!
        .content.map((c) => {
          if (c.type === 'text') return `text:${c.text}`;
          const data = c.type === 'image' ? (c.source as { data: string }).data : (c.image_url as { url: string }).url.replace(/^data:[^,]+,/, '');
          return `image:${Buffer.from(data, 'base64').equals(PNG_1X1) ? 'png' : Buffer.from(data, 'base64').equals(jpeg) ? 'jpeg' : '?'}`;
        });
      expect(parts).to.deep.equal(['text:Image 1 (a.png):', 'image:png', 'text:Image 2 (b.jpeg):', 'image:jpeg', 'text:Prompt 1: which colour?']);
      const s = sent(kind, fake.of('analyze')[0]!);
      expect(s.system).to.equal('You answer prompts about images.');
      expect(s.schema).to.deep.equal(task.schema);
    });

    it('simple mode without a prompt asks the default prompt', async () => {
      await client().analyze(simple);
      expect(sent(kind, fake.of('analyze')[0]).text).to.equal('Describe this screenshot of a web page: what it shows, its main text and anything notable.');
    });

    it('structured mode: sends the strict schema and the instructions, returns the validated object and its JSON', async () => {
      const answer = { headline: 'Spring sale', price: 19.99, logged_in: false, page_kind: 'product', badges: ['sale', 'new'] };
      fake.queue('analyze', { structured: answer });
      const result = await client().analyze(structured);
      expect(result.structured).to.deep.equal(answer);
      expect(result.text).to.equal(JSON.stringify(answer));
      const s = sent(kind, fake.of('analyze')[0]);
      expect(s.image.equals(PNG_1X1)).to.equal(true);
      expect(s.system).to.contain('The page is a shop.');
      expect(s.schema).to.deep.include({ type: 'object', required: fields.map((f) => f.name), additionalProperties: false });
      expect(s.schema).to.have.nested.property('properties.page_kind.enum').that.deep.equals(['home', 'product', 'article']);
      expect(s.schema).to.have.nested.property('properties.badges.items.enum').that.deep.equals(['sale', 'new', 'popular']);
    });

    it('structured mode: an answer built by the server from the schema it got validates', async () => {
      const result = await client().analyze(structured);
      expect(result.structured).to.include({ page_kind: 'home', logged_in: true });
      expect(result.structured?.badges).to.deep.equal(['sale']);
    });

    it('50 fields of 100 options: sends the relaxed schema (no enum), accepts a matching answer', async () => {
      fake.queue('analyze', { structured: answerForLargestFields() });
      const result = await client().analyze({ ...structured, fields: largestFields() });
      expect(result.structured).to.deep.equal(answerForLargestFields());
      const s = sent(kind, fake.of('analyze')[0]);
      expect(JSON.stringify(s.schema)).not.to.contain('"enum"');
      expect(s.schema).to.have.nested.property('properties.field_0.description').that.contains('"f0_option_99"');
      expect(s.text).to.contain('use only those options');
    });

    it('50 fields of 100 options: an answer outside the options is refused strictly (ai_response_invalid)', async () => {
      fake.queue('analyze', { structured: { ...answerForLargestFields(), field_3: ['f3_option_1', 'not an option'] } });
      const f = await failureOf(client().analyze({ ...structured, fields: largestFields() }));
      expect(f.code).to.equal('ai_response_invalid');
      expect(f.note).to.contain("field 'field_3' holds a value that is not one of its options");
    });

    it('an answer that is not JSON, or lacks a field, is ai_response_invalid', async () => {
      fake.queue('analyze', { text: 'Sure! The headline is "Spring sale".' }, { structured: { headline: 'x', price: 1, logged_in: true, page_kind: 'home' } });
      expect((await failureOf(client().analyze(structured))).note).to.contain('not valid JSON');
      expect((await failureOf(client().analyze(structured))).note).to.contain("field 'badges' is missing");
    });

    it('a refused or cut-off answer is ai_response_invalid', async () => {
      fake.queue('analyze', { finish: 'refusal' }, { finish: kind === 'anthropic' ? 'max_tokens' : 'length' });
      const refused = await failureOf(client().analyze(simple));
      expect(refused.code).to.equal('ai_response_invalid');
      expect(refused.note).to.contain('declined');
      expect((await failureOf(client().analyze(simple))).note).to.contain('cut off');
    });

    const codes: [number, AiFailureCode][] = [
      [401, 'ai_provider_key_rejected'],
      [403, 'ai_provider_key_rejected'],
      [402, 'ai_provider_billing'],
      [400, 'ai_request_rejected'],
      [404, 'ai_request_rejected'],
    ];
    for (const [status, code] of codes) {
      it(`HTTP ${status} is ${code}, not retried`, async () => {
        fake.queue('analyze', { status });
        const f = await failureOf(client().analyze(simple));
        expect(f.code).to.equal(code);
        expect(f.note).to.contain(String(status));
        expect(fake.of('analyze')).to.have.length(1);
      });
    }

    const outage = kind === 'anthropic' ? [500, 529] : [500, 502];
    for (const status of outage) {
      it(`HTTP ${status} is retried once, then ai_provider_unavailable`, async () => {
        fake.queue('analyze', { status }, { status });
        const f = await failureOf(client().analyze(simple));
        expect(f.code).to.equal('ai_provider_unavailable');
        expect(f.note).to.contain(String(status)).and.to.contain('try again later');
        expect(fake.of('analyze')).to.have.length(2);
      });
    }

    it('an outage followed by an answer succeeds (one retry)', async () => {
      fake.queue('analyze', { status: 500 }, { text: 'Recovered.' });
      expect((await client().analyze(simple)).text).to.equal('Recovered.');
      expect(fake.of('analyze')).to.have.length(2);
    });

    it('no retry when maxRetries is 0', async () => {
      fake.queue('analyze', { status: 500 }, { text: 'Recovered.' });
      expect((await failureOf(client({ maxRetries: 0 }).analyze(simple))).code).to.equal('ai_provider_unavailable');
      expect(fake.of('analyze')).to.have.length(1);
    });

    it('HTTP 429 is ai_rate_limited after one retry', async () => {
      fake.queue('analyze', { status: 429 }, { status: 429 });
      const f = await failureOf(client().analyze(simple));
      expect(f.code).to.equal('ai_rate_limited');
      expect(fake.of('analyze')).to.have.length(2);
    });

    it('HTTP 429 whose Retry-After outlasts the timeout fails at once as ai_rate_limited, not as a timeout', async () => {
      fake.queue('analyze', { status: 429, retryAfter: 60 });
      const started = Date.now();
      expect((await failureOf(client().analyze(simple))).code).to.equal('ai_rate_limited');
      expect(Date.now() - started).to.be.below(1000);
      expect(fake.of('analyze')).to.have.length(1);
    });

    it('an answer slower than the timeout is ai_timeout, within the timeout', async () => {
      fake.queue('analyze', { delayMs: 5000 });
      const started = Date.now();
      const f = await failureOf(client({ timeoutMs: 800 }).analyze(simple));
      expect(f.code).to.equal('ai_timeout');
      expect(f.note).to.contain('0.8 s');
      expect(Date.now() - started).to.be.within(700, 1500);
    });

    it('an unreachable provider is ai_provider_unavailable', async () => {
      const f = await failureOf(client({ baseUrl: await unreachableBaseUrl() }).analyze(simple));
      expect(f.code).to.equal('ai_provider_unavailable');
      expect(f.note).to.contain('could not be reached').and.to.contain('ECONNREFUSED');
    });

    it('verifyKey: accepted with the count of compatible models', async () => {
      const { modelsCount } = await client().verifyKey();
      expect(modelsCount).to.equal((await client().listModels()).filter((m) => !m.disabled).length);
      expect(modelsCount).to.be.above(0);
    });

    it('verifyKey: a wrong key is ai_provider_key_rejected', async () => {
      const f = await failureOf(client({ apiKey: `${fake.key}-revoked` }).verifyKey());
      expect(f.code).to.equal('ai_provider_key_rejected');
      expect(fake.requests.some((r) => r.auth === 'invalid')).to.equal(true);
    });

    it('verifyKey: an unreachable provider is ai_provider_unavailable', async () => {
      expect((await failureOf(client({ baseUrl: await unreachableBaseUrl() }).verifyKey())).code).to.equal('ai_provider_unavailable');
    });

    it('verifyKey: a provider answering 5xx is ai_provider_unavailable', async () => {
      const route = kind === 'openrouter' ? 'key' : 'models';
      fake.queue(route, { status: 503 }, { status: 503 });
      expect((await failureOf(client().verifyKey())).code).to.equal('ai_provider_unavailable');
    });

    it('the key never appears in a note, even when the provider echoes it', async () => {
      const wrong = `${fake.key}-other`;
      const notes: string[] = [];
      for (const status of [400, 401, 402, 429, 500]) {
        fake.queue('analyze', { status, message: `key ${fake.key} refused` }, { status, message: `key ${fake.key} refused` });
        notes.push((await failureOf(client().analyze(simple))).note);
      }
      notes.push((await failureOf(client({ apiKey: wrong }).analyze(simple))).note);
      expect(notes.join('\n')).to.contain('[key]');
      for (const note of notes) {
        expect(note).not.to.contain(fake.key);
        expect(note).not.to.contain('fakeTestKey');
      }
    });
  });
}
