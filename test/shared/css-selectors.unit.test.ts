/**
 * CSS selector syntax checked without a browser. The cases were compared with Chromium's
 * document.querySelector: each refused here is refused there; each taken there is taken here
 * (the checker is lenient only where the browser decides by name, such as :nosuch).
 */
import { expect } from 'chai';
import { invalidSelectorNote, selectorProblem } from '../../services/shared/css-selectors';

describe('CSS selector syntax (css-selectors.ts)', () => {
  it('takes what the browser takes', () => {
    for (const selector of [
      'div',
      '#main-content',
      '.btn.btn-primary',
      'div > p:first-child',
      'a + b ~ c d',
      '.modal, .popup',
      '[data-popup]',
      '[aria-label="Close dialog"]',
      'button[type="submit" i]',
      'a[target=_blank]',
      "[class*='col-']",
      '[x="a',
      'div:not(.a',
      '*|div',
      '|div',
      '[*|x]',
      'a:nth-child(-n+3)',
      'a:has(> b)',
      'a:is(.x, .y)',
      '::-webkit-scrollbar',
      'input::placeholder',
      '#\\31 a',
      '.a\\:b',
      'a\\',
      '-a',
      '#-a',
      'a /* note */ b',
      '  .a  ',
      '.a\n.b',
      'é',
    ]) {
      expect(selectorProblem(selector), selector).to.equal(null);
    }
  });

  it('refuses what the browser refuses, saying where', () => {
    const cases: Array<[string, string]> = [
      ['div[', 'the attribute selector at character 4 needs an attribute name'],
      ['[data-x=1]', 'must be a name or a quoted string'],
      ['[x=]', 'must be a name or a quoted string'],
      ['[x y]', 'is not an attribute matcher'],
      ['a,', 'a selector of the list is empty'],
      [',a', 'a selector of the list is empty'],
      ['> a', 'the combinator ">" has no selector before it'],
      ['a >', 'nothing follows the combinator ">"'],
      ['#1a', 'is not an id'],
      ['div.', 'a class name must follow the "." at character 4'],
      ['div)', '")" at character 4 is not expected there'],
      ['div:', 'a pseudo-class name must follow the ":" at character 4'],
      ['a/**/b', '"b" at character 6 is not expected there'],
      ['ns|div', 'the namespace "ns|" is not declared'],
      ['[x="a\nb"]', 'breaks at a new line'],
      ['a { }', 'does not start a selector'],
    ];
    for (const [selector, reason] of cases) expect(selectorProblem(selector), selector).to.contain(reason);
  });

  it("words the note as the capture's check in the page does", () => {
    expect(invalidSelectorNote('hide_selectors', 'div[', 'why')).to.equal(
      'hide_selectors: "div[" is not a valid CSS selector (why); give CSS selectors such as "#newsletter" or ".modal, .popup".',
    );
  });
});
