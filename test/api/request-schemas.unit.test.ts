import { expect } from 'chai';
import { Type } from '@sinclair/typebox';
import { type ConfigChanges, checkConfigChanges, objectParams, shapeSchema, validateShape } from '../../services/api/request-schemas';
import type { SnapOptions } from '../../services/shared/screenshot-options';
import { errorOf } from '../support/errors';

describe('request schemas (generated from the option table)', () => {
  it('coerces GET and form text: numbers, booleans as true/1/yes, JSON strings', () => {
    const v = validateShape<SnapOptions>('snap', {
      url: 'https://example.com',
      wait: '250',
      fullpage: '1',
      no_ads: 'true',
      disable_js: 'no',
      scale_factor: '2',
      headers: '[{"key":"X-A","value":"1"}]',
      cookies: '{"session":"abc"}',
      multi_step_actions: '[{"type":"click","selector":"#go"}]',
    });
    expect(v).to.deep.include({ wait: 250, fullpage: true, no_ads: true, disable_js: false, scale_factor: 2 });
    expect(v.headers).to.deep.equal([{ key: 'X-A', value: '1' }]);
    expect(v.cookies).to.deep.equal([{ key: 'session', value: 'abc' }]);
    expect(v.multi_step_actions).to.deep.equal([{ type: 'click', selector: '#go' }]);
  });

  it('treats empty strings as absent and discards secrets sent on a capture request', () => {
    const v = validateShape<Record<string, unknown>>('snap', { url: 'https://example.com', selectors: '', api_key: 'sk-secret', password: 'p' });
    expect(v).to.deep.equal({ url: 'https://example.com' });
  });

  const cases: Array<[string, Record<string, unknown>, string, string]> = [
    ['a missing (empty) url', { url: '' }, 'invalid_parameter', 'url is required'],
    ['wait above 20000', { wait: '99999' }, 'invalid_parameter', 'wait: must be at most 20000, got 99999'],
    ['a string where a number belongs', { page_width: 'wide' }, 'invalid_parameter', 'page_width: must be a whole number, got "wide"'],
    ['an unknown image format', { image_format: 'gif' }, 'invalid_parameter', 'image_format: must be one of jpeg, png, webp, pdf; got "gif"'],
    ['quality 101', { quality: 101 }, 'invalid_parameter', 'quality: must be at most 100'],
    ['a URL without http(s)', { url: 'ftp://example.com' }, 'invalid_parameter', 'url: must be a full http:// or https:// URL'],
    ['an unknown time zone', { time_zone: 'Mars/Olympus' }, 'invalid_parameter', 'not a known time zone'],
    ['an unknown parameter', { colour: 'red' }, 'invalid_parameter', 'Unknown parameter "colour"'],
    [
      "a configuration's option",
      { scheduled_every: '2' },
      'invalid_parameter',
      'scheduled_every is not taken by /snap: it is an option of POST /screenshot_configs and PATCH /screenshot_configs/:id.',
    ],
    ['hover_on_selected without selectors', { hover_on_selected: 'true' }, 'invalid_parameter', 'hover_on_selected: requires selectors'],
    ['accuracy without a position', { accuracy: '50' }, 'invalid_parameter', 'accuracy: is the accuracy of an emulated position; send latitude and longitude'],
    [
      'latitude without longitude',
      { latitude: '10' },
      'invalid_parameter',
      'longitude: latitude needs it; latitude and longitude give the emulated position together',
    ],
    ['longitude without latitude', { longitude: '10', accuracy: '5' }, 'invalid_parameter', 'latitude: longitude needs it'],
    ['a selector the browser cannot read', { wait_for: 'div[' }, 'invalid_parameter', 'wait_for: "div[" is not a valid CSS selector ('],
    ['an unsupported AI provider', { ai_provider: 'gemini' }, 'ai_provider_unsupported', 'ai_provider: must be one of service, anthropic, openai, openrouter'],
    ['structured fields that are not JSON', { ai_structured_fields: '[{name' }, 'invalid_ai_structured_fields', 'ai_structured_fields: must be valid JSON'],
    ['an ai_prompt over 2500 characters', { ai_prompt: 'x'.repeat(2501) }, 'invalid_parameter', 'ai_prompt: must be at most 2500 characters'],
    ['an unknown action type', { multi_step_actions: [{ type: 'dance' }] }, 'invalid_parameter', 'multi_step_actions[0].type: must be one of click'],
    [
      'an analysis of an html_only capture',
      { analyze_image_with_ai: 'true', html_only: 'true' },
      'invalid_parameter',
      'analyze_image_with_ai: an analysis reads the captured image',
    ],
    ['a repeated query parameter', { wait: ['1', '2'] }, 'invalid_parameter', 'wait: must be'],
    // Sent as headers: the browser refuses a control character in them (it was a 500 after the page's time).
    ['a line break in user_agent', { user_agent: 'a\rb' }, 'invalid_parameter', 'user_agent: "a\rb" holds a line break or another control character'],
    ['a NUL in accept_language', { accept_language: 'en\u0000' }, 'invalid_parameter', 'accept_language: '],
    // Larger than a picture can be (it was a 500 or a 502 "try again" after the page's time).
    [
      'a viewport too large at its scale factor',
      { page_width: '7680', scale_factor: '3' },
      'invalid_parameter',
      'page_width 7680 at scale_factor 3 makes a picture 23040 px wide; the most is 16383 px',
    ],
    ['a device preset too tall at its scale', { device: 'iPhone 15 Pro', page_height: '7000' }, 'invalid_parameter', 'page_height 7000 at scale_factor 3'],
    // Accepted and ignored before: a PDF prints the page; a script cannot run with scripts off.
    ['selectors with a PDF', { image_format: 'pdf', selectors: 'h1' }, 'invalid_parameter', 'selectors: a PDF prints the page, not one element'],
    [
      'js_inject with disable_js',
      { disable_js: 'true', js_inject: 'document.title = 1' },
      'invalid_parameter',
      'js_inject: runs in the page, and disable_js=true',
    ],
    // JSON values ajv would coerce into something never sent (true into 1, a rounded integer).
    ['a JSON true for a number', { page_width: true }, 'invalid_parameter', 'page_width: must be a whole number, got true.'],
    ['a JSON false for text', { custom_title: false }, 'invalid_parameter', 'custom_title: must be text, got false.'],
    // ajv coerces text reading as Infinity and then checks no maximum (scale_factor Infinity was taken).
    ['text for a number that reads as Infinity', { scale_factor: 'Infinity' }, 'invalid_parameter', 'scale_factor: must be a finite number, got "Infinity"'],
    ['a number as hexadecimal text', { wait: '0x10' }, 'invalid_parameter', 'wait: must be a whole number written in decimal digits, got "0x10"'],
    ['text for a number beyond any double', { latitude: '1e309', longitude: '1' }, 'invalid_parameter', 'latitude: must be a finite number, got "1e309"'],
    [
      'a whole number JSON cannot hold exactly',
      // What JSON.parse makes of 9007199254740993: the double next to it.
      { wait: JSON.parse('9007199254740993') as number },
      'invalid_parameter',
      'wait: 9007199254740992 is beyond the whole numbers JSON holds exactly',
    ],
  ];
  for (const [what, params, code, fragment] of cases) {
    it(`rejects ${what} with ${code} and a note naming the parameter`, () => {
      const err = errorOf(() => validateShape('snap', { url: 'https://example.com', ...params }));
      expect(err.type).to.equal(code);
      expect(err.code).to.equal(400);
      expect(err.message).to.contain(fragment);
    });
  }

  it('holds a PATCH to the rules stored configurations may predate only when it changes an option they read', () => {
    // Stored before these rules (or accepted then): a PATCH removes no option, so an unrelated change must still pass.
    const stored = { url: 'https://example.com', image_format: 'pdf', selectors: 'h1', disable_js: true, js_inject: 'x()', page_width: 7680, scale_factor: 3 };
    expect(() => checkConfigChanges(stored, { scheduled_every: 2 } as ConfigChanges)).to.not.throw();
    expect(errorOf(() => checkConfigChanges(stored, { selectors: 'h2' } as ConfigChanges)).message).to.contain('selectors: a PDF prints the page');
    expect(errorOf(() => checkConfigChanges(stored, { js_inject: 'y()' } as ConfigChanges)).message).to.contain('js_inject: runs in the page');
    expect(errorOf(() => checkConfigChanges(stored, { scale_factor: 4 } as ConfigChanges)).message).to.contain('page_width 7680 at scale_factor 4');
    // And one that fixes them passes.
    expect(() => checkConfigChanges(stored, { image_format: 'png', disable_js: false, scale_factor: 1 } as ConfigChanges)).to.not.throw();
  });

  it('names an unknown parameter before a missing one (ajv checks required first)', () => {
    const err = errorOf(() => validateShape('snap', { page_widht: '800' }));
    expect(err.message).to.contain('Unknown parameter "page_widht"');
  });

  it('names an unknown parameter before a missing one, and refuses JSON true for a number, on the other endpoints too (objectParams)', () => {
    const shape = objectParams(Type.Object({ host: Type.String(), port: Type.Optional(Type.Integer({ minimum: 1 })) }, { additionalProperties: false }), {
      codes: { port: 'invalid_proxy' },
    });
    expect(errorOf(() => shape.parse({ page_widht: 1 })).message).to.contain('Unknown parameter "page_widht"');
    const port = errorOf(() => shape.parse({ host: 'proxy.example.com', port: true }));
    expect([port.type, port.message]).to.deep.equal(['invalid_proxy', 'port: must be a whole number, got true.']);
    expect(errorOf(() => shape.parse({ host: JSON.parse('9007199254740993') })).message).to.contain('or send it as text');
    expect(shape.parse({ host: 'proxy.example.com', port: '8080' })).to.deep.equal({ host: 'proxy.example.com', port: 8080 });
  });

  it('keeps snap-only options out of configurations and schedule options out of snap', () => {
    const snap = shapeSchema('snap') as { properties: Record<string, unknown> };
    const config = shapeSchema('configCreate') as { properties: Record<string, unknown> };
    expect(snap.properties).to.have.property('ttl');
    expect(snap.properties).not.to.have.property('scheduled_every');
    expect(config.properties).to.have.property('scheduled_every');
    expect(config.properties).not.to.have.property('json');
    expect(snap.properties.wait).to.deep.include({ type: 'integer', default: 1500, maximum: 20000 });
  });

  it("names the endpoints that take an option another endpoint was sent (a snap's ttl on a configuration)", () => {
    const err = errorOf(() => validateShape('configCreate', { url: 'https://example.com', ttl: '60' }));
    expect([err.type, err.code]).to.deep.equal(['invalid_parameter', 400]);
    expect(err.message).to.contain('ttl is not taken by POST /screenshot_configs: it is an option of /snap and /snap_html.');
  });
});
