import { expect } from 'chai';
import { validateShape } from '../../services/api/request-schemas';
import { checkActions } from '../../services/shared/actions-schema';
import type { SnapOptions } from '../../services/shared/screenshot-options';
import { errorOf } from '../support/errors';

const snap = (multi_step_actions: unknown) => validateShape<SnapOptions>('snap', { url: 'https://example.com', multi_step_actions });

describe('multi_step_actions validation', () => {
  it('accepts every type with the keys it needs, as a JSON array or a JSON string (GET, forms)', () => {
    const steps = [
      { type: 'click', selector: '#go' },
      { type: 'hover', selector: 'nav > .menu' },
      { type: 'change', selector: '#price', send_to: 'webhook', url: 'https://hooks.example.com/x' },
      { type: 'change', selector: '#price', send_to: 'slack', url: 'https://hooks.slack.com/services/T/B/x' },
      { type: 'redirect', value: 'https://example.com/next' },
      { type: 'javascript', value: "document.title = 'x'" },
      { type: 'evaluateJs', value: 'async () => 1' },
      { type: 'css', value: 'body { color: red }' },
      { type: 'text_field', selector: '#q', value: 'shoes' },
      { type: 'text_field', selector: '#q', value: '' },
      { type: 'text_field', selector: '#zip', value: 75001 },
      { type: 'select', selector: '#size', value: 'L' },
      { type: 'checkbox', selector: '#agree', value: true },
      { type: 'checkbox', selector: '#agree', value: 'false' },
      { type: 'submit' },
      { type: 'wait', value: '500' },
      { type: 'wait', value: 250 },
      { type: 'wait_for_selector', selector: '#late' },
    ];
    expect(snap(steps).multi_step_actions).to.deep.equal(steps);
    expect(snap(JSON.stringify(steps)).multi_step_actions).to.deep.equal(steps);
    expect(
      validateShape<SnapOptions>('configCreate', { url: 'https://example.com', multi_step_actions: JSON.stringify(steps) }).multi_step_actions,
    ).to.deep.equal(steps);
  });

  const cases: Array<[string, unknown[], string]> = [
    [
      'a click without selector',
      [{ type: 'wait', value: '1' }, { type: 'wait', value: '1' }, { type: 'click' }],
      'multi_step_actions[2] (click): needs "selector", a CSS selector of the element to click.',
    ],
    ['a blank selector', [{ type: 'hover', selector: '   ' }], 'multi_step_actions[0] (hover): "selector" must be a non-blank CSS selector'],
    ['a redirect without value', [{ type: 'redirect' }], 'multi_step_actions[0] (redirect): needs "value", the http(s) URL to go to.'],
    [
      'a redirect to a non-http URL',
      [{ type: 'redirect', value: 'javascript:alert(1)' }],
      'multi_step_actions[0] (redirect): "value" must be a full http:// or https:// URL, got "javascript:alert(1)"',
    ],
    ['an empty script', [{ type: 'javascript', value: '  ' }], 'multi_step_actions[0] (javascript): "value" must be JavaScript code as a non-empty string'],
    ['evaluateJs given a number', [{ type: 'evaluateJs', value: 42 }], 'multi_step_actions[0] (evaluateJs): "value" must be JavaScript code'],
    ['css given a boolean', [{ type: 'css', value: true }], 'multi_step_actions[0] (css): "value" must be CSS as a non-empty string'],
    ['a text_field without value', [{ type: 'text_field', selector: '#q' }], 'multi_step_actions[0] (text_field): needs "value", the text to type'],
    ['a text_field given a boolean', [{ type: 'text_field', selector: '#q', value: false }], 'multi_step_actions[0] (text_field): "value" must be a string'],
    [
      'a select without selector',
      [{ type: 'select', value: 'L' }],
      'multi_step_actions[0] (select): needs "selector", a CSS selector of the <select> element.',
    ],
    ['a checkbox with value "yes"', [{ type: 'checkbox', selector: '#a', value: 'yes' }], 'multi_step_actions[0] (checkbox): "value" must be true or false'],
    ['a checkbox without value', [{ type: 'checkbox', selector: '#a' }], 'multi_step_actions[0] (checkbox): needs "value", true or false.'],
    [
      'a submit with a selector',
      [{ type: 'submit', selector: 'form' }],
      'multi_step_actions[0] (submit): unknown key "selector"; a submit step takes no other key.',
    ],
    [
      'a click with a value',
      [{ type: 'click', selector: '#a', value: 'x' }],
      'multi_step_actions[0] (click): unknown key "value"; a click step takes only "selector".',
    ],
    ['a key no type knows', [{ type: 'wait', value: '1', timeout: 5 }], 'multi_step_actions[0] (wait): unknown key "timeout"'],
    [
      'a wait in seconds',
      [{ type: 'wait', value: '1.5s' }],
      'multi_step_actions[0] (wait): "value" must be whole milliseconds from 0 to 20000 (such as "500"), got "1.5s".',
    ],
    ['a wait over 20000', [{ type: 'wait', value: '20001' }], 'multi_step_actions[0] (wait): "value" must be whole milliseconds from 0 to 20000'],
    ['a negative wait', [{ type: 'wait', value: -1 }], 'multi_step_actions[0] (wait): "value" must be whole milliseconds'],
    [
      'a change without send_to',
      [{ type: 'change', selector: '#p', url: 'https://x.example' }],
      'multi_step_actions[0] (change): needs "send_to", where alerts go: webhook or slack.',
    ],
    [
      'a change to a non-http url',
      [{ type: 'change', selector: '#p', send_to: 'webhook', url: 'ftp://x.example' }],
      'multi_step_actions[0] (change): "url" must be a full http:// or https:// URL',
    ],
    ['a wait_for_selector without selector', [{ type: 'wait_for_selector' }], 'multi_step_actions[0] (wait_for_selector): needs "selector"'],
  ];
  for (const [what, steps, note] of cases) {
    it(`refuses ${what}, naming the step and the problem`, () => {
      const err = errorOf(() => snap(steps));
      expect(err.type).to.equal('invalid_parameter');
      expect(err.code).to.equal(400);
      expect(err.message).to.contain(note);
    });
  }

  it('refuses wait steps that add up to more than 20000 ms, naming the step that passes the limit', () => {
    const steps = [
      { type: 'wait', value: '8000' },
      { type: 'click', selector: '#a' },
      { type: 'wait', value: 8000 },
      { type: 'wait', value: '4001' },
    ];
    const err = errorOf(() => snap(JSON.stringify(steps)));
    expect(err.message).to.equal('multi_step_actions[3] (wait): the wait steps add up to 20001 ms; all wait steps together may wait at most 20000 ms.');
    expect(() => snap(steps.slice(0, 3).concat({ type: 'wait', value: '4000' }))).not.to.throw();
  });

  it('refuses script steps with disable_js=true, but not the other steps', () => {
    const js = (steps: unknown[], disable_js: string) =>
      validateShape('snap', { url: 'https://example.com', disable_js, multi_step_actions: JSON.stringify(steps) });
    expect(
      errorOf(() =>
        js(
          [
            { type: 'css', value: 'p{}' },
            { type: 'evaluateJs', value: '1' },
          ],
          'true',
        ),
      ).message,
    ).to.equal('multi_step_actions[1] (evaluateJs): cannot run with disable_js=true; drop disable_js or this step.');
    expect(errorOf(() => js([{ type: 'javascript', value: '1' }], 'yes')).message).to.contain(
      'multi_step_actions[0] (javascript): cannot run with disable_js=true',
    );
    expect(() => js([{ type: 'javascript', value: '1' }], 'false')).not.to.throw();
    expect(() =>
      js(
        [
          { type: 'css', value: 'p{}' },
          { type: 'click', selector: 'a' },
        ],
        'true',
      ),
    ).not.to.throw();
  });

  it('refuses more than 50 steps', () => {
    const steps = Array.from({ length: 51 }, () => ({ type: 'submit' }));
    expect(errorOf(() => snap(steps)).message).to.contain('multi_step_actions: at most 50');
    expect(errorOf(() => checkActions(steps)).message).to.equal('multi_step_actions: at most 50 steps are allowed, got 51.');
  });

  it('leaves the outer shape to the JSON Schema: unknown types, non-objects, bad JSON', () => {
    expect(errorOf(() => snap([{ type: 'dance' }])).message).to.contain('multi_step_actions[0].type: must be one of click');
    expect(errorOf(() => snap(['click'])).message).to.contain('multi_step_actions[0]');
    expect(errorOf(() => snap('[{"type":')).message).to.contain('multi_step_actions: must be valid JSON');
    expect(errorOf(() => snap([{ type: 'change', selector: '#p', send_to: 'email', url: 'https://x.example' }])).message).to.contain(
      'multi_step_actions[0].send_to: must be one of webhook, slack',
    );
  });

  it('checkActions names the step for direct callers too', () => {
    expect(errorOf(() => checkActions([{ type: 'click', selector: '#a' }, null])).message).to.contain('multi_step_actions[1]: must be an object');
    expect(errorOf(() => checkActions([{ type: 'fly' }])).message).to.contain('multi_step_actions[0]: "type" must be one of click, hover');
    expect(() => checkActions([])).not.to.throw();
  });
});
